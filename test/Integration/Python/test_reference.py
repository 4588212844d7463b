# REQUIRES: cuda-gpu, python-torch
# RUN: %python %s
#
# paged_attn.paged_attention_v2 against a float64 reference on fresh random
# inputs (seed printed; PA_TEST_SEED reproduces a run). The output and the
# workspace are poisoned with NaN before each call, and so are the cache
# slots past each sequence's end and the block-table entries past its last
# block, so an unwritten element or a token read past the end fails.
# Relative error bounds (largest per-sequence ||out - ref|| / ||ref||):
# 5e-3 float16, 1e-2 bfloat16, 1e-4 float32.
#
# Covers: the three dtypes (tmp_output float32 and in the query's dtype);
# head sizes 64, 80, 96, 112, 128, 192, 256; block sizes 8, 16, 32; groups
# 1, 3, 4, 6, 8 and MQA (32 heads, 1 KV head); ragged lengths with 1, exact
# partition and block edges, a 32768-token context; a one-partition batch
# (one-pass path), a 64-sequence batch; workspace and block tables larger
# than needed; fixed-grid mode; a peaked softmax; a non-default stream;
# ALiBi, sliding windows (the tokens before the window hold NaN), the logits
# soft cap and their combinations, with GQA, MHA and MQA, every dtype, head
# sizes 64, 128, 256 and block sizes 8, 16, 32. fp8 KV caches (E4M3 as
# "fp8" and "fp8_e4m3", E5M2) stored as torch.uint8 and as the torch float8
# dtypes, with f16 and bf16 queries, head sizes 64, 128, 256, groups 1, 4, 8,
# scales k 0.05 / v 0.1 as floats and as device tensors, with the features
# combined and in fixed-grid mode; the bounds are the query dtype's (the fp8
# values are exact in the reference, which reads the same bytes). Attention
# sinks alone (one-pass and partitioned), dominant, with every other feature,
# in fixed-grid mode and with an fp8 cache. Blocks of 64 and 128 tokens
# (needs the covering set's bundles; the full library has none). Each case
# runs twice: without the dispatcher, then through it (bitwise the same).

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

pa = T.import_paged_attn()
f16, bf16, f32 = torch.float16, torch.bfloat16, torch.float32


