#!/usr/bin/env python3
"""Start-up of the runtime, measured as a new process meets it (a benchmark).

Each measurement runs in a fresh child process with the driver's JIT cache
off (CUDA_CACHE_DISABLE=1), so nothing of an earlier run helps:

  index      pa_context_create, then pa_context_load_library on the whole
             library (every chip's bundles): what loading costs now that it
             only reads the manifests.
  first      torch and CUDA initialised and the inputs on the GPU first; then
             `import paged_attn` -> the first call of a key -> its result on
             the host, checked against the float64 reference. Then the first
             and second call of each further key, and the GPU memory the
             loaded modules take (torch.cuda.mem_get_info before the import
             and after the last call), with the runtime's load statistics.

Usage: PYTHONPATH=runtime/python python3 scripts/startup.py --library DIR
           [--runs 3] [--json FILE]
Prints one table; --json writes every figure.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTLIB = os.path.join(HERE, "..", "test", "Integration", "Python")

# (name, seqs, heads, kv_heads, head_size, block_size, len, dtype, kv_cache_dtype)
KEYS = [
    ("gqa f16 d128 b16", 8, 32, 8, 128, 16, 1000, "float16", None),
    ("mha f16 d128 b16", 8, 32, 32, 128, 16, 1000, "float16", None),
    ("gqa bf16 d128 b16", 8, 32, 8, 128, 16, 1000, "bfloat16", None),
    ("gqa f16 d64 b32", 8, 32, 8, 64, 32, 1000, "float16", None),
    ("gqa f16 d256 b16", 8, 16, 8, 256, 16, 1000, "float16", None),
    ("gqa f16 d128 b8", 8, 32, 4, 128, 8, 1000, "float16", None),
    ("gqa f16 fp8e4m3", 8, 32, 8, 128, 16, 1000, "float16", "fp8_e4m3"),
]


class Stats(ctypes.Structure):
    _fields_ = [("bundles", ctypes.c_size_t), ("modules_loaded", ctypes.c_size_t),
                ("loaded_sass", ctypes.c_size_t), ("loaded_ptx", ctypes.c_size_t),
                ("sass_fallbacks", ctypes.c_size_t)]


def runtime_stats(lib, handle):
    from paged_attn import _capi
    lib.pa_context_library_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(Stats)]
    lib.pa_context_library_stats.restype = _capi.Status
    s = Stats()
    _capi.check(lib.pa_context_library_stats(handle, ctypes.byref(s)), "library_stats")
    return {f: int(getattr(s, f)) for f, _ in Stats._fields_}


def child_index(library):
    from paged_attn import _capi
    lib = _capi.library()
    handle = ctypes.c_void_p()
    t0 = time.perf_counter()
    _capi.check(lib.pa_context_create(0, ctypes.byref(handle)), "pa_context_create")
    t1 = time.perf_counter()
    _capi.check(lib.pa_context_load_library(handle, os.fsencode(library)), "load_library")
    t2 = time.perf_counter()
    manifests = sum(n.endswith(".manifest") for n in os.listdir(library))
    out = {"create_ms": (t1 - t0) * 1e3, "load_library_ms": (t2 - t1) * 1e3,
           "manifests_in_folder": manifests, **runtime_stats(lib, handle)}
    lib.pa_context_destroy(handle)
    return out


def make(key, seed):
    import torch
    import pa_testlib as T
    name, S, H, KVH, D, BS, L, dtype, kv = key
    return T.Case(S, H, KVH, D, BS, [L - 37 * i for i in range(S)], getattr(torch, dtype),
                  seed=seed, kv_cache_dtype=kv, k_scale=0.05 if kv else 1.0,
                  v_scale=0.03 if kv else 1.0)


def timed_call(pa, case):
    import torch
    t0 = time.perf_counter()
    pa.paged_attention_v2(*case.args())
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


def child_first(library):
    import torch
    import pa_testlib as T
    torch.cuda.init()
    cases = [make(k, i) for i, k in enumerate(KEYS)]
    torch.cuda.synchronize()
    free_before = torch.cuda.mem_get_info()[0]
    t0 = time.perf_counter()
    import paged_attn as pa
    t_import = time.perf_counter()
    pa.paged_attention_v2(*cases[0].args())
    cases[0].output.to("cpu")  # the result on the host
    t_first = time.perf_counter()
    rows = [{"key": key[0], "first_ms": timed_call(pa, case), "second_ms": timed_call(pa, case)}
            for key, case in zip(KEYS[1:], cases[1:])]
    torch.cuda.empty_cache()
    free_after = torch.cuda.mem_get_info()[0]
    # Checked after the memory reading: the references allocate too.
    errors = [T.check_close(c.output, c.reference(), c.dtype) for c in cases]
    ctx = pa.ops._contexts[torch.cuda.current_device()]
    return {"import_ms": (t_import - t0) * 1e3, "import_to_first_result_ms": (t_first - t0) * 1e3,
            "further_keys": rows, "max_rel_error": max(errors),
            "gpu_bytes_after_calls": free_before - free_after,
            "device": torch.cuda.get_device_name(), **runtime_stats(ctx._lib, ctx.handle)}


def spawn(mode, library):
    env = dict(os.environ, CUDA_CACHE_DISABLE="1", PA_KERNEL_LIBRARY=library)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [TESTLIB, env.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, __file__, "--child", mode, "--library", library],
                       env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("child %s failed:\n%s%s" % (mode, r.stdout, r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--child", choices=["index", "first"])
    a = ap.parse_args()
    if a.child:
        sys.path.insert(0, TESTLIB)
        fn = child_index if a.child == "index" else child_first
        print(json.dumps(fn(os.path.abspath(a.library))))
        return
    lib = os.path.abspath(a.library)
    index = [spawn("index", lib) for _ in range(a.runs)]
    first = [spawn("first", lib) for _ in range(a.runs)]
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"index": index, "first": first}, f, indent=1)
    print("start-up, CUDA_CACHE_DISABLE=1, %d fresh processes each; %s; library %s "
          "(%d manifests)" % (a.runs, first[0]["device"], lib, index[0]["manifests_in_folder"]))
    print("%-44s %s" % ("pa_context_create ms", " ".join("%8.1f" % r["create_ms"] for r in index)))
    print("%-44s %s" % ("pa_context_load_library ms (index)",
                        " ".join("%8.1f" % r["load_library_ms"] for r in index)))
    print("%-44s %s" % ("import paged_attn ms", " ".join("%8.1f" % r["import_ms"] for r in first)))
    print("%-44s %s" % ("import -> first result ms (%s)" % KEYS[0][0],
                        " ".join("%8.1f" % r["import_to_first_result_ms"] for r in first)))
    for i, key in enumerate(KEYS[1:]):
        print("%-44s %s" % ("first call ms, %s (second)" % key[0],
                            " ".join("%8.1f (%.2f)" % (r["further_keys"][i]["first_ms"],
                                                      r["further_keys"][i]["second_ms"])
                                     for r in first)))
    r = first[0]
    print("modules loaded %d of %d bundles indexed (SASS %d, PTX %d, SASS fallbacks %d); "
          "GPU memory after the calls %.1f MB; max rel. error %.1e"
          % (r["modules_loaded"], r["bundles"], r["loaded_sass"], r["loaded_ptx"],
             r["sass_fallbacks"], r["gpu_bytes_after_calls"] / 1e6,
             max(x["max_rel_error"] for x in first)))


if __name__ == "__main__":
    main()
