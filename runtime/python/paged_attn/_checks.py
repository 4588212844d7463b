#===- _checks.py - argument checks of the torch drop-in ---------------------===#
#
# Every rule a paged_attention_v2 call must satisfy, checked on the host from
# tensor metadata only (no device read, no synchronisation, so a checked call
# can still be captured in a CUDA graph). A call that breaks a rule raises
# TypeError, ValueError or NotImplementedError naming the argument, what was
# expected and what was given; nothing is ignored silently.
#
# The checks run in a fixed order: keyword arguments and unsupported
# features, scalars, dtypes, shapes, layout, and devices last, so that all but
# the device rules can be exercised on CPU tensors without a GPU. The first
# phase (check_arg_types: keywords, features, scalars, which arguments are
# tensors) is plain Python over the arguments as given, so torch.compile can
# trace it; the torch op (_op.py) runs it before its arguments meet the op's
# schema, and check_call runs every rule again inside the op: on fake tensors
# while torch.compile traces (fake=True: no address, no CUDA device needed),
# on the real tensors before a launch.
#
#===------------------------------------------------------------------------===#

from __future__ import annotations

import collections
import math
import numbers
import operator
from typing import Tuple

import torch

from . import _capi

#: Tokens of context per workspace partition: the seed's and vLLM's 512. The
#: caller sizes exp_sums/max_logits/tmp_output with ceil(max_seq_len / 512).
PARTITION_SIZE: int = 512
#: Mirrors include/PagedAttn/Dialect/PagedAttn/IR/Limits.h (keep in sync).
SUPPORTED_HEAD_SIZES: Tuple[int, ...] = (64, 80, 96, 112, 128, 192, 256)
#: Block sizes: powers of two in [8, 128], a run-time parameter of every
#: kernel (one bundle serves them all); runtime/src/checks.cpp checks the same.
SUPPORTED_BLOCK_SIZES: Tuple[int, ...] = (8, 16, 32, 64, 128)
KEY_PACK_BYTES = 16
#: fp8 caches: the key cache packs x = 16 one-byte elements, so head_size
#: must be a multiple of it.
FP8_X = KEY_PACK_BYTES

_INT32_MAX = 2 ** 31 - 1

_PA_DTYPE = {
    torch.float16: _capi.PA_F16,
    torch.bfloat16: _capi.PA_BF16,
    torch.float32: _capi.PA_F32,
}

#: kv_cache_dtype names (vLLM's): "fp8" is "fp8_e4m3", OCP FP8 E4M3FN.
KV_CACHE_DTYPES = {
    "auto": _capi.PA_KV_CACHE_AUTO,
    "fp8": _capi.PA_KV_CACHE_FP8_E4M3,
    "fp8_e4m3": _capi.PA_KV_CACHE_FP8_E4M3,
    "fp8_e5m2": _capi.PA_KV_CACHE_FP8_E5M2,
}

# The torch dtype of each fp8 kind (None where this torch lacks it: uint8
# caches still work). uint8 is vLLM's storage convention for either kind.
_FP8_TORCH = {
    _capi.PA_KV_CACHE_FP8_E4M3: getattr(torch, "float8_e4m3fn", None),
    _capi.PA_KV_CACHE_FP8_E5M2: getattr(torch, "float8_e5m2", None),
}
_FP8_NAME = {_capi.PA_KV_CACHE_FP8_E4M3: "float8_e4m3fn",
             _capi.PA_KV_CACHE_FP8_E5M2: "float8_e5m2"}

# vLLM's ops.paged_attention_v2 takes these keywords beyond the seed's. They
# only matter for block-sparse attention (blocksparse_vert_stride > 1), so a
# dense call may pass them; a block-sparse one is refused.
_VLLM_KWARGS = ("tp_rank", "blocksparse_local_blocks", "blocksparse_vert_stride",
                "blocksparse_block_size", "blocksparse_head_sliding_step")

_FN = "paged_attention_v2"

#: Indices in check_call's tensors (query, key_cache, value_cache, block_tables,
#: seq_lens, output, exp_sums, max_logits, tmp_output) of those the kernels read
#: or write with 16-byte accesses: query, key_cache, value_cache, output, tmp_output.
_ALIGNED_16 = (0, 1, 2, 5, 8)


