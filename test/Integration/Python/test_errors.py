# REQUIRES: python-torch
# RUN: %python %s
#
# Every call the drop-in must refuse raises the right exception type with a
# message naming the argument, what was expected and what was given
# (pa_testlib.refusal_cases: keywords, alibi, fp8 caches and their scales,
# scalars, dtypes, shapes, contiguity, alignment), and the valid variants
# (fp8 ones too) are accepted by the host checks. Runs on real torch
# tensors: on the GPU when there is one (plus the device rules, the
# runtime's errors and the lookup of the library and kernels), else on CPU
# tensors, where only the checks that come before the device rule can run
# and a valid call must stop at "must be a CUDA tensor".

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402

pa = T.import_paged_attn()
GPU = torch.cuda.is_available()
DEV = "cuda" if GPU else "cpu"


def make(shape, dtype, device):
    return torch.zeros(shape, dtype=dtype, device=device)


def make_strided(shape, dtype, device):
    t = torch.zeros(tuple(shape) + (2,), dtype=dtype, device=device)[..., 0]
    assert not t.is_contiguous()
    return t


def make_misaligned(shape, dtype, device):
    n = 1
    for s in shape:
        n *= s
    t = torch.zeros(n + 8, dtype=dtype, device=device)[1:n + 1].view(shape)
    assert t.data_ptr() % 16
    return t


def refused(args, exc, subs):
    T.expect_raises(exc, subs, pa.paged_attention_v2, **args)


def accepted(args):
    if GPU:
        T.check_only(pa, args)
    else:
        T.expect_raises(ValueError, ["must be a CUDA tensor", "cpu"], pa.paged_attention_v2,
                        **args)


def base(**kw):
    return T.baseline(torch, make, DEV, **kw)


# --- GPU only ------------------------------------------------------------------


def mixed_devices():
    a = base()
    a["key_cache"] = a["key_cache"].cpu()
    T.expect_raises(ValueError, ["key_cache is on cpu but query is on cuda:"],
                    pa.paged_attention_v2, **a)
    a = base()
    a["seq_lens"] = a["seq_lens"].cpu()
    T.expect_raises(ValueError, ["seq_lens is on cpu"], pa.paged_attention_v2, **a)
    if torch.cuda.device_count() > 1:
        a = base()
        a["value_cache"] = a["value_cache"].to("cuda:1")
        T.expect_raises(ValueError, ["value_cache is on cuda:1"], pa.paged_attention_v2, **a)


def cuda_scale_tensor():
    # "auto": a CUDA scale is refused (its value could only be checked by a sync).
    T.expect_raises(TypeError, ["k_scale", "synchronise"], pa.paged_attention_v2,
                    **dict(base(), k_scale=torch.ones((), device="cuda")))
    # fp8: a float32 CUDA scale of one element goes to the kernel by address, unread.
    a8 = T.baseline(torch, make, DEV, kv_cache_dtype="fp8")
    c = T.check_only(pa, dict(a8, k_scale=torch.full((), 0.05, device="cuda"),
                              v_scale=torch.full((1,), 0.1, device="cuda")))
    assert c.k_scale_ptr and c.v_scale_ptr and c.kv_cache_dtype == pa._capi.PA_KV_CACHE_FP8_E4M3
    T.expect_raises(ValueError, ["k_scale is a tensor on cpu but query is on cuda:"],
                    pa.paged_attention_v2, **dict(a8, k_scale=torch.full((), 0.05)))
    if torch.cuda.device_count() > 1:
        T.expect_raises(ValueError, ["v_scale is a tensor on cuda:1"], pa.paged_attention_v2,
                        **dict(a8, v_scale=torch.ones((), device="cuda:1")))


def empty_batch_is_a_no_op():
    pa.paged_attention_v2(**base(S=0))  # nothing to launch, no runtime needed


def run_python(code, env_changes):
    env = dict(os.environ)
    env.update(env_changes)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(pa.__path__[0]),
                                                    env.get("PYTHONPATH", "")] if p)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def runtime_library_missing():
    p = run_python("import paged_attn._capi as c; c.library()",
                   {"PA_RUNTIME_LIB": "/nonexistent/libpa_runtime.so"})
    assert p.returncode != 0 and "FileNotFoundError" in p.stderr \
        and "/nonexistent/libpa_runtime.so" in p.stderr, p.stderr


def runtime_present():
    try:
        pa._capi.library()
    except OSError as e:
        raise T.Skip("runtime library not available: %s" % e)


def kernel_library_empty():
    runtime_present()
    with tempfile.TemporaryDirectory() as d:
        p = run_python("import paged_attn; paged_attn.init(0)", {"PA_KERNEL_LIBRARY": d})
    # The runtime (or, if it loads nothing without complaint, the package) refuses it.
    assert p.returncode != 0 and "PagedAttnError" in p.stderr and "pa_context_load_library" \
        in p.stderr and d in p.stderr, p.stderr


def kernel_library_missing():
    p = run_python("import paged_attn; paged_attn.init(0)",
                   {"PA_KERNEL_LIBRARY": "/nonexistent/kernels"})
    assert p.returncode != 0 and "FileNotFoundError" in p.stderr \
        and "/nonexistent/kernels" in p.stderr, p.stderr


def runtime_error_status():
    """A call the runtime itself refuses: PagedAttnError (a RuntimeError) with its message."""
    runtime_present()
    pa.init(torch.cuda.current_device())
    ctx = pa.ops._context(torch.cuda.current_device())
    # Plausible sizes, every pointer null: the runtime must refuse, not launch.
    args = pa._capi.DecodeArgs(pa._capi.PA_F16, pa._capi.PA_F32, 1, 8, 2, 128, 16, 4, 4, 1, 512,
                               64, 0.125)
    msg = T.expect_raises(RuntimeError, ["pa_decode_v2 failed", "PA_ERROR_"], ctx.decode, args,
                          torch.cuda.current_stream().cuda_stream)
    return msg[:120]


def unsupported_variant_status():
    """A head size inside the contract's list that the kernel library may lack is
    PA_ERROR_UNSUPPORTED -> NotImplementedError; if the library has it, it runs."""
    runtime_present()
    c = T.Case(S=1, H=4, KVH=4, D=80, BS=8, lens=[9], dtype=torch.float32, seed=1)
    try:
        pa.paged_attention_v2(*c.args())
    except NotImplementedError as e:
        assert isinstance(e, RuntimeError) and "PA_ERROR_UNSUPPORTED" in str(e), e
        return "refused: %s" % e
    torch.cuda.synchronize()
    ref = T.reference(c.query, c.key_cache, c.value_cache, c.block_tables, c.seq_lens, c.scale)
    return "the library serves it (rel err %.1e)" % T.check_close(c.output, ref, torch.float32)


def body(r):
    for name, args, exc, subs in T.refusal_cases(torch, make, DEV, make_strided, make_misaligned):
        r.run("refuses: " + name, refused, args, exc, subs)
    for name, args in T.accepted_cases(torch, make, DEV):
        r.run("accepts: " + name, accepted, args)
    r.run("runtime library missing -> FileNotFoundError", runtime_library_missing)
    if GPU:
        for fn in (mixed_devices, cuda_scale_tensor, empty_batch_is_a_no_op,
                   kernel_library_missing, kernel_library_empty, runtime_error_status,
                   unsupported_variant_status):
            r.run(fn.__name__, fn)
    else:
        r.skip("device rules, runtime errors", "no CUDA device here")


def main():
    T.Results("paged_attention_v2 refusals on real torch (%s tensors)" % DEV).guarded(body)


if __name__ == "__main__":
    main()
