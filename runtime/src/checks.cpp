//===- checks.cpp - argument checks of a decode call ----------------------===//
//
// Everything about a pa_decode_args that can be judged on the host, each
// with a message naming the rule and the numbers. They run before variant
// selection and planning, so nothing is launched on a bad call; device
// memory is never read (seq_lens and block tables are the kernel's business).
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cmath>

namespace pa {

/// The fp8 scale fields: meaningful only with an fp8 kv_cache_dtype; there
/// every scale the kernel takes from the arguments (its pointer is 0) must be
/// finite and positive, and the device copies f32-aligned.
static pa_status checkFp8Scales(const pa_decode_args &a) {
  if (a.kv_cache_dtype == PA_KV_CACHE_AUTO) {
    // 0 (unset) and 1 (vLLM's default for a cache of the dtype) are no-ops.
    bool unitK = a.k_scale == 0.0f || a.k_scale == 1.0f;
    bool unitV = a.v_scale == 0.0f || a.v_scale == 1.0f;
    if (!unitK || !unitV || a.k_scale_ptr != 0 || a.v_scale_ptr != 0)
      return makeStatus(
          PA_ERROR_INVALID_ARGUMENT,
          "k_scale/v_scale/k_scale_ptr/v_scale_ptr apply only to fp8 caches "
          "(kv_cache_dtype): with PA_KV_CACHE_AUTO the caches hold the dtype "
          "(%s), so k_scale and v_scale must be 0 or 1 and both pointers 0; "
          "got k_scale %g, v_scale %g, k_scale_ptr 0x%llx, v_scale_ptr 0x%llx",
          dtypeName(a.dtype), double(a.k_scale), double(a.v_scale),
          static_cast<unsigned long long>(a.k_scale_ptr),
          static_cast<unsigned long long>(a.v_scale_ptr));
    return okStatus();
  }
  struct {
    const char *name;
    float value;
    CUdeviceptr ptr;
  } scales[] = {{"k_scale", a.k_scale, a.k_scale_ptr},
                {"v_scale", a.v_scale, a.v_scale_ptr}};
  for (const auto &s : scales) {
    if (s.ptr != 0) {
      if (s.ptr % 4 != 0)
        return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                          "%s_ptr (0x%llx) must be 4-byte aligned (one f32)",
                          s.name, static_cast<unsigned long long>(s.ptr));
      continue; // the kernel reads the device copy; the float is unused
    }
    if (!std::isfinite(s.value) || !(s.value > 0.0f))
      return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                        "%s (%g) must be finite and positive for an fp8 cache "
                        "(%s; value = stored * %s): set it, or pass %s_ptr",
                        s.name, double(s.value),
                        elemTypeName(callCacheType(a)), s.name, s.name);
  }
  return okStatus();
}

/// Query tokens per sequence: max_query_len in [1, PA_MAX_QUERY_LEN] with
/// query_start_loc (4-byte aligned), 0 or 1 without.
static pa_status checkQueryTokens(const pa_decode_args &a) {
  if (!a.query_start_loc) {
    if (a.max_query_len != 0 && a.max_query_len != 1)
      return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                        "max_query_len (%d) needs query_start_loc (null: one "
                        "query token per sequence)",
                        int(a.max_query_len));
    return okStatus();
  }
  if (a.max_query_len < 1 || a.max_query_len > PA_MAX_QUERY_LEN)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "max_query_len (%d) must be in [1, %d] with "
                      "query_start_loc",
                      int(a.max_query_len), int(PA_MAX_QUERY_LEN));
  if (a.query_start_loc % 4 != 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "query_start_loc (0x%llx) must be 4-byte aligned (i32)",
                      static_cast<unsigned long long>(a.query_start_loc));
  return okStatus();
}

/// The kernels address blocks with a shift and a mask (block_size is their
/// run-time parameter) and load up to 8 tokens of one block at once.
static pa_status checkBlockSize(int32_t blockSize) {
  if (blockSize < kMinBlockSize || blockSize > kMaxBlockSize ||
      (blockSize & (blockSize - 1)) != 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "block_size (%d) must be a power of two in [%d, %d] "
                      "(8, 16, 32, 64 or 128)",
                      int(blockSize), kMinBlockSize, kMaxBlockSize);
  return okStatus();
}