#: A checked call: pa_decode_args' fields, named and ordered as
#: _capi.DecodeArgs' (pointers as ints, enums as their values), then the
#: CUDA device index. `pack_decode_args(*call[:-1])` is the C struct.
Call = collections.namedtuple("Call", [name for name, _ in _capi.DecodeArgs._fields_]
                              + ["device_index"])


#: The most query tokens of one sequence in a call (pa_runtime.h's
#: PA_MAX_QUERY_LEN).
MAX_QUERY_LEN = 16


def _dtype_name(dt):
    return str(dt).replace("torch.", "")


#: The smallest magnitude a double rounds to inf as a float32: the largest
#: float32 plus half its last step (that midpoint rounds to even, up to inf).
_F32_ROUNDS_TO_INF = 2.0 ** 128 - 2.0 ** 103


def _finite_f32(value):
    """A Python float that stays finite when rounded to float32."""
    return abs(value) < _F32_ROUNDS_TO_INF  # False for NaN too


#: The largest magnitude a double rounds to 0 as a float32: half the smallest
#: subnormal (2^-149); that midpoint rounds to even, down to 0.
_F32_ROUNDS_TO_ZERO = 2.0 ** -150


def _float_or_inf(value):
    if type(value) is float:
        return value
    try:
        return float(value)
    except OverflowError:  # an int too large for a double
        return math.inf


# A symbolic int: what torch.compile passes for an int input it made dynamic.
_SYM_INT = getattr(torch, "SymInt", ())


def _int_arg(name, value):
    if type(value) is int:  # the common case, first: a plain int
        return value
    # isinstance, not type(value) is int: torch.compile answers it without
    # specializing an int it traces symbolically (no recompile per value).
    if (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, _SYM_INT):
        return value
    if isinstance(value, bool) or isinstance(value, torch.Tensor):
        raise TypeError("%s(): %s must be a Python int, got %s" % (_FN, name, type(value).__name__))
    if not hasattr(type(value), "__index__"):  # before operator.index: torch.compile traces this
        raise TypeError("%s(): %s must be an int, got %s %r"
                        % (_FN, name, type(value).__name__, value))
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError("%s(): %s must be an int, got %s %r"
                        % (_FN, name, type(value).__name__, value)) from None


def _kv_cache_dtype_arg(value):
    """kv_cache_dtype: "auto", "fp8", "fp8_e4m3" or "fp8_e5m2" -> pa_kv_cache_dtype."""
    if not isinstance(value, str):
        raise TypeError("%s(): kv_cache_dtype must be a str, got %s"
                        % (_FN, type(value).__name__))
    kv = KV_CACHE_DTYPES.get(value)
    if kv is None:
        raise ValueError(
            "%s(): kv_cache_dtype=%r is not supported; expected one of %s (\"auto\": the caches "
            "hold the query's dtype; \"fp8\" = \"fp8_e4m3\": OCP E4M3FN bytes)"
            % (_FN, value, ", ".join(repr(k) for k in KV_CACHE_DTYPES)))
    return kv


def _fp8_scale(name, value, kv_name):
    """k_scale / v_scale with an fp8 cache (value = stored * scale): a real
    number > 0, finite as a float32 -> (value, None); or a float32 tensor of
    one element -> (1.0, tensor), whose value the kernel reads on the device
    at run time (never read here: that would synchronise). Its device and
    alignment are checked with the other tensors' (last)."""
    if isinstance(value, torch.Tensor):
        if value.dtype != torch.float32:
            raise TypeError("%s(): %s must be a float32 tensor (one value, read by the kernel on "
                            "the device) or a Python float, got a %s tensor"
                            % (_FN, name, _dtype_name(value.dtype)))
        if value.numel() != 1:
            raise ValueError("%s(): %s must hold one value, got shape %s"
                             % (_FN, name, list(value.shape)))
        return 1.0, value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s(): %s must be a float or a float32 CUDA tensor of one element, got %s"
                        % (_FN, name, type(value).__name__))
    v = _float_or_inf(value)
    # Pure arithmetic (no ctypes round trip), so torch.compile traces it.
    if not _F32_ROUNDS_TO_ZERO < v < _F32_ROUNDS_TO_INF:
        f32 = 0.0 if 0 < v <= _F32_ROUNDS_TO_ZERO else math.inf
        raise ValueError("%s(): %s must be finite and > 0 with kv_cache_dtype=%r (value = stored "
                         "* %s), got %r%s"
                         % (_FN, name, kv_name, name, value,
                            " (%r as a float32)" % f32 if math.isfinite(v) and v > 0 else ""))
    return v, None


