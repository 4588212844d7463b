#===- pa_testlib.py - shared helpers of the Python drop-in tests ------------===#
#
# Not a test (lit.local.cfg excludes it). A tiny pass/fail harness, the input
# generators (seeded torch.Generator; Case adds poisoned padding and the
# features), the float64 reference, and the table of refused calls that
# test_errors.py (real torch) and test_checks_fake_torch.py (a stand-in torch)
# both run. torch is imported lazily so that the stand-in can be installed
# first. The one source of decode inputs and of the reference: the tests,
# pa_cpu_reference.py, scripts/bench.py and kernels/gpu_check.py import it
# (import_testlib() in those two puts this folder on sys.path).
#
#===------------------------------------------------------------------------===#

import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PARTITION = 512

# Relative error bounds against the float64 reference, per dtype name (of
# the query: fp8 caches dequantize exactly, only the accumulation differs).
BOUNDS = {"float16": 5e-3, "bfloat16": 1e-2, "float32": 1e-4}

# kv_cache_dtype -> the torch dtype name its bytes are read as.
FP8_TORCH_NAMES = {"fp8": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn",
                   "fp8_e5m2": "float8_e5m2"}


def fp8_dtype(torch, kv_cache_dtype):
    """The torch float8 dtype of an fp8 kv_cache_dtype; None for None/"auto"."""
    if kv_cache_dtype in (None, "auto"):
        return None
    return getattr(torch, FP8_TORCH_NAMES[kv_cache_dtype])


def element_size(torch, dt):
    """Bytes per element of a query or cache dtype (also on a stand-in torch)."""
    sizes = {torch.float16: 2, torch.bfloat16: 2, torch.float32: 4, torch.uint8: 1}
    for name in ("float8_e4m3fn", "float8_e5m2"):
        if hasattr(torch, name):
            sizes[getattr(torch, name)] = 1
    return sizes[dt]


def import_paged_attn():
    """paged_attn from PYTHONPATH, else from this checkout's runtime/python."""
    try:
        import paged_attn
    except ImportError:
        sys.path.insert(0, os.path.join(REPO, "runtime", "python"))
        import paged_attn
    return paged_attn


#===----------------------------------------------------------------------===#
# Harness
#===----------------------------------------------------------------------===#


class Results:
    """Runs named checks, prints one line each and a 'N passed, M failed' summary."""

    def __init__(self, title):
        self.title = title
        self.passed = self.failed = self.skipped = 0
        print("# " + title, flush=True)

    def run(self, name, fn, *args, **kwargs):
        try:
            note = fn(*args, **kwargs)
        except Skip as s:
            self.skip(name, str(s))
            return
        except Exception:
            self.failed += 1
            print("FAIL %s\n%s" % (name, _indent(traceback.format_exc())), flush=True)
            return
        self.passed += 1
        print("PASS %s%s" % (name, "  " + note if note else ""), flush=True)

    def skip(self, name, why):
        self.skipped += 1
        print("SKIP %s: %s" % (name, why), flush=True)

    def guarded(self, body):
        """Runs body(self), then finish(); an exception escaping body (say a sticky
        CUDA error outside a check) counts as one failure, summary still printed."""
        try:
            body(self)
        except Exception:
            self.failed += 1
            print("FAIL (run aborted)\n%s" % _indent(traceback.format_exc()), flush=True)
        self.finish()

    def finish(self):
        extra = ", %d skipped" % self.skipped if self.skipped else ""
        print("%d passed, %d failed%s" % (self.passed, self.failed, extra), flush=True)
        sys.exit(1 if self.failed else 0)


class Skip(Exception):
    """Raised by a check that cannot run here (printed, not counted as a pass)."""


def _indent(text):
    return "\n".join("    " + line for line in text.rstrip().splitlines())


def expect_raises(exc_type, substrings, fn, *args, **kwargs):
    """Calls fn; requires an exception of exactly exc_type (or a subclass) whose
    message contains every substring. Returns the message."""
    try:
        fn(*args, **kwargs)
    except exc_type as e:
        msg = str(e)
        for s in substrings:
            if s not in msg:
                raise AssertionError("%s raised, but its message lacks %r: %s"
                                     % (type(e).__name__, s, msg))
        return msg
    except Exception as e:
        raise AssertionError("expected %s, got %s: %s" % (exc_type.__name__, type(e).__name__, e))
    raise AssertionError("expected %s, nothing raised" % exc_type.__name__)


def test_seed_value():
    """The seed of this run's inputs: $PA_TEST_SEED, else fresh (printed)."""
    env = os.environ.get("PA_TEST_SEED")
    seed = int(env) if env else int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
    print("# input seed %d (rerun with PA_TEST_SEED=%d)" % (seed, seed), flush=True)
    return seed


#===----------------------------------------------------------------------===#
# Inputs and the float64 reference
#===----------------------------------------------------------------------===#


