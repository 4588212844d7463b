"""FlashInfer's paged decode behind the seed's signature: a peer for compare.py.

    python3 ../shared/bench/compare.py --path runtime/python --path scripts/peers \\
        --impl ours=paged_attn:paged_attention_v2 \\
        --impl flashinfer=flashinfer_impl:paged_attention_v2

`paged_attention_v2` runs FlashInfer's `BatchDecodeWithPagedKVCacheWrapper`
(its CUDA-core decode kernel, the wrapper's default) on the same K/V values as
the caller's vLLM caches; `paged_attention_v2_tc` the same wrapper with
`use_tensor_cores=True` (its fa2 prefill kernel serving one query token, the
path vLLM's FlashInfer backend takes). Both write `output`; `exp_sums`,
`max_logits` and `tmp_output` are not used (FlashInfer keeps its partials in
its own 128 MB workspace).

What is *not* timed, and why. FlashInfer reads K and V as [pages, kv_heads,
page_size, head_dim] ("HND"); vLLM's key cache is x-packed
[blocks, kv_heads, head_size/x, block_size, x] and its value cache
[blocks, kv_heads, head_size, block_size]. Each cache is converted once to
HND (same block ids, so the block table carries over unchanged) and kept,
keyed by the source tensor: its address, shape, strides, dtype and torch's
in-place version counter, and held through a weak reference so that a new
tensor at a freed address is converted afresh. The page table (indptr,
indices, last_page_len) is built from block_tables/seq_lens and `plan()` is
called once per (table, lengths, shape, dtype, scale), also memoised. The
timed call is then `wrapper.run(query, (k, v), out=output)`, plus FlashInfer's
own `out *= v_scale` for an fp8 cache with v_scale != 1. A real integration
stores HND pages in the first place and plans once per step for all layers.

Raises NotImplementedError (compare.py then shows '-') for what this peer
does not serve: ALiBi slopes, a sliding window, a soft cap, a zero-length
sequence, head sizes other than 64/128/256, dtypes other than fp16/bf16
queries with fp16/bf16/fp8 caches.

Environment: FLASHINFER_WORKSPACE_BASE (FlashInfer's JIT cache lives under
it), and FlashInfer's own variables.
"""
import weakref

import torch

import flashinfer

HEAD_SIZES = (64, 128, 256)
FP8 = {"fp8": torch.float8_e4m3fn, "fp8_e4m3": torch.float8_e4m3fn,
       "fp8_e5m2": torch.float8_e5m2}

_workspaces = {}   # device index -> 128 MB float workspace, shared by the wrappers
_converted = {}    # source cache -> (weakref to it, its version, HND tensor)
_plans = {}        # plan key -> (weakrefs to block_tables/seq_lens, wrapper)
MAX_PLANS = 4      # each wrapper pins 8 MB of host memory


def _tensor_key(t):
    return (t.data_ptr(), tuple(t.shape), t.stride(), t.dtype, t._version)


def _memo(table, key, source, make):
    """make(), computed once while `source` is alive and not written in place.

    `key` names the source's storage; the entry also holds a weak reference
    to the source and its version counter, so a new tensor at a freed
    address, or an in-place write, is converted afresh."""
    hit = table.get(key)
    if hit is not None and hit[0]() is source and hit[1] == source._version:
        return hit[2]
    table.pop(key, None)  # free the stale copy before making the new one
    value = make()

    def forget(ref, key=key):
        if table.get(key, (None,))[0] is ref:
            del table[key]

    table[key] = (weakref.ref(source, forget), source._version, value)
    return value


def _hnd_keys(key_cache, kv_dtype):
    """[blocks, kvh, D/x, bs, x] -> contiguous [blocks, kvh, bs, D]."""
    k = key_cache.view(kv_dtype) if key_cache.dtype != kv_dtype else key_cache
    nb, kvh, dx, bs, x = k.shape
    return k.permute(0, 1, 3, 2, 4).reshape(nb, kvh, bs, dx * x).contiguous()


def _hnd_values(value_cache, kv_dtype):
    """[blocks, kvh, D, bs] -> contiguous [blocks, kvh, bs, D]."""
    v = value_cache.view(kv_dtype) if value_cache.dtype != kv_dtype else value_cache
    return v.transpose(2, 3).contiguous()


def page_table(block_tables, seq_lens, block_size):
    """FlashInfer's CSR page table from vLLM's block table and lengths:
    indptr [B+1], indices [sum pages], last_page_len [B] (int32, on the GPU)."""
    lens = seq_lens.to(torch.int64)
    pages = (lens + block_size - 1) // block_size
    indptr = torch.zeros(lens.numel() + 1, dtype=torch.int32, device=lens.device)
    indptr[1:] = torch.cumsum(pages, 0)
    cols = torch.arange(block_tables.shape[1], device=lens.device)
    indices = block_tables[cols[None, :] < pages[:, None]].to(torch.int32)
    last = (lens - (pages - 1) * block_size).to(torch.int32)
    return indptr, indices, last