def _unit_scale(name, value):
    """k_scale / v_scale with kv_cache_dtype="auto": must be exactly 1."""
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise TypeError(
                "%s(): %s is a %s tensor; reading it would synchronise with the device. "
                "With kv_cache_dtype=\"auto\" pass the Python float 1.0"
                % (_FN, name, value.device))
        if value.numel() != 1:
            raise ValueError("%s(): %s must hold one value, got shape %s"
                             % (_FN, name, tuple(value.shape)))
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s(): %s must be a float, got %s" % (_FN, name, type(value).__name__))
    if float(value) != 1.0:
        raise ValueError(
            "%s(): %s=%r has no meaning with kv_cache_dtype=\"auto\" (only 1.0 is accepted); "
            "scales apply to fp8 caches (kv_cache_dtype \"fp8\", \"fp8_e4m3\" or \"fp8_e5m2\")"
            % (_FN, name, value))


def _check_kwargs(kwargs):
    unknown = sorted(k for k in kwargs if k not in _VLLM_KWARGS)
    if unknown:
        raise TypeError("%s() got unexpected keyword argument(s) %s; the extensions are "
                        "'fixed_grid', 'sliding_window', 'logits_soft_cap', 'sinks', "
                        "'query_start_loc', 'max_query_len' and vLLM's "
                        "dense-call keywords %s"
                        % (_FN, ", ".join(repr(k) for k in unknown), ", ".join(_VLLM_KWARGS)))
    for k in _VLLM_KWARGS:
        if k in kwargs:
            _int_arg(k, kwargs[k])
    stride = kwargs.get("blocksparse_vert_stride", 0)
    if stride > 1:
        raise NotImplementedError("%s(): block-sparse attention (blocksparse_vert_stride=%d > 1) "
                                  "is not supported" % (_FN, stride))


def _tensor(name, value):
    if not isinstance(value, torch.Tensor):
        raise TypeError("%s(): %s must be a torch.Tensor, got %s"
                        % (_FN, name, type(value).__name__))
    return value


def _shape_error(name, expected, t, why=""):
    return ValueError("%s(): %s must have shape %s%s, got %s"
                      % (_FN, name, expected, why, list(t.shape)))


def _window_arg(value):
    """sliding_window: None (every token) or a positive int of tokens."""
    if value is None:
        return 0
    value = _int_arg("sliding_window", value)
    if value < 1:
        raise ValueError("%s(): sliding_window must be None or a positive number of tokens, got %d"
                         % (_FN, value))
    if value > 2 ** 31 - 1:
        raise ValueError("%s(): sliding_window (%d) does not fit in 32 bits" % (_FN, value))
    return value


def _soft_cap_arg(value):
    """logits_soft_cap: None or 0.0 (no cap) or a finite positive float."""
    if value is None:
        return 0.0
    if type(value) is float and 0.0 <= value < _F32_ROUNDS_TO_INF:  # the common case, first
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s(): logits_soft_cap must be a float, got %s"
                        % (_FN, type(value).__name__))
    value = _float_or_inf(value)
    if not _finite_f32(value) or value < 0.0:
        raise ValueError("%s(): logits_soft_cap must be None, 0.0 (no cap) or finite and positive "
                         "as a float32, got %r" % (_FN, value))
    return value


def _query_tokens_arg(query_start_loc, max_query_len):
    """(query_start_loc tensor or None, max_query_len: 1..16 with it, 0 without)."""
    if query_start_loc is None:
        if max_query_len is not None and max_query_len != 1:
            raise ValueError("%s(): max_query_len=%r needs query_start_loc (without it every "
                             "sequence has one query token)" % (_FN, max_query_len))
        return None, 0
    qsl = _tensor("query_start_loc", query_start_loc)
    if max_query_len is None:
        raise ValueError("%s(): query_start_loc needs max_query_len= (a Python int, the largest "
                         "query_start_loc[s+1] - query_start_loc[s]; reading it from the device "
                         "would synchronize)" % _FN)
    n = _int_arg("max_query_len", max_query_len)
    if not 1 <= n <= MAX_QUERY_LEN:
        raise ValueError("%s(): max_query_len must be in [1, %d], got %d"
                         % (_FN, MAX_QUERY_LEN, n))
    return qsl, n


#: The names of Args.tensors, in its order.
_ARG_TENSOR_NAMES = ("query", "output", "key_cache", "value_cache", "block_tables", "seq_lens",
                     "exp_sums", "max_logits", "tmp_output")


