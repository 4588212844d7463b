#===- ops.py - paged_attention_v2 on torch tensors --------------------------===#
#
# The drop-in for the seed's paged_attention_v2_triton: same arguments, same
# layouts, launched through libpa_runtime.so on torch's current CUDA stream.
# One pa_context per CUDA device is created on first use and kept in a
# module-level table (the runtime itself holds no global state); it loads the
# kernel library (a folder of bundles pa-opt exported) once. The call is the
# torch custom op torch.ops.paged_attn.paged_attention_v2 (_op.py), whose
# implementation here checks and launches the kernels; in plain eager mode
# the call checks and launches the same way without the dispatcher
# (_op.call).
#
#===------------------------------------------------------------------------===#

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import torch

from . import _capi, _checks, _op
from ._checks import PARTITION_SIZE

KERNEL_LIBRARY_ENV = "PA_KERNEL_LIBRARY"


def kernel_library_candidates() -> List[str]:
    """Where the kernel library folder is looked for, in order:
    $PA_KERNEL_LIBRARY, paged_attn/kernels/, <repo>/build/kernel-library."""
    env = os.environ.get(KERNEL_LIBRARY_ENV)
    if env:
        return [env]
    return [os.path.join(_capi._PKG_DIR, "kernels"),
            os.path.join(_capi._REPO_ROOT, "build", "kernel-library")]


def kernel_library_dir() -> str:
    candidates = kernel_library_candidates()
    for d in candidates:
        if os.path.isdir(d):
            return d
    raise FileNotFoundError(
        "paged_attn: no kernel library folder; looked at %s. Export the bundles with pa-opt "
        "(or build the 'kernel-library' target) or set %s to the folder holding the *.manifest files"
        % (", ".join(candidates), KERNEL_LIBRARY_ENV))


_contexts = {}  # CUDA device index -> _capi.Context
_contexts_lock = threading.Lock()


def _context(device_index):
    ctx = _contexts.get(device_index)
    if ctx is not None:
        return ctx
    with _contexts_lock:
        ctx = _contexts.get(device_index)
        if ctx is None:
            if torch.cuda.is_current_stream_capturing():
                # Loading modules is no stream work and may not be legal while a
                # graph is being captured; warm-up first is the usual rule.
                raise RuntimeError(
                    "paged_attn: the first call on cuda:%d happens during CUDA graph capture; "
                    "call paged_attn.init(%d, keys=...) (or run the op once per key) before "
                    "capturing, so the kernels are loaded outside the capture"
                    % (device_index, device_index))
            ctx = _capi.Context(device_index, kernel_library_dir())
            _contexts[device_index] = ctx
    return ctx


def _device_index(device):
    if device is None:
        return torch.cuda.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    d = torch.device(device)
    if d.type != "cuda":
        raise ValueError("paged_attn: device must be a CUDA device, got %s" % d)
    return d.index if d.index is not None else torch.cuda.current_device()


_DTYPES = {torch.float16: _capi.PA_F16, torch.bfloat16: _capi.PA_BF16,
           torch.float32: _capi.PA_F32}


