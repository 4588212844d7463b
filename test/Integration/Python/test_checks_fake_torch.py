# RUN: %python %s
#
# The host side of the torch drop-in without torch or a GPU: a stand-in
# `torch` module (tensors that are only metadata) is installed before
# paged_attn is imported (with a stand-in torch.library that records the
# custom op's registration and dispatches a call to its implementation).
# Checks every refusal of pa_testlib.refusal_cases,
# the accepted calls, the pa_decode_args a call builds (fields, pointer
# order, fixed_grid -> max_seq_len 0, the stream, the fp8 cache type, its
# scales and scale pointers), the device rules, the library/kernel-folder
# lookup errors and the pa_status -> exception mapping. A CUDA tensor's
# value is never read on the host (item() on one fails the test).
# Runs on the build machine; test_errors.py runs the same table on real torch.

import ctypes
import inspect
import os
import struct
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

#===----------------------------------------------------------------------===#
# A stand-in torch: just what paged_attn's host code reads
#===----------------------------------------------------------------------===#


class _DType:
    def __init__(self, name, size):
        self.name, self.itemsize = name, size

    def __repr__(self):
        return "torch." + self.name

    __str__ = __repr__


class _Device:
    def __init__(self, spec):
        if isinstance(spec, _Device):
            spec = str(spec)
        kind, _, idx = str(spec).partition(":")
        self.type = kind
        self.index = int(idx) if idx else (0 if kind == "cuda" else None)

    def __eq__(self, other):
        return isinstance(other, _Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    __repr__ = __str__


_next_ptr = [0x7F0000000000]


class _Tensor:
    def __init__(self, shape, dtype, device="cuda:0", strides=None, offset_bytes=0, value=0.0):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = _Device(device)
        self._strides = tuple(strides) if strides is not None else self._contiguous_strides()
        self._ptr = _next_ptr[0] + offset_bytes
        _next_ptr[0] += 1 << 20
        self._value = value

    def _contiguous_strides(self):
        st, acc = [], 1
        for n in reversed(self.shape):
            st.append(acc)
            acc *= max(n, 1)
        return tuple(reversed(st))

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def element_size(self):
        return self.dtype.itemsize

    def stride(self):
        return self._strides

    def is_contiguous(self):
        want = self._contiguous_strides()
        return all(a == b for a, b, n in zip(self._strides, want, self.shape) if n > 1)

    def data_ptr(self):
        return self._ptr

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def item(self):
        # Reading a CUDA tensor on the host would synchronise: never allowed.
        assert self.device.type != "cuda", "item() on a %s tensor (a host read)" % self.device
        return self._value


capturing = [False]
fake = types.ModuleType("torch")
for _n, _s in (("float16", 2), ("bfloat16", 2), ("float32", 4), ("float64", 8), ("int32", 4),
               ("int64", 8), ("uint8", 1), ("float8_e4m3fn", 1), ("float8_e5m2", 1)):
    setattr(fake, _n, _DType(_n, _s))
fake.Tensor = _Tensor
fake.device = _Device
fake.cuda = types.SimpleNamespace(
    current_device=lambda: 0, device_count=lambda: 2,
    is_current_stream_capturing=lambda: capturing[0],
    current_stream=lambda d=None: types.SimpleNamespace(cuda_stream=0x5151))


# torch.library and torch.ops: the package registers its op at import; the
# stand-in dispatcher sends a call to the implementation registered for every
# device (the real one would pick a device-specific kernel first).
registered = {}


class _Library:
    def __init__(self, ns, kind):
        assert (ns, kind) == ("paged_attn", "DEF"), (ns, kind)

    def define(self, schema):
        registered["schema"] = schema

    def impl(self, name, fn, key):
        registered[(name, key)] = fn


def _register_fake(qualname, fn, lib=None):
    registered[(qualname, "fake")] = fn


class _OpNamespace:
    def __getattr__(self, name):
        return registered[(name, "CompositeExplicitAutograd")]


fake.library = types.SimpleNamespace(Library=_Library, register_fake=_register_fake)
fake.ops = types.SimpleNamespace(paged_attn=_OpNamespace())
sys.modules["torch"] = fake

pa = T.import_paged_attn()
from paged_attn import _capi, _op, ops  # noqa: E402


def make(shape, dtype, device):
    return _Tensor(shape, dtype, device)


def make_strided(shape, dtype, device):
    st = list(_Tensor(shape, dtype)._contiguous_strides())
    st[0] *= 2  # every row twice as far apart: a gap after each
    return _Tensor(shape, dtype, device, strides=st)


def make_misaligned(shape, dtype, device):
    return _Tensor(shape, dtype, device, offset_bytes=2)


class Recorder:
    """Stands in for a _capi.Context: records what would reach the C ABI."""

    kernel_dir, num_variants = "/lib/of/kernels", 7

    def __init__(self):
        self.calls = []
        self.status = None  # a _capi.Status for decode to fail with

    def decode(self, args, stream):
        self.calls.append(("decode", args, stream))
        if self.status is not None:
            _capi.check(self.status, "pa_decode_v2")

    def plan(self, args):
        self.calls.append(("plan", args, None))
        return {"variant": "fake"}


rec = Recorder()
_real_context = ops._context  # the capture check below needs the real one
ops._context = lambda idx: (rec.calls.append(("context", idx, None)), rec)[1]
ops._current_stream = lambda idx: 0xC0FFEE + idx

#===----------------------------------------------------------------------===#
# Checks
#===----------------------------------------------------------------------===#


def refused(args, exc, subs):
    T.expect_raises(exc, subs, pa.paged_attention_v2, **args)


def accepted(args):
    T.check_only(pa, args)


def signature_is_the_seeds():
    ps = list(inspect.signature(pa.paged_attention_v2).parameters.values())
    names = [p.name for p in ps]
    extensions = ["fixed_grid", "sliding_window", "logits_soft_cap", "sinks", "query_start_loc",
                  "max_query_len"]
    assert names == list(T.SEED_PARAMS) + ["kv_cache_dtype", "k_scale", "v_scale"] + extensions + [
        "kwargs"], names
    defaults = {p.name: p.default for p in ps if p.default is not inspect.Parameter.empty}
    assert defaults == {"kv_cache_dtype": "auto", "k_scale": 1.0, "v_scale": 1.0,
                        "fixed_grid": False, "sliding_window": None,
                        "logits_soft_cap": None, "sinks": None, "query_start_loc": None,
                        "max_query_len": None}, defaults
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in ps[-5:-1])
    assert ps[-1].kind is inspect.Parameter.VAR_KEYWORD


