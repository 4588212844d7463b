# REQUIRES: cuda-gpu, python-torch
# RUN: %python %s
#
# Several query tokens per sequence (speculative decoding):
# paged_attention_v2(..., query_start_loc=, max_query_len=) against the
# float64 reference, where token j of a sequence's q_len attends causally to
# its first seq_lens - q_len + j + 1 cache tokens. The output and workspace
# are poisoned with NaN, as are the cache slots past each sequence's end.
# Covers: q_len 1 to 16 uniform; ragged counts with 0 and 1; the spec-decode
# shapes 1+3 and 1+7; every dtype; GQA, MHA and MQA; ALiBi, the sliding
# window (relative to each token's position), the soft cap and sinks
# together; fixed-grid mode; an fp8 cache; a CUDA-graph replay with new
# lengths and query counts; and the refusals of bad query_start_loc
# arguments.

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402

pa = T.import_paged_attn()
f16, bf16, f32 = torch.float16, torch.bfloat16, torch.float32


class Spec:
    """A Case's sequences with q_lens[s] query tokens each: its own query,
    output and workspace of sum(q_lens) rows."""

    def __init__(self, q_lens, max_query_len, **case):
        self.c = c = T.Case(**case)
        self.q_lens, self.max_query_len = list(q_lens), max_query_len
        assert all(q <= L for q, L in zip(q_lens, c.lens))
        starts = [0]
        for q in q_lens:
            starts.append(starts[-1] + q)
        R = starts[-1]
        self.qsl = torch.tensor(starts, dtype=torch.int32, device="cuda")
        g = torch.Generator().manual_seed(len(q_lens) * 131 + R)
        self.query = torch.randn(R, c.H, c.D, generator=g).to(c.dtype).cuda()
        self.output = torch.full((R, c.H, c.D), float("nan"), dtype=c.dtype, device="cuda")
        self.exp_sums = torch.full((R, c.H, c.P), float("nan"), dtype=f32, device="cuda")
        self.max_logits = torch.full_like(self.exp_sums, float("nan"))
        self.tmp_output = torch.full((R, c.H, c.P, c.D), float("nan"), dtype=c.tmp_dtype,
                                     device="cuda")

    def args(self, max_seq_len="auto"):
        c = self.c
        a = list(c.args(max_seq_len))
        a[:5] = [self.output, self.exp_sums, self.max_logits, self.tmp_output, self.query]
        return a

    def call(self, fixed_grid=False, **features):
        c = self.c
        pa.paged_attention_v2(*self.args(None if fixed_grid else "auto"), sinks=c.sinks,
                              query_start_loc=self.qsl, max_query_len=self.max_query_len,
                              fixed_grid=fixed_grid, **features)
        torch.cuda.synchronize()
        return self.output

    def reference(self, **features):
        c = self.c
        return T.reference(self.query, c.key_cache, c.value_cache, c.block_tables, c.seq_lens,
                           c.scale, c.alibi_slopes, features.get("sliding_window"),
                           features.get("logits_soft_cap"), c.kv_cache_dtype, c.k_scale,
                           c.v_scale, c.sinks, query_start_loc=self.qsl)


def run(q_lens, max_query_len, case, fixed_grid=False, **features):
    s = Spec(q_lens, max_query_len, **case)
    out = s.call(fixed_grid, **features)
    return "rel err %.2e" % T.check_close(out, s.reference(**features), case["dtype"])


ALL = dict(sliding_window=300, logits_soft_cap=20.0)