def _key_args(key):
    """The pa_decode_args of each call a key dict describes (tmp_dtype None:
    both float32 and the dtype). Keys: dtype, head_size, block_size, num_heads,
    num_kv_heads; optional kv_cache_dtype ("auto"), tmp_dtype, alibi,
    logits_soft_cap, sliding_window, sinks (bools: whether calls use them)."""
    unknown = set(key) - {"dtype", "head_size", "block_size", "num_heads", "num_kv_heads",
                          "kv_cache_dtype", "tmp_dtype", "alibi", "logits_soft_cap",
                          "sliding_window", "sinks"}
    if unknown:
        raise TypeError("paged_attn.init: unknown key field(s) %s" % sorted(unknown))
    dt = _DTYPES[key["dtype"]]
    tmp = key.get("tmp_dtype")
    tmps = [_capi.PA_F32, dt] if tmp is None else [_DTYPES[tmp]]
    kv = _checks._kv_cache_dtype_arg(key.get("kv_cache_dtype", "auto"))
    out = []
    for t in dict.fromkeys(tmps):
        a = _capi.DecodeArgs()
        a.dtype, a.tmp_dtype, a.kv_cache_dtype = dt, t, kv
        a.head_size, a.block_size = int(key["head_size"]), int(key["block_size"])
        a.num_heads, a.num_kv_heads = int(key["num_heads"]), int(key["num_kv_heads"])
        # Nonzero stand-ins only say which features the calls use.
        a.alibi_slopes = 1 if key.get("alibi") else 0
        a.logits_soft_cap = 1.0 if key.get("logits_soft_cap") else 0.0
        a.sliding_window = 1 if key.get("sliding_window") else 0
        a.sinks = 1 if key.get("sinks") else 0
        out.append(a)
    return out


def init(device: Union[int, str, torch.device, None] = None,
         keys: Union[str, Sequence[Mapping[str, Any]], None] = None) -> Dict[str, Any]:
    """Creates the device's context (indexes the kernel library; no module is
    loaded) and, with `keys`, loads now the modules those calls use, so that
    they load nothing later — do this before capturing a CUDA graph, where a
    first use is refused. keys: "all" (every bundle; quick with SASS), or a
    list of dicts {dtype, head_size, block_size, num_heads, num_kv_heads,
    [kv_cache_dtype, tmp_dtype, alibi, logits_soft_cap, sliding_window,
    sinks]}. Returns {"device", "runtime", "kernel_library", "num_variants",
    "modules_loaded", "loaded_sass", "loaded_ptx", "sass_fallbacks"}."""
    idx = _device_index(device)
    n = torch.cuda.device_count()
    if not 0 <= idx < n:
        raise ValueError("paged_attn: no CUDA device %d (this process sees %d)" % (idx, n))
    ctx = _context(idx)
    if keys == "all":
        ctx.preload_all()
    elif keys is not None:
        ctx.preload([a for key in keys for a in _key_args(key)])
    stats = ctx.stats()
    return {"device": idx, "runtime": _capi.library().pa_runtime_path,
            "kernel_library": ctx.kernel_dir, "num_variants": ctx.num_variants,
            **{k: v for k, v in stats.items() if k != "bundles"}}


def check_errors(device: Optional[Union[int, str, torch.device]] = None) -> None:
    """Raises paged_attn.PagedAttnBadInputError if a kernel on `device` (None:
    every device this module has a context on) found a block-table entry
    outside [0, num_blocks) or a seq_len outside [0, max_blocks_per_seq *
    block_size] since the last check, and clears the record. Such entries are
    never read; the rows (query row, head) that attend to them are NaN.
    Synchronises the device's current stream (not inside a CUDA graph
    capture). Without a context on the device (no call ran), does nothing."""
    if device is None:
        indices = sorted(_contexts)
    else:
        indices = [_device_index(device)]
    for idx in indices:
        ctx = _contexts.get(idx)
        if ctx is not None:
            ctx.last_error(_current_stream(idx))


def release_contexts() -> None:
    """Destroys every context this module created (their modules are unloaded).
    The next call creates them again. Not safe while another thread launches."""
    with _contexts_lock:
        for ctx in _contexts.values():
            ctx.close()
        _contexts.clear()


_get_raw_stream = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)


