#!/usr/bin/env python3
"""Build FlashInfer's paged-decode modules ahead of time, on a machine with no GPU.

FlashInfer compiles its kernels on first use (JIT: ninja + nvcc, minutes per
module). The GPU machine gives a command 10 minutes, so the modules compare.py
needs are built here instead, with this machine's nvcc for sm_90a, and laid
out the way FlashInfer looks for prebuilt ("AOT") modules:
<site>/flashinfer/data/aot/<module name>/<module name>.so. FlashInfer loads such
a module instead of building it (flashinfer/jit/env.py, get_aot_artifacts).

Usage (Python with torch and flashinfer-python importable, CUDA's nvcc):
  build_flashinfer_aot.py OUT_DIR [--dtypes float16,bfloat16] [--heads 64,128,256]
                                  [--fp8-heads 128] [--tensor-cores]
OUT_DIR receives aot/<name>/<name>.so for each module.
"""
import argparse
import os
import pathlib
import shutil
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--heads", default="64,128,256")
    ap.add_argument("--fp8-heads", default="",
                    help="also e4m3 and e5m2 caches (fp16 query) for these head sizes")
    ap.add_argument("--tensor-cores", action="store_true",
                    help="also the tensor-core decode (fa2 prefill kernel), fp16 only")
    ap.add_argument("--arch", default="9.0a")
    a = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="fi-aot-"))
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", a.arch)
    os.environ["FLASHINFER_WORKSPACE_BASE"] = str(work)
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))
    import torch
    from flashinfer.jit.attention import modules as m

    heads = [int(h) for h in a.heads.split(",")]
    specs = []
    for dt in a.dtypes.split(","):
        d = getattr(torch, dt)
        for h in heads:
            specs.append(m.gen_batch_decode_module(d, d, d, torch.int32, h, h, 0, False, False))
    for h in [int(h) for h in a.fp8_heads.split(",") if h]:
        for kv in (torch.float8_e4m3fn, torch.float8_e5m2):
            specs.append(m.gen_batch_decode_module(torch.float16, kv, torch.float16,
                                                   torch.int32, h, h, 0, False, False))
    if a.tensor_cores:  # the fa2 module the wrapper loads (flashinfer/prefill.py)
        for h in heads:
            specs.append(m._gen_batch_prefill_primary_module(
                "fa2", torch.float16, torch.float16, torch.float16, torch.int32, h, h, 0,
                False, False, False))
    out = pathlib.Path(a.out) / "aot"
    for spec in specs:
        dest = out / spec.name / f"{spec.name}.so"
        if dest.exists():
            print(f"have  {spec.name}", flush=True)
            continue
        t = time.time()
        spec.build(verbose=False)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(spec.jit_library_path, dest)
        print(f"built {spec.name} in {time.time() - t:.0f} s "
              f"({dest.stat().st_size / 1e6:.1f} MB)", flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
