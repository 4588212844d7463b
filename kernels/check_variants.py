#!/usr/bin/env python3
"""Checks the kernel library's list (kernels/variants.py) against the
compiler's planning rule (KernelPlan.cpp): for every variant of a set, the
name, the partition kernel (mma, wmma or SIMT) and the warps that
variants.py derives must be what `pa-opt -convert-paged-attn-to-gpu=
"... print-plans=true"` plans for the same op and options. One pa-opt run
per (chip, tile, warps), over a module holding all their variants.

Usage: check_variants.py --pa-opt PATH [--chips sm_70,sm_80,sm_90]
                         [--set library|covering|full]
Prints one line per mismatch and "N variants checked, M mismatches (chip)".
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants  # noqa: E402
from build_library import variant_mlir  # noqa: E402

REMARK = re.compile(r"remark: plan (\S+) kind (\S+) warps (\d+)")


def expected(v, chip):
    kind = ("wmma" if variants.uses_wmma(v["dtype"], chip, v["head_size"],
                                         v["heads_per_program"], v.get("cache"))
            else "mma" if variants.uses_mma(v["dtype"], chip, v.get("cache")) else "simt")
    return "pa_" + variants.name(v, chip), kind, variants.warps(v, chip)


def planned(pa_opt, chip, tile, warps, group):
    """The compiler's (name, kind, warps) for each variant of `group`."""
    text = "".join(variant_mlir(v).replace("@variant(", "@v%d(" % i)
                   for i, v in enumerate(group))
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
    try:
        opts = f"chip={chip} heads-per-program={tile} warps={warps} print-plans=true"
        r = subprocess.run([pa_opt, f.name, f"-convert-paged-attn-to-gpu={opts}",
                            "-o", os.devnull], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    plans = [(m.group(1), m.group(2), int(m.group(3))) for m in REMARK.finditer(r.stderr)]
    if r.returncode or len(plans) != len(group):
        sys.exit(f"pa-opt failed for {chip} tile {tile} warps {warps} "
                 f"({len(plans)} plans for {len(group)} ops):\n{r.stderr[-2000:]}")
    return plans


def check(pa_opt, chip, which):
    groups = collections.defaultdict(list)
    for v in variants.variant_set(which, chip):
        groups[(v["heads_per_program"], variants.warps(v, chip))].append(v)
    checked = mismatches = 0
    for (tile, warps), group in sorted(groups.items()):
        for v, got in zip(group, planned(pa_opt, chip, tile, warps, group)):
            checked += 1
            want = expected(v, chip)
            if got != want:
                mismatches += 1
                print(f"MISMATCH {chip}: variants.py {want} != compiler {got}")
    print(f"{checked} variants checked, {mismatches} mismatches ({chip})")
    return mismatches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pa-opt", required=True)
    ap.add_argument("--chips", default="sm_70,sm_80,sm_90")
    ap.add_argument("--set", default="library", choices=["library", "covering", "full"])
    a = ap.parse_args()
    bad = sum(check(a.pa_opt, c, a.set) for c in a.chips.split(","))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
