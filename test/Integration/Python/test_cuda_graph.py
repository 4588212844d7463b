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
# max_seq_len is in fixed-grid mode. With fp8 caches whose k_scale / v_scale
# are device tensors, the replays also change the scales (fill_ on the
# captured tensors, which the kernel reads at run time): the output must
# follow each new scale.

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402

pa = T.import_paged_attn()


class Static:
    """The captured buffers, sized for the capacity; filled anew per replay."""

    def __init__(self, S, H, KVH, D, BS, MB, dtype, tmp_dtype, kv_cache_dtype=None):
        self.S, self.H, self.KVH, self.D, self.BS, self.MB = S, H, KVH, D, BS, MB
        self.dtype = dtype
        # fp8: uint8 caches (x = 16) and one-element float32 scales on the device.
        self.kv_cache_dtype = kv_cache_dtype
        self.fp8 = T.fp8_dtype(torch, kv_cache_dtype)
        cache_dtype = torch.uint8 if self.fp8 is not None else dtype
        x = 16 // torch.tensor([], dtype=cache_dtype).element_size()
        self.NB = S * MB + 5
        self.P = -(-MB * BS // T.PARTITION)
        dev = "cuda"
        self.query = torch.zeros(S, H, D, dtype=dtype, device=dev)
        self.key_cache = torch.zeros(self.NB, KVH, D // x, BS, x, dtype=cache_dtype, device=dev)
        self.value_cache = torch.zeros(self.NB, KVH, D, BS, dtype=cache_dtype, device=dev)
        self.k_scale = torch.ones((), dtype=torch.float32, device=dev)
        self.v_scale = torch.ones((1,), dtype=torch.float32, device=dev)
        self.block_tables = torch.zeros(S, MB, dtype=torch.int32, device=dev)
        self.seq_lens = torch.ones(S, dtype=torch.int32, device=dev)
        self.output = torch.zeros(S, H, D, dtype=dtype, device=dev)
        self.exp_sums = torch.zeros(S, H, self.P, dtype=torch.float32, device=dev)
        self.max_logits = torch.zeros_like(self.exp_sums)
        self.tmp_output = torch.zeros(S, H, self.P, D, dtype=tmp_dtype, device=dev)
        self.scale = D ** -0.5

    def args(self, max_seq_len):
        args = (self.output, self.exp_sums, self.max_logits, self.tmp_output, self.query,
                self.key_cache, self.value_cache, self.KVH, self.scale, self.block_tables,
                self.seq_lens, self.BS, max_seq_len, None)
        if self.fp8 is not None:
            args += (self.kv_cache_dtype, self.k_scale, self.v_scale)
        return args

    def fill(self, lens, g, new_cache):
        """New lengths, a shuffled table, new queries (and caches): copied in place."""
        S, MB, BS = self.S, self.MB, self.BS
        if new_cache and self.fp8 is not None:
            # fp8 bytes of randn * 2 (value = stored * scale).
            for c in (self.key_cache, self.value_cache):
                c.copy_((torch.randn(c.shape, generator=g) * 2.0).to(self.fp8)
                        .view(torch.uint8))
        elif new_cache:
            self.key_cache.copy_((torch.randn(self.key_cache.shape, generator=g) * 0.5)
                                 .to(self.dtype))
            self.value_cache.copy_(torch.randn(self.value_cache.shape, generator=g)
                                   .to(self.dtype))
        q = torch.randn(self.query.shape, generator=g)
        self.query.copy_((q * 10.0 if self.fp8 is not None else q).to(self.dtype))
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


def fp8_scale_replays(kv, dtype, seed):
    """Captured once with device-tensor scales; each replay sets new scales with
    fill_ (and new lengths, tables, queries, sometimes caches); the output must
    match the reference of the scales in force at that replay."""
    S, H, KVH, D, BS, MB = 4, 16, 4, 128, 16, 128  # capacity 2048 tokens, 4 partitions
    cap = MB * BS
    st = Static(S, H, KVH, D, BS, MB, dtype, torch.float32, kv_cache_dtype=kv)
    g = torch.Generator().manual_seed(seed)
    st.fill([1] * S, g, new_cache=True)
    st.k_scale.fill_(0.05)
    st.v_scale.fill_(0.1)
    graph = capture(st, None)
    f32 = lambda v: float(torch.tensor(v, dtype=torch.float32))  # noqa: E731
    lens = [1, cap, 513, 1000]
    rounds = [  # (k_scale, v_scale, lens, new cache)
        (0.05, 0.1, lens, False),
        (0.02, 0.5, lens, False),   # only the scales (and the query) change
        (0.15, 0.03, [cap] * S, True),
        (0.05, 0.1, torch.randint(1, cap + 1, (S,), generator=g).tolist(), False),
        (0.3, 2.0, [17, 1, 600, cap - 1], True),
    ]
    errs, outs = [], []
    for i, (ks, vs, lens, new_cache) in enumerate(rounds):
        st.fill(lens, g, new_cache=new_cache)
        st.k_scale.fill_(ks)
        st.v_scale.fill_(vs)
        graph.replay()
        torch.cuda.synchronize()
        ref = T.reference(st.query, st.key_cache, st.value_cache, st.block_tables, st.seq_lens,
                          st.scale, kv_cache_dtype=kv, k_scale=f32(ks), v_scale=f32(vs))
        errs.append(T.check_close(st.output, ref, dtype, "replay %d k_scale %g v_scale %g lens %s"
                                  % (i, ks, vs, lens)))
    # The same inputs, scales changed only: the output changes with them.
    st.fill(lens, g, new_cache=False)
    for ks, vs in ((0.05, 0.1), (0.1, 0.1)):
        st.k_scale.fill_(ks)
        st.v_scale.fill_(vs)
        for t in (st.output, st.exp_sums, st.max_logits, st.tmp_output):
            t.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        outs.append(st.output.clone())
    if torch.equal(outs[0], outs[1]):
        raise AssertionError("a new k_scale left the replayed output unchanged")
    del graph
    return "%d replays with new scales, max rel err %.2e" % (len(rounds), max(errs))


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


def first_use_in_capture_needs_a_preload():
    # A key whose module is not loaded yet (d256 f16, tmp f16, a sliding
    # window: used by no other case here) is refused inside a capture, and
    # captured once init(keys=...) loaded it; the replay matches.
    st = Static(2, 16, 8, 256, 16, 64, torch.float16, torch.float16)
    key = dict(dtype=torch.float16, tmp_dtype=torch.float16, head_size=256, block_size=16,
               num_heads=16, num_kv_heads=8, sliding_window=True)
    call = lambda: pa.paged_attention_v2(*st.args(None), fixed_grid=True,  # noqa: E731
                                         sliding_window=300)
    before = pa.init(torch.cuda.current_device())["modules_loaded"]
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            call()
    except Exception as e:  # torch ends the capture; the runtime's refusal is the cause
        if "PA_ERROR_CAPTURE" not in str(e) and "captures a CUDA graph" not in str(e):
            raise
    else:
        raise AssertionError("a first use inside a capture was not refused")
    torch.cuda.synchronize()
    after = pa.init(torch.cuda.current_device(), keys=[key])["modules_loaded"]
    if after <= before:
        raise AssertionError("init(keys=...) loaded nothing (%d -> %d)" % (before, after))
    st.fill([300, 1000], torch.Generator().manual_seed(3), True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call()
    g.replay()
    torch.cuda.synchronize()
    ref = T.reference(st.query, st.key_cache, st.value_cache, st.block_tables, st.seq_lens,
                      st.scale, sliding_window=300)
    return "modules %d -> %d; rel. error %.1e" % (
        before, after, T.check_close(st.output, ref, torch.float16))


def body(r):
    seed = T.test_seed_value()
    r.run("plan: fixed grid independent of max_seq_len", plan_grid_fixed)
    r.run("first use inside a capture: refused, then preloaded", first_use_in_capture_needs_a_preload)
    r.run("f16, tmp f32, captured with max_seq_len None", replays, torch.float16,
          torch.float32, None, seed)
    r.run("bf16, tmp bf16, captured with max_seq_len 17", replays, torch.bfloat16,
          torch.bfloat16, 17, seed + 1)
    r.run("f32, captured with the capacity", replays, torch.float32, torch.float32, 4096,
          seed + 2)
    r.run("f16, fp8_e4m3 cache, device scales changed between replays", fp8_scale_replays,
          "fp8_e4m3", torch.float16, seed + 3)
    r.run("bf16, fp8_e5m2 cache, device scales changed between replays", fp8_scale_replays,
          "fp8_e5m2", torch.bfloat16, seed + 4)


def main():
    T.Results("paged_attention_v2 in a CUDA graph (fixed grid)").guarded(body)


if __name__ == "__main__":
    main()