def op_registered():
    # The call reaches the runtime through the registered op (Recorder's
    # calls in the checks below), whose schema declares what it writes.
    schema = registered["schema"]
    assert schema.startswith("paged_attention_v2(Tensor(a!) output, Tensor(b!) exp_sums, "
                             "Tensor(c!) max_logits, Tensor(d!) tmp_output, Tensor query,"), schema
    assert schema.count("!") == 4 and schema.endswith(") -> ()"), schema
    assert ("paged_attn::paged_attention_v2", "fake") in registered


def decode_args_built():
    rec.calls.clear()
    a = T.baseline(fake, make, "cuda:1", dtype=fake.bfloat16, tmp_dtype=fake.bfloat16)
    pa.paged_attention_v2(**a)
    kinds = [c[0] for c in rec.calls]
    assert kinds == ["context", "decode"], kinds
    assert rec.calls[0][1] == 1, "context for device 1, got %r" % rec.calls[0][1]
    _, d, stream = rec.calls[1]
    assert stream == 0xC0FFEE + 1, hex(stream)
    assert isinstance(d, _capi.DecodeArgs)
    want = dict(dtype=_capi.PA_BF16, tmp_dtype=_capi.PA_BF16, num_seqs=3, num_heads=8,
                num_kv_heads=2, head_size=64, block_size=16, num_blocks=12,
                max_blocks_per_seq=80, max_num_partitions=2, partition_size=512, max_seq_len=600)
    got = {k: getattr(d, k) for k in want}
    assert got == want, got
    assert d.scale == ctypes.c_float(0.125).value
    for name in ("query", "key_cache", "value_cache", "block_tables", "seq_lens", "output",
                 "exp_sums", "max_logits", "tmp_output"):
        assert getattr(d, name) == a[name].data_ptr(), name