def paged_inputs(torch, g, S, H, KVH, D, BS, lens, x, num_blocks, k_mag=0.5, v_mag=1.0,
                 shuffled_blocks=None, table_width=None, table_fill=0, cache_generator=None,
                 cache_device="cpu"):
    """One decode problem's random float32 tensors, drawn in the order every
    caller's seeds rely on: the key cache (randn * k_mag, [num_blocks, KVH,
    D/x, BS, x]) and the value cache (randn * v_mag) from cache_generator on
    cache_device (default: g on the CPU), then from g a permutation of the
    first shuffled_blocks blocks (default all) and the query. Sequence i's
    table row takes the next ceil(lens[i]/BS) blocks of the permutation; the
    rest of the table (table_width columns, default the longest sequence's
    blocks) holds table_fill. Returns q, kc, vc, the CPU int32 table and the
    blocks per sequence."""
    cg = cache_generator if cache_generator is not None else g
    kc = torch.randn(num_blocks, KVH, D // x, BS, x, generator=cg, device=cache_device) * k_mag
    vc = torch.randn(num_blocks, KVH, D, BS, generator=cg, device=cache_device) * v_mag
    nb_seq = [-(-L // BS) for L in lens]
    perm = torch.randperm(num_blocks if shuffled_blocks is None else shuffled_blocks, generator=g)
    bt = torch.full((S, table_width or max(nb_seq)), table_fill, dtype=torch.int32)
    pos = 0
    for i, nb in enumerate(nb_seq):
        bt[i, :nb] = perm[pos:pos + nb].to(torch.int32)
        pos += nb
    q = torch.randn(S, H, D, generator=g)
    return q, kc, vc, bt, nb_seq


def simple_case(torch, g, S, H, KVH, D, BS, lens, dtype, spare_blocks, device="cuda",
                cache_generator=None):
    """A plain decode problem (16-bit or float32 caches, no poison, table
    padding 0), as bench.py, gpu_check.py and test_seed.py (compare.py's
    generator) use: q, key_cache, value_cache, block_tables, seq_lens, in
    `dtype` on `device`. spare_blocks: cache blocks beyond those the
    sequences use; cache_generator: draws the caches on `device` instead."""
    x = 16 // torch.tensor([], dtype=dtype).element_size()
    num_blocks = sum(-(-L // BS) for L in lens) + spare_blocks
    q, kc, vc, bt, _ = paged_inputs(
        torch, g, S, H, KVH, D, BS, lens, x, num_blocks, cache_generator=cache_generator,
        cache_device=device if cache_generator is not None else "cpu")
    return (q.to(dtype).to(device), kc.to(dtype).to(device), vc.to(dtype).to(device),
            bt.to(device), torch.tensor(lens, dtype=torch.int32, device=device))


class Case:
    """One decode problem on the GPU: inputs, a NaN-poisoned output and workspace."""

    def __init__(self, S, H, KVH, D, BS, lens, dtype, tmp_dtype=None, seed=0, device="cuda",
                 extra_blocks=3, extra_table=0, extra_partitions=0, q_scale=1.0,
                 poison_padding=True, alibi=False, poison_before=None, kv_cache_dtype=None,
                 k_scale=1.0, v_scale=1.0, cache_storage="uint8", scales_on_device=(False, False),
                 cache_mag=2.0, sinks=None):
        """kv_cache_dtype "fp8"/"fp8_e4m3"/"fp8_e5m2": the caches hold fp8 bytes of
        randn * cache_mag (stored as torch.uint8 for cache_storage "uint8", else as
        the float8 dtype), value = stored * k_scale (v_scale); scales_on_device
        passes k_scale / v_scale as float32 CUDA tensors instead of floats. sinks:
        None, or (lo, hi): per-head attention-sink logits drawn from [lo, hi]."""
        import torch
        assert len(lens) == S and all(0 <= L for L in lens) and max(lens) >= 1
        self.S, self.H, self.KVH, self.D, self.BS = S, H, KVH, D, BS
        self.lens, self.dtype = list(lens), dtype
        self.tmp_dtype = tmp_dtype if tmp_dtype is not None else torch.float32
        fp8 = fp8_dtype(torch, kv_cache_dtype)
        self.kv_cache_dtype = kv_cache_dtype if fp8 is not None else None
        g = torch.Generator().manual_seed(seed)
        x = 16 // (1 if fp8 is not None else torch.tensor([], dtype=dtype).element_size())
        blocks = sum(-(-L // BS) for L in lens)
        MB = max(-(-L // BS) for L in lens) + extra_table
        NB = blocks + extra_blocks + 1  # the last block is the poison block
        poison = NB - 1
        mags = (0.5, 1.0) if fp8 is None else (cache_mag, cache_mag)
        q, kc, vc, bt, nb_seq = paged_inputs(torch, g, S, H, KVH, D, BS, lens, x, NB, *mags,
                                             shuffled_blocks=NB - 1, table_width=MB,
                                             table_fill=poison)
        if poison_padding:
            # Slots past a sequence's end and table entries past its last block
            # hold NaN, as stale cache memory may: a kernel that lets them into
            # the softmax or the weighted sum produces NaN.
            kc[poison] = float("nan")
            vc[poison] = float("nan")
            for i, L in enumerate(lens):
                tail = L % BS
                if tail:
                    b = int(bt[i, nb_seq[i] - 1])
                    kc[b, :, :, tail:, :] = float("nan")
                    vc[b, :, :, tail:] = float("nan")
        if poison_before:
            # A sliding window of poison_before tokens: the tokens before it
            # hold NaN, so reading one into the result fails the test.
            for i, L in enumerate(lens):
                for t in range(max(L - poison_before, 0)):
                    b = int(bt[i, t // BS])
                    kc[b, :, :, t % BS, :] = float("nan")
                    vc[b, :, :, t % BS] = float("nan")
        q = q * q_scale
        self.max_seq_len = max(lens)
        self.P = -(-self.max_seq_len // PARTITION) + extra_partitions
        self.MB, self.NB = MB, NB
        self.query = q.to(dtype).to(device)
        if fp8 is None:
            self.key_cache = kc.to(dtype).to(device)
            self.value_cache = vc.to(dtype).to(device)
            self.k_scale = self.v_scale = 1.0
        else:
            # Exact fp8 values (NaN poison stays NaN); the reference reads the
            # same bytes back. The scales as the kernel sees them (float32).
            k8, v8 = kc.to(fp8), vc.to(fp8)
            if cache_storage == "uint8":
                k8, v8 = k8.view(torch.uint8), v8.view(torch.uint8)
            else:
                assert cache_storage == "float8", cache_storage
            self.cache_storage = cache_storage
            self.key_cache = k8.to(device)
            self.value_cache = v8.to(device)
            self.k_scale = float(torch.tensor(k_scale, dtype=torch.float32))
            self.v_scale = float(torch.tensor(v_scale, dtype=torch.float32))
            # The arguments: floats, or one-element float32 tensors on the
            # device (a 0-dim one for k, shape [1] for v, as vLLM has both).
            self.k_scale_arg = (torch.tensor(k_scale, dtype=torch.float32, device=device)
                                if scales_on_device[0] else k_scale)
            self.v_scale_arg = (torch.full((1,), v_scale, dtype=torch.float32, device=device)
                                if scales_on_device[1] else v_scale)
        self.block_tables = bt.to(device)
        self.seq_lens = torch.tensor(lens, dtype=torch.int32, device=device)
        self.scale = 1.0 / math.sqrt(D)
        # ALiBi slopes as models use them: 2^(-8 i / H), i = 1..H.
        self.alibi_slopes = (torch.tensor([2.0 ** (-8.0 * (i + 1) / H) for i in range(H)],
                                          dtype=torch.float32, device=device)
                             if alibi else None)
        self.sinks = (None if sinks is None else
                      (torch.rand(H, generator=g, dtype=torch.float64) * (sinks[1] - sinks[0])
                       + sinks[0]).to(torch.float32).to(device))
        self.output = torch.full((S, H, D), float("nan"), dtype=dtype, device=device)
        self.exp_sums = torch.full((S, H, self.P), float("nan"), dtype=torch.float32,
                                   device=device)
        self.max_logits = torch.full_like(self.exp_sums, float("nan"))
        self.tmp_output = torch.full((S, H, self.P, D), float("nan"), dtype=self.tmp_dtype,
                                     device=device)

    def args(self, max_seq_len="auto"):
        """The seed's positional arguments."""
        msl = self.max_seq_len if max_seq_len == "auto" else max_seq_len
        args = (self.output, self.exp_sums, self.max_logits, self.tmp_output, self.query,
                self.key_cache, self.value_cache, self.KVH, self.scale, self.block_tables,
                self.seq_lens, self.BS, msl, self.alibi_slopes)
        if self.kv_cache_dtype is not None:  # positional, as vLLM passes them
            args += (self.kv_cache_dtype, self.k_scale_arg, self.v_scale_arg)
        return args

    def reference(self, sliding_window=None, logits_soft_cap=None):
        """The float64 reference of this case."""
        return reference(self.query, self.key_cache, self.value_cache, self.block_tables,
                         self.seq_lens, self.scale, self.alibi_slopes, sliding_window,
                         logits_soft_cap, self.kv_cache_dtype, self.k_scale, self.v_scale,
                         self.sinks)

    def poison(self):
        for t in (self.output, self.exp_sums, self.max_logits, self.tmp_output):
            t.fill_(float("nan"))

    def describe(self):
        import torch
        lens = self.lens if len(self.lens) <= 6 else self.lens[:5] + ["...%d seqs" % self.S]
        kv = ""
        if self.kv_cache_dtype is not None:
            kv = " kv=%s(%s) k_scale=%s v_scale=%s" % (
                self.kv_cache_dtype, str(self.key_cache.dtype).replace("torch.", ""),
                "dev" if isinstance(self.k_scale_arg, torch.Tensor) else "%g" % self.k_scale,
                "dev" if isinstance(self.v_scale_arg, torch.Tensor) else "%g" % self.v_scale)
        if self.sinks is not None:
            kv += " sinks=[%.2f, %.2f]" % (float(self.sinks.min()), float(self.sinks.max()))
        return "%s tmp=%s%s S=%d H=%d KVH=%d D=%d BS=%d lens=%s P=%d" % (
            str(self.dtype).replace("torch.", ""), str(self.tmp_dtype).replace("torch.", ""), kv,
            self.S, self.H, self.KVH, self.D, self.BS, lens, self.P)


def reference(query, key_cache, value_cache, block_tables, seq_lens, scale, alibi_slopes=None,
              sliding_window=None, logits_soft_cap=None, kv_cache_dtype=None, k_scale=1.0,
              v_scale=1.0, sinks=None, query_start_loc=None):
    """float64 reference on the inputs' device, one sequence at a time:
    logit = cap * tanh(scale * q.k / cap) + slope * (t - L + 1) over the last
    sliding_window tokens (every token without one). With sinks ([num_heads]),
    each head's softmax gets one more logit, sinks[h], whose weight multiplies
    no value row (it only joins the denominator). With an fp8
    kv_cache_dtype the caches' bytes (uint8 or float8) are read as that fp8
    type: key = stored * k_scale, value = stored * v_scale (floats).
    With query_start_loc ([num_seqs + 1]), query row query_start_loc[s] + j
    is token j of sequence s's q_len and attends to its first
    seq_lens[s] - q_len + j + 1 tokens. A row of no tokens is 0 (the
    softmax over none, the sink's share included, weighs no value row)."""
    import torch
    R, H, D = query.shape
    NB, KVH, Dx, BS, x = key_cache.shape
    G = H // KVH
    lens = seq_lens.tolist()
    fp8 = fp8_dtype(torch, kv_cache_dtype)

    def gather(cache, blocks, cache_scale):
        if fp8 is None:
            return cache[blocks].double()
        # Index the bytes (uint8 indexing works everywhere), then read them as fp8.
        return cache.view(torch.uint8)[blocks].view(fp8).to(torch.float64) * float(cache_scale)

    if query_start_loc is None:
        rows = [(s, s, lens[s]) for s in range(R)]
    else:
        qsl = query_start_loc.tolist()
        rows = [(s, qsl[s] + j, lens[s] - (qsl[s + 1] - qsl[s]) + j + 1)
                for s in range(len(lens)) for j in range(qsl[s + 1] - qsl[s])]
    out = torch.empty(R, H, D, dtype=torch.float64, device=query.device)
    for s, r, L in rows:
        nb = -(-L // BS)
        blocks = block_tables[s, :nb].long()
        k = gather(key_cache, blocks, k_scale).permute(0, 3, 1, 2, 4).reshape(nb * BS, KVH, D)[:L]
        v = gather(value_cache, blocks, v_scale).permute(0, 3, 1, 2).reshape(nb * BS, KVH, D)[:L]
        # The window's tokens only (those before it may hold anything, NaN too).
        first = L - sliding_window if sliding_window and L > sliding_window else 0
        k, v = k[first:], v[first:]
        q = query[r].double().reshape(KVH, G, D)
        logits = torch.einsum("kgd,lkd->kgl", q, k) * scale
        if logits_soft_cap:
            logits = logits_soft_cap * torch.tanh(logits / logits_soft_cap)
        if alibi_slopes is not None:
            pos = torch.arange(first, L, dtype=torch.float64, device=query.device) - (L - 1)
            logits = logits + alibi_slopes.double().reshape(KVH, G, 1) * pos
        if sinks is not None:
            sink = sinks.double().reshape(KVH, G, 1)
            p = torch.softmax(torch.cat([logits, sink], dim=-1), dim=-1)[..., :-1]
        else:
            p = torch.softmax(logits, dim=-1)
        out[r] = torch.einsum("kgl,lkd->kgd", p, v).reshape(H, D)
    return out


#===----------------------------------------------------------------------===#
# A decode step for torch.compile
#===----------------------------------------------------------------------===#

#: The features decode_step passes (Case.reference(**STEP_FEATURES) matches).
STEP_FEATURES = dict(sliding_window=300, logits_soft_cap=30.0)


def decode_step(query, key_cache, value_cache, block_tables, seq_lens, alibi_slopes,
                k_scale, v_scale, kv_cache_dtype, num_partitions):
    """A decode step as a model holds it: the workspace allocated in the
    graph, the grid fixed (for CUDA graphs), every feature on."""
    import torch
    pa = import_paged_attn()
    S, H, D = query.shape
    out = torch.empty_like(query)
    es = torch.empty(S, H, num_partitions, dtype=torch.float32, device=query.device)
    ml = torch.empty_like(es)
    tmp = torch.empty(S, H, num_partitions, D, dtype=torch.float32, device=query.device)
    pa.paged_attention_v2(out, es, ml, tmp, query, key_cache, value_cache, value_cache.shape[1],
                          1.0 / math.sqrt(D), block_tables, seq_lens, value_cache.shape[3], None,
                          alibi_slopes, kv_cache_dtype, k_scale, v_scale, fixed_grid=True,
                          **STEP_FEATURES)
    return out * 1.0


def step_args(c):
    """decode_step's arguments for a Case."""
    return (c.query, c.key_cache, c.value_cache, c.block_tables, c.seq_lens, c.alibi_slopes,
            getattr(c, "k_scale_arg", 1.0), getattr(c, "v_scale_arg", 1.0),
            c.kv_cache_dtype or "auto", c.P)


def rel_error(out, ref):
    """Largest per-sequence ||out - ref|| / ||ref||; inf if out holds a NaN/Inf."""
    import torch
    o = out.double()
    if not torch.isfinite(o).all():
        bad = (~torch.isfinite(o)).nonzero()
        raise AssertionError("output holds %d non-finite values, first at %s"
                             % (bad.shape[0], bad[0].tolist()))
    num = (o - ref).flatten(1).norm(dim=1)
    den = ref.flatten(1).norm(dim=1).clamp_min(1e-30)
    return float((num / den).max())


def check_close(out, ref, dtype, what="output"):
    err = rel_error(out, ref)
    bound = BOUNDS[str(dtype).replace("torch.", "")]
    if not err <= bound:
        raise AssertionError("%s: relative error %.3e exceeds the %s bound %.0e"
                             % (what, err, str(dtype).replace("torch.", ""), bound))
    return err


#===----------------------------------------------------------------------===#
# Calls the drop-in must refuse (shared by test_errors and the fake-torch test)
#===----------------------------------------------------------------------===#


def baseline(torch, make, device, dtype=None, S=3, H=8, KVH=2, D=64, BS=16, MB=80, NB=12,
             max_seq_len=600, tmp_dtype=None, kv_cache_dtype=None, cache_dtype=None):
    """A valid call's arguments as a dict (keyword names of the seed's signature).
    `make(shape, dtype, device)` creates a tensor (contents irrelevant here).
    With an fp8 kv_cache_dtype the caches are cache_dtype (default uint8, x = 16)
    and the dict also holds kv_cache_dtype, k_scale 0.05 and v_scale 0.1."""
    dtype = dtype or torch.float16
    fp8 = kv_cache_dtype not in (None, "auto")
    cache_dtype = cache_dtype or (torch.uint8 if fp8 else dtype)
    x = 16 // element_size(torch, cache_dtype)
    P = -(-max_seq_len // PARTITION)
    args = dict(
        output=make((S, H, D), dtype, device),
        exp_sums=make((S, H, P), torch.float32, device),
        max_logits=make((S, H, P), torch.float32, device),
        tmp_output=make((S, H, P, D), tmp_dtype or torch.float32, device),
        query=make((S, H, D), dtype, device),
        key_cache=make((NB, KVH, D // x, BS, x), cache_dtype, device),
        value_cache=make((NB, KVH, D, BS), cache_dtype, device),
        num_kv_heads=KVH, scale=0.125,
        block_tables=make((S, MB), torch.int32, device),
        seq_lens=make((S,), torch.int32, device),
        block_size=BS, max_seq_len=max_seq_len, alibi_slopes=None)
    if kv_cache_dtype is not None:
        args["kv_cache_dtype"] = kv_cache_dtype
        if fp8:
            args.update(k_scale=0.05, v_scale=0.1)
    return args


def refusal_cases(torch, make, device, make_strided=None, make_misaligned=None):
    """(name, kwargs of the call, exception type, substrings of the message).
    `make_strided(shape, dtype, device)` gives a non-contiguous tensor and
    `make_misaligned(...)` one starting 2 bytes past a 16-byte boundary."""
    f16, bf16, f32 = torch.float16, torch.bfloat16, torch.float32
    B = lambda **kw: baseline(torch, make, device, **kw)  # noqa: E731

    def mod(_base=None, **changes):
        args = dict(_base or B())
        args.update(changes)
        return args

    S, H, KVH, D, BS, MB, NB, P = 3, 8, 2, 64, 16, 80, 12, 2
    m = lambda shape, dt=f16: make(shape, dt, device)  # noqa: E731
    u8, i32 = torch.uint8, torch.int32
    F8 = lambda kv="fp8", **kw: B(kv_cache_dtype=kv, **kw)  # noqa: E731
    e4m3, e5m2 = getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None)
    small_workspace = mod(max_seq_len=1100)  # P = 2 partitions, 1100 tokens need 3
    cases = [
        # keywords and unsupported features
        ("unknown keyword", mod(foo=1), TypeError, ["unexpected keyword", "'foo'"]),
        ("two unknown keywords", mod(foo=1, bar=2), TypeError, ["'bar'", "'foo'"]),
        ("block-sparse", mod(blocksparse_vert_stride=4), NotImplementedError,
         ["block-sparse", "blocksparse_vert_stride=4"]),
        ("block-sparse keyword not an int", mod(blocksparse_vert_stride="4"), TypeError,
         ["blocksparse_vert_stride"]),
        ("alibi_slopes float16", mod(alibi_slopes=m((H,), f16)), TypeError,
         ["alibi_slopes must be float32", "float16"]),
        ("alibi_slopes shape", mod(alibi_slopes=m((H + 1,), f32)), ValueError,
         ["alibi_slopes must have shape [num_heads] = [8]", "[9]"]),
        ("alibi_slopes not a tensor", mod(alibi_slopes=[0.5] * H), TypeError,
         ["alibi_slopes must be a torch.Tensor"]),
        ("sinks float16", mod(sinks=m((H,), f16)), TypeError,
         ["sinks must be float32", "float16"]),
        ("sinks per KV head", mod(sinks=m((KVH,), f32)), ValueError,
         ["sinks must have shape [num_heads] = [8]", "[2]"]),
        ("sinks not a tensor", mod(sinks=[0.5] * H), TypeError,
         ["sinks must be a torch.Tensor"]),
        # several query tokens per sequence
        ("query_start_loc without max_query_len", mod(query_start_loc=m((S + 1,), i32)),
         ValueError, ["query_start_loc needs max_query_len="]),
        ("max_query_len 17", mod(query_start_loc=m((S + 1,), i32), max_query_len=17),
         ValueError, ["max_query_len must be in [1, 16], got 17"]),
        ("max_query_len without query_start_loc", mod(max_query_len=4), ValueError,
         ["max_query_len=4 needs query_start_loc"]),
        ("query_start_loc int64", mod(query_start_loc=m((S + 1,), torch.int64), max_query_len=2),
         TypeError, ["query_start_loc must be int32", "int64"]),
        ("query_start_loc [num_seqs]", mod(query_start_loc=m((S,), i32), max_query_len=2),
         ValueError, ["query_start_loc must have shape [num_seqs + 1] = [4]", "[3]"]),
        ("query_start_loc not a tensor", mod(query_start_loc=[0, 1, 2, 3], max_query_len=2),
         TypeError, ["query_start_loc must be a torch.Tensor"]),
        ("query_start_loc, workspace rows of the sequences",
         mod(query=m((5, H, D)), output=m((5, H, D)), query_start_loc=m((S + 1,), i32),
             max_query_len=2),
         ValueError, ["exp_sums must have shape [num_query_tokens, num_heads, "
                      "max_num_partitions] = [5, 8, >= 1]"]),
        ("sliding_window 0", mod(sliding_window=0), ValueError,
         ["sliding_window must be None or a positive number of tokens, got 0"]),
        ("sliding_window a float", mod(sliding_window=128.0), TypeError, ["sliding_window"]),
        ("logits_soft_cap negative", mod(logits_soft_cap=-30.0), ValueError,
         ["logits_soft_cap must be None, 0.0 (no cap) or finite and positive", "-30.0"]),
        ("logits_soft_cap NaN", mod(logits_soft_cap=float("nan")), ValueError,
         ["logits_soft_cap"]),
        ("logits_soft_cap past float32", mod(logits_soft_cap=1e39), ValueError,
         ["logits_soft_cap must be None", "as a float32", "1e+39"]),
        ("logits_soft_cap a string", mod(logits_soft_cap="30"), TypeError,
         ["logits_soft_cap must be a float"]),
        ("kv_cache_dtype unknown", mod(kv_cache_dtype="int8"), ValueError,
         ["kv_cache_dtype='int8' is not supported", "'auto'", "'fp8'", "'fp8_e4m3'",
          "'fp8_e5m2'"]),
        ("kv_cache_dtype a torch dtype name", mod(kv_cache_dtype="float8_e4m3fn"), ValueError,
         ["kv_cache_dtype='float8_e4m3fn'"]),
        ("kv_cache_dtype not a str", mod(kv_cache_dtype=None), TypeError,
         ["kv_cache_dtype must be a str"]),
        ("k_scale 0.5", mod(k_scale=0.5), ValueError, ["k_scale=0.5", "auto"]),
        ("v_scale 2", mod(v_scale=2.0), ValueError, ["v_scale=2.0"]),
        ("k_scale a string", mod(k_scale="1"), TypeError, ["k_scale must be a float"]),
        ("fixed_grid not a bool", mod(fixed_grid=1), TypeError, ["fixed_grid must be a bool"]),
        # fp8 caches: dtypes, scales, layout (x = 16)
        ("fp8 with float16 caches", mod(kv_cache_dtype="fp8"), TypeError,
         ["key_cache must be uint8 or float8_e4m3fn with kv_cache_dtype='fp8'", "float16"]),
        ("fp8_e5m2 with a float16 value_cache",
         mod(F8("fp8_e5m2"), value_cache=m((NB, KVH, D, BS), f16)), TypeError,
         ["value_cache must be uint8 or float8_e5m2 with kv_cache_dtype='fp8_e5m2'", "float16"]),
        ("auto with uint8 caches", mod(key_cache=m((NB, KVH, D // 16, BS, 16), u8),
                                       value_cache=m((NB, KVH, D, BS), u8)), TypeError,
         ["key_cache must have the query's dtype float16, got uint8", "kv_cache_dtype=\"fp8\""]),
        ("fp8 k_scale 0", mod(F8(), k_scale=0.0), ValueError,
         ["k_scale must be finite and > 0 with kv_cache_dtype='fp8'", "got 0.0"]),
        ("fp8 k_scale negative", mod(F8(), k_scale=-0.05), ValueError,
         ["k_scale must be finite and > 0", "got -0.05"]),
        ("fp8 k_scale NaN", mod(F8(), k_scale=float("nan")), ValueError,
         ["k_scale must be finite and > 0", "nan"]),
        ("fp8 v_scale inf", mod(F8("fp8_e5m2"), v_scale=float("inf")), ValueError,
         ["v_scale must be finite and > 0 with kv_cache_dtype='fp8_e5m2'", "inf"]),
        ("fp8 v_scale 1e-50 (0 as a float32)", mod(F8(), v_scale=1e-50), ValueError,
         ["v_scale must be finite and > 0", "(0.0 as a float32)"]),
        ("fp8 k_scale 1e39 (inf as a float32)", mod(F8(), k_scale=1e39), ValueError,
         ["k_scale must be finite and > 0", "(inf as a float32)"]),
        ("fp8 k_scale a string", mod(F8(), k_scale="0.05"), TypeError,
         ["k_scale must be a float or a float32 CUDA tensor", "str"]),
        ("fp8 v_scale a bool", mod(F8(), v_scale=True), TypeError,
         ["v_scale must be a float", "bool"]),
        ("fp8 k_scale tensor of 2 elements", mod(F8(), k_scale=m((2,), f32)), ValueError,
         ["k_scale must hold one value", "[2]"]),
        ("fp8 k_scale float64 tensor", mod(F8(), k_scale=m((), torch.float64)), TypeError,
         ["k_scale must be a float32 tensor", "float64"]),
        ("fp8 v_scale float16 tensor", mod(F8(), v_scale=m((1,), f16)), TypeError,
         ["v_scale must be a float32 tensor", "float16"]),
        ("fp8 head_size 72 (not a multiple of 16)", mod(F8(D=72)), ValueError,
         ["head_size 72 (query.shape[2]) must be a multiple of 16 with kv_cache_dtype='fp8'"]),
        ("fp8 key_cache x = 8 (last dim must be 16)",
         mod(F8(), key_cache=m((NB, KVH, D // 8, BS, 8), u8)), ValueError,
         ["key_cache", "x = 16 bytes / 1-byte element = 16", "[12, 2, 8, 16, 8]"]),
        ("fp8 key_cache head_size/x", mod(F8(), key_cache=m((NB, KVH, 8, BS, 16), u8)),
         ValueError, ["key_cache", "head_size/x = 64/16"]),
        ("fp8 value_cache shape", mod(F8(), value_cache=m((NB, KVH, BS, D), u8)), ValueError,
         ["value_cache must have shape", "[12, 2, 64, 16]"]),
        ("fp8 head_size 32 unsupported", mod(F8(D=32)), NotImplementedError, ["head_size 32"]),
        # scalars
        ("num_kv_heads a float", mod(num_kv_heads=2.0), TypeError, ["num_kv_heads", "int"]),
        ("num_kv_heads mismatch", mod(num_kv_heads=4), ValueError,
         ["num_kv_heads argument (4) must equal key_cache.shape[1] (2)"]),
        ("block_size mismatch", mod(block_size=32), ValueError,
         ["block_size argument (32) must equal key_cache.shape[3] (16)"]),
        ("scale NaN", mod(scale=float("nan")), ValueError, ["scale must be finite"]),
        ("scale past float32", mod(scale=1e39), ValueError,
         ["scale must be finite as a float32", "1e+39"]),
        ("scale rounding up to inf as a float32", mod(scale=2.0 ** 128 - 2.0 ** 103), ValueError,
         ["scale must be finite as a float32"]),
        ("scale an int past a double", mod(scale=10 ** 400), ValueError,
         ["scale must be finite as a float32", "inf"]),
        ("scale a string", mod(scale="0.1"), TypeError, ["scale must be a float"]),
        ("max_seq_len a string", mod(max_seq_len="600"), TypeError, ["max_seq_len"]),
        ("max_seq_len None without fixed_grid", mod(max_seq_len=None), TypeError,
         ["max_seq_len"]),
        ("max_seq_len 0", mod(max_seq_len=0), ValueError, ["max_seq_len must be >= 1",
                                                          "fixed_grid"]),
        ("max_seq_len past the block tables", mod(max_seq_len=MB * BS + 1), ValueError,
         ["max_seq_len (1281)", "80 * 16 = 1280"]),
        # dtypes
        ("query float64", mod(query=m((S, H, D), torch.float64)), TypeError,
         ["query must be float16, bfloat16 or float32", "float64"]),
        ("output dtype", mod(output=m((S, H, D), bf16)), TypeError,
         ["output must have the query's dtype float16", "bfloat16"]),
        ("key_cache dtype", mod(key_cache=m((NB, KVH, D // 8, BS, 8), bf16)), TypeError,
         ["key_cache must have the query's dtype"]),
        ("value_cache dtype", mod(value_cache=m((NB, KVH, D, BS), f32)), TypeError,
         ["value_cache must have the query's dtype"]),
        ("block_tables int64", mod(block_tables=m((S, MB), torch.int64)), TypeError,
         ["block_tables must be int32", "int64"]),
        ("seq_lens int64", mod(seq_lens=m((S,), torch.int64)), TypeError,
         ["seq_lens must be int32"]),
        ("exp_sums float16", mod(exp_sums=m((S, H, P), f16)), TypeError,
         ["exp_sums must be float32", "float16"]),
        ("max_logits float64", mod(max_logits=m((S, H, P), torch.float64)), TypeError,
         ["max_logits must be float32"]),
        ("tmp_output bfloat16 for a float16 query", mod(tmp_output=m((S, H, P, D), bf16)),
         TypeError, ["tmp_output must be float32 or the query's dtype float16", "bfloat16"]),
        ("query not a tensor", mod(query=[[0.0]]), TypeError,
         ["query must be a torch.Tensor", "list"]),
        # shapes
        ("query 2-D", mod(query=m((S, H * D))), ValueError, ["query must have shape"]),
        ("output shape", mod(output=m((S, H, 128))), ValueError,
         ["output must have shape", "[3, 8, 64]", "[3, 8, 128]"]),
        ("key_cache x", mod(key_cache=m((NB, KVH, D // 4, BS, 4))), ValueError,
         ["key_cache", "x = 16 bytes / 2-byte element = 8"]),
        ("key_cache head_size", mod(key_cache=m((NB, KVH, 16, BS, 8))), ValueError,
         ["key_cache", "head_size/x = 64/8"]),
        ("key_cache rank", mod(key_cache=m((NB, KVH, D, BS))), ValueError,
         ["key_cache must have shape"]),
        ("value_cache shape", mod(value_cache=m((NB, KVH, BS, D))), ValueError,
         ["value_cache must have shape", "[12, 2, 64, 16]"]),
        ("value_cache num_blocks", mod(value_cache=m((NB + 1, KVH, D, BS))), ValueError,
         ["value_cache must have shape"]),
        ("num_heads not a multiple of num_kv_heads",
         mod(B(H=6, KVH=4)), ValueError, ["num_heads (query.shape[1] = 6)", "num_kv_heads (4)"]),
        ("head_size 32 unsupported", mod(B(D=32)), NotImplementedError,
         ["head_size 32", "supported"]),
        ("block_size 256 unsupported", mod(B(BS=256, MB=5)), NotImplementedError,
         ["block_size 256"]),
        ("block_size 48 unsupported", mod(B(BS=48, MB=25)), NotImplementedError,
         ["block_size 48"]),
        ("block_tables rows", mod(block_tables=m((S + 1, MB), torch.int32)), ValueError,
         ["block_tables must have shape", "num_seqs = 3"]),
        ("seq_lens shape", mod(seq_lens=m((S, 1), torch.int32)), ValueError,
         ["seq_lens must have shape", "[3]"]),
        ("exp_sums heads", mod(exp_sums=m((S, H + 1, P), f32)), ValueError,
         ["exp_sums must have shape"]),
        ("max_logits partitions", mod(max_logits=m((S, H, P + 1), f32)), ValueError,
         ["max_logits must have shape"]),
        ("tmp_output head_size", mod(tmp_output=m((S, H, P, D + 8), f32)), ValueError,
         ["tmp_output must have shape", "[3, 8, 2, 64]"]),
        ("workspace too small", small_workspace, ValueError,
         ["workspace too small", "ceil(1100 / 512) = 3", "max_num_partitions = 2"]),
    ]
    # The torch float8 dtypes, where this torch has them.
    if e5m2 is not None:
        cases += [
            ("float8_e5m2 caches with kv_cache_dtype fp8_e4m3",
             F8("fp8_e4m3", cache_dtype=e5m2), TypeError,
             ["key_cache is float8_e5m2, which disagrees with kv_cache_dtype='fp8_e4m3' "
              "(float8_e4m3fn bytes)", "kv_cache_dtype='fp8_e5m2'"]),
            ("float8_e5m2 value_cache with kv_cache_dtype fp8",
             mod(F8("fp8"), value_cache=m((NB, KVH, D, BS), e5m2)), TypeError,
             ["value_cache is float8_e5m2, which disagrees with kv_cache_dtype='fp8'"]),
        ]
    if e4m3 is not None:
        cases += [
            ("float8_e4m3fn caches with kv_cache_dtype fp8_e5m2",
             F8("fp8_e5m2", cache_dtype=e4m3), TypeError,
             ["key_cache is float8_e4m3fn, which disagrees with kv_cache_dtype='fp8_e5m2'",
              "kv_cache_dtype='fp8_e4m3'"]),
            ("auto with float8_e4m3fn caches",
             mod(key_cache=m((NB, KVH, D // 16, BS, 16), e4m3),
                 value_cache=m((NB, KVH, D, BS), e4m3)), TypeError,
             ["key_cache must have the query's dtype float16, got float8_e4m3fn",
              "kv_cache_dtype=\"fp8\""]),
            ("fp8 k_scale given, kv_cache_dtype auto, float8 caches",
             mod(key_cache=m((NB, KVH, D // 16, BS, 16), e4m3),
                 value_cache=m((NB, KVH, D, BS), e4m3), k_scale=0.05), ValueError,
             ["k_scale=0.05 has no meaning with kv_cache_dtype=\"auto\""]),
        ]
    if make_strided is not None:
        for name, shape, dt in (("query", (S, H, D), f16),
                                ("key_cache", (NB, KVH, D // 8, BS, 8), f16),
                                ("block_tables", (S, MB), torch.int32),
                                ("tmp_output", (S, H, P, D), f32)):
            strided = make_strided(shape, dt, device)
            cases.append(("%s not contiguous" % name, mod(**{name: strided}), ValueError,
                          ["%s must be contiguous" % name]))
    if make_misaligned is not None:
        cases.append(("key_cache misaligned",
                      mod(key_cache=make_misaligned((NB, KVH, D // 8, BS, 8), f16, device)),
                      ValueError, ["key_cache must start at a 16-byte aligned address"]))
        cases.append(("fp8 value_cache misaligned",
                      mod(F8(), value_cache=make_misaligned((NB, KVH, D, BS), u8, device)),
                      ValueError, ["value_cache must start at a 16-byte aligned address"]))
    return cases


SEED_PARAMS = ("output", "exp_sums", "max_logits", "tmp_output", "query", "key_cache",
               "value_cache", "num_kv_heads", "scale", "block_tables", "seq_lens", "block_size",
               "max_seq_len", "alibi_slopes")


def check_only(pa, args):
    """Runs only the host checks of a call given as a dict (no runtime needed)."""
    a = dict(args)
    pos = [a.pop(n) for n in SEED_PARAMS]
    kv = a.pop("kv_cache_dtype", "auto")
    ks, vs = a.pop("k_scale", 1.0), a.pop("v_scale", 1.0)
    fixed = a.pop("fixed_grid", False)
    window, cap = a.pop("sliding_window", None), a.pop("logits_soft_cap", None)
    sinks = a.pop("sinks", None)
    qsl, mql = a.pop("query_start_loc", None), a.pop("max_query_len", None)
    return pa._checks.check_call(*pos, kv, ks, vs, a, fixed, window, cap, sinks, qsl, mql)


def accepted_cases(torch, make, device):
    """Calls every host check must accept: (name, kwargs)."""
    f32, bf16 = torch.float32, torch.bfloat16
    B = lambda **kw: baseline(torch, make, device, **kw)  # noqa: E731
    F8 = lambda kv="fp8", **kw: B(kv_cache_dtype=kv, **kw)  # noqa: E731
    e4m3, e5m2 = getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None)
    scalar = lambda shape=(): make(shape, f32, device)  # noqa: E731

    def mod(base, **changes):
        base.update(changes)
        return base

    fp8 = [
        ("fp8 uint8 caches, f16 query", F8("fp8")),
        ("fp8_e4m3 uint8 caches, bf16 query, tmp bf16",
         F8("fp8_e4m3", dtype=bf16, tmp_dtype=bf16)),
        ("fp8_e5m2 uint8 caches, f32 query", F8("fp8_e5m2", dtype=f32)),
        ("fp8 head 256, block 32, MQA 32/1", F8("fp8_e5m2", H=32, KVH=1, BS=32, D=256, MB=40)),
        ("fp8 head 80 (5 x 16), block 8", F8(D=80, BS=8, MB=160)),
        ("fp8 head 112 (7 x 16)", F8(D=112)),
        ("fp8 int scales", mod(F8(), k_scale=1, v_scale=3)),
        ("fp8 unit scales (the defaults)", mod(F8(), k_scale=1.0, v_scale=1.0)),
        ("fp8 scale tensors (0-dim and [1])", mod(F8(), k_scale=scalar(), v_scale=scalar((1,)))),
        ("fp8 k_scale tensor, v_scale float", mod(F8("fp8_e5m2"), k_scale=scalar((1, 1)))),
        ("fp8 fixed_grid, max_seq_len None", mod(F8(), fixed_grid=True, max_seq_len=None)),
        ("fp8 alibi + window + soft cap", mod(F8(), alibi_slopes=make((8,), f32, device),
                                              sliding_window=256, logits_soft_cap=30.0)),
        ("fp8 sinks + every feature", mod(F8(), alibi_slopes=make((8,), f32, device),
                                          sliding_window=256, logits_soft_cap=30.0,
                                          sinks=make((8,), f32, device))),
        ("fp8 empty batch", F8(S=0)),
    ]
    if e4m3 is not None:
        fp8 += [
            ("fp8 float8_e4m3fn caches", F8("fp8", cache_dtype=e4m3)),
            ("fp8_e4m3 float8_e4m3fn caches, bf16", F8("fp8_e4m3", cache_dtype=e4m3, dtype=bf16)),
            ("fp8 key uint8, value float8_e4m3fn",
             mod(F8("fp8"), value_cache=make((12, 2, 64, 16), e4m3, device))),
        ]
    if e5m2 is not None:
        fp8.append(("fp8_e5m2 float8_e5m2 caches, head 128, scale tensors",
                    mod(F8("fp8_e5m2", cache_dtype=e5m2, D=128), k_scale=scalar(),
                        v_scale=scalar())))
    return fp8 + [
        ("baseline float16", B()),
        ("bfloat16, tmp_output bfloat16", B(dtype=bf16, tmp_dtype=bf16)),
        ("float32 (x = 4)", B(dtype=f32)),
        ("MQA 32 heads / 1 KV head, block 32, head 256", B(H=32, KVH=1, BS=32, D=256, MB=40)),
        ("head 80, block 8", B(D=80, BS=8, MB=160)),
        ("group 6", B(H=12, KVH=2)),
        ("block 64", B(BS=64, MB=20)),
        ("block 128, head 256", B(BS=128, MB=10, D=256)),
        ("sinks", mod(B(), sinks=make((8,), f32, device))),
        ("query_start_loc, one row per sequence",
         mod(B(), query_start_loc=make((4,), torch.int32, device), max_query_len=1)),
        ("query_start_loc, 7 query rows for 3 sequences",
         mod(B(), query=make((7, 8, 64), torch.float16, device),
             output=make((7, 8, 64), torch.float16, device),
             exp_sums=make((7, 8, 2), f32, device), max_logits=make((7, 8, 2), f32, device),
             tmp_output=make((7, 8, 2, 64), f32, device),
             query_start_loc=make((4,), torch.int32, device), max_query_len=16)),
        ("max_query_len 1 without query_start_loc", mod(B(), max_query_len=1)),
        ("int k_scale/v_scale 1", mod(B(), k_scale=1, v_scale=1)),
        ("scale and soft cap just below rounding to inf as float32",
         mod(B(), scale=math.nextafter(2.0 ** 128 - 2.0 ** 103, 0.0),
             logits_soft_cap=math.nextafter(2.0 ** 128 - 2.0 ** 103, 0.0))),
        ("vLLM dense keywords", mod(B(), tp_rank=3, blocksparse_local_blocks=0,
                                    blocksparse_vert_stride=1, blocksparse_block_size=64,
                                    blocksparse_head_sliding_step=0)),
        ("fixed_grid, max_seq_len None", mod(B(), fixed_grid=True, max_seq_len=None)),
        ("fixed_grid, max_seq_len 17", mod(B(), fixed_grid=True, max_seq_len=17)),
        ("workspace larger than needed", mod(B(), max_seq_len=3)),
        ("max_seq_len at the block tables' capacity", mod(B(MB=64), max_seq_len=1024)),
        ("empty batch", B(S=0)),
    ]