class Args:
    """The arguments after check_arg_types: scalars as the kernels take them,
    tensors as given (their metadata not yet checked)."""
    __slots__ = ("window", "soft_cap", "alibi", "sinks", "kv", "fp8", "k_scale", "k_scale_t", "v_scale",
                 "v_scale_t", "fixed_grid", "num_kv_heads", "block_size", "max_seq_len", "scale",
                 "tensors", "query_start_loc", "max_query_len")


def check_arg_types(output, exp_sums, max_logits, tmp_output, query, key_cache, value_cache,
                    num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
                    alibi_slopes, kv_cache_dtype, k_scale, v_scale, kwargs, fixed_grid,
                    sliding_window=None, logits_soft_cap=None, sinks=None,
                    query_start_loc=None, max_query_len=None):
    """The rules on the arguments themselves, not on tensor metadata: keywords,
    features, scalars, and which arguments are tensors. Returns an Args."""
    a = Args()
    # --- keywords and features ---------------------------------------------
    if kwargs:
        _check_kwargs(kwargs)
    a.window = 0 if sliding_window is None else _window_arg(sliding_window)
    a.soft_cap = _soft_cap_arg(logits_soft_cap)
    a.alibi = None if alibi_slopes is None else _tensor("alibi_slopes", alibi_slopes)
    a.sinks = None if sinks is None else _tensor("sinks", sinks)
    if query_start_loc is None and max_query_len is None:
        a.query_start_loc, a.max_query_len = None, 0
    else:
        a.query_start_loc, a.max_query_len = _query_tokens_arg(query_start_loc, max_query_len)
    a.kv = _kv_cache_dtype_arg(kv_cache_dtype)
    a.fp8 = a.kv != _capi.PA_KV_CACHE_AUTO
    a.k_scale_t = a.v_scale_t = None
    if a.fp8:
        a.k_scale, a.k_scale_t = _fp8_scale("k_scale", k_scale, kv_cache_dtype)
        a.v_scale, a.v_scale_t = _fp8_scale("v_scale", v_scale, kv_cache_dtype)
    else:
        # Fast path for the Python float 1.0; anything else (a tensor included,
        # which must not be compared on the device) goes through _unit_scale.
        if not (type(k_scale) is float and k_scale == 1.0):
            _unit_scale("k_scale", k_scale)
        if not (type(v_scale) is float and v_scale == 1.0):
            _unit_scale("v_scale", v_scale)
        a.k_scale = a.v_scale = 1.0
    if not isinstance(fixed_grid, bool):
        raise TypeError("%s(): fixed_grid must be a bool, got %s"
                        % (_FN, type(fixed_grid).__name__))
    a.fixed_grid = fixed_grid

    # --- scalars -----------------------------------------------------------
    a.num_kv_heads = _int_arg("num_kv_heads", num_kv_heads)
    a.block_size = _int_arg("block_size", block_size)
    if fixed_grid and max_seq_len is None:
        a.max_seq_len = 0
    else:
        a.max_seq_len = _int_arg("max_seq_len", max_seq_len)
    if type(scale) is not float:
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            raise TypeError("%s(): scale must be a float, got %s" % (_FN, type(scale).__name__))
        scale = _float_or_inf(scale)
    if not _finite_f32(scale):
        raise ValueError("%s(): scale must be finite as a float32 (the kernels' type), got %r"
                         % (_FN, scale))
    a.scale = scale

    # --- tensors ---------------------------------------------------------------
    a.tensors = (query, output, key_cache, value_cache, block_tables, seq_lens, exp_sums,
                 max_logits, tmp_output)
    for t in a.tensors:
        if not isinstance(t, torch.Tensor):  # then say which, the first in the seed's order
            for name, value in zip(_ARG_TENSOR_NAMES, a.tensors):
                _tensor(name, value)
    return a