def features_reach_the_runtime():
    rec.calls.clear()
    a = T.baseline(fake, make, "cuda:0")
    d = rec_decode(dict(a))
    assert (d.alibi_slopes, d.sliding_window, d.logits_soft_cap) == (0, 0, 0.0)
    slopes = make((8,), fake.float32, "cuda:0")
    d = rec_decode(dict(a, alibi_slopes=slopes), sliding_window=4096, logits_soft_cap=30.0)
    assert d.alibi_slopes == slopes.data_ptr()
    assert d.sliding_window == 4096 and d.logits_soft_cap == 30.0
    d = rec_decode(dict(a), logits_soft_cap=0.0)  # 0.0: no cap, as FlashInfer spells it
    assert d.logits_soft_cap == 0.0
    # Sinks: 0 without, the tensor's address with, alongside the others.
    assert d.sinks == 0
    sinks = make((8,), fake.float32, "cuda:0")
    d = rec_decode(dict(a, alibi_slopes=slopes), sliding_window=64, sinks=sinks)
    assert d.sinks == sinks.data_ptr() and d.alibi_slopes == slopes.data_ptr()
    assert d.sliding_window == 64


def fp8_reaches_the_runtime():
    # auto: the enum 0, unit scales, no pointers.
    d = rec_decode(T.baseline(fake, make, "cuda:0"))
    assert (d.kv_cache_dtype, d.k_scale, d.v_scale, d.k_scale_ptr, d.v_scale_ptr) == (
        _capi.PA_KV_CACHE_AUTO, 1.0, 1.0, 0, 0)
    assert d.dtype == _capi.PA_F16
    # Each name, each storage; float scales go in the floats, pointers stay 0.
    for kv, want, cache in (("fp8", _capi.PA_KV_CACHE_FP8_E4M3, fake.uint8),
                            ("fp8_e4m3", _capi.PA_KV_CACHE_FP8_E4M3, fake.float8_e4m3fn),
                            ("fp8_e5m2", _capi.PA_KV_CACHE_FP8_E5M2, fake.uint8),
                            ("fp8_e5m2", _capi.PA_KV_CACHE_FP8_E5M2, fake.float8_e5m2)):
        a = T.baseline(fake, make, "cuda:0", dtype=fake.bfloat16, kv_cache_dtype=kv,
                       cache_dtype=cache, D=128)
        d = rec_decode(a)
        assert d.kv_cache_dtype == want, (kv, d.kv_cache_dtype)
        assert d.dtype == _capi.PA_BF16 and d.head_size == 128
        assert d.k_scale == ctypes.c_float(0.05).value and d.v_scale == ctypes.c_float(0.1).value
        assert (d.k_scale_ptr, d.v_scale_ptr) == (0, 0)
        assert d.key_cache == a["key_cache"].data_ptr()
        assert d.value_cache == a["value_cache"].data_ptr()
    # Positional, as vLLM passes them: kv_cache_dtype, k_scale, v_scale after alibi_slopes.
    a8 = T.baseline(fake, make, "cuda:0", kv_cache_dtype="fp8")
    rec.calls.clear()
    pa.paged_attention_v2(*[a8[n] for n in T.SEED_PARAMS], "fp8_e5m2", 2, 0.25)
    d = rec.calls[-1][1]
    assert (d.kv_cache_dtype, d.k_scale, d.v_scale) == (_capi.PA_KV_CACHE_FP8_E5M2, 2.0, 0.25)
    # Device tensors: their addresses go in the pointers (the floats are then
    # unused; 1.0 is written), and their values are never read (item() fails).
    ks = _Tensor((), fake.float32, "cuda:0", value=0.05)
    vs = _Tensor((1,), fake.float32, "cuda:0", value=0.1)
    d = rec_decode(dict(a8, k_scale=ks, v_scale=vs))
    assert (d.k_scale_ptr, d.v_scale_ptr) == (ks.data_ptr(), vs.data_ptr())
    assert (d.k_scale, d.v_scale) == (1.0, 1.0)
    # Each independently.
    d = rec_decode(dict(a8, v_scale=vs))
    assert (d.k_scale_ptr, d.v_scale_ptr) == (0, vs.data_ptr())
    assert d.k_scale == ctypes.c_float(0.05).value and d.v_scale == 1.0
    d = rec_decode(dict(a8, k_scale=ks, v_scale=4))
    assert (d.k_scale_ptr, d.v_scale_ptr, d.k_scale, d.v_scale) == (ks.data_ptr(), 0, 1.0, 4.0)
    # With the other features and fixed_grid.
    slopes = make((8,), fake.float32, "cuda:0")
    rec.calls.clear()
    pa.paged_attention_v2(**dict(a8, alibi_slopes=slopes, k_scale=ks), sliding_window=100,
                          logits_soft_cap=30.0, fixed_grid=True)
    d = rec.calls[-1][1]
    assert (d.alibi_slopes, d.sliding_window, d.logits_soft_cap, d.max_seq_len) == (
        slopes.data_ptr(), 100, 30.0, 0)
    assert (d.kv_cache_dtype, d.k_scale_ptr, d.v_scale) == (
        _capi.PA_KV_CACHE_FP8_E4M3, ks.data_ptr(), ctypes.c_float(0.1).value)
    # plan() builds the same struct.
    rec.calls.clear()
    pa.plan(**dict(a8, v_scale=vs))
    assert rec.calls[-1][0] == "plan" and rec.calls[-1][1].v_scale_ptr == vs.data_ptr()
    assert rec.calls[-1][1].kv_cache_dtype == _capi.PA_KV_CACHE_FP8_E4M3


