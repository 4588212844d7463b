# REQUIRES: python-torch
# RUN: %python %s
#
# torch.ops.paged_attn.paged_attention_v2 without a GPU: its registration and
# schema, the package's refusal of CPU tensors, the fake implementation
# (every refusal of pa_testlib.refusal_cases raised on fake tensors as in
# eager mode, every accepted call accepted), torch.library.opcheck, and a
# torch.compile(fullgraph=True) trace of a decode step: 0 graph breaks, one op
# node, results equal to the float64 reference, new seq_lens/block_tables
# without a recompile, and the same error messages as eager. The op's CUDA
# kernel is replaced here by pa_cpu_reference (a CPU kernel running the
# package's checks and the float64 reference); test_torch_compile.py runs
# the same on the GPU with the real kernels.

import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.profiler import ProfilerActivity  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import pa_cpu_reference  # noqa: E402

# A refusal raised in the fake implementation is also logged with its stack
# by the fake tensor machinery; the tests check the exception itself.
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

pa = T.import_paged_attn()
OP = torch.ops.paged_attn.paged_attention_v2.default
WRITTEN = ("output", "exp_sums", "max_logits", "tmp_output")


def make(shape, dtype, device):
    return torch.zeros(shape, dtype=dtype, device=device)


def make_strided(shape, dtype, device):
    return torch.zeros(tuple(shape) + (2,), dtype=dtype, device=device)[..., 0]


def make_misaligned(shape, dtype, device):
    n = 1
    for s in shape:
        n *= s
    return torch.zeros(n + 8, dtype=dtype, device=device)[1:n + 1].view(shape)


#===----------------------------------------------------------------------===#
# Registration
#===----------------------------------------------------------------------===#