def check_call(output, exp_sums, max_logits, tmp_output, query, key_cache, value_cache,
               num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
               alibi_slopes, kv_cache_dtype, k_scale, v_scale, kwargs, fixed_grid,
               sliding_window=None, logits_soft_cap=None, sinks=None, query_start_loc=None,
               max_query_len=None, fake=False):
    """Checks one call; returns a Call or raises. fake=True: on the fake
    tensors of a torch.compile trace, which have no address (alignment is
    checked on the storage offset) and need not be on a CUDA device.

    The phases, in this order (the tests expect the first rule broken to be
    the one reported): argument types, dtypes, shapes of the query and the
    caches, shapes of the tables and the workspace, max_seq_len, the per-head
    tensors, layout, then alignment and devices."""
    a = check_arg_types(output, exp_sums, max_logits, tmp_output, query, key_cache, value_cache,
                        num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
                        alibi_slopes, kv_cache_dtype, k_scale, v_scale, kwargs, fixed_grid,
                        sliding_window, logits_soft_cap, sinks, query_start_loc, max_query_len)
    return check_typed(a, kv_cache_dtype, fake)


def check_typed(a, kv_cache_dtype, fake=False):
    """check_call's rules after the argument types: on the Args of
    check_arg_types (kv_cache_dtype as given, for the messages)."""
    pa_dtypes = _check_dtypes(a, kv_cache_dtype)
    R, H, D, NB, KVH, BS = _check_cache_shapes(a, kv_cache_dtype)
    S, MB, P = _check_workspace_shapes(a, R, H, D, NB, BS)
    _check_max_seq_len(a, S, MB, BS, P)
    _check_per_head_tensors(a, H)
    tensors, scale_tensors = _check_layout(a)
    dev = tensors[0][1].device
    if fake:
        _check_fake_alignment(tensors, scale_tensors)
        _check_devices(dev, tensors, scale_tensors, need_cuda=False)
        return None
    pointers = _check_alignment(tensors, scale_tensors)
    _check_devices(dev, tensors, scale_tensors, need_cuda=True)
    return _make_call(a, pa_dtypes, (S, H, KVH, D, BS, NB, MB, P), dev, pointers)


def _check_dtypes(a, kv_cache_dtype):
    """The query's dtype fixes output's and the caches' (or the caches are
    fp8); the tables are int32, the statistics float32. Returns the
    (pa_dtype, pa_tmp_dtype) of the query and of tmp_output."""
    q, out, kc, vc, bt, sl, es, ml, tmp = a.tensors
    dt = q.dtype
    pa_dtype = _PA_DTYPE.get(dt)
    if pa_dtype is None:
        raise TypeError("%s(): query must be float16, bfloat16 or float32, got %s"
                        % (_FN, _dtype_name(dt)))
    if out.dtype != dt:
        raise TypeError("%s(): output must have the query's dtype %s, got %s"
                        % (_FN, _dtype_name(dt), _dtype_name(out.dtype)))
    for name, t in (("key_cache", kc), ("value_cache", vc)):
        if a.fp8:
            _check_fp8_cache(name, t, a.kv, kv_cache_dtype)
        elif t.dtype != dt:
            raise TypeError("%s(): %s must have the query's dtype %s, got %s%s"
                            % (_FN, name, _dtype_name(dt), _dtype_name(t.dtype),
                               "; an fp8 cache needs kv_cache_dtype=\"fp8\" (E4M3) or "
                               "\"fp8_e5m2\"" if _is_byte_dtype(t.dtype) else ""))
    for name, t in (("block_tables", bt), ("seq_lens", sl)):
        if t.dtype != torch.int32:
            raise TypeError("%s(): %s must be int32, got %s" % (_FN, name, _dtype_name(t.dtype)))
    for name, t in (("exp_sums", es), ("max_logits", ml)):
        if t.dtype != torch.float32:
            raise TypeError("%s(): %s must be float32, got %s"
                            % (_FN, name, _dtype_name(t.dtype)))
    if tmp.dtype == torch.float32:
        return pa_dtype, _capi.PA_F32
    if tmp.dtype == dt:
        return pa_dtype, pa_dtype
    raise TypeError("%s(): tmp_output must be float32 or the query's dtype %s, got %s"
                    % (_FN, _dtype_name(dt), _dtype_name(tmp.dtype)))


def _rows_name(a):
    """What the query's dim 0 counts: query tokens with query_start_loc."""
    return "num_query_tokens" if a.query_start_loc is not None else "num_seqs"