def fp8_scale_tensor_device_rules():
    a8 = T.baseline(fake, make, "cuda:0", kv_cache_dtype="fp8")
    T.expect_raises(ValueError, ["k_scale is a tensor on cuda:1 but query is on cuda:0",
                                 "pass a Python float"], pa.paged_attention_v2,
                    **dict(a8, k_scale=_Tensor((), fake.float32, "cuda:1")))
    # A CPU tensor is not read on the host with fp8 either: the kernel reads it.
    T.expect_raises(ValueError, ["v_scale is a tensor on cpu but query is on cuda:0"],
                    pa.paged_attention_v2, **dict(a8, v_scale=_Tensor((1,), fake.float32, "cpu",
                                                                      value=0.1)))
    T.expect_raises(ValueError, ["k_scale must start at a 4-byte aligned address"],
                    pa.paged_attention_v2,
                    **dict(a8, k_scale=_Tensor((), fake.float32, "cuda:0", offset_bytes=2)))
    # On CPU tensors the query's device rule comes first, as for every tensor.
    T.expect_raises(ValueError, ["query must be a CUDA tensor"], pa.paged_attention_v2,
                    **dict(T.baseline(fake, make, "cpu", kv_cache_dtype="fp8"),
                           k_scale=_Tensor((), fake.float32, "cpu")))
    # dtype and size come before the devices (and never read the value).
    T.expect_raises(TypeError, ["k_scale must be a float32 tensor", "bfloat16"],
                    pa.paged_attention_v2,
                    **dict(a8, k_scale=_Tensor((), fake.bfloat16, "cuda:1")))
    T.expect_raises(ValueError, ["v_scale must hold one value", "[1, 2]"], pa.paged_attention_v2,
                    **dict(a8, v_scale=_Tensor((1, 2), fake.float32, "cuda:0")))


def rec_decode(args, **kw):
    rec.calls.clear()
    pa.paged_attention_v2(**args, **kw)
    return rec.calls[-1][1]


def every_pointer_in_its_field():
    # One call with every optional tensor (ALiBi, sinks, several query tokens,
    # both fp8 scales on the device): each address reaches its own field.
    a = T.baseline(fake, make, "cuda:0", kv_cache_dtype="fp8", S=3)
    rows = 7  # query tokens of the three sequences: 3 + 0 + 4
    for name in ("query", "output"):
        a[name] = make((rows, 8, 64), fake.float16, "cuda:0")
    a["exp_sums"], a["max_logits"] = (make((rows, 8, 2), fake.float32, "cuda:0")
                                      for _ in range(2))
    a["tmp_output"] = make((rows, 8, 2, 64), fake.float32, "cuda:0")
    extra = dict(alibi_slopes=make((8,), fake.float32, "cuda:0"),
                 sinks=make((8,), fake.float32, "cuda:0"),
                 query_start_loc=make((4,), fake.int32, "cuda:0"),
                 k_scale=make((), fake.float32, "cuda:0"),
                 v_scale=make((1,), fake.float32, "cuda:0"))
    a.update(alibi_slopes=extra["alibi_slopes"], k_scale=extra["k_scale"],
             v_scale=extra["v_scale"])
    d = rec_decode(a, sinks=extra["sinks"], query_start_loc=extra["query_start_loc"],
                   max_query_len=4, sliding_window=100, logits_soft_cap=20.0)
    fields = dict(alibi_slopes="alibi_slopes", sinks="sinks", query_start_loc="query_start_loc",
                  k_scale="k_scale_ptr", v_scale="v_scale_ptr")
    for name, field in fields.items():
        assert getattr(d, field) == extra[name].data_ptr(), (field, getattr(d, field))
    for name in T.SEED_PARAMS[:7] + ("block_tables", "seq_lens"):
        assert getattr(d, name) == a[name].data_ptr(), name
    assert (d.num_seqs, d.max_query_len, d.sliding_window, d.logits_soft_cap) == (3, 4, 100, 20.0)
    assert (d.k_scale, d.v_scale, d.kv_cache_dtype) == (1.0, 1.0, _capi.PA_KV_CACHE_FP8_E4M3)