def main():
    r = T.Results("multi-token")
    gqa = dict(S=4, H=32, KVH=8, D=128, BS=16, lens=[900, 17, 2600, 4100], dtype=f16)
    for q in (1, 2, 3, 4, 5, 8, 12, 16):
        r.run("uniform q_len %d gqa4 f16" % q, run, [q] * 4, q, gqa)
    r.run("ragged 0..8 with 0 and 1", run, [0, 1, 8, 5], 8, gqa)
    r.run("all sequences empty but one", run, [0, 0, 3, 0], 4, gqa)
    r.run("max_query_len above every q_len", run, [2, 1, 2, 2], 16, gqa)
    for dt in (f16, bf16, f32):
        n = str(dt).replace("torch.", "")
        spec = dict(S=3, H=16, KVH=2, D=64, BS=32, lens=[64, 700, 1500], dtype=dt)
        r.run("1+3 %s gqa8 d64 b32" % n, run, [4, 4, 4], 4, spec)
        mha = dict(S=3, H=8, KVH=8, D=256, BS=8, lens=[9, 1000, 520], dtype=dt)
        r.run("1+7 %s mha d256 b8" % n, run, [8, 8, 8], 8, mha)
    # Every feature on a key with an _ext bundle in the covering set too.
    every = dict(S=4, H=16, KVH=2, D=64, BS=32, lens=[900, 17, 2600, 4100], dtype=f16,
                 alibi=True, sinks=(-2.0, 4.0))
    r.run("1+3 every feature", run, [4, 2, 4, 0], 4, every, **ALL)
    r.run("1+7 every feature, fixed grid", run, [8, 1, 8, 3], 8, every, fixed_grid=True,
          **ALL)
    r.run("mqa 32 q_len 16 window", run, [16, 16], 16,
          dict(S=2, H=32, KVH=1, D=128, BS=16, lens=[40, 3000], dtype=bf16), sliding_window=10)
    r.run("fp8 e4m3 1+3", run, [4, 4, 1], 4,
          dict(S=3, H=32, KVH=8, D=128, BS=16, lens=[100, 600, 2000], dtype=f16,
               kv_cache_dtype="fp8", k_scale=0.05, v_scale=0.1))
    r.run("64 sequences ragged q_len <= 4", run,
          [i % 5 for i in range(64)], 4,
          dict(S=64, H=32, KVH=8, D=128, BS=16, lens=[300 + 61 * i for i in range(64)],
               dtype=f16))
    r.run("CUDA graph replay, new lengths and counts", graph_replay)
    r.run("refusals", refusals)
    r.finish()


def graph_replay():
    """A fixed-grid call captured once, replayed with other seq_lens and
    query_start_loc values (same max_query_len)."""
    case = dict(S=3, H=32, KVH=8, D=128, BS=16, lens=[2000, 2000, 2000], dtype=f16)
    s = Spec([4, 4, 4], 4, **case)
    c = s.c
    s.call(fixed_grid=True)  # loads the module before the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        pa.paged_attention_v2(*s.args(None), query_start_loc=s.qsl, max_query_len=4,
                              fixed_grid=True)
    errs = []
    for lens, q_lens in (([1500, 7, 1999], [4, 1, 0]), ([4, 2000, 600], [3, 4, 2])):
        c.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
        starts = [0]
        for q in q_lens:
            starts.append(starts[-1] + q)
        s.qsl.copy_(torch.tensor(starts, dtype=torch.int32))
        s.output.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        R = starts[-1]
        ref = s.reference()
        errs.append(T.check_close(s.output[:R], ref[:R], f16))
    return "rel err %.2e" % max(errs)


def refusals():
    case = dict(S=2, H=8, KVH=2, D=64, BS=16, lens=[50, 60], dtype=f16)
    s = Spec([2, 2], 2, **case)
    a = s.args()
    call = pa.paged_attention_v2
    T.expect_raises(ValueError, ["query_start_loc needs max_query_len="], call, *a,
                    query_start_loc=s.qsl)
    T.expect_raises(ValueError, ["max_query_len must be in [1, 16], got 17"], call, *a,
                    query_start_loc=s.qsl, max_query_len=17)
    T.expect_raises(ValueError, ["max_query_len=4 needs query_start_loc"], call, *a,
                    max_query_len=4)
    T.expect_raises(TypeError, ["query_start_loc must be int32"], call, *a,
                    query_start_loc=s.qsl.long(), max_query_len=2)
    T.expect_raises(ValueError, ["query_start_loc must have shape [num_seqs + 1] = [3]"], call,
                    *a, query_start_loc=s.qsl[:2], max_query_len=2)
    bad = list(a)
    bad[1] = s.exp_sums[:2]  # the workspace has num_query_tokens rows
    T.expect_raises(ValueError, ["exp_sums must have shape [num_query_tokens"], call, *bad,
                    query_start_loc=s.qsl, max_query_len=2)
    return "6 refusals"


if __name__ == "__main__":
    main()