def _workspace(device):
    ws = _workspaces.get(device.index)
    if ws is None:
        ws = _workspaces[device.index] = torch.zeros(128 << 20, dtype=torch.uint8,
                                                     device=device)
    return ws


def _wrapper(tensor_cores, query, kv_dtype, num_kv_heads, scale, block_tables, seq_lens,
             block_size):
    num_heads, head_size = query.shape[1], query.shape[2]
    key = (tensor_cores, _tensor_key(block_tables), _tensor_key(seq_lens), num_heads,
           num_kv_heads, head_size, block_size, query.dtype, kv_dtype, float(scale))
    hit = _plans.get(key)
    if hit is not None and hit[0][0]() is block_tables and hit[0][1]() is seq_lens:
        return hit[1]
    if torch.any(seq_lens <= 0):
        raise NotImplementedError("flashinfer peer: a zero-length sequence")
    indptr, indices, last = page_table(block_tables, seq_lens, block_size)
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
        _workspace(query.device), "HND", use_tensor_cores=tensor_cores)
    w.plan(indptr, indices, last, num_heads, num_kv_heads, head_size, block_size,
           pos_encoding_mode="NONE", q_data_type=query.dtype, kv_data_type=kv_dtype,
           o_data_type=query.dtype, sm_scale=float(scale))
    while len(_plans) >= MAX_PLANS:
        _plans.pop(next(iter(_plans)))
    _plans[key] = ((weakref.ref(block_tables), weakref.ref(seq_lens)), w)
    return w


def _run(tensor_cores, output, query, key_cache, value_cache, num_kv_heads, scale,
         block_tables, seq_lens, block_size, alibi_slopes, kv_cache_dtype, k_scale, v_scale,
         kwargs):
    if alibi_slopes is not None:
        raise NotImplementedError("flashinfer peer: ALiBi slopes of the caller")
    for name in ("sliding_window", "logits_soft_cap"):
        if kwargs.get(name) is not None:
            raise NotImplementedError(f"flashinfer peer: {name}")
    if query.dtype not in (torch.float16, torch.bfloat16):
        raise NotImplementedError(f"flashinfer peer: query dtype {query.dtype}")
    if query.shape[2] not in HEAD_SIZES:
        raise NotImplementedError(f"flashinfer peer: head size {query.shape[2]}")
    if kv_cache_dtype == "auto":
        kv_dtype = query.dtype
    elif kv_cache_dtype in FP8:
        kv_dtype = FP8[kv_cache_dtype]
        if tensor_cores:
            raise NotImplementedError("flashinfer peer: fp8 cache on the tensor-core path")
    else:
        raise NotImplementedError(f"flashinfer peer: kv_cache_dtype {kv_cache_dtype!r}")
    k = _memo(_converted, ("k", kv_dtype) + _tensor_key(key_cache)[:4], key_cache,
              lambda: _hnd_keys(key_cache, kv_dtype))
    v = _memo(_converted, ("v", kv_dtype) + _tensor_key(value_cache)[:4], value_cache,
              lambda: _hnd_values(value_cache, kv_dtype))
    w = _wrapper(tensor_cores, query, kv_dtype, num_kv_heads, scale, block_tables, seq_lens,
                 block_size)
    fp8 = kv_dtype != query.dtype
    w.run(query, (k, v), out=output, k_scale=float(k_scale) if fp8 else None,
          v_scale=float(v_scale) if fp8 else None)


def paged_attention_v2(output, exp_sums, max_logits, tmp_output, query, key_cache,
                       value_cache, num_kv_heads, scale, block_tables, seq_lens, block_size,
                       max_seq_len, alibi_slopes, kv_cache_dtype="auto", k_scale=1.0,
                       v_scale=1.0, **kwargs):
    """The seed's signature, served by FlashInfer's CUDA-core decode kernel."""
    _run(False, output, query, key_cache, value_cache, num_kv_heads, scale, block_tables,
         seq_lens, block_size, alibi_slopes, kv_cache_dtype, k_scale, v_scale, kwargs)


def paged_attention_v2_tc(output, exp_sums, max_logits, tmp_output, query, key_cache,
                          value_cache, num_kv_heads, scale, block_tables, seq_lens,
                          block_size, max_seq_len, alibi_slopes, kv_cache_dtype="auto",
                          k_scale=1.0, v_scale=1.0, **kwargs):
    """The seed's signature, served by FlashInfer's tensor-core decode (fa2)."""
    _run(True, output, query, key_cache, value_cache, num_kv_heads, scale, block_tables,
         seq_lens, block_size, alibi_slopes, kv_cache_dtype, k_scale, v_scale, kwargs)