def unsupported_names_the_library():
    rec.status = _capi.Status(_capi.PA_ERROR_UNSUPPORTED, b"",
                              b"no loaded variant serves dtype f16, head_size 64")
    try:
        msg = T.expect_raises(pa.PagedAttnUnsupportedError, [
            "PA_ERROR_UNSUPPORTED", "no loaded variant serves dtype f16, head_size 64",
            "(kernel library /lib/of/kernels, 7 variants)"], pa.paged_attention_v2,
            **T.baseline(fake, make, "cuda:0"))
    finally:
        rec.status = None
    return msg


def fixed_grid_passes_zero():
    rec.calls.clear()
    a = T.baseline(fake, make, "cuda:0")
    pa.paged_attention_v2(**a, fixed_grid=True)
    assert rec.calls[-1][1].max_seq_len == 0
    a["max_seq_len"] = None
    pa.paged_attention_v2(**a, fixed_grid=True)
    assert rec.calls[-1][1].max_seq_len == 0
    assert rec.calls[-1][1].tmp_dtype == _capi.PA_F32


def float32_dtypes():
    rec.calls.clear()
    pa.paged_attention_v2(**T.baseline(fake, make, "cuda:0", dtype=fake.float32))
    d = rec.calls[-1][1]
    assert (d.dtype, d.tmp_dtype) == (_capi.PA_F32, _capi.PA_F32)


def empty_batch_launches_nothing():
    rec.calls.clear()
    pa.paged_attention_v2(**T.baseline(fake, make, "cuda:0", S=0))
    assert rec.calls == [], rec.calls


def plan_goes_through_checks():
    rec.calls.clear()
    assert pa.plan(**T.baseline(fake, make, "cuda:0")) == {"variant": "fake"}
    assert [c[0] for c in rec.calls] == ["context", "plan"]
    T.expect_raises(TypeError, ["alibi_slopes must be float32"], pa.plan,
                    **dict(T.baseline(fake, make, "cuda:0"), alibi_slopes=make((8,), fake.float16,
                                                                               "cuda:0")))


def cpu_tensors_refused():
    T.expect_raises(ValueError, ["query must be a CUDA tensor", "cpu"], pa.paged_attention_v2,
                    **T.baseline(fake, make, "cpu"))


def mixed_devices_refused():
    a = T.baseline(fake, make, "cuda:0")
    a["key_cache"] = make(a["key_cache"].shape, fake.float16, "cuda:1")
    T.expect_raises(ValueError, ["key_cache is on cuda:1 but query is on cuda:0"],
                    pa.paged_attention_v2, **a)
    a = T.baseline(fake, make, "cuda:0")
    a["seq_lens"] = make((3,), fake.int32, "cpu")
    T.expect_raises(ValueError, ["seq_lens is on cpu"], pa.paged_attention_v2, **a)


def scale_tensors():
    # kv_cache_dtype "auto": a CUDA tensor is refused unread; a CPU one must be 1.
    a = T.baseline(fake, make, "cuda:0")
    T.expect_raises(TypeError, ["k_scale", "synchronise"], pa.paged_attention_v2,
                    **dict(a, k_scale=_Tensor((), fake.float32, "cuda:0", value=1.0)))
    accepted(dict(a, k_scale=_Tensor((), fake.float32, "cpu", value=1.0)))
    T.expect_raises(ValueError, ["v_scale=0.5"], pa.paged_attention_v2,
                    **dict(a, v_scale=_Tensor((1,), fake.float32, "cpu", value=0.5)))
    d = rec_decode(dict(a, k_scale=_Tensor((), fake.float32, "cpu", value=1.0), v_scale=1))
    assert (d.kv_cache_dtype, d.k_scale, d.v_scale, d.k_scale_ptr, d.v_scale_ptr) == (
        _capi.PA_KV_CACHE_AUTO, 1.0, 1.0, 0, 0)


