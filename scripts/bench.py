#!/usr/bin/env python3
"""paged_attn's benchmark: ours against dense SDPA (and the seed's Triton
kernel where triton and the seed file are present), on vLLM's paged layouts,
in one run on the same inputs. Prints TB/s, ms, % of the device-to-device
copy bandwidth measured first and % of the read ceiling: a kernel that only
reads as many bytes as the config's K and V (scripts/ceiling.py); every
implementation is checked against the tests' float64 reference
(test/Integration/Python/pa_testlib.py) before it is timed.

Usage (a CUDA GPU with torch; PYTHONPATH=runtime/python, PA_KERNEL_LIBRARY):
  scripts/bench.py                      the standard configs (docs/performance.md)
  scripts/bench.py --config my=64,32,8,128,16,4096   name=seqs,heads,kv_heads,head,block,len
  scripts/bench.py --sweep              batch x context x group under the partition
                                        rule
  scripts/bench.py --features           the cost of ALiBi, the soft cap, a sliding
                                        window and attention sinks against the plain call
  scripts/bench.py --fp8                fp8 KV caches (e4m3, e5m2) against the 16-bit
                                        cache of the same values
  scripts/bench.py --partitions         every partition count forced (fixed grid) against
                                        the adaptive rule's choice, per config
                                        (--kv-cache-dtype fp8_e4m3: over an fp8 cache)
  scripts/bench.py --spec               several query tokens per sequence (speculative
                                        decoding): q_len 1, 2, 4, 8 against q_len 1
  scripts/bench.py --blocks             every config at block sizes 16, 32, 64, 128
                                        against block 16
  options: --dtype float16|bfloat16, --seed PATH (the seed's file), --json FILE,
           --graph (time every implementation as a CUDA-graph replay of its call)

Bandwidth = bytes of K and V the contexts hold / median time.

Timing is do_bench's: L2 flushed before each call, CUDA events around it.
An eager call's host side (25-73 us a call on the H100 machines of runs R
and S, docs/performance.md) overlaps the flush; where it outlasts the flush and the kernels are
short (batch 1, small grids), it leaks into the time. --graph times the
replay of a CUDA graph of the call instead: the kernels' own time, as an
engine that replays graphs sees it.
"""
import argparse
import importlib.util
import json
import math
import os
import sys

import torch

import ceiling
from paged_attn import _checks, ops, paged_attention_v2


def import_testlib():
    """pa_testlib (the inputs and the float64 reference the tests use)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "test", "Integration", "Python"))
    import pa_testlib
    return pa_testlib


T = import_testlib()

CONFIGS = {  # name: seqs, heads, kv heads, head size, block size, context ("r" = ragged)
    "mha-b64-L1024": (64, 32, 32, 128, 16, 1024),
    "mha-b64-L4096": (64, 32, 32, 128, 16, 4096),
    "gqa-b64-L4096": (64, 32, 8, 128, 16, 4096),
    "gqa-b8-L32768": (8, 32, 8, 128, 16, 32768),
    "gqa-b256-L2048": (256, 32, 8, 128, 16, 2048),
    "d256-b32-L4096": (32, 16, 8, 256, 16, 4096),
    "d64-b64-L4096": (64, 32, 8, 64, 32, 4096),
    "gqa-b1-L512": (1, 32, 8, 128, 16, 512),
    "gqa-b64-ragged8192": (64, 32, 8, 128, 16, "r8192"),
}


# --graph: time each call as the replay of a CUDA graph that captured it.
GRAPH = False


def as_graph(fn):
    """fn captured in a CUDA graph (after warm-up calls on a side stream, so
    the first-use loads happen outside the capture); returns its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def median_ms(fn, rep_ms=200):
    """ceiling.median_ms (do_bench's median, or CUDA events without triton)
    of fn, or with --graph of its graph's replay."""
    return ceiling.median_ms(as_graph(fn) if GRAPH else fn, rep_ms)


def make_case(seqs, heads, kv_heads, d, bs, lens, dtype, seed):
    """pa_testlib.simple_case with one spare block, the caches drawn on the GPU."""
    return T.simple_case(torch, torch.Generator().manual_seed(seed), seqs, heads, kv_heads, d,
                         bs, lens, dtype, spare_blocks=1,
                         cache_generator=torch.Generator(device="cuda").manual_seed(seed))