def _check_cache_shapes(a, kv_cache_dtype):
    """query, output and the caches agree with each other and with the
    num_kv_heads and block_size arguments, in supported sizes. Returns
    (R, H, D, NB, KVH, BS): query rows, heads, head_size, cache blocks, kv
    heads, block_size."""
    q, out, kc, vc = a.tensors[:4]
    rows_name = _rows_name(a)
    if q.dim() != 3:
        raise _shape_error("query", "[%s, num_heads, head_size]" % rows_name, q)
    R, H, D = q.shape  # R: query rows (sequences, or query tokens with query_start_loc)
    if out.shape != (R, H, D):
        raise _shape_error("output", "[%s, num_heads, head_size] = %s" % (rows_name, [R, H, D]),
                           out, " (the query's)")
    if a.fp8 and D % FP8_X:
        raise ValueError("%s(): head_size %d (query.shape[2]) must be a multiple of %d with "
                         "kv_cache_dtype=%r (the key cache packs x = 16 one-byte elements)"
                         % (_FN, D, FP8_X, kv_cache_dtype))
    x = KEY_PACK_BYTES // kc.element_size()
    if kc.dim() != 5:
        raise _shape_error("key_cache", "[num_blocks, num_kv_heads, head_size/x, block_size, x]",
                           kc)
    NB, KVH, Dx, BS, X = kc.shape
    if X != x:
        raise _shape_error("key_cache", "[..., x] with x = 16 bytes / %d-byte element = %d"
                           % (kc.element_size(), x), kc)
    if Dx * x != D:
        raise _shape_error("key_cache", "[num_blocks, num_kv_heads, head_size/x = %d/%d, ...]"
                           % (D, x), kc, " (head_size from query.shape[2])")
    if a.num_kv_heads != KVH:
        raise ValueError("%s(): num_kv_heads argument (%d) must equal key_cache.shape[1] (%d)"
                         % (_FN, a.num_kv_heads, KVH))
    if a.block_size != BS:
        raise ValueError("%s(): block_size argument (%d) must equal key_cache.shape[3] (%d)"
                         % (_FN, a.block_size, BS))
    if vc.shape != (NB, KVH, D, BS):
        raise _shape_error("value_cache", "[num_blocks, num_kv_heads, head_size, block_size] = %s"
                           % [NB, KVH, D, BS], vc)
    if KVH < 1 or H % KVH != 0:
        raise ValueError("%s(): num_heads (query.shape[1] = %d) must be a multiple of "
                         "num_kv_heads (%d)" % (_FN, H, KVH))
    if NB < 1:
        raise ValueError("%s(): key_cache holds no block (shape %s)" % (_FN, list(kc.shape)))
    if D not in SUPPORTED_HEAD_SIZES:
        raise NotImplementedError("%s(): head_size %d (query.shape[2]) is not supported; "
                                  "supported: %s" % (_FN, D, SUPPORTED_HEAD_SIZES))
    if BS not in SUPPORTED_BLOCK_SIZES:
        raise NotImplementedError("%s(): block_size %d is not supported: it must be a power of "
                                  "two in [8, 128] (%s)" % (_FN, BS, SUPPORTED_BLOCK_SIZES))
    return R, H, D, NB, KVH, BS


def _check_workspace_shapes(a, R, H, D, NB, BS):
    """block_tables, seq_lens (and query_start_loc) per sequence; exp_sums,
    max_logits and tmp_output per query row; every size within int32.
    Returns (S, MB, P): sequences, max_blocks_per_seq, max_num_partitions."""
    bt, sl, es, ml, tmp = a.tensors[4:]
    qsl = a.query_start_loc
    rows_name = _rows_name(a)
    bts = bt.shape
    S = _num_seqs(qsl, bt, R)
    if len(bts) != 2 or bts[0] != S or bts[1] < 1:
        raise _shape_error("block_tables", "[num_seqs = %d, max_blocks_per_seq >= 1]" % S, bt)
    MB = bts[1]
    if sl.shape != (S,):
        raise _shape_error("seq_lens", "[num_seqs] = [%d]" % S, sl)
    ess = es.shape
    if len(ess) != 3 or ess[0] != R or ess[1] != H or ess[2] < 1:
        raise _shape_error("exp_sums", "[%s, num_heads, max_num_partitions] = [%d, %d, >= 1]"
                           % (rows_name, R, H), es)
    P = ess[2]
    if ml.shape != (R, H, P):
        raise _shape_error("max_logits", "%s (exp_sums')" % [R, H, P], ml)
    if tmp.shape != (R, H, P, D):
        raise _shape_error("tmp_output", "[%s, num_heads, max_num_partitions, head_size] = %s"
                           % (rows_name, [R, H, P, D]), tmp)
    if qsl is not None:
        _check_query_start_loc(qsl, S)
    if max(R, H, NB, MB * BS, P * PARTITION_SIZE) > _INT32_MAX:
        for name, v in ((rows_name, R), ("num_heads", H), ("num_blocks", NB),
                        ("max_blocks_per_seq", MB), ("max_num_partitions", P),
                        ("max_blocks_per_seq * block_size", MB * BS),
                        ("max_num_partitions * %d" % PARTITION_SIZE, P * PARTITION_SIZE)):
            if v > _INT32_MAX:
                raise ValueError("%s(): %s (%d) does not fit in int32" % (_FN, name, v))
    return S, MB, P


