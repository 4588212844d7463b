#!/usr/bin/env python3
"""A short table of a compare.py --json file: TB/s of every implementation,
each peer's ratio to `ours`, and (with --ceiling, on the GPU that ran it) the
read ceiling of each config's K+V bytes (scripts/ceiling.py) with the % of it
that each implementation reached. gqa-b1-L512-like rows (under 10 MB) in µs.

Usage: summarize.py FILE.json [--ceiling] [--base ours]
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("--ceiling", action="store_true")
    ap.add_argument("--base", default="ours")
    a = ap.parse_args()
    with open(a.json) as fh:
        data = json.load(fh)
    rows = data["rows"]
    names = []
    for r in rows:
        for k in r:
            if k.endswith(("_ms", "_err", "_error")):
                n = k.rsplit("_", 1)[0]
                if n not in names:
                    names.append(n)
    read = {}
    if a.ceiling:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        import ceiling
        for r in rows:
            read[r["config"]] = ceiling.read_tbs(r["kv_GB"] * 1e9)
    print(f"# {data.get('device', '?')}, {data.get('dtype', '?')}: TB/s (µs for rows under "
          f"10 MB); 'x' = speed against {a.base} ({a.base}'s time / its time; > 1: faster)"
          + ("; '%r' = % of the read ceiling" if read else ""))
    head = f"{'config':20}" + (f" {'read':>6}" if read else "")
    for n in names:
        head += f" {n:>16}"
    print(head)
    for r in rows:
        small = r["kv_GB"] < 0.01
        line = f"{r['config']:20}"
        if read:
            c = read[r["config"]]
            line += f" {(r['kv_GB'] / c * 1e6 if small else c):6.2f}"
        base = r.get(f"{a.base}_ms")
        for n in names:
            t = r.get(f"{n}_ms")
            if not t:
                line += f" {'-':>16}"
                continue
            cell = f"{t * 1e3:.1f}" if small else f"{r['kv_GB'] / t:.3f}"
            if n != a.base and base:
                cell += f" {base / t:.2f}x"
            if read:
                cell += f" {100 * r['kv_GB'] / t / read[r['config']]:3.0f}%r"
            line += f" {cell:>16}"
        print(line)
    for r in rows:
        for n in names:
            if f"{n}_error" in r:
                print(f"# {r['config']}: {n} failed: {r[f'{n}_error'][:160]}")


if __name__ == "__main__":
    sys.exit(main())