def first_context_during_capture_refused():
    capturing[0] = True
    try:
        T.expect_raises(RuntimeError, ["during CUDA graph capture", "paged_attn.init(0, keys=...)"],
                        _real_context, 0)
    finally:
        capturing[0] = False


def runtime_library_not_found():
    saved_lib, saved_env = _capi._lib, os.environ.get("PA_RUNTIME_LIB")
    _capi._lib = None
    os.environ["PA_RUNTIME_LIB"] = "/nonexistent/libpa_runtime.so"
    try:
        T.expect_raises(FileNotFoundError, ["libpa_runtime.so not found",
                                            "/nonexistent/libpa_runtime.so", "PA_RUNTIME_LIB"],
                        _capi.library)
    finally:
        _capi._lib = saved_lib
        if saved_env is None:
            del os.environ["PA_RUNTIME_LIB"]
        else:
            os.environ["PA_RUNTIME_LIB"] = saved_env


def runtime_library_search_order():
    saved = os.environ.pop("PA_RUNTIME_LIB", None)
    try:
        c = _capi.library_candidates()
        pkg = os.path.dirname(os.path.abspath(_capi.__file__))
        root = os.path.dirname(os.path.dirname(os.path.dirname(pkg)))
        assert c == [os.path.join(pkg, "lib", "libpa_runtime.so")] + [
            os.path.join(root, b, sub, "libpa_runtime.so")
            for b in ("build", "build-rt") for sub in ("lib", "runtime")], c
        os.environ["PA_RUNTIME_LIB"] = T.HERE  # a folder: the library inside it
        assert _capi.library_candidates() == [os.path.join(T.HERE, "libpa_runtime.so")]
    finally:
        os.environ.pop("PA_RUNTIME_LIB", None)
        if saved is not None:
            os.environ["PA_RUNTIME_LIB"] = saved


def kernel_library_not_found():
    saved = os.environ.get("PA_KERNEL_LIBRARY")
    os.environ["PA_KERNEL_LIBRARY"] = "/nonexistent/kernels"
    try:
        T.expect_raises(FileNotFoundError, ["no kernel library folder", "/nonexistent/kernels",
                                            "PA_KERNEL_LIBRARY"], ops.kernel_library_dir)
    finally:
        if saved is None:
            del os.environ["PA_KERNEL_LIBRARY"]
        else:
            os.environ["PA_KERNEL_LIBRARY"] = saved


def status_to_exception():
    st = _capi.Status(_capi.PA_ERROR_CUDA, b"CUDA_ERROR_INVALID_PTX", b"JIT log: bad")
    T.expect_raises(RuntimeError, ["pa_decode_v2 failed", "PA_ERROR_CUDA",
                                       "CUDA_ERROR_INVALID_PTX", "JIT log: bad"],
                        _capi.check, st, "pa_decode_v2")
    st = _capi.Status(_capi.PA_ERROR_UNSUPPORTED, b"", b"no variant for head_size 80")
    try:
        _capi.check(st, "pa_decode_v2")
    except _capi.PagedAttnError as err:
        assert isinstance(err, NotImplementedError) and isinstance(err, RuntimeError)
        assert err.code == _capi.PA_ERROR_UNSUPPORTED and err.driver_error == ""
        assert "no variant for head_size 80" in str(err)
    else:
        raise AssertionError("no exception")
    _capi.check(_capi.Status(_capi.PA_OK, b"", b""), "x")


def struct_layouts():
    # Offsets as the C compiler lays out pa_runtime.h's structs on x86-64/aarch64.
    S, D, P = _capi.Status, _capi.DecodeArgs, _capi.Plan
    assert ctypes.sizeof(S) == 4 + 64 + 1024, ctypes.sizeof(S)
    assert D.scale.offset == 48 and D.query.offset == 56 and D.tmp_output.offset == 120
    assert D.alibi_slopes.offset == 128 and D.sliding_window.offset == 136
    assert D.logits_soft_cap.offset == 140
    # The fp8 fields appended after logits_soft_cap: enum, two floats, 4 bytes
    # of padding, two 8-byte device pointers.
    assert D.kv_cache_dtype.offset == 144 and D.k_scale.offset == 148
    assert D.v_scale.offset == 152 and D.k_scale_ptr.offset == 160
    assert D.v_scale_ptr.offset == 168
    assert D.sinks.offset == 176  # appended after the fp8 fields
    # Several query tokens: a pointer, an int32 and 4 bytes of padding.
    assert D.query_start_loc.offset == 184 and D.max_query_len.offset == 192
    assert ctypes.sizeof(D) == 200, ctypes.sizeof(D)
    assert (_capi.PA_KV_CACHE_AUTO, _capi.PA_KV_CACHE_FP8_E4M3, _capi.PA_KV_CACHE_FP8_E5M2) == (
        0, 1, 2)
    assert P.one_pass.offset == 128 and P.grid.offset == 140 and P.reduce_block.offset == 176
    assert P.resident_programs.offset == 188 and P.partition_split.offset == 192
    assert P.cluster_size.offset == 196
    assert ctypes.sizeof(P) == 200, ctypes.sizeof(P)


