#===- pa_cpu_reference.py - the torch op's float64 CPU kernel, for tests ----===#
#
# Not a test (lit.local.cfg excludes it). Registers a CPU kernel for
# torch.ops.paged_attn.paged_attention_v2 so that the op's dispatch, its
# torch.compile capture and opcheck can run without a GPU. The kernel runs the
# package's own checks (every rule but the CUDA device: check_call's
# fake=True path) and then pa_testlib.reference, the float64 reference the GPU
# tests compare against: ALiBi, the sliding window, the soft cap and fp8
# caches (uint8 or float8 storage, float or tensor scales) with their real
# semantics. It writes `output` only: the workspace is scratch the kernels
# use between their two launches, and holds nothing a caller may read.
#
#===------------------------------------------------------------------------===#

import pa_testlib as T


def register(torch, pa):
    """Registers the CPU kernel; returns the torch.library.Library that holds
    it (the registration lasts as long as that object)."""
    lib = torch.library.Library("paged_attn", "IMPL")
    lib.impl("paged_attention_v2", lambda *args: _cpu_kernel(torch, pa, *args), "CPU")
    return lib


def _cpu_kernel(torch, pa, output, exp_sums, max_logits, tmp_output, query, key_cache,
                value_cache, num_kv_heads, scale, block_tables, seq_lens, block_size,
                max_seq_len, alibi_slopes, kv_cache_dtype, k_scale, v_scale, k_scale_tensor,
                v_scale_tensor, sliding_window, logits_soft_cap, fixed_grid, sinks=None):
    pa._op.check(output, exp_sums, max_logits, tmp_output, query, key_cache, value_cache,
                 num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
                 alibi_slopes, kv_cache_dtype, k_scale, v_scale, k_scale_tensor, v_scale_tensor,
                 sliding_window, logits_soft_cap, fixed_grid, sinks, fake=True)
    if query.shape[0] == 0 or query.shape[1] == 0:
        return
    if k_scale_tensor is not None:
        k_scale = float(k_scale_tensor.reshape(()))
    if v_scale_tensor is not None:
        v_scale = float(v_scale_tensor.reshape(()))
    ref = T.reference(query, key_cache, value_cache, block_tables, seq_lens, scale, alibi_slopes,
                      sliding_window, logits_soft_cap,
                      None if kv_cache_dtype == "auto" else kv_cache_dtype, k_scale, v_scale,
                      sinks)
    output.copy_(ref.to(output.dtype))