def _check_max_seq_len(a, S, MB, BS, P):
    """max_seq_len against the block tables and the workspace."""
    max_seq_len, fixed_grid = a.max_seq_len, a.fixed_grid
    if max_seq_len < 0 or (max_seq_len == 0 and not fixed_grid and S > 0):
        raise ValueError("%s(): max_seq_len must be >= 1 (the longest seq_lens entry), got %d%s"
                         % (_FN, max_seq_len, "" if fixed_grid else
                            "; use fixed_grid=True for a grid that does not depend on it"))
    if max_seq_len > MB * BS:
        raise ValueError("%s(): max_seq_len (%d) exceeds what block_tables can address: "
                         "max_blocks_per_seq * block_size = %d * %d = %d"
                         % (_FN, max_seq_len, MB, BS, MB * BS))
    needed = -(-max_seq_len // PARTITION_SIZE)
    if needed > P:
        raise ValueError("%s(): workspace too small: max_seq_len %d needs ceil(%d / %d) = %d "
                         "partitions, but exp_sums/max_logits/tmp_output have max_num_partitions "
                         "= %d (dim 2)" % (_FN, max_seq_len, max_seq_len, PARTITION_SIZE,
                                           needed, P))


def _check_per_head_tensors(a, H):
    """alibi_slopes and sinks, where given: float32 [num_heads]."""
    for name, t in (("alibi_slopes", a.alibi), ("sinks", a.sinks)):
        if t is None:
            continue
        if t.dtype != torch.float32:
            raise TypeError("%s(): %s must be float32, got %s"
                            % (_FN, name, _dtype_name(t.dtype)))
        if t.shape != (H,):
            raise _shape_error(name, "[num_heads] = [%d]" % H, t)


def _check_layout(a):
    """Every tensor contiguous. Returns (tensors, scale_tensors): (name,
    tensor) pairs, the nine of pa_decode_args first, in its order, then the
    optional ones given; the fp8 scale tensors given."""
    q, out, kc, vc, bt, sl, es, ml, tmp = a.tensors
    tensors = (("query", q), ("key_cache", kc), ("value_cache", vc), ("block_tables", bt),
               ("seq_lens", sl), ("output", out), ("exp_sums", es), ("max_logits", ml),
               ("tmp_output", tmp))
    if a.alibi is not None:
        tensors += (("alibi_slopes", a.alibi),)
    if a.sinks is not None:
        tensors += (("sinks", a.sinks),)
    if a.query_start_loc is not None:
        tensors += (("query_start_loc", a.query_start_loc),)
    scale_tensors = tuple((n, t) for n, t in (("k_scale", a.k_scale_t), ("v_scale", a.v_scale_t))
                          if t is not None)
    for name, t in tensors:
        if not t.is_contiguous():
            raise ValueError("%s(): %s must be contiguous (row-major, no gaps), got strides %s "
                             "for shape %s; pass %s.contiguous()"
                             % (_FN, name, tuple(t.stride()), list(t.shape), name))
    return tensors, scale_tensors


def _check_alignment(tensors, scale_tensors):
    """16-byte aligned addresses where the kernels load 16 bytes, 4-byte
    aligned scale tensors. Returns the nine pointers in pa_decode_args order
    (the tensors' order), each read once."""
    pointers = [t.data_ptr() for _, t in tensors[:9]]
    for i in _ALIGNED_16:
        if pointers[i] % 16:
            raise ValueError("%s(): %s must start at a 16-byte aligned address (the kernels use "
                             "16-byte loads), got 0x%x" % (_FN, tensors[i][0], pointers[i]))
    for name, t in scale_tensors:
        if t.data_ptr() % 4:
            raise ValueError("%s(): %s must start at a 4-byte aligned address (one float32), "
                             "got 0x%x" % (_FN, name, t.data_ptr()))
    return pointers


def _make_call(a, pa_dtypes, sizes, dev, pointers):
    """The checked call: sizes = (S, H, KVH, D, BS, NB, MB, P); pointers: the
    nine of pa_decode_args, in its order."""
    S, H, KVH, D, BS, NB, MB, P = sizes
    ptr = lambda t: t.data_ptr() if t is not None else 0  # noqa: E731
    # In pa_decode_args' order (Call's fields).
    return Call._make((pa_dtypes[0], pa_dtypes[1], S, H, KVH, D, BS, NB, MB, P, PARTITION_SIZE,
                       0 if a.fixed_grid else a.max_seq_len, a.scale, *pointers, ptr(a.alibi),
                       a.window, a.soft_cap, a.kv, a.k_scale, a.v_scale, ptr(a.k_scale_t),
                       ptr(a.v_scale_t), ptr(a.sinks), ptr(a.query_start_loc), a.max_query_len,
                       dev.index if dev.index is not None else torch.cuda.current_device()))


def _num_seqs(qsl, bt, rows):
    """Sequences: the query's rows, or block_tables' with query_start_loc."""
    if qsl is None:
        return rows
    if bt.dim() != 2:
        raise _shape_error("block_tables", "[num_seqs, max_blocks_per_seq]", bt)
    return bt.shape[0]


def _check_query_start_loc(qsl, seqs):
    if qsl.dtype != torch.int32:
        raise TypeError("%s(): query_start_loc must be int32, got %s"
                        % (_FN, _dtype_name(qsl.dtype)))
    if qsl.shape != (seqs + 1,):
        raise _shape_error("query_start_loc", "[num_seqs + 1] = [%d]" % (seqs + 1), qsl,
                           " (num_seqs from block_tables.shape[0])")


def _check_fake_alignment(tensors, scale_tensors):
    """Alignment on fake tensors, which have no address: the offset into their
    storage (torch's allocators align every storage to far more than 16)."""
    for i in _ALIGNED_16:
        name, t = tensors[i]
        if (t.storage_offset() * t.element_size()) % 16:
            raise ValueError("%s(): %s must start at a 16-byte aligned address (the kernels use "
                             "16-byte loads), got a view %d bytes into its storage"
                             % (_FN, name, t.storage_offset() * t.element_size()))
    for name, t in scale_tensors:
        if (t.storage_offset() * t.element_size()) % 4:
            raise ValueError("%s(): %s must start at a 4-byte aligned address (one float32), "
                             "got a view %d bytes into its storage"
                             % (_FN, name, t.storage_offset() * t.element_size()))


def _check_devices(dev, tensors, scale_tensors, need_cuda):
    """One device for every tensor (the query's), a CUDA one unless tracing."""
    if need_cuda and dev.type != "cuda":
        raise ValueError("%s(): query must be a CUDA tensor, got device %s" % (_FN, dev))
    for name, t in tensors[1:]:
        d = t.device
        if d != dev:
            raise ValueError("%s(): %s is on %s but query is on %s; all tensors must be on one "
                             "CUDA device" % (_FN, name, d, dev))
    for name, t in scale_tensors:
        d = t.device
        if d != dev:
            raise ValueError("%s(): %s is a tensor on %s but query is on %s; with an fp8 cache a "
                             "scale tensor is read by the kernel on the device: put it on %s, or "
                             "pass a Python float" % (_FN, name, d, dev, dev))


def _is_byte_dtype(dt):
    return dt == torch.uint8 or _dtype_name(dt).startswith("float8")


def _check_fp8_cache(name, t, kv, kv_name):
    """An fp8 cache: uint8 (vLLM's storage, read as kv) or the torch float8
    dtype of kv."""
    want = _FP8_TORCH[kv]
    if t.dtype == torch.uint8 or (want is not None and t.dtype == want):
        return
    got = _dtype_name(t.dtype)
    for other, other_name in _FP8_NAME.items():
        if other != kv and got == other_name:
            raise TypeError(
                "%s(): %s is %s, which disagrees with kv_cache_dtype=%r (%s bytes); pass "
                "kv_cache_dtype=%r for %s caches, or uint8 caches"
                % (_FN, name, got, kv_name, _FP8_NAME[kv], _capi.KV_CACHE_DTYPE_NAMES[other],
                   got))
    raise TypeError("%s(): %s must be uint8 or %s with kv_cache_dtype=%r (one byte per element), "
                    "got %s" % (_FN, name, _FP8_NAME[kv], kv_name, got))