def decode_args_packed_as_ctypes_would():
    # pack_decode_args writes every field where ctypes' own constructor does:
    # distinct values in every field, the padding zero in both.
    D = _capi.DecodeArgs
    values = []
    for i, (name, ctype) in enumerate(D._fields_):
        values.append(i + 0.5 if ctype is ctypes.c_float else (i + 1) * 0x10001)
    packed = _capi.pack_decode_args(*values)
    assert isinstance(packed, D)
    assert bytes(packed) == bytes(D(*values)), (bytes(packed).hex(), bytes(D(*values)).hex())
    for (name, _), v in zip(D._fields_, values):
        assert getattr(packed, name) == v, (name, getattr(packed, name), v)
    # Out of range: struct refuses where a ctypes field would wrap or round to inf.
    for i, bad in ((2, 2 ** 31), (13, -1), (12, 1e39)):
        wrong = list(values)
        wrong[i] = bad
        T.expect_raises((OverflowError, struct.error), [], _capi.pack_decode_args,
                        *wrong)


# The stand-in torch has none of the tests of _op.dispatch_free, so every
# call is dispatched; with these (nothing active) a call on CUDA tensors goes
# straight to the implementation's checked launch (_op.call).
_NOTHING_ACTIVE = (lambda: False,) * 5 + (lambda: None,)


def paths_taken():
    """Which way a call went: through the registered op, or around it."""
    impl = registered[("paged_attention_v2", "CompositeExplicitAutograd")]
    seen = []
    registered[("paged_attention_v2", "CompositeExplicitAutograd")] = \
        lambda *a, **k: (seen.append(1), impl(*a, **k))
    try:
        for probes in (None, _NOTHING_ACTIVE):
            _op._PROBES = probes
            rec.calls.clear()
            pa.paged_attention_v2(**T.baseline(fake, make, "cuda:0"))
            assert [c[0] for c in rec.calls] == ["context", "decode"], rec.calls
        assert seen == [1], "dispatched once, then direct: the op ran %d times" % len(seen)
    finally:
        registered[("paged_attention_v2", "CompositeExplicitAutograd")] = impl
        _op._PROBES = None


def body(r):
    r.run("signature is the seed's", signature_is_the_seeds)
    r.run("a call is dispatched, or (nothing active) goes around the op", paths_taken)
    for path, probes in (("", None), ("direct: ", _NOTHING_ACTIVE)):
        _op._PROBES = probes  # the rules and the launch, by each path
        for name, args, exc, subs in T.refusal_cases(fake, make, "cuda:0", make_strided,
                                                      make_misaligned):
            r.run(path + "refuses: " + name, refused, args, exc, subs)
        for name, args in T.accepted_cases(fake, make, "cuda:0"):
            r.run(path + "accepts: " + name, accepted, args)
        for fn in (op_registered, decode_args_built, features_reach_the_runtime,
                   fp8_reaches_the_runtime, fp8_scale_tensor_device_rules,
                   every_pointer_in_its_field, unsupported_names_the_library,
                   fixed_grid_passes_zero, float32_dtypes, empty_batch_launches_nothing,
                   plan_goes_through_checks, cpu_tensors_refused, mixed_devices_refused,
                   scale_tensors, first_context_during_capture_refused):
            r.run(path + fn.__name__, fn)
    _op._PROBES = None
    for fn in (runtime_library_not_found, runtime_library_search_order,
               kernel_library_not_found, status_to_exception, struct_layouts,
               decode_args_packed_as_ctypes_would):
        r.run(fn.__name__, fn)


def main():
    T.Results("paged_attn host checks on a stand-in torch (no GPU, no torch needed)").guarded(body)


if __name__ == "__main__":
    main()
