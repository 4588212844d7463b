#===- scripts/wheel_smoke.py - an installed wheel makes a correct call ------===#
#
# Run by scripts/wheel-smoke.sh with the Python of a fresh virtual
# environment holding only the paged_attn wheel (torch from the system's
# site-packages), from a folder outside the checkout, with no PYTHONPATH,
# PA_RUNTIME_LIB or PA_KERNEL_LIBRARY. Checks that the package, its
# libpa_runtime.so and its kernel library all come from the installed wheel,
# then runs one GQA decode eagerly and under torch.compile(fullgraph=True)
# against a float64 reference (NaN-poisoned output). Needs a CUDA GPU.
#
#===------------------------------------------------------------------------===#

import math
import os
import sys

import torch

import paged_attn


def reference(q, kc, vc, bt, lens, scale):
    S, H, D = q.shape
    NB, KVH, Dx, BS, x = kc.shape
    out = torch.empty(S, H, D, dtype=torch.float64, device=q.device)
    for s, L in enumerate(lens):
        blocks = bt[s, :-(-L // BS)].long()
        k = kc[blocks].double().permute(0, 3, 1, 2, 4).reshape(-1, KVH, D)[:L]
        v = vc[blocks].double().permute(0, 3, 1, 2).reshape(-1, KVH, D)[:L]
        qs = q[s].double().reshape(KVH, H // KVH, D)
        p = torch.softmax(torch.einsum("kgd,lkd->kgl", qs, k) * scale, dim=-1)
        out[s] = torch.einsum("kgl,lkd->kgd", p, v).reshape(H, D)
    return out


def problem(g):
    S, H, KVH, D, BS, lens = 3, 16, 4, 128, 16, [1, 700, 1999]
    MB, P = -(-max(lens) // BS), -(-max(lens) // 512)
    dev, f16 = "cuda", torch.float16
    rnd = lambda *shape: torch.randn(*shape, generator=g).to(f16).to(dev)  # noqa: E731
    q, kc, vc = rnd(S, H, D), rnd(S * MB, KVH, D // 8, BS, 8), rnd(S * MB, KVH, D, BS)
    bt = torch.randperm(S * MB, generator=g).to(torch.int32).reshape(S, MB).to(dev)
    ws = lambda *shape: torch.full(shape, math.nan, device=dev)  # noqa: E731
    args = (ws(S, H, D).to(f16), ws(S, H, P), ws(S, H, P), ws(S, H, P, D), q, kc, vc, KVH,
            D ** -0.5, bt, torch.tensor(lens, dtype=torch.int32, device=dev), BS, max(lens))
    return args, reference(q, kc, vc, bt, lens, D ** -0.5)


def check(out, ref, what):
    err = float(((out.double() - ref).flatten(1).norm(dim=1) / ref.flatten(1).norm(dim=1)).max())
    assert math.isfinite(err) and err < 5e-3, "%s: rel err %r" % (what, err)
    print("%s: rel err %.1e" % (what, err))


def main():
    pkg = os.path.dirname(os.path.abspath(paged_attn.__file__))
    assert pkg.startswith(sys.prefix), "paged_attn from %s, not the venv %s" % (pkg, sys.prefix)
    for var in ("PYTHONPATH", "PA_RUNTIME_LIB", "PA_KERNEL_LIBRARY"):
        assert var not in os.environ, var
    info = paged_attn.init(0)
    print("init:", info)
    assert info["runtime"] == os.path.join(pkg, "lib", "libpa_runtime.so"), info
    assert info["kernel_library"] == os.path.join(pkg, "kernels"), info
    args, ref = problem(torch.Generator().manual_seed(0))
    paged_attn.paged_attention_v2(*args, None)
    check(args[0], ref, "eager")
    args[0].fill_(math.nan)

    def step(*a):
        paged_attn.paged_attention_v2(*a, None)
        return a[0] * 1.0
    check(torch.compile(step, fullgraph=True)(*args), ref, "torch.compile(fullgraph=True)")
    print("wheel smoke test passed")


if __name__ == "__main__":
    main()