def _current_stream(device_index):
    # The same handle as torch.cuda.current_stream(device).cuda_stream,
    # without building a Stream object on every call.
    if _get_raw_stream is not None:
        return _get_raw_stream(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


def _decode_args(c):
    """The pa_decode_args of a checked call (_checks.Call: its fields, then the device)."""
    return _capi.pack_decode_args(*c[:-1])


def paged_attention_v2(output: torch.Tensor, exp_sums: torch.Tensor, max_logits: torch.Tensor,
                       tmp_output: torch.Tensor, query: torch.Tensor, key_cache: torch.Tensor,
                       value_cache: torch.Tensor, num_kv_heads: int, scale: float,
                       block_tables: torch.Tensor, seq_lens: torch.Tensor, block_size: int,
                       max_seq_len: Optional[int], alibi_slopes: Optional[torch.Tensor],
                       kv_cache_dtype: str = "auto", k_scale: Union[float, torch.Tensor] = 1.0,
                       v_scale: Union[float, torch.Tensor] = 1.0, *, fixed_grid: bool = False,
                       sliding_window: Optional[int] = None,
                       logits_soft_cap: Optional[float] = None,
                       sinks: Optional[torch.Tensor] = None,
                       query_start_loc: Optional[torch.Tensor] = None,
                       max_query_len: Optional[int] = None, **kwargs: int) -> None:
    """PagedAttention V2 decode; writes `output` (and the workspace).

    The seed's signature and vLLM's layouts (docs/python.md):
      query        [num_seqs, num_heads, head_size]                         f16/bf16/f32
      key_cache    [num_blocks, num_kv_heads, head_size/x, block_size, x]   query's, x = 16 B / elt
      value_cache  [num_blocks, num_kv_heads, head_size, block_size]        query's (or fp8)
      block_tables [num_seqs, max_blocks_per_seq] int32;  seq_lens [num_seqs] int32
      output       [num_seqs, num_heads, head_size]                         query's dtype
      exp_sums, max_logits [num_seqs, num_heads, max_num_partitions]        float32
      tmp_output   [num_seqs, num_heads, max_num_partitions, head_size]     float32 or query's
    with max_num_partitions >= ceil(max_seq_len / 512). All tensors contiguous, on one CUDA
    device; the kernels run on that device's current torch stream, asynchronously.

    alibi_slopes: None or a float32 [num_heads] tensor (logit += slope * (token - seq_len + 1)).
    kv_cache_dtype: "auto" (the caches hold the query's dtype; k_scale = v_scale = 1.0), or
    fp8 caches: "fp8" / "fp8_e4m3" (OCP E4M3FN) or "fp8_e5m2", caches of torch.uint8 (vLLM's
    storage) or the matching torch.float8_e4m3fn / torch.float8_e5m2, x = 16 (head_size a
    multiple of 16), value = stored * k_scale (v_scale). Each scale is a Python float > 0 or a
    float32 CUDA tensor of one element on the query's device, read by the kernel when it runs
    (never on the host), so a CUDA graph replay sees its current value.

    sliding_window (keyword only): attend to each sequence's last sliding_window tokens.
    logits_soft_cap (keyword only): logit = cap * tanh(logit / cap) before ALiBi (Gemma 2).
    sinks (keyword only): None or a float32 [num_heads] CUDA tensor of attention-sink logits
    (gpt-oss): each head's softmax denominator gains exp(sinks[h] - max), with no value row.
    query_start_loc, max_query_len (keyword only): several query tokens per sequence
    (speculative decoding; vLLM's names). query_start_loc is an int32 [num_seqs + 1] CUDA
    tensor, query_start_loc[0] = 0, non-decreasing: sequence s owns the query rows
    query_start_loc[s] .. query_start_loc[s+1] - 1 (q_len_s of them, 0 to max_query_len).
    max_query_len is a Python int, 1 to 16, at least every q_len_s (it sizes the grid, like
    max_seq_len). Then query, output and the workspace have num_query_tokens rows (dim 0)
    while block_tables and seq_lens have num_seqs; the new tokens are already in the cache
    and counted in seq_lens, and token j of sequence s attends causally to the cache tokens
    0 .. seq_lens[s] - q_len_s + j (ALiBi and the window relative to that position).
    vLLM's block-sparse keywords are accepted for a dense call (blocksparse_vert_stride <= 1);
    any other keyword raises TypeError.

    fixed_grid=True (keyword only): the grid covers every workspace partition whatever
    max_seq_len is (it may then be None), so one CUDA-graph capture serves any seq_lens up
    to max_num_partitions * 512 and max_blocks_per_seq * block_size.

    The call is torch.ops.paged_attn.paged_attention_v2 (docs/python.md,
    "torch.compile"), so torch.compile(fullgraph=True) captures it whole; in
    plain eager mode it launches without the dispatcher (_op.call).
    """
    a = _checks.check_arg_types(output, exp_sums, max_logits, tmp_output, query, key_cache,
                                value_cache, num_kv_heads, scale, block_tables, seq_lens,
                                block_size, max_seq_len, alibi_slopes, kv_cache_dtype, k_scale,
                                v_scale, kwargs, fixed_grid, sliding_window, logits_soft_cap,
                                sinks, query_start_loc, max_query_len)
    _op.call(a, kv_cache_dtype, fixed_grid and max_seq_len is None)


def _launch(*args, **kwargs):
    """The op's implementation (SCHEMA's arguments): checks, then launches on
    the tensors' device, on its current stream."""
    _launch_checked(_op.check(*args, **kwargs))


def _launch_checked(c):
    """Launches a checked call (_checks.Call) on its device's current stream."""
    if c.num_seqs == 0 or c.num_heads == 0:
        return
    ctx = _context(c.device_index)
    try:
        ctx.decode(_decode_args(c), _current_stream(c.device_index))
    except _capi.PagedAttnUnsupportedError as e:
        # The runtime names the key; say which library lacks it.
        raise _capi.PagedAttnUnsupportedError(
            e.where, e.code, e.driver_error, "%s (kernel library %s, %d variants)"
            % (e.message, ctx.kernel_dir, ctx.num_variants)) from None


def _fake(*args, **kwargs):
    """The op's fake implementation: every rule, on the fake tensors of a
    torch.compile trace; the op returns nothing (it writes its arguments)."""
    _op.check(*args, fake=True, **kwargs)


_op.register(_launch, _fake, _launch_checked)


def plan(output: torch.Tensor, exp_sums: torch.Tensor, max_logits: torch.Tensor,
         tmp_output: torch.Tensor, query: torch.Tensor, key_cache: torch.Tensor,
         value_cache: torch.Tensor, num_kv_heads: int, scale: float, block_tables: torch.Tensor,
         seq_lens: torch.Tensor, block_size: int, max_seq_len: Optional[int],
         alibi_slopes: Optional[torch.Tensor], kv_cache_dtype: str = "auto",
         k_scale: Union[float, torch.Tensor] = 1.0, v_scale: Union[float, torch.Tensor] = 1.0, *,
         fixed_grid: bool = False, sliding_window: Optional[int] = None,
         logits_soft_cap: Optional[float] = None, sinks: Optional[torch.Tensor] = None,
         query_start_loc: Optional[torch.Tensor] = None, max_query_len: Optional[int] = None,
         **kwargs: int) -> Dict[str, Any]:
    """What paged_attention_v2 with these arguments would launch, without
    launching: the runtime's pa_plan as a dict with keys variant, one_pass,
    partition_tokens, num_partitions, grid, block, reduce_grid, reduce_block,
    resident_programs, partition_split, cluster_size (0, or the programs per
    thread-block cluster when the cluster kernel runs instead of one pass or
    of a few partitions)."""
    c = _checks.check_call(output, exp_sums, max_logits, tmp_output, query, key_cache,
                           value_cache, num_kv_heads, scale, block_tables, seq_lens, block_size,
                           max_seq_len, alibi_slopes, kv_cache_dtype, k_scale, v_scale, kwargs,
                           fixed_grid, sliding_window, logits_soft_cap, sinks, query_start_loc,
                           max_query_len)
    return _context(c.device_index).plan(_decode_args(c))


def max_num_partitions(max_seq_len: int) -> int:
    """Workspace dim 2 for contexts up to max_seq_len tokens: ceil(max_seq_len / 512)."""
    return max(1, -(-int(max_seq_len) // PARTITION_SIZE))
