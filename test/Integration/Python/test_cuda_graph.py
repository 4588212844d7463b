# REQUIRES: cuda-gpu, python-torch
# RUN: %python %s
#
# One paged_attention_v2 call in fixed-grid mode captured in a
# torch.cuda.CUDAGraph, then replayed with new contents copied into the
# captured buffers: new seq_lens (1, the full capacity, partition edges,
# ragged), freshly shuffled block tables, new queries and new cache values.
# Output and workspace are poisoned with NaN before every replay and the
# result is checked against the float64 reference after each one. A graph
# captured with a small max_seq_len must serve the full capacity too (the
# grid may not depend on it), and plan() must give one grid whatever
# max_seq_len is in fixed-grid mode.

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402

pa = T.import_paged_attn()


class Static:
    """The captured buffers, sized for the capacity; filled anew per replay."""

    def __init__(self, S, H, KVH, D, BS, MB, dtype, tmp_dtype):
        self.S, self.H, self.KVH, self.D, self.BS, self.MB = S, H, KVH, D, BS, MB
        self.dtype = dtype
        x = 16 // torch.tensor([], dtype=dtype).element_size()
        self.NB = S * MB + 5
        self.P = -(-MB * BS // T.PARTITION)
        dev = "cuda"
        self.query = torch.zeros(S, H, D, dtype=dtype, device=dev)
        self.key_cache = torch.zeros(self.NB, KVH, D // x, BS, x, dtype=dtype, device=dev)
        self.value_cache = torch.zeros(self.NB, KVH, D, BS, dtype=dtype, device=dev)
        self.block_tables = torch.zeros(S, MB, dtype=torch.int32, device=dev)
        self.seq_lens = torch.ones(S, dtype=torch.int32, device=dev)
        self.output = torch.zeros(S, H, D, dtype=dtype, device=dev)
        self.exp_sums = torch.zeros(S, H, self.P, dtype=torch.float32, device=dev)
        self.max_logits = torch.zeros_like(self.exp_sums)
        self.tmp_output = torch.zeros(S, H, self.P, D, dtype=tmp_dtype, device=dev)
        self.scale = D ** -0.5

    def args(self, max_seq_len):
        return (self.output, self.exp_sums, self.max_logits, self.tmp_output, self.query,
                self.key_cache, self.value_cache, self.KVH, self.scale, self.block_tables,
                self.seq_lens, self.BS, max_seq_len, None)

    def fill(self, lens, g, new_cache):
        """New lengths, a shuffled table, new queries (and caches): copied in place."""
        S, MB, BS = self.S, self.MB, self.BS
        if new_cache:
            self.key_cache.copy_((torch.randn(self.key_cache.shape, generator=g) * 0.5)
                                 .to(self.dtype))
            self.value_cache.copy_(torch.randn(self.value_cache.shape, generator=g)
                                   .to(self.dtype))
        self.query.copy_(torch.randn(self.query.shape, generator=g).to(self.dtype))
        perm = torch.randperm(self.NB, generator=g).to(torch.int32)
        bt = perm[:S * MB].reshape(S, MB).clone()  # every entry a valid, distinct block
        self.block_tables.copy_(bt)
        self.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
        for t in (self.output, self.exp_sums, self.max_logits, self.tmp_output):
            t.fill_(float("nan"))


def capture(st, max_seq_len):
    call = lambda: pa.paged_attention_v2(*st.args(max_seq_len), fixed_grid=True)  # noqa: E731
    pa.init(torch.cuda.current_device())
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as torch advises
        call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call()
    torch.cuda.synchronize()
    return g


def replays(dtype, tmp_dtype, capture_len, seed):
    S, H, KVH, D, BS, MB = 6, 32, 8, 128, 16, 256  # capacity 4096 tokens, 8 partitions
    cap = MB * BS
    st = Static(S, H, KVH, D, BS, MB, dtype, tmp_dtype)
    g = torch.Generator().manual_seed(seed)
    st.fill([1] * S, g, new_cache=True)
    graph = capture(st, capture_len)
    rounds = [
        [1, cap, 513, 17, 2048, 1000],
        [cap] * S,
        [1] * S,
        torch.randint(1, cap + 1, (S,), generator=g).tolist(),
        [600, 1, 1, 1, 1, 512],
        torch.randint(1, 700, (S,), generator=g).tolist(),
    ]
    errs = []
    for i, lens in enumerate(rounds):
        st.fill(lens, g, new_cache=(i % 2 == 1))
        graph.replay()
        torch.cuda.synchronize()
        ref = T.reference(st.query, st.key_cache, st.value_cache, st.block_tables, st.seq_lens,
                          st.scale)
        errs.append(T.check_close(st.output, ref, dtype, "replay %d lens %s" % (i, lens)))
    del graph
    return "%d replays, max rel err %.2e" % (len(rounds), max(errs))


def plan_grid_fixed():
    st = Static(4, 32, 8, 128, 16, 128, torch.float16, torch.float32)
    pa.init(torch.cuda.current_device())
    a = pa.plan(*st.args(1), fixed_grid=True)
    b = pa.plan(*st.args(2048), fixed_grid=True)
    c = pa.plan(*st.args(None), fixed_grid=True)
    if not a == b == c:
        raise AssertionError("fixed-grid plans differ with max_seq_len:\n %s\n %s\n %s" % (a, b, c))
    free = pa.plan(*st.args(1))
    return "fixed: %s; max_seq_len 1 without fixed_grid: %s" % (a, free)


def body(r):
    seed = T.test_seed_value()
    r.run("plan: fixed grid independent of max_seq_len", plan_grid_fixed)
    r.run("f16, tmp f32, captured with max_seq_len None", replays, torch.float16,
          torch.float32, None, seed)
    r.run("bf16, tmp bf16, captured with max_seq_len 17", replays, torch.bfloat16,
          torch.bfloat16, 17, seed + 1)
    r.run("f32, captured with the capacity", replays, torch.float32, torch.float32, 4096,
          seed + 2)


def main():
    T.Results("paged_attention_v2 in a CUDA graph (fixed grid)").guarded(body)


if __name__ == "__main__":
    main()