def schema_declares_what_is_written():
    s = OP._schema
    assert s.name == "paged_attn::paged_attention_v2" and len(s.returns) == 0, s
    written = [a.name for a in s.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert written == list(WRITTEN), written
    names = [a.name for a in s.arguments]
    assert names[:len(T.SEED_PARAMS)] == list(T.SEED_PARAMS), names
    assert names[len(T.SEED_PARAMS):] == [
        "kv_cache_dtype", "k_scale", "v_scale", "k_scale_tensor", "v_scale_tensor",
        "sliding_window", "logits_soft_cap", "fixed_grid", "sinks", "query_start_loc",
        "max_query_len"], names
    assert torch._C._dispatch_has_kernel_for_dispatch_key(OP.name(), "CompositeExplicitAutograd")
    return str(s)


def init_keys_describe_calls():
    # paged_attn.init(keys=[...]): each key dict becomes the pa_decode_args
    # of the calls it describes (both tmp dtypes unless one is named).
    args = pa.ops._key_args(dict(dtype=torch.bfloat16, head_size=128, block_size=16,
                                 num_heads=32, num_kv_heads=8, sinks=True,
                                 kv_cache_dtype="fp8_e4m3"))
    assert [(a.dtype, a.tmp_dtype) for a in args] == [(1, 2), (1, 1)], args
    a = args[0]
    assert (a.head_size, a.block_size, a.num_heads, a.num_kv_heads) == (128, 16, 32, 8)
    assert a.sinks != 0 and a.alibi_slopes == 0 and a.sliding_window == 0
    assert a.kv_cache_dtype == 1 and a.logits_soft_cap == 0.0
    one = pa.ops._key_args(dict(dtype=torch.float16, tmp_dtype=torch.float32, head_size=64,
                                block_size=32, num_heads=8, num_kv_heads=8, alibi=True))
    assert len(one) == 1 and one[0].alibi_slopes != 0 and one[0].tmp_dtype == 2
    try:
        pa.ops._key_args(dict(dtype=torch.float16, head=64))
    except TypeError as e:
        assert "unknown key field(s) ['head']" in str(e), e
    else:
        raise AssertionError("an unknown key field was accepted")


def cpu_tensors_refused_by_the_package():
    # Before the test's CPU kernel exists: the package's implementation
    # serves every device and refuses all but CUDA, last, with its message.
    a = T.baseline(torch, make, "cpu")
    T.expect_raises(ValueError, ["query must be a CUDA tensor", "cpu"], pa.paged_attention_v2, **a)
    T.expect_raises(ValueError, ["query must be a CUDA tensor"], OP,
                    *pa._op.op_args(*[a[n] for n in T.SEED_PARAMS], "auto", 1.0, 1.0, {}, False,
                                    None, None))


#===----------------------------------------------------------------------===#
# Cases with real contents (a CPU kernel registered)
#===----------------------------------------------------------------------===#


def case(kv=None, **kw):
    """A pa_testlib.Case on the CPU, NaN-poisoned (fp8: scales as tensors if asked)."""
    opts = dict(S=3, H=8, KVH=2, D=64, BS=16, lens=[5, 600, 77], dtype=torch.float16, seed=SEED,
                device="cpu", cache_storage="uint8")
    opts.update(kw)
    return T.Case(kv_cache_dtype=kv, k_scale=0.05 if kv else 1.0, v_scale=0.1 if kv else 1.0,
                  cache_mag=8.0, **opts)


def features(c):
    return dict(sliding_window=100, logits_soft_cap=30.0)


def wrapper_calls_the_op():
    # Only the op's CPU kernel can fill the NaN-poisoned output on the CPU.
    c = case(alibi=True)
    pa.paged_attention_v2(*c.args(), **features(c))
    T.check_close(c.output, c.reference(**features(c)), c.dtype)


#===----------------------------------------------------------------------===#
# The eager call without the dispatcher (_op.call)
#===----------------------------------------------------------------------===#


def plain_args(c, **kw):
    return pa._op.op_args(*c.args()[:14], "auto", 1.0, 1.0, {}, False, None, None, **kw)


class _Dispatching(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def plain_eager_only_when_nothing_else_is_active():
    c = case(sinks=(-1.0, 1.0))
    a = plain_args(c, sinks=c.sinks)
    assert pa._op.plain_eager(a)
    assert not pa._op.dispatch_free(a), "CPU tensors must reach the op's CPU kernel"
    active = {"a torch function mode": TorchFunctionMode(), "a dispatch mode": _Dispatching(),
              "the profiler": torch.profiler.profile(activities=[ProfilerActivity.CPU])}
    for what, ctx in active.items():
        with ctx:
            assert not pa._op.plain_eager(a), what
    with FakeTensorMode() as mode:
        assert not pa._op.plain_eager([mode.from_tensor(x) if isinstance(x, torch.Tensor)
                                       else x for x in a]), "fake tensors"
    for i in (2, 22):  # a subclass among the tensors, also an optional one
        b = list(a)
        b[i] = a[i].as_subclass(_Subclass)
        assert not pa._op.plain_eager(b), "a subclass at %d" % i
    b = list(a)
    b[22] = torch.nn.Parameter(a[22])  # learned sinks: still plain
    assert pa._op.plain_eager(b), "an nn.Parameter"
    one = torch.zeros(3)
    in_vmap = torch.func.vmap(lambda x: x + (1 if pa._op.plain_eager(a) else 2))(one)
    assert in_vmap.tolist() == [2.0] * 3, "inside vmap"
    assert _traced_flag(a) == 2, "under torch.jit.trace"
    torch._dynamo.reset()
    traced = torch.compile(lambda x: x + (1 if pa._op.plain_eager(a) else 2), backend="eager",
                           fullgraph=True)(one)
    assert traced.tolist() == [2.0] * 3, "inside torch.compile"
    assert pa._op.plain_eager(a)  # and plain again after each


class _Subclass(torch.Tensor):
    pass


def _traced_flag(a):
    """plain_eager(a) as seen while torch.jit.trace records a function: 1 or 2."""
    seen = []
    torch.jit.trace(lambda x: seen.append(1 if pa._op.plain_eager(a) else 2) or x, torch.zeros(1))
    return seen[0]


def profiler_sees_the_op():
    c = case()
    with torch.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
        pa.paged_attention_v2(*c.args())
    names = {e.name for e in prof.events()}
    assert pa._op.QUALNAME in names, sorted(names)[:20]
    T.check_close(c.output, c.reference(), c.dtype)


#===----------------------------------------------------------------------===#
# Fake implementation
#===----------------------------------------------------------------------===#


def faked(mode, args):
    return {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v
            for k, v in args.items()}


def fake_refuses(args, exc, subs):
    eager = T.expect_raises(exc, subs, pa.paged_attention_v2, **args)
    with FakeTensorMode() as mode:
        fake = T.expect_raises(exc, subs, pa.paged_attention_v2, **faked(mode, args))
    same = eager == fake or "aligned" in eager  # the fake names an offset, not an address
    assert same, "eager: %s\nfake:  %s" % (eager, fake)


def fake_accepts(args):
    with FakeTensorMode() as mode:
        pa.paged_attention_v2(**faked(mode, args))


#===----------------------------------------------------------------------===#
# opcheck and torch.compile
#===----------------------------------------------------------------------===#


def opcheck(c, **kw):
    args = pa._op.op_args(*c.args()[:14], c.kv_cache_dtype or "auto",
                          getattr(c, "k_scale_arg", 1.0), getattr(c, "v_scale_arg", 1.0), {},
                          kw.pop("fixed_grid", False), kw.pop("sliding_window", None),
                          kw.pop("logits_soft_cap", None), c.sinks)
    result = torch.library.opcheck(OP, args)
    bad = {k: v for k, v in result.items() if v != "SUCCESS"}
    assert not bad and len(result) == 4, result
    return ", ".join(sorted(result))


class Recorder:
    """A torch.compile backend that counts compilations and keeps the graphs."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def fullgraph_trace(kv):
    torch._dynamo.reset()
    c = case(kv, alibi=True, scales_on_device=(True, False) if kv else (False, False))
    explain = torch._dynamo.explain(T.decode_step)(*T.step_args(c))
    assert explain.graph_break_count == 0 and explain.graph_count == 1, explain
    backend = Recorder()
    step = torch.compile(T.decode_step, fullgraph=True, backend=backend)
    out = step(*T.step_args(c))
    ops = [n for n in backend.graphs[0].graph.nodes if n.target in (OP, OP.overloadpacket)]
    assert len(ops) == 1, backend.graphs[0].graph
    T.check_close(out, c.reference(**T.STEP_FEATURES), c.dtype)
    # New lengths, tables and contents (same shapes): the same graph, the new result.
    c2 = case(kv, alibi=True, scales_on_device=(True, False) if kv else (False, False),
              lens=[600, 77, 5], seed=SEED + 1)
    assert c2.NB == c.NB and c2.MB == c.MB
    out = step(*T.step_args(c2))
    T.check_close(out, c2.reference(**T.STEP_FEATURES), c2.dtype)
    assert len(backend.graphs) == 1, "recompiled %d times" % (len(backend.graphs) - 1)
    return "0 graph breaks, 1 op node, no recompile"


def max_seq_len_goes_symbolic():
    """Without fixed_grid: a new max_seq_len recompiles once, then is a symbolic int."""
    torch._dynamo.reset()
    c = case()

    def step(*args):
        pa.paged_attention_v2(*args)
        return args[0] * 1.0
    backend = Recorder()
    compiled = torch.compile(step, fullgraph=True, backend=backend)
    for msl in (600, 601, 608, 700, 1024):
        if msl > c.MB * c.BS:  # past the tables: the same refusal as eager, symbolic or not
            T.expect_raises(Exception, ["max_seq_len (%d) exceeds what block_tables can address"
                                        % msl], compiled, *c.args(max_seq_len=msl))
            continue
        c.poison()
        T.check_close(compiled(*c.args(max_seq_len=msl)), c.reference(), c.dtype)
    assert len(backend.graphs) == 2, "%d compilations" % len(backend.graphs)
    return "2 compilations for 3 accepted values"


def compile_raises_as_eager(name, args, exc, subs):
    """The refusal's message, eager and under torch.compile(fullgraph=True)."""
    eager = T.expect_raises(exc, subs, pa.paged_attention_v2, **args)

    def step(a):
        pa.paged_attention_v2(**a)
        return a["output"] * 1.0
    torch._dynamo.reset()
    compiled = T.expect_raises(Exception, [], torch.compile(step, fullgraph=True,
                                                            backend="aot_eager"), args)
    assert eager in compiled, "eager: %s\ncompiled: %s" % (eager, compiled)


def body(r):
    r.run("schema declares what the op writes", schema_declares_what_is_written)
    r.run("CPU tensors refused by the package's kernel", cpu_tensors_refused_by_the_package)
    r.run("init(keys=...) describes the calls to preload", init_keys_describe_calls)
    # Refusals first, while the package's own kernel serves CPU tensors: the
    # eager message is the one a launch would raise.
    cases = T.refusal_cases(torch, make, "cpu", make_strided, make_misaligned)
    for name, args, exc, subs in cases:
        r.run("fake refuses as eager: " + name, fake_refuses, args, exc, subs)
    for name, args in T.accepted_cases(torch, make, "cpu"):
        r.run("fake accepts: " + name, fake_accepts, args)
    by_name = {name: rest for name, *rest in cases}
    for name in COMPILE_REFUSALS:
        r.run("compile raises as eager: " + name, compile_raises_as_eager, name, *by_name[name])
    r.keep = pa_cpu_reference.register(torch, pa)
    r.run("paged_attention_v2 calls the op (CPU kernel fills the output)", wrapper_calls_the_op)
    r.run("the dispatcher skipped only in plain eager mode",
          plain_eager_only_when_nothing_else_is_active)
    r.run("the profiler sees the op", profiler_sees_the_op)
    r.run("opcheck f16", opcheck, case(alibi=True), sliding_window=100, logits_soft_cap=30.0)
    r.run("opcheck bf16 GQA 4, fixed grid", opcheck, case(dtype=torch.bfloat16, H=8, KVH=2),
          fixed_grid=True)
    r.run("opcheck fp8_e4m3 uint8, float scales", opcheck, case("fp8"))
    r.run("opcheck f16 with sinks and a window", opcheck, case(sinks=(-2.0, 4.0)),
          sliding_window=100)
    # uint8 storage: opcheck's schema check cannot compare float8 tensors on the CPU.
    r.run("opcheck fp8_e5m2, tensor scales, alibi", opcheck,
          case("fp8_e5m2", scales_on_device=(True, True), alibi=True))
    r.run("fullgraph trace f16", fullgraph_trace, None)
    r.run("fullgraph trace fp8 (k_scale tensor)", fullgraph_trace, "fp8_e4m3")
    r.run("max_seq_len symbolic after one recompile", max_seq_len_goes_symbolic)


# One refusal of each kind: a type (raised by the wrapper, traced by
# Dynamo), a shape rule, an unsupported size and a feature's value (raised by
# the fake implementation), an fp8 scale range.
COMPILE_REFUSALS = ("num_kv_heads a float", "num_kv_heads mismatch", "head_size 32 unsupported",
                    "workspace too small", "sliding_window 0", "fp8 v_scale 1e-50 (0 as a float32)",
                    "query not a tensor", "key_cache dtype")

SEED = T.test_seed_value()


def main():
    T.Results("torch.ops.paged_attn.paged_attention_v2 on the CPU (fake, opcheck, "
              "torch.compile)").guarded(body)


if __name__ == "__main__":
    main()
