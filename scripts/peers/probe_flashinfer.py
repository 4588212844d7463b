#!/usr/bin/env python3
"""Check that FlashInfer came up on this GPU before compare.py times it.

For each (dtype, head size) of compare.py's configs, and an fp8 (e4m3)
cache at head size 128, one small GQA batch through flashinfer_impl (and
paged_attn, if importable) against a float32 reference: the first call's wall time (module load, or a JIT build if no
prebuilt module matched: then FlashInfer's cached_ops folder fills), the
relative error, and the host time of one call (no synchronisation; what
the GPU may wait for when a kernel is shorter than that).

Usage: probe_flashinfer.py [--tensor-cores]  (scripts/peers on sys.path)
"""
import argparse
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def case(seqs, heads, kvh, d, bs, length, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = 16 // torch.tensor([], dtype=dtype).element_size()
    nb = -(-length // bs)
    blocks = seqs * nb + 3
    kc = (torch.randn(blocks, kvh, d // x, bs, x, generator=g) * 0.5).to(dtype).cuda()
    vc = torch.randn(blocks, kvh, d, bs, generator=g).to(dtype).cuda()
    bt = torch.randperm(blocks, generator=g)[:seqs * nb].view(seqs, nb).to(torch.int32).cuda()
    q = torch.randn(seqs, heads, d, generator=g).to(dtype).cuda()
    sl = torch.full((seqs,), length, dtype=torch.int32, device="cuda")
    return q, kc, vc, bt, sl


def fp8_cache(kc, vc, f8, ks, vs):
    """vLLM's fp8 caches (uint8 storage, 16 key elements per 16 bytes) of the
    same values quantized (value = stored * scale), and the dequantized
    values in the 16-bit layout for the reference."""
    nb, kvh, dx, bs, x = kc.shape
    d = dx * x
    k8, v8 = (kc.float() / ks).to(f8), (vc.float() / vs).to(f8)
    k16 = k8.permute(0, 1, 3, 2, 4).reshape(nb, kvh, bs, d // 16, 16).permute(0, 1, 3, 2, 4)
    return (k16.contiguous().view(torch.uint8), v8.view(torch.uint8), k8.float() * ks,
            v8.float() * vs)


def reference(q, kc, vc, bt, length, scale):
    nb, kvh, dx, bs, x = kc.shape
    k = kc.permute(0, 3, 1, 2, 4).reshape(nb, bs, kvh, dx * x)[bt.long()]
    v = vc.permute(0, 3, 1, 2)[bt.long()]
    seqs = q.shape[0]
    k = k.reshape(seqs, -1, kvh, dx * x)[:, :length].float()
    v = v.reshape(seqs, -1, kvh, dx * x)[:, :length].float()
    grp = q.shape[1] // kvh
    k, v = k.repeat_interleave(grp, 2), v.repeat_interleave(grp, 2)
    p = torch.softmax(torch.einsum("shd,slhd->shl", q.float(), k) * scale, -1)
    return torch.einsum("shl,slhd->shd", p, v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tensor-cores", action="store_true")
    a = ap.parse_args()
    import flashinfer
    from flashinfer.jit import env as jit_env
    import flashinfer_impl

    aot = jit_env.FLASHINFER_AOT_DIR
    print(f"# flashinfer {flashinfer.__version__} from {os.path.dirname(flashinfer.__file__)}; "
          f"{len(os.listdir(aot)) if aot.is_dir() else 0} prebuilt modules in {aot}; "
          f"JIT cache {jit_env.FLASHINFER_JIT_DIR}")
    impls = [("flashinfer", flashinfer_impl.paged_attention_v2)]
    if a.tensor_cores:
        impls.append(("flashinfer_tc", flashinfer_impl.paged_attention_v2_tc))
    try:
        from paged_attn import paged_attention_v2
        impls.append(("ours", paged_attention_v2))
    except Exception as e:  # noqa: BLE001 - the probe is about FlashInfer
        print(f"# paged_attn not importable ({e!r}); FlashInfer alone")
    print(f"{'impl':14} {'dtype/cache':16} {'head':>4} {'first call s':>12} {'rel err':>9} "
          f"{'host us/call':>12}")
    bad = 0
    cases = [(dtype, d, bs, None) for dtype in (torch.float16, torch.bfloat16)
             for d, bs in ((64, 32), (128, 16), (256, 16))]
    cases.append((torch.float16, 128, 16, "fp8_e4m3"))
    for dtype, d, bs, cache in cases:
        seqs, heads, kvh, length = 4, 32 if d < 256 else 16, 8, 700
        q, kc, vc, bt, sl = case(seqs, heads, kvh, d, bs, length, dtype)
        scale, ks, vs = 1 / math.sqrt(d), 1.0, 1.0
        kw = {}
        if cache:
            ks, vs = 0.02, 0.03
            kc, vc, kref, vref = fp8_cache(kc, vc, torch.float8_e4m3fn, ks, vs)
            kw = {"kv_cache_dtype": cache, "k_scale": ks, "v_scale": vs}
            ref = reference(q, kref, vref, bt, length, scale)
        else:
            ref = reference(q, kc, vc, bt, length, scale)
        label = str(dtype)[6:] + ("/" + cache if cache else "")
        parts = -(-length // 512)
        for name, fn in impls:
            if cache and name.endswith("_tc"):
                continue
            out = torch.full_like(q, float("nan"))
            es = torch.empty(seqs, heads, parts, device="cuda")
            ml, tmp = torch.empty_like(es), torch.empty(seqs, heads, parts, d, device="cuda")
            call = lambda: fn(out, es, ml, tmp, q, kc, vc, kvh, scale, bt, sl, bs, length,
                              None, **kw)
            t0 = time.perf_counter()
            try:
                call()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{name:14} {label:16} {d:4} failed: {e!r}"[:300])
                bad += 1
                continue
            first = time.perf_counter() - t0
            err = ((out.float() - ref).norm() / ref.norm()).item()
            bad += not (err < 2e-2)
            for _ in range(20):
                call()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(200):
                call()
            host = (time.perf_counter() - t0) / 200 * 1e6
            torch.cuda.synchronize()
            print(f"{name:14} {label:16} {d:4} {first:12.3f} {err:9.2e} {host:12.1f}",
                  flush=True)
    jit = jit_env.FLASHINFER_JIT_DIR
    built = sorted(os.listdir(jit)) if jit.is_dir() else []
    print(f"# modules JIT-built in this run (not prebuilt): {len(built)} {built}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
