#!/usr/bin/env python3
"""Assembles bundles' PTX with ptxas -v and reports registers, shared memory
and spills per kernel; exits non-zero if any kernel spills (but those named
with --allow) or fails.

Usage: check_ptxas.py --ptxas PATH --arch sm_70 [-j N] [--glob PATTERN]
                      [--allow KERNEL ...] FILE.ptx...
Each line: "<bundle> <kernel> regs=N smem=B spill_stores=S spill_loads=L",
then " SPILLS" (or " SPILLS allowed") where it spills.
The last line: "N kernels, M with spills, K failed", with ", A allowed"
after M where --allow matched.
"""
import argparse
import concurrent.futures
import glob
import os
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
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1,
                    help="ptxas processes at once (default: the cores)")
    ap.add_argument("--allow", action="append", default=[], metavar="KERNEL",
                    help="a kernel whose spills are known and accepted (repeatable)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.glob:
        a.files += sorted(glob.glob(a.glob))
    kernels = spilled = allowed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, a.j)) as pool:
        results = pool.map(lambda f: check(a.ptxas, a.arch, f), a.files)
    for path, (rows, err) in zip(a.files, results):
        name = path.rsplit("/", 1)[-1]
        if rows is None:
            failed += 1
            print(f"FAILED {name}: {err}")
            continue
        for r in rows:
            kernels += 1
            spill = r["spill_st"] + r["spill_ld"]
            ok = spill and r["kernel"] in a.allow
            spilled += spill > 0
            allowed += bool(ok)
            print(f"{name} {r['kernel']} regs={r['regs']} smem={r['smem']} "
                  f"stack={r['stack']} spill_stores={r['spill_st']} spill_loads={r['spill_ld']}"
                  + (" SPILLS allowed" if ok else " SPILLS" if spill else ""))
    note = f", {allowed} allowed" if a.allow else ""
    print(f"{kernels} kernels, {spilled} with spills{note}, {failed} failed ({a.arch})")
    sys.exit(1 if spilled > allowed or failed or not kernels else 0)


if __name__ == "__main__":
    main()