def dense(kc, vc, bt, length):
    nb, kvh, dx, bs, x = kc.shape
    d = dx * x
    k = kc.permute(0, 3, 1, 2, 4).reshape(nb, bs, kvh, d)
    v = vc.permute(0, 3, 1, 2)
    seqs = bt.shape[0]
    K = k[bt.long()].reshape(seqs, -1, kvh, d).permute(0, 2, 1, 3)[:, :, :length]
    V = v[bt.long()].reshape(seqs, -1, kvh, d).permute(0, 2, 1, 3)[:, :, :length]
    return K.contiguous(), V.contiguous()


def reference(q, kc, vc, bt, sl, scale, **fp8):
    """The tests' float64 reference, on the GPU; fp8: kv_cache_dtype, k_scale, v_scale."""
    return T.reference(q, kc, vc, bt, sl, scale, **fp8)


def lengths(spec, seqs, seed):
    if isinstance(spec, str) and spec.startswith("r"):
        g = torch.Generator().manual_seed(seed)
        return torch.randint(1, int(spec[1:]) + 1, (seqs,), generator=g).tolist()
    return [int(spec)] * seqs


def run_config(name, cfg, dtype, seed_fn, copy_tbs, rows, seed, tmp_dtype=torch.float32):
    seqs, heads, kvh, d, bs, spec = cfg
    lens = lengths(spec, seqs, seed)
    q, kc, vc, bt, sl = make_case(seqs, heads, kvh, d, bs, lens, dtype, seed)
    scale = 1 / math.sqrt(d)
    max_len = max(lens)
    parts = -(-max_len // 512)
    kv_bytes = sum(lens) * kvh * d * 2 * q.element_size()
    ref = reference(q, kc, vc, bt, sl, scale)
    read_tbs = ceiling.read_tbs(kv_bytes)
    row = {"config": name, "kv_GB": kv_bytes / 1e9, "read_ceiling_TBps": read_tbs}

    def timed(label, call, out):
        call()
        torch.cuda.synchronize()
        err = ((out.float() - ref).norm() / ref.norm()).item()
        row[label + "_err"] = err
        if not math.isfinite(err) or err > 2e-2:
            print(f"{name}: {label} WRONG (rel err {err:.2e}); not timed")
            return
        row[label + "_ms"] = median_ms(call)

    def workspace(tmp_dtype):
        es = torch.empty(seqs, heads, parts, device="cuda")
        return es, torch.empty_like(es), torch.empty(seqs, heads, parts, d, dtype=tmp_dtype,
                                                     device="cuda")

    out = torch.full_like(q, float("nan"))
    es, ml, tmp = workspace(tmp_dtype)
    timed("ours", lambda: paged_attention_v2(out, es, ml, tmp, q, kc, vc, kvh, scale, bt, sl,
                                             bs, max_len, None), out)
    out_f = torch.full_like(q, float("nan"))
    timed("ours_fixed", lambda: paged_attention_v2(out_f, es, ml, tmp, q, kc, vc, kvh, scale,
                                                   bt, sl, bs, None, None, fixed_grid=True),
          out_f)
    if seed_fn is not None:
        out_s = torch.full_like(q, float("nan"))
        es_s, ml_s, tmp_s = workspace(dtype)
        timed("seed", lambda: seed_fn(out_s, es_s, ml_s, tmp_s, q, kc, vc, kvh, scale, bt, sl,
                                      bs, max_len, None), out_s)
    if len(set(lens)) == 1:
        K, V = dense(kc, vc, bt, max_len)
        q4 = q[:, :, None, :]
        o = {}
        call = lambda: o.__setitem__("o", torch.nn.functional.scaled_dot_product_attention(
            q4, K, V, scale=scale, enable_gqa=(heads != kvh)))
        call()
        torch.cuda.synchronize()
        row["sdpa_err"] = ((o["o"][:, :, 0].float() - ref).norm() / ref.norm()).item()
        row["sdpa_ms"] = median_ms(call)
        del K, V
    rows.append(row)
    cells = []
    for label in ("ours", "ours_fixed", "seed", "sdpa"):
        t = row.get(label + "_ms")
        if t:
            tbs = row["kv_GB"] / t
            cells.append(f"{label} {tbs:6.3f} TB/s {t:8.4f} ms {100 * tbs / copy_tbs:4.0f}% "
                         f"{100 * tbs / read_tbs:4.0f}%r")
    print(f"{name:22} {row['kv_GB']:7.3f} GB read {read_tbs:6.3f}  " + " | ".join(cells),
          flush=True)
    del q, kc, vc, bt, sl, ref
    torch.cuda.empty_cache()


def sweep(dtype, copy_tbs, rows, max_gb):
    """The partition rule across batch x context x group (head size 128,
    block 16): TB/s, % of the copy bandwidth and % of the read ceiling of
    each point."""
    print(f"\n{'seqs':>5} {'len':>7} {'group':>5}  {'TB/s':>7} {'ms':>9} {'% copy':>6} "
          f"{'% read':>6}")
    for group in (1, 4, 8):
        kvh = 32 // group
        for seqs in (1, 8, 64, 256):
            for length in (512, 2048, 8192, 32768, 131072):
                kv = seqs * length * kvh * 128 * 2 * 2
                if kv > max_gb * 1e9:
                    continue
                q, kc, vc, bt, sl = make_case(seqs, 32, kvh, 128, 16, [length] * seqs, dtype, 7)
                out = torch.empty_like(q)
                parts = -(-length // 512)
                es = torch.empty(seqs, 32, parts, device="cuda")
                ml = torch.empty_like(es)
                tmp = torch.empty(seqs, 32, parts, 128, device="cuda")
                call = lambda: paged_attention_v2(out, es, ml, tmp, q, kc, vc, kvh, 0.088, bt, sl,
                                                  16, length, None)
                t = median_ms(call, rep_ms=50)
                tbs = kv / t / 1e9
                read_tbs = ceiling.read_tbs(kv, rep_ms=50)
                print(f"{seqs:5} {length:7} {group:5}  {tbs:7.3f} {t:9.4f} {100 * tbs / copy_tbs:6.0f}"
                      f" {100 * tbs / read_tbs:6.0f}", flush=True)
                rows.append({"seqs": seqs, "len": length, "group": group, "ms": t, "TBps": tbs,
                             "read_ceiling_TBps": read_tbs})
                del q, kc, vc, bt, sl, es, ml, tmp
                torch.cuda.empty_cache()


def features(dtype, copy_tbs, rows):
    """Each feature's cost on two configs: time against the plain call (the
    window's row also gives the bytes it reads: the last W tokens)."""
    print(f"\n{'config':16} {'call':26} {'ms':>8} {'vs plain':>8}  TB/s of bytes read")
    # gqa-b1-L512 runs the one-pass kernel (the sink joins in its epilogue),
    # the others partitions and the reducer (the sink joins there).
    for name in ("mha-b64-L4096", "gqa-b64-L4096", "gqa-b8-L32768", "gqa-b1-L512"):
        seqs, heads, kvh, d, bs, length = CONFIGS[name]
        q, kc, vc, bt, sl = make_case(seqs, heads, kvh, d, bs, [length] * seqs, dtype, 11)
        slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / heads) for i in range(heads)],
                              device="cuda")
        sinks = torch.linspace(-1.0, 2.0, heads, device="cuda")
        parts = -(-length // 512)
        out = torch.empty_like(q)
        es = torch.empty(seqs, heads, parts, device="cuda")
        ml, tmp = torch.empty_like(es), torch.empty(seqs, heads, parts, d, device="cuda")
        per_token = seqs * kvh * d * 2 * q.element_size()
        plain = None
        for label, alibi, kw, tokens in (
                ("plain", None, {}, length),
                ("alibi", slopes, {}, length),
                ("soft cap 30", None, {"logits_soft_cap": 30.0}, length),
                ("alibi + soft cap", slopes, {"logits_soft_cap": 30.0}, length),
                ("window 1024", None, {"sliding_window": 1024}, 1024),
                ("window 1024 + alibi + cap", slopes,
                 {"sliding_window": 1024, "logits_soft_cap": 30.0}, 1024),
                ("sinks", None, {"sinks": sinks}, length),
                ("sinks + alibi + cap", slopes, {"sinks": sinks, "logits_soft_cap": 30.0},
                 length)):
            if "sliding_window" in kw and kw["sliding_window"] >= length:
                continue
            call = lambda: paged_attention_v2(out, es, ml, tmp, q, kc, vc, kvh, 1 / math.sqrt(d),
                                              bt, sl, bs, length, alibi, **kw)
            t = median_ms(call, rep_ms=100)
            plain = plain or t
            tbs = per_token * tokens / t / 1e9
            print(f"{name:16} {label:26} {t:8.4f} {t / plain:8.3f}  {tbs:6.3f}"
                  f" ({100 * tbs / copy_tbs:.0f}%)", flush=True)
            rows.append({"config": name, "call": label, "ms": t, "vs_plain": t / plain,
                         "TBps": tbs})
        del q, kc, vc, bt, sl
        torch.cuda.empty_cache()


#: --spec's configs: the issue's GQA and MHA batches (batch 64, context 4096).
SPEC_CONFIGS = ("gqa-b64-L4096", "mha-b64-L4096", "gqa-b8-L32768")


def spec_decode(dtype, copy_tbs, rows):
    """Several query tokens per sequence: each q_len's call (every sequence
    q_len tokens, query_start_loc) checked against the float64 reference,
    then timed against the same batch with one token (the plain call);
    TB/s counts the K and V bytes once."""
    print(f"\n{'config':16} {'q_len':>5} {'ms':>8} {'vs q_len 1':>10}  TB/s (K+V once)  rel err")
    for name in SPEC_CONFIGS:
        seqs, heads, kvh, d, bs, length = CONFIGS[name]
        q1, kc, vc, bt, sl = make_case(seqs, heads, kvh, d, bs, [length] * seqs, dtype, 13)
        per_token = seqs * kvh * d * 2 * q1.element_size()
        scale, parts = 1 / math.sqrt(d), -(-length // 512)
        base = None
        for q_len in (1, 2, 4, 8):
            rows_q = seqs * q_len
            q = torch.randn(rows_q, heads, d, device="cuda").to(dtype)
            qsl = torch.arange(0, rows_q + 1, q_len, dtype=torch.int32, device="cuda")
            out = torch.empty_like(q)
            es = torch.empty(rows_q, heads, parts, device="cuda")
            ml, tmp = torch.empty_like(es), torch.empty(rows_q, heads, parts, d, device="cuda")
            kw = {} if q_len == 1 else {"query_start_loc": qsl, "max_query_len": q_len}
            call = lambda: paged_attention_v2(out, es, ml, tmp, q, kc, vc, kvh, scale, bt, sl,
                                              bs, length, None, **kw)
            call()
            err = T.rel_error(out, T.reference(q, kc, vc, bt, sl, scale,
                                               query_start_loc=kw.get("query_start_loc")))
            t = median_ms(call, rep_ms=100)
            base = base or t
            tbs = per_token * length / t / 1e9
            print(f"{name:16} {q_len:5d} {t:8.4f} {t / base:10.3f}  {tbs:6.3f}"
                  f" ({100 * tbs / copy_tbs:.0f}%)  {err:.1e}", flush=True)
            rows.append({"config": name, "q_len": q_len, "ms": t, "vs_q_len_1": t / base,
                         "TBps": tbs, "rel_err": err})
            del q, out, es, ml, tmp
        del q1, kc, vc, bt, sl
        torch.cuda.empty_cache()


def blocks(dtype, copy_tbs, rows, names):
    """Each config at block sizes 16, 32, 64 and 128 (the same contexts in
    pages of each size, one kernel variant: block_size is a run-time
    parameter), each checked against the float64 reference, then timed
    against block 16."""
    print(f"\n{'config':20} {'block':>5} {'ms':>8} {'vs b16':>7} {'TB/s':>7} {'% read':>6}")
    for name in names:
        seqs, heads, kvh, d, _, spec = CONFIGS[name]
        lens = lengths(spec, seqs, 7)
        scale, max_len = 1 / math.sqrt(d), max(lens)
        parts = -(-max_len // 512)
        base = None
        for bs in (16, 32, 64, 128):
            q, kc, vc, bt, sl = make_case(seqs, heads, kvh, d, bs, lens, dtype, 7)
            out = torch.empty_like(q)
            es = torch.empty(seqs, heads, parts, device="cuda")
            ml, tmp = torch.empty_like(es), torch.empty(seqs, heads, parts, d, device="cuda")
            call = lambda: paged_attention_v2(out, es, ml, tmp, q, kc, vc, kvh, scale, bt, sl,
                                              bs, max_len, None)
            call()
            torch.cuda.synchronize()
            ref = reference(q, kc, vc, bt, sl, scale)
            err = ((out.float() - ref).norm() / ref.norm()).item()
            if not math.isfinite(err) or err > 2e-2:
                print(f"{name}: block {bs} WRONG (rel err {err:.2e}); not timed")
                continue
            t = median_ms(call)
            if bs == 16:
                base = t
            vs_b16 = t / base if base else float("nan")  # nan: block 16 was wrong
            nbytes = sum(lens) * kvh * d * 2 * q.element_size()
            tbs = nbytes / t / 1e9
            print(f"{name:20} {bs:5d} {t:8.4f} {vs_b16:7.3f} {tbs:7.3f} "
                  f"{100 * tbs / ceiling.read_tbs(nbytes):6.0f}", flush=True)
            rows.append({"config": name, "block_size": bs, "ms": t, "vs_b16": vs_b16,
                         "TBps": tbs, "rel_err": err})
            del q, kc, vc, bt, sl, out, es, ml, tmp, ref
            torch.cuda.empty_cache()


FP8_NAMES = {torch.float8_e4m3fn: "fp8_e4m3", torch.float8_e5m2: "fp8_e5m2"}


def quantize_fp8(kc, vc, f8, ks=0.02, vs=0.03):
    """The 16-bit caches as fp8 caches of dtype `f8` (value = stored * scale),
    the keys repacked to x = 16 elements per 16 bytes: (k, v, k_scale,
    v_scale), k and v as uint8."""
    nb, kvh, _, bs, _ = kc.shape
    d = vc.shape[2]
    k8 = (kc.float() / ks).to(f8)
    v8 = (vc.float() / vs).to(f8)
    k8 = k8.permute(0, 1, 3, 2, 4).reshape(nb, kvh, bs, d // 16, 16)
    k8 = k8.permute(0, 1, 3, 2, 4).contiguous()
    return k8.view(torch.uint8), v8.view(torch.uint8), ks, vs


def fp8(dtype, copy_tbs, rows, names):
    """fp8 KV caches against the 16-bit cache: the same context quantized
    (value = stored * scale), each checked against the float64 reference of
    its own cache (the fp8 bytes read back and scaled), then timed; TB/s
    counts the bytes read."""
    print(f"\n{'config':20} {'cache':9} {'ms':>8} {'vs 16-bit':>9} {'TB/s':>7} {'% copy':>6} "
          f"{'% read':>6}")
    for name in names:
        seqs, heads, kvh, d, bs, spec = CONFIGS[name]
        lens = lengths(spec, seqs, 5)
        q, kc, vc, bt, sl = make_case(seqs, heads, kvh, d, bs, lens, dtype, 5)
        scale, max_len = 1 / math.sqrt(d), max(lens)
        parts = -(-max_len // 512)
        out = torch.empty_like(q)
        es = torch.empty(seqs, heads, parts, device="cuda")
        ml, tmp = torch.empty_like(es), torch.empty(seqs, heads, parts, d, device="cuda")
        tokens = sum(lens) * kvh * d * 2
        base = None
        for label, f8 in (("16-bit", None), ("fp8_e4m3", torch.float8_e4m3fn),
                          ("fp8_e5m2", torch.float8_e5m2)):
            if f8 is None:
                k, v, kw, ks, vs = kc, vc, {}, 1.0, 1.0
            else:
                k, v, ks, vs = quantize_fp8(kc, vc, f8)
                kw = {"kv_cache_dtype": FP8_NAMES[f8]}
            call = lambda: paged_attention_v2(out, es, ml, tmp, q, k, v, kvh, scale, bt, sl, bs,
                                              max_len, None, k_scale=ks, v_scale=vs, **kw)
            call()
            torch.cuda.synchronize()
            # The reference reads the fp8 bytes back: value = stored * scale.
            ref = reference(q, k, v, bt, sl, scale, kv_cache_dtype=kw.get("kv_cache_dtype"),
                            k_scale=ks, v_scale=vs)
            err = ((out.float() - ref).norm() / ref.norm()).item()
            if not math.isfinite(err) or err > 2e-2:
                print(f"{name}: {label} WRONG (rel err {err:.2e}); not timed")
                continue
            t = median_ms(call)
            base = base or t
            nbytes = tokens * (1 if f8 is not None else q.element_size())
            tbs = nbytes / t / 1e9
            read_tbs = ceiling.read_tbs(nbytes)
            print(f"{name:20} {label:9} {t:8.4f} {t / base:9.3f} {tbs:7.3f} "
                  f"{100 * tbs / copy_tbs:6.0f} {100 * tbs / read_tbs:6.0f}", flush=True)
            rows.append({"config": name, "cache": label, "ms": t, "vs_16bit": t / base,
                         "TBps": tbs, "err": err, "read_ceiling_TBps": read_tbs})
        del q, kc, vc, bt, sl
        torch.cuda.empty_cache()


PARTITION_COUNTS = [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64]


def partitions(dtype, copy_tbs, rows, names, kv_cache_dtype="auto"):
    """The partition study: for each config, the adaptive rule's call, then
    every count p of PARTITION_COUNTS (partitions of at least 256 tokens)
    forced through the fixed grid with partitions of roundup(ceil(L / p), 64)
    tokens. Each launch is checked against the float64 reference first.
    TB/s; the best count is marked. Bundles whose kernels take
    partition_split (docs/runtime.md, "Fixed-grid mode") launch at most p
    there: the adaptive count at the capacity, which may be fewer; the
    table prints the count each plan launched. `kv_cache_dtype` fp8_e4m3 or
    fp8_e5m2: the same contexts quantized (quantize_fp8)."""
    print(f"\n{'config':20} {'call':10} {'p':>3} {'tokens':>6} {'TB/s':>7} {'ms':>8}")
    for name in names:
        seqs, heads, kvh, d, bs, spec = CONFIGS[name]
        lens = lengths(spec, seqs, 3)
        q, kc, vc, bt, sl = make_case(seqs, heads, kvh, d, bs, lens, dtype, 3)
        scale, max_len = 1 / math.sqrt(d), max(lens)
        ks = vs = 1.0
        if kv_cache_dtype != "auto":
            f8 = {n: t for t, n in FP8_NAMES.items()}[kv_cache_dtype]
            kc, vc, ks, vs = quantize_fp8(kc, vc, f8)
        kv = sum(lens) * kvh * d * 2 * kc.element_size()
        fp8_ref = {} if kv_cache_dtype == "auto" else {
            "kv_cache_dtype": kv_cache_dtype, "k_scale": ks, "v_scale": vs}
        ref = reference(q, kc, vc, bt, sl, scale, **fp8_ref)
        most = max(c for c in PARTITION_COUNTS if c == 1 or max_len // c >= 256)
        out = torch.empty_like(q)
        # The workspace holds the most partitions forced; each forced call
        # uses its first p (the kernels index it with max_num_partitions).
        es = torch.empty(seqs, heads, max(most, -(-max_len // 512)), device="cuda")
        ml, tmp = torch.empty_like(es), torch.empty(*es.shape, d, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        results = []
        for p in [None] + [c for c in PARTITION_COUNTS if c <= most]:
            c = _checks.check_call(out, es, ml, tmp, q, kc, vc, kvh, scale, bt, sl, bs,
                                   max_len, None, kv_cache_dtype, ks, vs, {}, p is not None,
                                   None, None)
            a = ops._decode_args(c)
            if p is not None:  # the fixed grid, p partitions of exactly this size
                a.max_num_partitions = p
                a.partition_size = -(-(-(-max_len // p)) // 64) * 64
            ctx = ops._context(c.device_index)
            try:
                plan = ctx.plan(a)
            except Exception as e:  # noqa: BLE001 - a count the variant refuses
                print(f"{name:20} {'p=%d' % p:10} refused: {e}")
                continue
            call = lambda: ctx.decode(a, stream)
            out.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            err = ((out.float() - ref).norm() / ref.norm()).item()
            label = "adaptive" if p is None else "forced"
            if not math.isfinite(err) or err > 2e-2:
                print(f"{name:20} {label:10} p={plan['num_partitions']} WRONG (rel err {err:.2e})")
                continue
            t = median_ms(call, rep_ms=50)
            results.append((kv / t / 1e9, label, plan["num_partitions"], plan["partition_tokens"], t))
            rows.append({"config": name, "call": label, "partitions": plan["num_partitions"],
                         "partition_tokens": plan["partition_tokens"], "ms": t,
                         "TBps": kv / t / 1e9, "err": err,
                         "resident_programs": plan.get("resident_programs")})
        best = max(r[0] for r in results if r[1] == "forced") if results else 0
        for tbs, label, parts, tokens, t in results:
            mark = "  best" if label == "forced" and tbs == best else ""
            print(f"{name:20} {label:10} {parts:3} {tokens:6} {tbs:7.3f} {t:8.4f}{mark}",
                  flush=True)
        del q, kc, vc, bt, sl, ref, out, es, ml, tmp
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--configs", default="", help="comma-separated names of the standard set")
    ap.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    ap.add_argument("--seed", default="", help="the seed's paged_attention_v2_triton.py")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--features", action="store_true")
    ap.add_argument("--fp8", action="store_true")
    ap.add_argument("--partitions", action="store_true")
    ap.add_argument("--blocks", action="store_true")
    ap.add_argument("--kv-cache-dtype", default="auto",
                    choices=["auto", "fp8_e4m3", "fp8_e5m2"],
                    help="with --partitions: the contexts as an fp8 cache")
    ap.add_argument("--spec", action="store_true")
    ap.add_argument("--sweep-max-gb", type=float, default=4.0)
    ap.add_argument("--tmp", default="float32", choices=["float32", "query"],
                    help="tmp_output's dtype in the default table: float32 (the C API's "
                    "default) or the query's (the seed's convention)")
    ap.add_argument("--json", default="")
    ap.add_argument("--graph", action="store_true",
                    help="time each call as the replay of a CUDA graph of it (module doc)")
    a = ap.parse_args()
    global GRAPH
    GRAPH = a.graph
    dtype = getattr(torch, a.dtype)
    seed_fn = None
    if a.seed and ceiling.triton is not None:
        spec = importlib.util.spec_from_file_location("seed_pa_v2", a.seed)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        seed_fn = mod.paged_attention_v2_triton
    props = torch.cuda.get_device_properties(0)
    copy_tbs = ceiling.copy_tbs()
    print(f"# {props.name} sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
          f"torch {torch.__version__}, {a.dtype}; device copy {copy_tbs:.2f} TB/s "
          f"(read + write; 'N%' below is of this); 'read' is the read ceiling of the "
          f"config's K+V bytes, TB/s ('N%r' below is of this; scripts/ceiling.py)")
    rows = []
    if a.sweep:
        sweep(dtype, copy_tbs, rows, a.sweep_max_gb)
    elif a.features:
        features(dtype, copy_tbs, rows)
    elif a.spec:
        spec_decode(dtype, copy_tbs, rows)
    elif a.partitions:
        partitions(dtype, copy_tbs, rows, a.configs.split(",") if a.configs else
                   [n for n in CONFIGS if n != "gqa-b1-L512"], a.kv_cache_dtype)
    elif a.blocks:
        blocks(dtype, copy_tbs, rows, a.configs.split(",") if a.configs else list(CONFIGS))
    elif a.fp8:
        fp8(dtype, copy_tbs, rows, a.configs.split(",") if a.configs else
            [n for n in CONFIGS if n != "gqa-b1-L512"])
    else:
        configs = dict(CONFIGS)
        names = a.configs.split(",") if a.configs else ([] if a.config else list(CONFIGS))
        for c in a.config:  # name=seqs,heads,kv_heads,head,block,len (len "r<max>": ragged)
            name, vals = c.split("=")
            v = vals.split(",")
            configs[name] = tuple(int(x) for x in v[:5]) + (v[5],)
            names.append(name)
        for i, name in enumerate(names):
            run_config(name, configs[name], dtype, seed_fn, copy_tbs, rows, 1000 + i,
                       dtype if a.tmp == "query" else torch.float32)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"device": props.name, "dtype": a.dtype, "copy_TBps": copy_tbs,
                       "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