pa_status checkDecodeArgs(const pa_decode_args &a) {
  // The enums as stored: a.dtype may be read as pa_dtype once it is one.
  int dtype = rawEnum(a.dtype), tmpDtype = rawEnum(a.tmp_dtype);
  int cacheKind = rawEnum(a.kv_cache_dtype);
  if (!dtypeName(dtype))
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "dtype (%d) is not a pa_dtype (PA_F16, PA_BF16, PA_F32)",
                      dtype);
  if (!dtypeName(tmpDtype))
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "tmp_dtype (%d) is not a pa_dtype (PA_F16, PA_BF16, "
                      "PA_F32)",
                      tmpDtype);
  if (a.tmp_dtype != PA_F32 && a.tmp_dtype != a.dtype)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "tmp_dtype %s must be f32 or the dtype (%s)",
                      dtypeName(a.tmp_dtype), dtypeName(a.dtype));
  if (cacheKind != PA_KV_CACHE_AUTO && cacheKind != PA_KV_CACHE_FP8_E4M3 &&
      cacheKind != PA_KV_CACHE_FP8_E5M2)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "kv_cache_dtype (%d) is not a pa_kv_cache_dtype "
                      "(PA_KV_CACHE_AUTO, PA_KV_CACHE_FP8_E4M3, "
                      "PA_KV_CACHE_FP8_E5M2)",
                      cacheKind);

  struct {
    const char *name;
    int32_t value;
  } sizes[] = {{"num_seqs", a.num_seqs},
               {"num_heads", a.num_heads},
               {"num_kv_heads", a.num_kv_heads},
               {"head_size", a.head_size},
               {"block_size", a.block_size},
               {"num_blocks", a.num_blocks},
               {"max_blocks_per_seq", a.max_blocks_per_seq},
               {"max_num_partitions", a.max_num_partitions},
               {"partition_size", a.partition_size}};
  for (const auto &size : sizes)
    if (size.value <= 0)
      return makeStatus(PA_ERROR_INVALID_ARGUMENT, "%s (%d) must be positive",
                        size.name, int(size.value));
  PA_RETURN_IF_ERROR(checkBlockSize(a.block_size));
  if (a.max_seq_len < 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "max_seq_len (%d) must be >= 0 (0 selects fixed-grid "
                      "mode)",
                      int(a.max_seq_len));
  if (a.num_heads % a.num_kv_heads != 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "num_heads (%d) must be a multiple of num_kv_heads (%d)",
                      int(a.num_heads), int(a.num_kv_heads));
  if (!std::isfinite(a.scale) || !(a.scale > 0.0f))
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "scale (%g) must be finite and positive",
                      double(a.scale));
  if (a.sliding_window < 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "sliding_window (%d) must be >= 0 (0: no window)",
                      int(a.sliding_window));
  if (!std::isfinite(a.logits_soft_cap) || a.logits_soft_cap < 0.0f)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "logits_soft_cap (%g) must be finite and >= 0 (0: no cap)",
                      double(a.logits_soft_cap));
  for (auto [name, ptr] : {std::pair<const char *, CUdeviceptr>{
                               "alibi_slopes", a.alibi_slopes},
                           {"sinks", a.sinks}})
    if (ptr % 4 != 0)
      return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                        "%s (0x%llx) must be 4-byte aligned (f32)", name,
                        static_cast<unsigned long long>(ptr));
  PA_RETURN_IF_ERROR(checkFp8Scales(a));
  PA_RETURN_IF_ERROR(checkQueryTokens(a));
  // The key cache is x-packed in cache elements: 16 one-byte fp8 values.
  ElemType cache = callCacheType(a);
  int x = 16 / dtypeBytes(cache);
  if (a.head_size % x != 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "head_size (%d) must be a multiple of x = %d, the %s "
                      "elements in 16 bytes of the key_cache layout",
                      int(a.head_size), x, elemTypeName(cache));
  int64_t capacity = int64_t(a.max_blocks_per_seq) * a.block_size;
  if (a.max_seq_len > capacity)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "max_seq_len (%d) exceeds max_blocks_per_seq (%d) * "
                      "block_size (%d) = %lld tokens of the block table",
                      int(a.max_seq_len), int(a.max_blocks_per_seq),
                      int(a.block_size), static_cast<long long>(capacity));
  return okStatus();
}

pa_status checkDecodePointers(const pa_decode_args &a, bool needWorkspace) {
  struct {
    const char *name;
    CUdeviceptr value;
    bool workspace;
  } pointers[] = {{"query", a.query, false},
                  {"key_cache", a.key_cache, false},
                  {"value_cache", a.value_cache, false},
                  {"block_tables", a.block_tables, false},
                  {"seq_lens", a.seq_lens, false},
                  {"output", a.output, false},
                  {"exp_sums", a.exp_sums, true},
                  {"max_logits", a.max_logits, true},
                  {"tmp_output", a.tmp_output, true}};
  for (const auto &p : pointers) {
    if (p.value != 0 || (p.workspace && !needWorkspace))
      continue;
    if (p.workspace)
      return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                        "%s is null; the workspace is needed when the context "
                        "is split into several partitions",
                        p.name);
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "%s is null", p.name);
  }
  return okStatus();
}

} // namespace pa
