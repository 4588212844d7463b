#!/usr/bin/env python3
"""Floor of a one-sequence decode call under compare.py's measure.

Times, on the same inputs in one process (median of triton's do_bench, the L2
flushed before each call): our call, dense SDPA, the seed (with --seed), a
one-element add and a copy of the call's K and V bytes, then the probes of
gather_probes.cu: kernels that read the same K and V tiles through the block
table, split over S programs per KV head or staged through shared memory, and
do no attention arithmetic. What a probe takes bounds any kernel of its shape
from below (docs/history/performance-journal.md, section F).

Usage (a CUDA GPU with torch, triton and nvcc; PYTHONPATH and PA_KERNEL_LIBRARY as
for scripts/bench.py):
  scripts/floor/b1_floor.py [--seed PATH] [--rounds N] [--kv-heads 8] [--length 512]
"""
import argparse
import ctypes
import importlib.util
import math
import os
import shutil
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # scripts/: bench.py's inputs and reference
import bench  # noqa: E402
from paged_attn import paged_attention_v2  # noqa: E402

HEADS_PER_KV, HEAD, BLOCK = 4, 128, 16  # the probes' tile: 4 KB of K and of V per block


def build_probes(workdir):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    major, minor = torch.cuda.get_device_capability()
    lib = os.path.join(workdir, "gather_probes.so")
    subprocess.run([nvcc, "-O3", f"-arch=sm_{major}{minor}", "-shared", "-Xcompiler", "-fPIC",
                    "-o", lib, os.path.join(HERE, "gather_probes.cu")], check=True)
    return ctypes.CDLL(lib), major >= 9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", default="", help="the seed's paged_attention_v2_triton.py")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--length", type=int, default=512, help="tokens, a multiple of 64")
    a = ap.parse_args()
    kvh, length = a.kv_heads, a.length
    heads, blocks = kvh * HEADS_PER_KV, length // BLOCK
    if length % 64 or blocks > 256:
        ap.error("--length: a multiple of 64, at most 4096")
    q, kc, vc, bt, sl = bench.make_case(1, heads, kvh, HEAD, BLOCK, [length], torch.float16, 1)
    scale = 1 / math.sqrt(HEAD)
    parts = -(-length // 512)
    out = torch.empty_like(q)
    es = torch.empty(1, heads, parts, device="cuda")
    ml = torch.empty_like(es)
    tmp = torch.empty(1, heads, parts, HEAD, device="cuda")
    ours = lambda: paged_attention_v2(out, es, ml, tmp, q, kc, vc, kvh, scale, bt, sl, BLOCK,
                                      length, None)
    ours()
    ref = bench.reference(q, kc, vc, bt, sl, scale)
    err = ((out.float() - ref).norm() / ref.norm()).item()
    if not err < 5e-3:
        raise SystemExit(f"ours: relative error {err:.1e} against the float32 reference")
    K, V = bench.dense(kc, vc, bt, length)
    qd = q.view(1, heads, 1, HEAD)
    sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(qd, K, V, scale=scale,
                                                                    enable_gqa=True)
    peers = [("ours", ours), ("dense SDPA", sdpa)]
    if a.seed:
        spec = importlib.util.spec_from_file_location("seed_pa_v2", a.seed)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        tmp_q = torch.empty(1, heads, parts, HEAD, device="cuda", dtype=q.dtype)
        out_s = torch.empty_like(q)
        peers.append(("seed", lambda: mod.paged_attention_v2_triton(
            out_s, es, ml, tmp_q, q, kc, vc, kvh, scale, bt, sl, BLOCK, length, None)))
    one = torch.zeros(1, device="cuda")
    kv_bytes = 2 * length * kvh * HEAD * q.element_size()
    src = torch.empty(kv_bytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    peers += [("1-element add_", lambda: one.add_(1)),
              (f"copy_ of the K/V bytes ({kv_bytes >> 10} KB)", lambda: dst.copy_(src))]

    with tempfile.TemporaryDirectory() as workdir:
        so, clusters = build_probes(workdir)
        part = torch.zeros(kvh * 32 * 520, device="cuda")
        sink = torch.zeros(kvh * 512, device="cuda")
        counters = torch.zeros(kvh, dtype=torch.int32, device="cuda")
        p = lambda t: ctypes.c_void_p(t.data_ptr())
        stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        probes = []
        for fuse in (0, 1):
            for S in (1, 2, 4, 8, 16, 32):
                if blocks % S == 0:
                    name = f"gather S={S:2d}, " + ("last program combines" if fuse else
                                                  "partials only (no answer)")
                    probes.append((name, lambda S=S, fuse=fuse: so.probe_gather(
                        p(kc), p(vc), p(bt), kvh, blocks, S, fuse, p(part), p(sink), p(counters),
                        stream())))
        if clusters:
            for S in (1, 2, 4, 8):
                if blocks % S == 0:
                    probes.append((f"cluster S={S}, rank 0 combines (DSMEM)",
                                   lambda S=S: so.probe_cluster(p(kc), p(vc), p(bt), kvh, blocks,
                                                                S, p(sink), stream())))
        for R in (1, 2, 4, 6):
            probes.append((f"staged S=1, cp.async ring {R} x 32 KB",
                           lambda R=R: so.probe_staged(p(kc), p(vc), p(bt), kvh, blocks, R,
                                                       p(sink), stream())))
        for name, fn in probes:
            rc = fn()
            if rc != 0:
                raise SystemExit(f"{name}: launch failed ({rc})")
        torch.cuda.synchronize()

        props = torch.cuda.get_device_properties(0)
        print(f"# {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}; "
              f"1 x {length} tokens, {heads} heads / {kvh} KV heads, d{HEAD} b{BLOCK} f16; "
              f"ours rel. error {err:.1e}")
        results = {}
        for _ in range(a.rounds):
            for name, fn in peers + probes:
                results.setdefault(name, []).append(bench.median_ms(fn) * 1e3)
        torch.cuda.synchronize()
        if int(counters.sum()) != 0:
            raise SystemExit("gather: a counter was left set")
    for name, times in results.items():
        print(f"{name:48s} " + " ".join(f"{t:7.2f}" for t in times) + "  us")


if __name__ == "__main__":
    main()
