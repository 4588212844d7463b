"""paged_attention_v2 bound to other kernel libraries, for side-by-side runs.

compare.py and bench.py time one function per --impl; the drop-in loads one
library per process ($PA_KERNEL_LIBRARY). This module gives one function per
library so that several libraries (e.g. the sm_90 bundles and the sm_70 PTX
through the driver's JIT) are timed in one run on the same inputs:

    PA_LIB_SM90=build/lib90 PA_LIB_SM70=build/lib70 \\
    python3 compare.py --path runtime/python --path scripts \\
        --impl sm90=library_impls:sm90 --impl sm70=library_impls:sm70

`library_impls.NAME` is the seed's signature, served by the library at
$PA_LIB_<NAME upper-cased>, with the drop-in's argument checks.
"""
import os

from paged_attn import _capi, _checks, ops


def bound(kernel_dir):
    """paged_attention_v2 served by the bundles in `kernel_dir`."""
    contexts = {}

    def paged_attention_v2(output, exp_sums, max_logits, tmp_output, query, key_cache,
                           value_cache, num_kv_heads, scale, block_tables, seq_lens,
                           block_size, max_seq_len, alibi_slopes, kv_cache_dtype="auto",
                           k_scale=1.0, v_scale=1.0, *, fixed_grid=False,
                           sliding_window=None, logits_soft_cap=None, **kwargs):
        c = _checks.check_call(output, exp_sums, max_logits, tmp_output, query, key_cache,
                               value_cache, num_kv_heads, scale, block_tables, seq_lens,
                               block_size, max_seq_len, alibi_slopes, kv_cache_dtype, k_scale,
                               v_scale, kwargs, fixed_grid, sliding_window, logits_soft_cap)
        if c.num_seqs == 0 or c.num_heads == 0:
            return None
        ctx = contexts.get(c.device_index)
        if ctx is None:
            ctx = contexts[c.device_index] = _capi.Context(c.device_index, kernel_dir)
        ctx.decode(ops._decode_args(c), ops._current_stream(c.device_index))
        return None

    return paged_attention_v2


def __getattr__(name):
    kernel_dir = os.environ.get("PA_LIB_" + name.upper())
    if not kernel_dir:
        raise AttributeError("library_impls.%s: set PA_LIB_%s to a kernel library folder"
                             % (name, name.upper()))
    fn = bound(kernel_dir)
    globals()[name] = fn
    return fn
