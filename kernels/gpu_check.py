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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from variants import BLOCK_SIZES  # noqa: E402  the block sizes a bundle serves


def read_manifest(path):
    m = {"kernel": {}, "dir": os.path.dirname(path)}
    for line in open(path):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "kernel":
            m["kernel"][f[1]] = (f[2], int(f[4]))
        elif f[0] in ("params", "grid"):
            m.setdefault(f[0], {})[f[1]] = f[2:]
        else:
            m[f[0]] = f[1]
    return m


#: Parameters passed as 64-bit pointers and as f32; every other one is i32.
POINTERS = {"query", "key_cache", "value_cache", "block_tables", "seq_lens", "output",
            "exp_sums", "max_logits", "tmp_output", "alibi_slopes", "k_scale_ptr",
            "v_scale_ptr", "sinks", "query_start_loc"}
FLOATS = {"scale", "logits_soft_cap", "k_scale", "v_scale"}


def kernel_args(m, role, values):
    """The kernel's arguments in its manifest's `params` order (features off:
    flags 0, stand-in pointers, scales 1)."""
    out = []
    for name in m["params"][role]:
        v = values.get(name, 1.0 if name in ("k_scale", "v_scale") else 0)
        out.append(np.uint64(v) if name in POINTERS else
                   np.float32(v) if name in FLOATS else np.int32(v))
    return tuple(out)


def grid(m, role, values):
    """The manifest's grid formula for `role` with the launch's symbols."""
    env = dict(values, ceil=math.ceil)
    dims = [int(eval(f, {"__builtins__": {}}, env)) for f in m["grid"][role]]
    return tuple(dims + [1] * (3 - len(dims)))


def run(m, mod, q, kc, vc, bt, sl, scale, part_tokens, max_parts, fixed):
    S, H, D = q.shape
    KVH = kc.shape[1]
    grp = H // KVH
    out = torch.full_like(q, float("nan"))
    es = torch.full((S, H, max_parts), float("nan"), device="cuda")
    ml = torch.full_like(es, float("nan"))
    tmp = torch.full((S, H, max_parts, D), float("nan"), device="cuda")
    nparts = max_parts if fixed else (int(sl.max()) + part_tokens - 1) // part_tokens
    values = {"query": q.data_ptr(), "key_cache": kc.data_ptr(), "value_cache": vc.data_ptr(),
              "block_tables": bt.data_ptr(), "seq_lens": sl.data_ptr(),
              "output": out.data_ptr(), "exp_sums": es.data_ptr(),
              "max_logits": ml.data_ptr(), "tmp_output": tmp.data_ptr(),
              # stand-ins for pointers the kernels do not read with their flags off
              "alibi_slopes": es.data_ptr(), "sinks": es.data_ptr(),
              "query_start_loc": sl.data_ptr(), "k_scale_ptr": es.data_ptr(),
              "v_scale_ptr": es.data_ptr(),
              "scale": scale, "max_blocks_per_seq": bt.shape[1], "block_size": kc.shape[3],
              "max_num_partitions": max_parts, "partition_tokens": part_tokens,
              "num_kv_heads": KVH, "group_size": grp, "num_heads": H,
              "num_partitions": nparts, "num_seqs": S, "query_slots": 1,
              "heads_per_program": int(m["heads_per_program"])}
    for role in (["onepass"] if nparts == 1 else ["partition", "reduce"]):
        name, threads = m["kernel"][role]
        mod.get_function(name)(grid(m, role, values), (threads,),
                               kernel_args(m, role, values))
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
        D, hp = int(m["head_size"]), int(m["heads_per_program"])
        # 'any': the kernels take block_size at run time; each case cycles
        # through the block sizes a call may use.
        sizes = BLOCK_SIZES if m["block_size"] == "any" else [int(m["block_size"])]
        cases = [  # (S, H, KVH, lens, part_tokens, fixed)
            (3, hp, 1, [1, 37, 300], 512, False),
            (2, 2 * hp, 2, [1000, 2049], 512, False),
            (2, max(1, hp - 1) * 2, 2, [777, 5], 256, True),
        ]
        cases = [c + (bs,) for c in cases for bs in sizes]
        g = torch.Generator().manual_seed(a.seed)
        for ci, (S, H, KVH, lens, pt, fixed, bs) in enumerate(cases):
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
                  f"b{bs} lens={lens} part={pt} fixed={fixed} rel_err={err:.2e}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
