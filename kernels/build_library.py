#!/usr/bin/env python3
"""Builds the kernel library: one bundle (PTX + manifest) per variant and chip.

For every variant of the documented set (kernels/variants.py) this writes a
memref-form decode_v2 op specialised to it and runs

    pa-opt VARIANT.mlir -paged-attn-to-ptx="chip=CHIP heads-per-program=H export-dir=OUT"

so the runtime needs no MLIR. With `--ptxas CHIP=PATH` the bundles of that
chip also carry machine code (SASS): pa-opt assembles each PTX with that
ptxas into a .cubin beside it (docs/bundle-format.md). A chip without one
gets PTX only, and the build says so. Runs the variants in parallel (-j).

Usage: build_library.py --pa-opt PATH --out DIR [--chips sm_70,sm_80,sm_90]
                        [--set library|covering|full] [-j N] [--only SUBSTR]
                        [--ptxas sm_70=PATH ...]
                        [--pass-options "simt-piece-bytes=8 ..."]
"""
import argparse
import concurrent.futures as cf
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants  # noqa: E402


def variant_mlir(v):
    """A memref-form decode_v2 whose types select the variant; the block size
    is dynamic (`?`): the kernels take it at run time."""
    t, d, bs, h = v["dtype"], v["head_size"], "?", v["heads_per_program"]
    c = v.get("cache", t)  # the cache's element type: the query's, or fp8
    x = 16 // variants.BYTES[c]
    tmp = "f32"  # the bundle serves f32 and the query's type (tmp_f32)
    heads, kv = h, 1
    # An _ext variant (ALiBi and soft cap compiled in) is asked for by an op
    # that uses them; their values are run-time parameters of the bundle.
    ext = v.get("ext", False)
    alibi = f" alibi_slopes(%slopes : memref<{heads}xf32>)" if ext else ""
    cap = ", logits_soft_cap = 30.0 : f32" if ext else ""
    # fp8 caches take their scales; their values are run-time parameters.
    scales = " kv_scales(%ks, %vs)" if c != t else ""
    return f"""func.func @variant(%q: memref<?x{heads}x{d}x{t}>, %kc: memref<?x{kv}x{d // x}x{bs}x{x}x{c}>,
    %vc: memref<?x{kv}x{d}x{bs}x{c}>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %slopes: memref<{heads}xf32>, %ks: f32, %vs: f32,
    %out: memref<?x{heads}x{d}x{t}>, %es: memref<?x{heads}x?xf32>, %ml: memref<?x{heads}x?xf32>,
    %tmp: memref<?x{heads}x?x{d}x{tmp}>) {{
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x{heads}x{d}x{t}>,
      memref<?x{kv}x{d // x}x{bs}x{x}x{c}>, memref<?x{kv}x{d}x{bs}x{c}>, memref<?x?xi32>, memref<?xi32>){alibi}{scales}
      outs(%out : memref<?x{heads}x{d}x{t}>)
      workspace(%es, %ml, %tmp : memref<?x{heads}x?xf32>, memref<?x{heads}x?xf32>, memref<?x{heads}x?x{d}x{tmp}>)
      {{scale = 1.0 : f32{cap}}}
  return
}}
"""


def build_one(pa_opt, out, v, chip, extra="", ptxas=None):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(variant_mlir(v))
        src = f.name
    try:
        opts = (f"chip={chip} heads-per-program={v['heads_per_program']} "
                f"warps={variants.warps(v, chip)} export-dir={out} {extra}")
        if ptxas:
            opts += f" ptxas={ptxas}"
        if "cluster" in v:  # the sm_90 twins' cluster kernel
            opts += f" cluster-size={v['cluster']}"
        if "twin_of" in v:  # a declared wide twin (variants.wide_twins)
            opts += f" wide-twin-of=pa_{v['twin_of']}"
        r = subprocess.run([pa_opt, src, f"-paged-attn-to-ptx={opts}", "-o", os.devnull],
                           capture_output=True, text=True)
        return v, chip, r.returncode, r.stderr
    finally:
        os.unlink(src)


def usable_ptxas(pairs, chips):
    """CHIP -> ptxas path for the chips whose ptxas exists; says which chips
    get PTX only."""
    found = {}
    for pair in pairs:
        chip, _, path = pair.partition("=")
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            found[chip] = path
    for chip in chips:
        if chip not in found:
            print(f"note: no ptxas for {chip}: its bundles carry PTX only "
                  f"(JIT-compiled by the driver on first use)")
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pa-opt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chips", default="sm_70,sm_80,sm_90")
    ap.add_argument("--set", default="library", choices=["library", "covering", "full"])
    ap.add_argument("--only", default="")
    ap.add_argument("--pass-options", default="",
                    help="more paged-attn-to-ptx options, for experiments")
    ap.add_argument("--ptxas", action="append", default=[], metavar="CHIP=PATH",
                    help="assemble CHIP's bundles to SASS with this ptxas (repeatable)")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    ptxas = usable_ptxas(a.ptxas, a.chips.split(","))
    todo = [(v, c) for c in a.chips.split(",") for v in variants.variant_set(a.set, c)
            if a.only in variants.name(v, c)]
    start = time.time()
    failed = 0
    with cf.ThreadPoolExecutor(a.j) as pool:
        jobs = pool.map(lambda vc: build_one(a.pa_opt, a.out, *vc, a.pass_options,
                                             ptxas.get(vc[1])), todo)
        for v, chip, rc, err in jobs:
            if rc:
                failed += 1
                print(f"FAILED {variants.name(v, chip)} {chip}:\n{err}", file=sys.stderr)
    print(f"{len(todo) - failed} bundles built, {failed} failed, in {time.time() - start:.1f} s "
          f"-> {a.out}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
