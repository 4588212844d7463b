#!/usr/bin/env python3
"""Assembles bundles' PTX with ptxas -v and reports registers, shared memory
and spills per kernel; exits non-zero if any kernel spills or fails.

Usage: check_ptxas.py --ptxas PATH --arch sm_70 FILE.ptx... [--table]
Each line: "<bundle> <kernel> regs=N smem=B spill_stores=S spill_loads=L".
The last line: "N kernels, M with spills, K failed".
"""
import argparse
import glob
import re
import subprocess
import sys


def check(ptxas, arch, path):
    r = subprocess.run([ptxas, f"-arch={arch}", "-v", path, "-o", "/dev/null"],
                       capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    rows, cur = [], None
    for line in (r.stdout + r.stderr).splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = {"kernel": m.group(1), "regs": 0, "smem": 0, "spill_st": 0, "spill_ld": 0,
                   "stack": 0}
            rows.append(cur)
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m:
            cur["stack"], cur["spill_st"], cur["spill_ld"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            cur["smem"] = int(m.group(1))
    return rows, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxas", required=True)
    ap.add_argument("--arch", required=True)
    ap.add_argument("--glob", default="", help="a pattern of PTX files (instead of FILEs)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.glob:
        a.files += sorted(glob.glob(a.glob))
    kernels = spilled = failed = 0
    for path in a.files:
        rows, err = check(a.ptxas, a.arch, path)
        name = path.rsplit("/", 1)[-1]
        if rows is None:
            failed += 1
            print(f"FAILED {name}: {err}")
            continue
        for r in rows:
            kernels += 1
            spill = r["spill_st"] + r["spill_ld"]
            spilled += spill > 0
            print(f"{name} {r['kernel']} regs={r['regs']} smem={r['smem']} "
                  f"stack={r['stack']} spill_stores={r['spill_st']} spill_loads={r['spill_ld']}"
                  + (" SPILLS" if spill else ""))
    print(f"{kernels} kernels, {spilled} with spills, {failed} failed ({a.arch})")
    sys.exit(1 if spilled or failed or not kernels else 0)


if __name__ == "__main__":
    main()