def cases(seed):
    """(name, Case arguments, call options)."""
    g = torch.Generator().manual_seed(seed ^ 0x5EED)
    ragged = lambda n, hi: torch.randint(1, hi + 1, (n,), generator=g).tolist()  # noqa: E731
    L5 = [1, 17, 512, 513, 3000]
    out = []
    for dt in (f16, bf16, f32):
        n = str(dt).replace("torch.", "")
        out += [
            ("%s gqa4 d128 b16" % n, dict(S=5, H=32, KVH=8, D=128, BS=16, lens=L5, dtype=dt), {}),
            ("%s gqa4 d64 b32" % n, dict(S=3, H=16, KVH=4, D=64, BS=32, lens=[1, 100, 1500],
                                         dtype=dt), {}),
            ("%s mha d256 b8" % n, dict(S=2, H=16, KVH=16, D=256, BS=8, lens=[700, 31], dtype=dt),
             {}),
        ]
        if dt is not f32:
            out.append(("%s tmp_output %s" % (n, n),
                        dict(S=4, H=32, KVH=8, D=128, BS=16, lens=[1, 511, 1025, 2600], dtype=dt,
                             tmp_dtype=dt), {}))
    for D in (80, 96, 112, 192):
        out.append(("f16 head %d" % D, dict(S=3, H=8, KVH=2, D=D, BS=16, lens=[1, 200, 1100],
                                            dtype=f16), {}))
    for H, KVH, BS in ((8, 8, 8), (6, 2, 16), (16, 4, 16), (24, 4, 32), (64, 8, 16),
                       (32, 1, 16), (32, 1, 8)):
        out.append(("f16 group %d (%d/%d) b%d" % (H // KVH, H, KVH, BS),
                    dict(S=4, H=H, KVH=KVH, D=128, BS=BS, lens=ragged(4, 2500), dtype=f16), {}))
    out += [
        ("bf16 MQA 32 d64 b32", dict(S=3, H=32, KVH=1, D=64, BS=32, lens=[64, 1, 4000], dtype=bf16),
         {}),
        ("f16 one partition (one-pass)", dict(S=6, H=32, KVH=8, D=128, BS=16,
                                              lens=[1, 2, 15, 16, 17, 512], dtype=f16), {}),
        ("f16 64 seqs ragged <= 4096", dict(S=64, H=32, KVH=8, D=128, BS=16,
                                            lens=ragged(64, 4096), dtype=f16), {}),
        ("f16 long 32768 + 1", dict(S=2, H=32, KVH=8, D=128, BS=16, lens=[32768, 1], dtype=f16),
         {}),
        ("bf16 long 32768, tmp bf16", dict(S=1, H=16, KVH=2, D=128, BS=32, lens=[32768],
                                           dtype=bf16, tmp_dtype=bf16), {}),
        ("f32 long 32767 d256", dict(S=1, H=8, KVH=2, D=256, BS=16, lens=[32767], dtype=f32), {}),
        ("f16 workspace and tables larger than needed",
         dict(S=3, H=16, KVH=4, D=128, BS=16, lens=[1, 900, 1600], dtype=f16, extra_blocks=50,
              extra_table=40, extra_partitions=5), {}),
        ("f16 peaked softmax", dict(S=3, H=16, KVH=4, D=128, BS=16, lens=[3, 700, 5000],
                                    dtype=f16, q_scale=6.0), {}),
        ("f16 fixed grid", dict(S=4, H=32, KVH=8, D=128, BS=16, lens=[1, 513, 2048, 77],
                                dtype=f16, extra_partitions=3), {"fixed_grid": True}),
        ("bf16 fixed grid, max_seq_len None", dict(S=3, H=16, KVH=2, D=64, BS=8,
                                                   lens=[1, 3000, 300], dtype=bf16),
         {"fixed_grid": True, "max_seq_len": None}),
        ("f16 side stream", dict(S=3, H=32, KVH=8, D=128, BS=16, lens=[5, 1000, 2049],
                                 dtype=f16), {"stream": True}),
    ]
    # Features: ALiBi, sliding window, soft cap, alone and together.
    W5 = [1, 17, 700, 1030, 5000]
    for dt in (f16, bf16, f32):
        n = str(dt).replace("torch.", "")
        out += [
            ("%s alibi gqa4 d128 b16" % n, dict(S=5, H=32, KVH=8, D=128, BS=16, lens=W5,
                                                dtype=dt, alibi=True), {}),
            ("%s window 1000 gqa4 d128 b16" % n,
             dict(S=5, H=32, KVH=8, D=128, BS=16, lens=W5, dtype=dt, poison_before=1000),
             {"sliding_window": 1000}),
            ("%s soft cap 30 mha d64 b32" % n, dict(S=3, H=8, KVH=8, D=64, BS=32,
                                                   lens=[1, 600, 2100], dtype=dt, q_scale=30.0),
             {"logits_soft_cap": 30.0}),
        ]
    out += [
        ("f16 alibi + window 100 + cap 50, group 6 d256 b8",
         dict(S=4, H=12, KVH=2, D=256, BS=8, lens=[1, 99, 101, 3000], dtype=f16, alibi=True,
              poison_before=100, q_scale=20.0), {"sliding_window": 100, "logits_soft_cap": 50.0}),
        ("bf16 alibi + cap 20, MQA 32 d64 b16",
         dict(S=3, H=32, KVH=1, D=64, BS=16, lens=[5, 513, 4000], dtype=bf16, alibi=True,
              q_scale=15.0), {"logits_soft_cap": 20.0}),
        ("f16 window 7 (inside one step), group 4 d128 b8",
         dict(S=3, H=16, KVH=4, D=128, BS=8, lens=[3, 7, 2049], dtype=f16, poison_before=7),
         {"sliding_window": 7}),
        ("f16 window 4096 + alibi, 32768-token context, fixed grid",
         dict(S=2, H=32, KVH=8, D=128, BS=16, lens=[32768, 4097], dtype=f16, alibi=True,
              poison_before=4096), {"sliding_window": 4096, "fixed_grid": True}),
        ("f32 window 300 + cap 10, group 2 d128 b32",
         dict(S=3, H=8, KVH=4, D=128, BS=32, lens=[299, 301, 1800], dtype=f32,
              poison_before=300, q_scale=10.0), {"sliding_window": 300, "logits_soft_cap": 10.0}),
        ("f16 window 1 (only the last token)",
         dict(S=3, H=8, KVH=2, D=64, BS=16, lens=[1, 2, 1000], dtype=f16, poison_before=1),
         {"sliding_window": 1}),
    ]
    # Blocks of 64 and 128 tokens (bundles of the covering set: every dtype at
    # head size 128; the largest tile with _ext at d64 b64 / d256 b128).
    out += [
        ("f16 block 64 gqa4 d128", dict(S=4, H=32, KVH=8, D=128, BS=64, lens=[1, 63, 65, 3000],
                                        dtype=f16), {}),
        ("bf16 block 128 gqa4 d128 + sinks + window 200",
         dict(S=3, H=32, KVH=8, D=128, BS=128, lens=[1, 130, 2049], dtype=bf16,
              poison_before=200, sinks=(-2.0, 4.0)), {"sliding_window": 200}),
        ("f32 block 128 gqa4 d128, fixed grid",
         dict(S=3, H=16, KVH=4, D=128, BS=128, lens=[5, 127, 1500], dtype=f32,
              extra_partitions=1), {"fixed_grid": True}),
    ]
    out += sink_cases()
    out += fp8_cases(ragged)
    out += empty_context_cases()
    return out


def empty_context_cases():
    """Sequences of no tokens (seq_len 0), as an engine pads a batch: their
    rows are 0, with or without a sink, and nothing of theirs is read (their
    table rows point at the NaN block). One pass, partitions + reduce, the
    fixed grid, and a batch small enough for the cluster kernel on sm_90."""
    return [
        ("f16 zero-length rows, one pass", dict(S=3, H=32, KVH=8, D=128, BS=16,
                                                lens=[0, 200, 0], dtype=f16), {}),
        ("f16 zero-length rows, partitions + reduce",
         dict(S=4, H=32, KVH=8, D=128, BS=16, lens=[0, 700, 0, 3000], dtype=f16), {}),
        ("bf16 zero-length rows, fixed grid, sinks",
         dict(S=4, H=16, KVH=2, D=64, BS=8, lens=[0, 513, 0, 77], dtype=bf16,
              extra_partitions=2, sinks=(-2.0, 4.0)), {"fixed_grid": True}),
        ("f16 zero-length row, batch 2 (cluster-sized grid)",
         dict(S=2, H=32, KVH=8, D=128, BS=16, lens=[512, 0], dtype=f16), {}),
        ("f32 zero-length rows, SIMT, alibi + window + cap",
         dict(S=3, H=8, KVH=2, D=128, BS=32, lens=[0, 1800, 0], dtype=f32, alibi=True,
              poison_before=300, q_scale=10.0), {"sliding_window": 300,
                                                  "logits_soft_cap": 10.0}),
    ]


def sink_cases():
    """Attention sinks (gpt-oss): per-head logits in [lo, hi] that join the softmax
    denominator. Short batches run the one-pass kernel (the sink joins in its
    epilogue), longer ones partitions and the reducer (the sink joins there, once);
    sinks well above the logits make the sink most of the denominator."""
    L5 = [1, 17, 512, 513, 3000]
    return [
        ("f16 sinks gqa4 d128 b16 (partitions + reduce)",
         dict(S=5, H=32, KVH=8, D=128, BS=16, lens=L5, dtype=f16, sinks=(-2.0, 4.0)), {}),
        ("bf16 sinks mha d64 b32 (one pass)",
         dict(S=3, H=8, KVH=8, D=64, BS=32, lens=[1, 40, 300], dtype=bf16, sinks=(-2.0, 4.0)),
         {}),
        ("f32 sinks MQA 32 d256 b8",
         dict(S=3, H=32, KVH=1, D=256, BS=8, lens=[2, 700, 2100], dtype=f32, sinks=(-1.0, 3.0)),
         {}),
        ("f16 sinks dominant (6..9) group 3 d96 b16",
         dict(S=4, H=12, KVH=4, D=96, BS=16, lens=[1, 3, 200, 1100], dtype=f16,
              sinks=(6.0, 9.0)), {}),
        ("f16 sinks + alibi + window 100 + cap 50, group 6 d256 b8",
         dict(S=4, H=12, KVH=2, D=256, BS=8, lens=[1, 99, 101, 3000], dtype=f16, alibi=True,
              poison_before=100, q_scale=20.0, sinks=(-2.0, 4.0)),
         {"sliding_window": 100, "logits_soft_cap": 50.0}),
        ("bf16 sinks fixed grid, 32768-token context, gqa4 d128 b16",
         dict(S=2, H=32, KVH=8, D=128, BS=16, lens=[32768, 5], dtype=bf16, extra_partitions=2,
              sinks=(-2.0, 4.0)), {"fixed_grid": True}),
        ("f16 fp8_e4m3 sinks + window 300, gqa4 d128 b16, device scales",
         dict(S=3, H=16, KVH=4, D=128, BS=16, lens=[1, 299, 2000], dtype=f16,
              kv_cache_dtype="fp8_e4m3", scales_on_device=(True, True), k_scale=0.05,
              v_scale=0.1, q_scale=15.0, poison_before=300, sinks=(-2.0, 4.0)),
         {"sliding_window": 300}),
    ]


def fp8_cases(ragged):
    """fp8 KV caches: the stored bytes are fp8 values of randn * 2, value = stored *
    scale with scales that are not 1 (a kernel that drops one fails), and q_scale
    15 so that the logits (std about 15 * 2 * 0.05 = 1.5) give a softmax far from
    uniform."""
    sc = dict(k_scale=0.05, v_scale=0.1, q_scale=15.0)
    L5 = [1, 17, 512, 513, 3000]
    out = []
    for kv in ("fp8_e4m3", "fp8_e5m2"):
        for dt in (f16, bf16):
            n = str(dt).replace("torch.", "")
            for D in (64, 128, 256):
                storage = "float8" if D == 128 else "uint8"  # both storage forms
                name = "fp8" if kv == "fp8_e4m3" and D == 64 else kv  # vLLM's alias too
                out.append(("%s %s (%s) gqa4 d%d b16" % (n, name, storage, D),
                            dict(S=5, H=16, KVH=4, D=D, BS=16, lens=L5, dtype=dt,
                                 kv_cache_dtype=name, cache_storage=storage, **sc), {}))
    out += [
        ("f16 fp8_e4m3 gqa8 (32/4) d128 b16 ragged",
         dict(S=6, H=32, KVH=4, D=128, BS=16, lens=ragged(6, 4000), dtype=f16,
              kv_cache_dtype="fp8_e4m3", **sc), {}),
        ("bf16 fp8_e5m2 (float8) mha d128 b16, tmp bf16",
         dict(S=3, H=8, KVH=8, D=128, BS=16, lens=[1, 700, 2049], dtype=bf16, tmp_dtype=bf16,
              kv_cache_dtype="fp8_e5m2", cache_storage="float8", **sc), {}),
        ("f16 fp8 device-tensor scales (k 0-dim, v [1]) gqa4 d128 b16",
         dict(S=4, H=16, KVH=4, D=128, BS=16, lens=[1, 513, 1500, 77], dtype=f16,
              kv_cache_dtype="fp8", scales_on_device=(True, True), **sc), {}),
        ("bf16 fp8_e5m2 (float8) k_scale on the device, v_scale a float, d256",
         dict(S=3, H=16, KVH=4, D=256, BS=16, lens=[2, 600, 1100], dtype=bf16,
              kv_cache_dtype="fp8_e5m2", cache_storage="float8", scales_on_device=(True, False),
              **sc), {}),
        ("f16 fp8_e4m3 alibi + window 100 + cap 5, gqa4 d128 b16, device scales",
         dict(S=4, H=16, KVH=4, D=128, BS=16, lens=[1, 99, 101, 3000], dtype=f16, alibi=True,
              poison_before=100, kv_cache_dtype="fp8_e4m3", scales_on_device=(True, True),
              **dict(sc, q_scale=30.0)), {"sliding_window": 100, "logits_soft_cap": 5.0}),
        ("bf16 fp8_e5m2 alibi + cap 5, gqa4 d64 b16",
         dict(S=3, H=16, KVH=4, D=64, BS=16, lens=[5, 513, 2000], dtype=bf16, alibi=True,
              kv_cache_dtype="fp8_e5m2", **dict(sc, q_scale=30.0)), {"logits_soft_cap": 5.0}),
        ("f16 fp8_e4m3 fixed grid, gqa4 d128 b16",
         dict(S=4, H=16, KVH=4, D=128, BS=16, lens=[1, 513, 2048, 77], dtype=f16,
              extra_partitions=3, kv_cache_dtype="fp8_e4m3", **sc), {"fixed_grid": True}),
        ("bf16 fp8_e5m2 (float8) fixed grid, max_seq_len None, device scales",
         dict(S=3, H=16, KVH=4, D=128, BS=16, lens=[1, 3000, 300], dtype=bf16,
              kv_cache_dtype="fp8_e5m2", cache_storage="float8", scales_on_device=(True, True),
              **sc), {"fixed_grid": True, "max_seq_len": None}),
        ("f16 fp8_e4m3 long 32768 + 1, gqa4 d128 b16",
         dict(S=2, H=16, KVH=4, D=128, BS=16, lens=[32768, 1], dtype=f16,
              kv_cache_dtype="fp8_e4m3", **sc), {}),
    ]
    return out


def run_case(seed, spec, opts):
    c = T.Case(seed=seed, **spec)
    opts = dict(opts)
    side = opts.pop("stream", False)
    msl = opts.pop("max_seq_len", "auto")
    if c.sinks is not None:
        opts["sinks"] = c.sinks
    ref = c.reference(opts.get("sliding_window"), opts.get("logits_soft_cap"))
    if side:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            pa.paged_attention_v2(*c.args(msl), **opts)
        s.synchronize()
    else:
        pa.paged_attention_v2(*c.args(msl), **opts)
        torch.cuda.synchronize()
    err = T.check_close(c.output, ref, c.dtype)
    first = c.output.clone()
    # Twice on the same buffers: no state kept between calls. The first call
    # skipped the dispatcher (plain eager mode); the second, under a torch
    # function mode, goes through it: the same kernels, the same bits.
    c.poison()
    with _PassThrough():
        pa.paged_attention_v2(*c.args(msl), **opts)
    torch.cuda.synchronize()
    err2 = T.check_close(c.output, ref, c.dtype, "second call")
    assert torch.equal(first, c.output), "the dispatched call's output differs from the first"
    return "rel err %.2e / %.2e  (%s)" % (err, err2, c.describe())


class _PassThrough(TorchFunctionMode):
    """A torch function mode that only calls what it is given."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def skips_the_dispatcher(seed):
    c = T.Case(seed=seed, S=2, H=8, KVH=2, D=128, BS=16, lens=[5, 600], dtype=f16)
    args = pa._op.op_args(*c.args(), "auto", 1.0, 1.0, {}, False, None, None)
    assert pa._op.dispatch_free(args), "a plain eager call on CUDA tensors is dispatched"
    with _PassThrough():
        assert not pa._op.dispatch_free(args)
    return "plain eager: direct; under a torch function mode: dispatched"


def body(r):
    seed = T.test_seed_value()
    print("# %s" % pa.init(torch.cuda.current_device()), flush=True)
    r.run("a plain eager call skips the dispatcher", skips_the_dispatcher, seed)
    only = os.environ.get("PA_TEST_ONLY", "")  # run the cases whose name has it
    for i, (name, spec, opts) in enumerate(cases(seed)):
        if only in name:
            r.run(name, run_case, seed + i, spec, opts)
        torch.cuda.empty_cache()


def main():
    T.Results("paged_attention_v2 vs a float64 reference").guarded(body)


if __name__ == "__main__":
    main()
