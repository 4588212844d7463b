#!/usr/bin/env python3
"""Checks bundles directly on a GPU, without the runtime: loads a bundle's
PTX with CuPy (driver JIT), launches its kernels the way the manifest says,
and compares against the tests' float64 reference (pa_testlib.reference)
on the same inputs. A development tool and a cross-check of the runtime's
e2e tests.

Usage: gpu_check.py --library DIR [--filter SUBSTR] [--seed N]
"""
import argparse
import glob
import math
import os
import sys

import cupy
import numpy as np
import torch


def import_testlib():
    """pa_testlib (the inputs and the float64 reference the tests use)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "test", "Integration", "Python"))
    import pa_testlib
    return pa_testlib


T = import_testlib()

TORCH = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
BOUND = {"f16": 5e-3, "bf16": 1e-2, "f32": 1e-4}


def read_manifest(path):
    m = {"kernel": {}, "dir": os.path.dirname(path)}
    for line in open(path):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "kernel":
            m["kernel"][f[1]] = (f[2], int(f[4]))
        elif f[0] in ("params", "grid"):
            continue
        else:
            m[f[0]] = f[1]
    return m


def ptr(t):
    return np.uint64(t.data_ptr())


def run(m, mod, q, kc, vc, bt, sl, scale, part_tokens, max_parts, fixed):
    S, H, D = q.shape
    KVH = kc.shape[1]
    grp = H // KVH
    hp = int(m["heads_per_program"])
    tiles = (grp + hp - 1) // hp
    out = torch.full_like(q, float("nan"))
    es = torch.full((S, H, max_parts), float("nan"), device="cuda")
    ml = torch.full_like(es, float("nan"))
    tmp = torch.full((S, H, max_parts, D), float("nan"), device="cuda")
    nparts = max_parts if fixed else (int(sl.max()) + part_tokens - 1) // part_tokens
    args = (ptr(q), ptr(kc), ptr(vc), ptr(bt), ptr(sl), ptr(out), ptr(es), ptr(ml), ptr(tmp),
            np.float32(scale), np.int32(bt.shape[1]), np.int32(max_parts), np.int32(part_tokens),
            np.int32(KVH), np.int32(grp))
    if nparts == 1:
        name, threads = m["kernel"]["onepass"]
        mod.get_function(name)((1, KVH * tiles, S), (threads,), args)
    else:
        name, threads = m["kernel"]["partition"]
        mod.get_function(name)((nparts, KVH * tiles, S), (threads,), args)
        name, threads = m["kernel"]["reduce"]
        mod.get_function(name)(((H + 3) // 4, S), (threads,),
                               (ptr(out), ptr(es), ptr(ml), ptr(tmp), ptr(sl), np.int32(H),
                                np.int32(max_parts), np.int32(part_tokens)))
    torch.cuda.synchronize()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    passed = failed = 0
    for path in sorted(glob.glob(os.path.join(a.library, "*.manifest"))):
        if a.filter not in path:
            continue
        m = read_manifest(path)
        mod = cupy.RawModule(path=os.path.join(m["dir"], m["ptx"]))
        dtype = TORCH[m["dtype"]]
        D, bs, hp = int(m["head_size"]), int(m["block_size"]), int(m["heads_per_program"])
        step = int(m["token_step"])
        cases = [  # (S, H, KVH, lens, part_tokens, fixed)
            (3, hp, 1, [1, 37, 300], 512, False),
            (2, 2 * hp, 2, [1000, 2049], 512, False),
            (2, max(1, hp - 1) * 2, 2, [777, 5], 256, True),
        ]
        g = torch.Generator().manual_seed(a.seed)
        for ci, (S, H, KVH, lens, pt, fixed) in enumerate(cases):
            q, kc, vc, bt, sl = T.simple_case(torch, g, S, H, KVH, D, bs, lens, dtype,
                                              spare_blocks=3, device="cpu")
            ref = T.reference(q, kc, vc, bt, sl, 1 / math.sqrt(D))
            maxp = (max(lens) + pt - 1) // pt + (1 if fixed else 0)
            dev = [t.cuda() for t in (q, kc, vc, bt, sl)]
            out = run(m, mod, *dev, 1 / math.sqrt(D), pt, maxp, fixed).double().cpu()
            err = ((out - ref).norm() / ref.norm()).item()
            ok = math.isfinite(err) and err < BOUND[m["dtype"]]
            passed += ok
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'} {m['name']} case{ci} S={S} H={H} KVH={KVH} "
                  f"lens={lens} part={pt} fixed={fixed} rel_err={err:.2e}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
