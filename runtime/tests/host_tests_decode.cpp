//===- host_tests_decode.cpp - checks, planning, marshalling --------------===//
//
// Host tests of a decode call: every argument check with its message
// (through pa_decode_v2 on a host-only context), the partition rule in
// adaptive and fixed-grid mode, the one-pass choice, the grids, and the
// packing of kernel parameters in manifest order.
//
//===----------------------------------------------------------------------===//

#include "host_test_support.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>

namespace pa_test {

//===----------------------------------------------------------------------===//
// Argument checks (through the public entries on a host-only context)
//===----------------------------------------------------------------------===//

namespace {

/// A call made invalid by one change to valid arguments, and the status
/// (code and message) it must get.
struct Bad {
  const char *test;
  std::function<void(pa_decode_args &)> mutate;
  pa_status_code code;
  const char *message;
};

/// One case per bad call, each on a fresh context holding `specs` (an H200)
/// with `base()`'s arguments changed by the call's mutation.
void runBadCalls(const std::vector<Bad> &calls,
                 const std::vector<Spec> &specs = {Spec()},
                 pa_decode_args (*base)() = validArgs) {
  for (const Bad &b : calls) {
    run(b.test, [&b, &specs, base] {
      HostContext h(kH200, specs);
      pa_decode_args a = base();
      b.mutate(a);
      CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), b.code, b.message);
    });
  }
}

/// The context the fp8 argument cases run on: a 16-bit bundle and E4M3 /
/// E5M2 ones.
std::vector<Spec> fp8Context() {
  return {Spec(), fp8Spec("f8E4M3FN"), fp8Spec("f8E5M2")};
}

/// The entries' null arguments, the block sizes one bundle serves, and a
/// valid call that reaches the launch.
void entryArgumentTests() {
  run("args_null_ctx_args_plan", [] {
    HostContext h(kH200);
    pa_decode_args a = validArgs();
    pa_plan plan;
    CHECK_STATUS(pa_decode_v2(nullptr, &a, nullptr), PA_ERROR_INVALID_ARGUMENT,
                 "ctx is null");
    CHECK_STATUS(pa_decode_v2(h.ctx, nullptr, nullptr),
                 PA_ERROR_INVALID_ARGUMENT, "args is null");
    CHECK_STATUS(pa_plan_decode_v2(nullptr, &a, &plan),
                 PA_ERROR_INVALID_ARGUMENT, "ctx is null");
    CHECK_STATUS(pa_plan_decode_v2(h.ctx, nullptr, &plan),
                 PA_ERROR_INVALID_ARGUMENT, "args is null");
    CHECK_STATUS(pa_plan_decode_v2(h.ctx, &a, nullptr),
                 PA_ERROR_INVALID_ARGUMENT, "plan is null");
  });

  run("args_every_block_size_plans_on_one_bundle", [] {
    // One block-agnostic bundle serves calls of blocks 8 to 128; the
    // argument checks refuse the others before any variant is chosen.
    Spec any;
    any.block = 0;
    HostContext h(kH200, {any});
    for (int block : {8, 16, 32, 64, 128}) {
      pa_decode_args a = validArgs();
      a.block_size = block;
      a.max_blocks_per_seq = 4096 / block;
      a.num_blocks = 4 * a.max_blocks_per_seq;
      pa_plan plan;
      CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    }
    pa_decode_args a = validArgs();
    a.block_size = 24;
    pa_plan plan;
    CHECK_STATUS(pa_plan_decode_v2(h.ctx, &a, &plan),
                 PA_ERROR_INVALID_ARGUMENT,
                 "block_size (24) must be a power of two in [8, 128]");
  });

  run("args_valid_call_reaches_launch", [] {
    // Every check passes; the host-only context then refuses to launch.
    HostContext h(kH200);
    pa_decode_args a = validArgs();
    pa_status st = pa_decode_v2(h.ctx, &a, nullptr);
    CHECK_EQ(int(st.code), int(PA_ERROR_CUDA));
    CHECK(std::strstr(st.message, "host-only context") != nullptr);
    pa_plan plan;
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
  });
}

/// Dtypes, sizes, the scale and the sizes' relations: each bad value is
/// refused with its message before any variant is chosen.
void scalarArgumentTests() {
  static const std::vector<Bad> kBad = {
      {"args_dtype_invalid", [](pa_decode_args &a) { a.dtype = pa_dtype(7); },
       PA_ERROR_INVALID_ARGUMENT, "dtype (7) is not a pa_dtype"},
      {"args_tmp_dtype_invalid",
       [](pa_decode_args &a) { a.tmp_dtype = pa_dtype(-1); },
       PA_ERROR_INVALID_ARGUMENT, "tmp_dtype (-1) is not a pa_dtype"},
      {"args_tmp_dtype_mismatch",
       [](pa_decode_args &a) { a.tmp_dtype = PA_BF16; },
       PA_ERROR_INVALID_ARGUMENT,
       "tmp_dtype bf16 must be f32 or the dtype (f16)"},
      {"args_num_seqs_zero", [](pa_decode_args &a) { a.num_seqs = 0; },
       PA_ERROR_INVALID_ARGUMENT, "num_seqs (0) must be positive"},
      {"args_num_heads_negative", [](pa_decode_args &a) { a.num_heads = -32; },
       PA_ERROR_INVALID_ARGUMENT, "num_heads (-32) must be positive"},
      {"args_num_kv_heads_zero", [](pa_decode_args &a) { a.num_kv_heads = 0; },
       PA_ERROR_INVALID_ARGUMENT, "num_kv_heads (0) must be positive"},
      {"args_head_size_zero", [](pa_decode_args &a) { a.head_size = 0; },
       PA_ERROR_INVALID_ARGUMENT, "head_size (0) must be positive"},
      {"args_block_size_zero", [](pa_decode_args &a) { a.block_size = 0; },
       PA_ERROR_INVALID_ARGUMENT, "block_size (0) must be positive"},
      {"args_block_size_below_8", [](pa_decode_args &a) { a.block_size = 4; },
       PA_ERROR_INVALID_ARGUMENT,
       "block_size (4) must be a power of two in [8, 128]"},
      {"args_block_size_not_power_of_two",
       [](pa_decode_args &a) { a.block_size = 48; }, PA_ERROR_INVALID_ARGUMENT,
       "block_size (48) must be a power of two in [8, 128]"},
      {"args_block_size_above_128",
       [](pa_decode_args &a) { a.block_size = 256; }, PA_ERROR_INVALID_ARGUMENT,
       "block_size (256) must be a power of two in [8, 128]"},
      {"args_num_blocks_zero", [](pa_decode_args &a) { a.num_blocks = 0; },
       PA_ERROR_INVALID_ARGUMENT, "num_blocks (0) must be positive"},
      {"args_max_blocks_per_seq_zero",
       [](pa_decode_args &a) { a.max_blocks_per_seq = 0; },
       PA_ERROR_INVALID_ARGUMENT, "max_blocks_per_seq (0) must be positive"},
      {"args_max_num_partitions_zero",
       [](pa_decode_args &a) { a.max_num_partitions = 0; },
       PA_ERROR_INVALID_ARGUMENT, "max_num_partitions (0) must be positive"},
      {"args_partition_size_zero",
       [](pa_decode_args &a) { a.partition_size = 0; },
       PA_ERROR_INVALID_ARGUMENT, "partition_size (0) must be positive"},
      {"args_max_seq_len_negative",
       [](pa_decode_args &a) { a.max_seq_len = -1; }, PA_ERROR_INVALID_ARGUMENT,
       "max_seq_len (-1) must be >= 0"},
      {"args_heads_not_multiple_of_kv_heads",
       [](pa_decode_args &a) { a.num_heads = 30; }, PA_ERROR_INVALID_ARGUMENT,
       "num_heads (30) must be a multiple of num_kv_heads (8)"},
      {"args_scale_nan",
       [](pa_decode_args &a) {
         a.scale = std::numeric_limits<float>::quiet_NaN();
       },
       PA_ERROR_INVALID_ARGUMENT, "must be finite and positive"},
      {"args_scale_zero", [](pa_decode_args &a) { a.scale = 0.0f; },
       PA_ERROR_INVALID_ARGUMENT, "scale (0) must be finite and positive"},
      {"args_scale_infinite", [](pa_decode_args &a) { a.scale = INFINITY; },
       PA_ERROR_INVALID_ARGUMENT, "must be finite and positive"},
      {"args_head_size_not_multiple_of_x",
       [](pa_decode_args &a) { a.head_size = 100; }, PA_ERROR_INVALID_ARGUMENT,
       "head_size (100) must be a multiple of x = 8"},
      {"args_max_seq_len_exceeds_block_table",
       [](pa_decode_args &a) {
         a.max_blocks_per_seq = 256;
         a.max_seq_len = 5000;
       },
       PA_ERROR_INVALID_ARGUMENT,
       "max_seq_len (5000) exceeds max_blocks_per_seq (256) * block_size (16) "
       "= 4096"},
  };
  runBadCalls(kBad);
}

/// Every required device pointer, null.
void pointerArgumentTests() {
  static const std::vector<Bad> kBad = {
      {"args_null_query", [](pa_decode_args &a) { a.query = 0; },
       PA_ERROR_INVALID_ARGUMENT, "query is null"},
      {"args_null_key_cache", [](pa_decode_args &a) { a.key_cache = 0; },
       PA_ERROR_INVALID_ARGUMENT, "key_cache is null"},
      {"args_null_value_cache", [](pa_decode_args &a) { a.value_cache = 0; },
       PA_ERROR_INVALID_ARGUMENT, "value_cache is null"},
      {"args_null_block_tables", [](pa_decode_args &a) { a.block_tables = 0; },
       PA_ERROR_INVALID_ARGUMENT, "block_tables is null"},
      {"args_null_seq_lens", [](pa_decode_args &a) { a.seq_lens = 0; },
       PA_ERROR_INVALID_ARGUMENT, "seq_lens is null"},
      {"args_null_output", [](pa_decode_args &a) { a.output = 0; },
       PA_ERROR_INVALID_ARGUMENT, "output is null"},
      {"args_null_exp_sums", [](pa_decode_args &a) { a.exp_sums = 0; },
       PA_ERROR_INVALID_ARGUMENT, "exp_sums is null; the workspace is needed"},
      {"args_null_max_logits", [](pa_decode_args &a) { a.max_logits = 0; },
       PA_ERROR_INVALID_ARGUMENT, "max_logits is null"},
      {"args_null_tmp_output", [](pa_decode_args &a) { a.tmp_output = 0; },
       PA_ERROR_INVALID_ARGUMENT, "tmp_output is null"},
  };
  runBadCalls(kBad);
}

/// Calls no loaded variant serves, or whose variant's token step or grid
/// they do not fit.
void variantArgumentTests() {
  static const std::vector<Bad> kBad = {
      {"args_no_variant_head_size",
       [](pa_decode_args &a) { a.head_size = 256; }, PA_ERROR_UNSUPPORTED,
       "no loaded variant serves dtype f16, cache_dtype f16, tmp_dtype f32, "
       "head_size 256, block_size 16 (group size 4); 1 loaded: "
       "f16_d128_b16_h4_sm70"},
      {"args_no_variant_block_size",
       [](pa_decode_args &a) {
         a.block_size = 32;
         a.max_blocks_per_seq = 1024;
       },
       PA_ERROR_UNSUPPORTED, "head_size 128, block_size 32"},
      {"args_no_variant_dtype", [](pa_decode_args &a) { a.dtype = PA_BF16; },
       PA_ERROR_UNSUPPORTED, "no loaded variant serves dtype bf16"},
      {"args_no_variant_tmp_dtype",
       [](pa_decode_args &a) { a.tmp_dtype = PA_F16; }, PA_ERROR_UNSUPPORTED,
       "tmp_dtype f16"},
      {"args_fixed_grid_partition_size_not_multiple_of_token_step",
       [](pa_decode_args &a) {
         a.max_seq_len = 0;
         a.partition_size = 1000;
       },
       PA_ERROR_INVALID_ARGUMENT,
       "partition_size (1000) must be a multiple of the token step (16) of "
       "variant 'f16_d128_b16_h4_sm70' in fixed-grid mode"},
      {"args_grid_y_too_large",
       [](pa_decode_args &a) {
         a.num_kv_heads = 70000;
         a.num_heads = 70000;
       },
       PA_ERROR_INVALID_ARGUMENT,
       "partition grid y = num_kv_heads*ceil(group_size/heads_per_program) = "
       "70000 is outside CUDA's range 1..65535"},
      {"args_grid_z_too_large", [](pa_decode_args &a) { a.num_seqs = 65536; },
       PA_ERROR_INVALID_ARGUMENT, "partition grid z = num_seqs = 65536"},
  };
  runBadCalls(kBad);
}

/// The optional features (window, soft cap, ALiBi, sinks): bad values, and
/// calls that need a bundle taking them.
void featureArgumentTests() {
  static const std::vector<Bad> kBad = {
      {"args_sliding_window_negative",
       [](pa_decode_args &a) { a.sliding_window = -1; },
       PA_ERROR_INVALID_ARGUMENT,
       "sliding_window (-1) must be >= 0 (0: no window)"},
      {"args_soft_cap_nan",
       [](pa_decode_args &a) {
         a.logits_soft_cap = std::numeric_limits<float>::quiet_NaN();
       },
       PA_ERROR_INVALID_ARGUMENT, "logits_soft_cap (nan) must be finite"},
      {"args_soft_cap_negative",
       [](pa_decode_args &a) { a.logits_soft_cap = -5; },
       PA_ERROR_INVALID_ARGUMENT,
       "logits_soft_cap (-5) must be finite and >= 0"},
      {"args_alibi_misaligned",
       [](pa_decode_args &a) { a.alibi_slopes = 0x1002; },
       PA_ERROR_INVALID_ARGUMENT,
       "alibi_slopes (0x1002) must be 4-byte aligned"},
      {"args_sinks_misaligned", [](pa_decode_args &a) { a.sinks = 0x1006; },
       PA_ERROR_INVALID_ARGUMENT,
       "sinks (0x1006) must be 4-byte aligned (f32)"},
      // The default context's bundle predates sinks: its kernels do not
      // take them, so a call with sinks is refused, never run without.
      {"args_sinks_need_a_bundle_taking_them",
       [](pa_decode_args &a) { a.sinks = 0x1000; }, PA_ERROR_UNSUPPORTED,
       "(group size 4) with attention sinks; 1 loaded"},
      // The default context holds a lean variant only: ALiBi and the soft
      // cap need an _ext one, and say so.
      {"args_alibi_needs_ext_variant",
       [](pa_decode_args &a) { a.alibi_slopes = 0x1000; }, PA_ERROR_UNSUPPORTED,
       "(group size 4) with ALiBi / logits soft cap (an _ext variant); 1 "
       "loaded"},
      {"args_soft_cap_needs_ext_variant",
       [](pa_decode_args &a) { a.logits_soft_cap = 30; }, PA_ERROR_UNSUPPORTED,
       "with ALiBi / logits soft cap (an _ext variant)"},
  };
  runBadCalls(kBad);
}

/// kv_cache_dtype itself, and scales given with a cache of the dtype.
void fp8CacheArgumentTests() {
  static const std::vector<Bad> kBadFp8 = {
      {"args_kv_cache_dtype_invalid",
       [](pa_decode_args &a) { a.kv_cache_dtype = pa_kv_cache_dtype(5); },
       PA_ERROR_INVALID_ARGUMENT,
       "kv_cache_dtype (5) is not a pa_kv_cache_dtype (PA_KV_CACHE_AUTO, "
       "PA_KV_CACHE_FP8_E4M3, PA_KV_CACHE_FP8_E5M2)"},
      {"args_kv_cache_dtype_negative",
       [](pa_decode_args &a) { a.kv_cache_dtype = pa_kv_cache_dtype(-1); },
       PA_ERROR_INVALID_ARGUMENT, "kv_cache_dtype (-1) is not a"},
      {"args_auto_k_scale_not_unit",
       [](pa_decode_args &a) {
         a.kv_cache_dtype = PA_KV_CACHE_AUTO;
         a.k_scale = 0.5f;
       },
       PA_ERROR_INVALID_ARGUMENT,
       "k_scale/v_scale/k_scale_ptr/v_scale_ptr apply only to fp8 caches "
       "(kv_cache_dtype): with PA_KV_CACHE_AUTO the caches hold the dtype "
       "(f16), so k_scale and v_scale must be 0 or 1 and both pointers 0; got "
       "k_scale 0.5, v_scale 0.021"},
      {"args_auto_v_scale_nan",
       [](pa_decode_args &a) {
         a.kv_cache_dtype = PA_KV_CACHE_AUTO;
         a.k_scale = 1.0f;
         a.v_scale = std::numeric_limits<float>::quiet_NaN();
       },
       PA_ERROR_INVALID_ARGUMENT, "apply only to fp8 caches (kv_cache_dtype)"},
      {"args_auto_k_scale_ptr",
       [](pa_decode_args &a) {
         a.kv_cache_dtype = PA_KV_CACHE_AUTO;
         a.k_scale = a.v_scale = 0.0f;
         a.k_scale_ptr = 0x9000;
       },
       PA_ERROR_INVALID_ARGUMENT,
       "apply only to fp8 caches (kv_cache_dtype): with PA_KV_CACHE_AUTO"},
      {"args_auto_v_scale_ptr",
       [](pa_decode_args &a) {
         a.kv_cache_dtype = PA_KV_CACHE_AUTO;
         a.k_scale = a.v_scale = 1.0f;
         a.v_scale_ptr = 0x9000;
       },
       PA_ERROR_INVALID_ARGUMENT, "v_scale_ptr 0x9000"},
  };
  runBadCalls(kBadFp8, fp8Context(), validFp8Args);
}

/// An fp8 cache's scales and scale pointers, its head sizes and variants.
void fp8ScaleArgumentTests() {
  static const std::vector<Bad> kBadFp8 = {
      {"args_fp8_k_scale_unset", [](pa_decode_args &a) { a.k_scale = 0.0f; },
       PA_ERROR_INVALID_ARGUMENT,
       "k_scale (0) must be finite and positive for an fp8 cache (f8E4M3FN; "
       "value = stored * k_scale): set it, or pass k_scale_ptr"},
      {"args_fp8_v_scale_unset",
       [](pa_decode_args &a) {
         a.kv_cache_dtype = PA_KV_CACHE_FP8_E5M2;
         a.v_scale = 0.0f;
       },
       PA_ERROR_INVALID_ARGUMENT,
       "v_scale (0) must be finite and positive for an fp8 cache (f8E5M2; "
       "value = stored * v_scale): set it, or pass v_scale_ptr"},
      {"args_fp8_zero_initialised_scales",
       [](pa_decode_args &a) { a.k_scale = a.v_scale = 0.0f; },
       PA_ERROR_INVALID_ARGUMENT, "k_scale (0) must be finite and positive"},
      {"args_fp8_k_scale_negative",
       [](pa_decode_args &a) { a.k_scale = -0.5f; }, PA_ERROR_INVALID_ARGUMENT,
       "k_scale (-0.5) must be finite and positive"},
      {"args_fp8_v_scale_infinite",
       [](pa_decode_args &a) { a.v_scale = INFINITY; },
       PA_ERROR_INVALID_ARGUMENT, "v_scale (inf) must be finite and positive"},
      {"args_fp8_k_scale_nan_without_pointer",
       [](pa_decode_args &a) {
         a.k_scale = std::numeric_limits<float>::quiet_NaN();
         a.v_scale_ptr = 0x9000; // v's pointer does not excuse k
       },
       PA_ERROR_INVALID_ARGUMENT, "k_scale (nan) must be finite and positive"},
      {"args_fp8_k_scale_ptr_misaligned",
       [](pa_decode_args &a) { a.k_scale_ptr = 0x9002; },
       PA_ERROR_INVALID_ARGUMENT,
       "k_scale_ptr (0x9002) must be 4-byte aligned (one f32)"},
      {"args_fp8_v_scale_ptr_misaligned",
       [](pa_decode_args &a) { a.v_scale_ptr = 0x9001; },
       PA_ERROR_INVALID_ARGUMENT,
       "v_scale_ptr (0x9001) must be 4-byte aligned"},
      {"args_fp8_head_size_not_multiple_of_16",
       [](pa_decode_args &a) { a.head_size = 72; }, PA_ERROR_INVALID_ARGUMENT,
       "head_size (72) must be a multiple of x = 16, the f8E4M3FN elements in "
       "16 bytes of the key_cache layout"},
      {"args_fp8_no_variant_dtype",
       [](pa_decode_args &a) { a.dtype = PA_BF16; }, PA_ERROR_UNSUPPORTED,
       "no loaded variant serves dtype bf16, cache_dtype f8E4M3FN, tmp_dtype "
       "f32, head_size 128, block_size 16 (group size 4); 3 loaded"},
      {"args_fp8_no_variant_head_size",
       [](pa_decode_args &a) {
         a.kv_cache_dtype = PA_KV_CACHE_FP8_E5M2;
         a.head_size = 64;
       },
       PA_ERROR_UNSUPPORTED,
       "no loaded variant serves dtype f16, cache_dtype f8E5M2, tmp_dtype f32, "
       "head_size 64"},
  };
  runBadCalls(kBadFp8, fp8Context(), validFp8Args);
}

/// Valid fp8 calls pick the bundle of their cache type; a 16-bit bundle
/// never serves an fp8 call, nor an fp8 bundle a 16-bit one.
void fp8CallTests() {
  run("args_fp8_valid_calls", [] {
    HostContext h(kH200, {Spec(), fp8Spec("f8E4M3FN"), fp8Spec("f8E5M2")});
    pa_plan plan;
    // Zero-initialised fp8 fields: a cache of the dtype.
    pa_decode_args a = validArgs();
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    CHECK_EQ(std::string(plan.variant), std::string("f16_d128_b16_h4_sm70"));
    a.k_scale = a.v_scale = 1.0f; // vLLM's unit scales: accepted
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    a.k_scale = 0.0f;
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    a = validFp8Args();
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    CHECK_EQ(std::string(plan.variant),
             std::string("f16_f8E4M3FN_d128_b16_h4_sm70"));
    CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), PA_ERROR_CUDA,
                 "host-only context");
    a.kv_cache_dtype = PA_KV_CACHE_FP8_E5M2;
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    CHECK_EQ(std::string(plan.variant),
             std::string("f16_f8E5M2_d128_b16_h4_sm70"));
    // Device scales: the floats are then not used and may be 0.
    a.k_scale = a.v_scale = 0.0f;
    a.k_scale_ptr = 0x9000;
    a.v_scale_ptr = 0x9004;
    CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), PA_ERROR_CUDA,
                 "host-only context");
    a.v_scale_ptr = 0;
    a.v_scale = 0.5f; // one on the device, one in the arguments
    CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), PA_ERROR_CUDA,
                 "host-only context");
    // Head 80 passes the fp8 x check (a multiple of 16); no bundle has it.
    a.head_size = 80;
    CHECK_STATUS(pa_plan_decode_v2(h.ctx, &a, &plan), PA_ERROR_UNSUPPORTED,
                 "cache_dtype f8E5M2, tmp_dtype f32, head_size 80");
  });

  run("args_fp8_call_never_served_by_16_bit_bundle", [] {
    HostContext h(kH200, {Spec()});
    pa_decode_args a = validFp8Args();
    CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), PA_ERROR_UNSUPPORTED,
                 "no loaded variant serves dtype f16, cache_dtype f8E4M3FN, "
                 "tmp_dtype f32, head_size 128, block_size 16 (group size 4); "
                 "1 loaded: f16_d128_b16_h4_sm70");
    HostContext h8(kH200, {fp8Spec("f8E4M3FN")});
    a = validArgs();
    CHECK_STATUS(pa_decode_v2(h8.ctx, &a, nullptr), PA_ERROR_UNSUPPORTED,
                 "dtype f16, cache_dtype f16, tmp_dtype f32");
  });
}

/// Sinks need both kernels that normalize the softmax to take them: a
/// bundle whose reduce kernel has them but whose one-pass kernel does not
/// serves no call with sinks (a call without them still runs).
void sinkBundleTests() {
  run("args_sinks_served_only_by_bundles_taking_them", [] {
    Spec with;
    with.name = "f16_d128_b16_h4_sinks_sm70";
    with.sinks = true;
    HostContext h(kH200, {with});
    pa_decode_args a = validArgs();
    a.sinks = 0x1000;
    pa_plan p;
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &p));
    CHECK_EQ(std::string(p.variant), with.name);

    BundleDesc d = descFor(with);
    std::vector<ParamId> &one = d.kernels[int(Role::OnePass)].params;
    one.resize(one.size() - 2); // drop sinks has_sinks from the one-pass
    CHECK(!d.takesSinks());
    CHECK(d.takes(ParamId::Sinks, Role::Reduce));
    VariantKey key{PA_F16, PA_F32, 128, 16, 4};
    CHECK(servesFeatures(d, key));
    key.sinks = true;
    CHECK(!servesFeatures(d, key));
  });
}

/// The workspace and the pointers: optional where the call does not use
/// them.
void optionalPointerTests() {
  run("args_workspace_optional_for_one_pass", [] {
    HostContext h(kH200);
    pa_decode_args a = validArgs();
    a.max_seq_len = 200; // one partition
    a.exp_sums = a.max_logits = a.tmp_output = 0;
    CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), PA_ERROR_CUDA,
                 "host-only context");
    Spec noOnePass;
    noOnePass.onePass = false;
    HostContext h2(kH200, {noOnePass});
    CHECK_STATUS(pa_decode_v2(h2.ctx, &a, nullptr), PA_ERROR_INVALID_ARGUMENT,
                 "exp_sums is null");
  });

  run("args_plan_does_not_need_pointers", [] {
    HostContext h(kH200);
    pa_decode_args a = validArgs();
    a.query = a.output = a.exp_sums = 0;
    pa_plan plan;
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    a.scale = -1.0f; // but every other check
    CHECK_STATUS(pa_plan_decode_v2(h.ctx, &a, &plan), PA_ERROR_INVALID_ARGUMENT,
                 "scale (-1) must be finite");
  });
}

} // namespace

void argumentTests() {
  entryArgumentTests();
  scalarArgumentTests();
  pointerArgumentTests();
  variantArgumentTests();
  featureArgumentTests();
  fp8CacheArgumentTests();
  fp8ScaleArgumentTests();
  fp8CallTests();
  sinkBundleTests();
  optionalPointerTests();
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

pa_plan planOn(const DeviceInfo &device, const std::vector<Spec> &specs,
               const pa_decode_args &a, pa_status &status) {
  HostContext h(device, specs);
  pa_plan plan;
  std::memset(&plan, 0xff, sizeof(plan));
  status = pa_plan_decode_v2(h.ctx, &a, &plan);
  return plan;
}

#define CHECK_DIM3(array, x, y, z)                                             \
  do {                                                                         \
    CHECK_EQ((array)[0], unsigned(x));                                         \
    CHECK_EQ((array)[1], unsigned(y));                                         \
    CHECK_EQ((array)[2], unsigned(z));                                         \
  } while (0)

using Dim3 = std::array<unsigned, 3>;

/// What a planning case plans on: validArgs() on an H200 holding Spec() at
/// first, then as its steps change them.
struct PlanInput {
  pa_decode_args args = validArgs();
  DeviceInfo device = kH200;
  std::vector<Spec> specs = {Spec()};
};

/// One step of a planning case: what it changes in the call and the context
/// (the changes accumulate over a case's steps) and what the plan must hold.
/// Only the expectations a step sets are checked, so a step states exactly
/// the facts its case is about.
struct PlanStep {
  // The call and the context: each set field replaces the last step's.
  std::optional<int32_t> numSeqs, maxSeqLen, numHeads, numKvHeads,
      maxNumPartitions, maxBlocksPerSeq;
  std::optional<CUdeviceptr> alibiSlopes;
  std::optional<DeviceInfo> device;
  std::optional<std::vector<Spec>> specs;
  // The expected plan; `refusedWith` set: no plan, this status code.
  std::optional<pa_status_code> refusedWith;
  std::optional<std::string> variant;
  std::optional<int> onePass, partitionTokens, numPartitions, split, resident,
      clusterSize;
  std::optional<Dim3> grid, block, reduceGrid, reduceBlock;
  /// partition_tokens * num_partitions covers at least this many tokens.
  std::optional<int64_t> covers;

  PlanStep &seqs(int32_t n) { return numSeqs = n, *this; }
  PlanStep &seqLen(int32_t n) { return maxSeqLen = n, *this; }
  PlanStep &heads(int32_t n, int32_t kv) {
    return numHeads = n, numKvHeads = kv, *this;
  }
  PlanStep &kvHeads(int32_t kv) { return numKvHeads = kv, *this; }
  PlanStep &workspaceParts(int32_t n) { return maxNumPartitions = n, *this; }
  PlanStep &blocksPerSeq(int32_t n) { return maxBlocksPerSeq = n, *this; }
  PlanStep &alibi(CUdeviceptr p) { return alibiSlopes = p, *this; }
  PlanStep &on(const DeviceInfo &d) { return device = d, *this; }
  PlanStep &with(std::vector<Spec> s) { return specs = std::move(s), *this; }

  PlanStep &refused(pa_status_code c) { return refusedWith = c, *this; }
  PlanStep &chooses(std::string v) { return variant = std::move(v), *this; }
  PlanStep &onePassIs(int v) { return onePass = v, *this; }
  PlanStep &tokens(int v) { return partitionTokens = v, *this; }
  PlanStep &parts(int v) { return numPartitions = v, *this; }
  PlanStep &splitIs(int v) { return split = v, *this; }
  PlanStep &residentIs(int v) { return resident = v, *this; }
  PlanStep &clusterIs(int v) { return clusterSize = v, *this; }
  PlanStep &gridIs(Dim3 v) { return grid = v, *this; }
  PlanStep &blockIs(Dim3 v) { return block = v, *this; }
  PlanStep &reduceGridIs(Dim3 v) { return reduceGrid = v, *this; }
  PlanStep &reduceBlockIs(Dim3 v) { return reduceBlock = v, *this; }
  PlanStep &coversTokens(int64_t n) { return covers = n, *this; }

  void apply(PlanInput &in) const {
    auto set = [](auto &field, const auto &v) {
      if (v)
        field = *v;
    };
    pa_decode_args &a = in.args;
    set(in.device, device);
    set(in.specs, specs);
    set(a.alibi_slopes, alibiSlopes);
    set(a.num_seqs, numSeqs);
    set(a.max_seq_len, maxSeqLen);
    set(a.num_heads, numHeads);
    set(a.num_kv_heads, numKvHeads);
    set(a.max_num_partitions, maxNumPartitions);
    set(a.max_blocks_per_seq, maxBlocksPerSeq);
  }
};

/// A named planning case: its steps run in order on one call.
struct PlanCase {
  const char *name;
  std::vector<PlanStep> steps;
};

using Step = PlanStep;

/// Checks the expectations `s` sets against plan `p`.
void checkPlan(const PlanStep &s, const pa_plan &p) {
  if (s.variant)
    CHECK_EQ(std::string(p.variant), *s.variant);
  if (s.onePass)
    CHECK_EQ(p.one_pass, *s.onePass);
  if (s.partitionTokens)
    CHECK_EQ(p.partition_tokens, *s.partitionTokens);
  if (s.numPartitions)
    CHECK_EQ(p.num_partitions, *s.numPartitions);
  if (s.split)
    CHECK_EQ(p.partition_split, *s.split);
  if (s.resident)
    CHECK_EQ(p.resident_programs, *s.resident);
  if (s.clusterSize)
    CHECK_EQ(p.cluster_size, *s.clusterSize);
  if (s.grid)
    CHECK_DIM3(p.grid, (*s.grid)[0], (*s.grid)[1], (*s.grid)[2]);
  if (s.block)
    CHECK_DIM3(p.block, (*s.block)[0], (*s.block)[1], (*s.block)[2]);
  if (s.reduceGrid)
    CHECK_DIM3(p.reduce_grid, (*s.reduceGrid)[0], (*s.reduceGrid)[1],
               (*s.reduceGrid)[2]);
  if (s.reduceBlock)
    CHECK_DIM3(p.reduce_block, (*s.reduceBlock)[0], (*s.reduceBlock)[1],
               (*s.reduceBlock)[2]);
  if (s.covers)
    CHECK(int64_t(p.partition_tokens) * p.num_partitions >= *s.covers);
}

/// Plans the call as changed by `s` and checks the outcome.
void checkStep(const PlanStep &s, PlanInput &in) {
  s.apply(in);
  pa_status st;
  pa_plan p = planOn(in.device, in.specs, in.args, st);
  if (s.refusedWith) {
    CHECK_EQ(int(st.code), int(*s.refusedWith));
    return;
  }
  CHECK_OK(st);
  checkPlan(s, p);
}

/// Runs a case; a failure names the step (1-based) it happened in.
void runPlanCase(const PlanCase &c) {
  run(c.name, [&c] {
    PlanInput in;
    for (size_t i = 0; i < c.steps.size(); ++i) {
      checkStep(c.steps[i], in);
      if (!harness.failure.empty()) {
        harness.failure += " (step " + std::to_string(i + 1) + ")";
        return;
      }
    }
  });
}

/// Spec() whose partition and reduce kernels take partition_split.
Spec splitting() {
  Spec s;
  s.split = true;
  return s;
}

/// A bundle and its wide twin (the same kernel with 8 warps per program),
/// the wide one first: load order must not matter.
std::vector<Spec> wideTwins() {
  Spec narrow, wide;
  narrow.chip = wide.chip = "sm_90";
  narrow.tile = wide.tile = 8;
  narrow.name = "f16_d128_b16_h8_mma_sm90";
  wide.name = "f16_d128_b16_h8_w8_mma_sm90";
  wide.warps = 8;
  return {wide, narrow};
}

/// The sm_70 library's declared twin (the SIMT kernel with the 4-head tile
/// and 8 warps for the wmma kernel's 8-head tile), a 1-head tile, the wmma.
std::vector<Spec> declaredTwins() {
  Spec wmma, simt, h1;
  wmma.tile = 8;
  wmma.name = "f16_d128_b16_h8_wmma_sm70";
  simt.warps = 8;
  simt.name = "f16_d128_b16_h4_w8_sm70";
  simt.twinOf = wmma.name;
  h1 = tileSpec(1);
  return {simt, h1, wmma};
}

Spec withWarps(int warps, int step = 16) {
  Spec s;
  s.warps = warps;
  s.step = step;
  return s;
}

Spec withoutOnePass() {
  Spec s;
  s.onePass = false;
  return s;
}

std::vector<Spec> extWideTwins() {
  std::vector<Spec> specs = wideTwins();
  specs[0].features = kExtFeatures;
  return specs;
}

/// The planning cases that plan public calls and check the plans. One
/// table, one row per case (about 220 lines): a row reads as the call and
/// the plan it must give, and splitting it would only scatter the rows.
const std::vector<PlanCase> &planCases() {
  const std::string twin = "f16_d128_b16_h4_w8_sm70",
                    wmma = "f16_d128_b16_h8_wmma_sm70",
                    narrow = "f16_d128_b16_h8_mma_sm90",
                    wide = "f16_d128_b16_h8_w8_mma_sm90";
  // clang-format off: a step reads as the call it plans, then the plan.
  static const std::vector<PlanCase> cases = {
      // Adaptive: partitions of roundup(max(ceil(512/64), 64*4), 16*4) = 256
      // tokens at least, so 1 or 2 partitions; 8 KV heads x 1 tile x 1 seq
      // = 8 programs each, far below a wave: the most partitions, 2 of 256.
      {"plan_adaptive_short",
       {Step()
            .seqs(1)
            .seqLen(512)
            .chooses("f16_d128_b16_h4_sm70")
            .onePassIs(0)
            .tokens(256)
            .parts(2)
            .gridIs({2, 8, 1})
            .blockIs({128, 1, 1})
            .reduceGridIs({8, 1, 1})
            .reduceBlockIs({128, 1, 1})}},
      // Host contexts know no occupancy: 16 warps per SM, 4 programs of 4
      // warps, 528 slots on 132 SMs. 64 seqs x 2048: 8*1*64 = 512 programs
      // per partition. One partition of 2048 tokens fills 0.97 of a wave
      // (cost 2048 + 64); two of 1024 fill 1.94 waves (1.94 * 1088 = 2110),
      // within 5 %: the fewer partitions win, and one partition is the
      // one-pass kernel. resident_programs 0: no driver, unknown.
      {"plan_adaptive_one_wave_h200",
       {Step()
            .seqs(64)
            .seqLen(2048)
            .tokens(2048)
            .parts(1)
            .onePassIs(1)
            .gridIs({1, 8, 64})
            .residentIs(0)}},
      // 64 seqs x 4096: one partition of 4096 would be one wave, but
      // partitions hold at most 2048 tokens (a ragged batch's tail): 2 of
      // 2048.
      {"plan_adaptive_token_cap",
       {Step().seqs(64).seqLen(4096).tokens(2048).parts(2).onePassIs(0).gridIs(
           {2, 8, 64})}},
      // 8 seqs x 4096 (64 programs per partition): on 132 SMs (528 slots) 8
      // partitions of 512 are 0.97 of a wave; on 80 (320 slots) 8 would be
      // 1.6 waves, and 5 of 832 are one (5 * 64 = 320).
      {"plan_adaptive_depends_on_sm_count",
       {Step().seqs(8).seqLen(4096).tokens(512).parts(8).gridIs({8, 8, 8}),
        Step().on(kV100).tokens(832).parts(5).gridIs({5, 8, 8})}},
      // 8 seqs x 32768 with 64 workspace partitions: partitions of at most
      // 2048 tokens, so 16 at least; 16 of 2048 (1.94 waves, cost 4097) beat
      // 24 of 1408 (2.91 waves, 4283) and 32 of 1024 (3.88 waves, 4221).
      // 9 to 16 partitions: each reduce program serves two heads.
      {"plan_adaptive_long_context",
       {Step()
            .seqs(8)
            .seqLen(32768)
            .tokens(2048)
            .parts(16)
            .gridIs({16, 8, 8})
            .reduceGridIs({16, 8, 1})}},
      // Warps count twice: a 2-warp bundle gets partitions of 64 tokens per
      // warp at least (128) and twice the slots (8 programs per SM, 1056).
      // 64 seqs x 4096: 2 partitions of 2048 (1.94 waves). 1 seq x 512: 8
      // programs per partition, so the most partitions, 4 of 128.
      {"plan_adaptive_counts_warps",
       {Step().with({withWarps(2)}).seqs(64).seqLen(4096).tokens(2048).parts(2),
        Step().seqs(1).seqLen(512).tokens(128).parts(4)}},
      // One sequence, long context: the most partitions, 64 of 512 (512
      // programs, under one wave of 528).
      {"plan_adaptive_single_long_sequence",
       {Step().seqs(1).seqLen(32768).tokens(512).parts(64).reduceGridIs(
           {32, 1, 1})}},
      // The reduce grid follows the partition count: up to 8 partitions four
      // heads per program, 9 to 16 two, more one.
      {"plan_reduce_heads_per_program",
       {Step().seqs(1).seqLen(2048).parts(8).reduceGridIs({8, 1, 1}),
        Step().seqLen(2049).parts(9).reduceGridIs({16, 1, 1}),
        Step().seqLen(4096).parts(16).reduceGridIs({16, 1, 1}),
        Step().seqLen(4097).parts(17).reduceGridIs({16, 1, 1}),
        Step().seqLen(6144).parts(24).reduceGridIs({16, 1, 1}),
        Step().seqLen(6145).parts(25).reduceGridIs({32, 1, 1})}},
      // Rounding to token_step*warps: ceil(20000/64) = 313 -> 320; with 8
      // warps of token step 32 (unit 256), 512.
      {"plan_adaptive_rounds_to_token_step_times_warps",
       {Step().seqs(1).heads(4, 1).seqLen(20000).tokens(320).parts(63),
        Step().with({withWarps(8, 32)}).tokens(512).parts(40)}},
      // A context that fits one partition takes the one-pass kernel: no
      // reduce.
      {"plan_one_pass",
       {Step()
            .seqLen(200)
            .onePassIs(1)
            .parts(1)
            .tokens(256)
            .gridIs({1, 8, 4})
            .reduceGridIs({0, 0, 0})
            .reduceBlockIs({0, 0, 0})}},
      // Doubling can end in one partition: the one-pass kernel then.
      {"plan_one_pass_after_doubling",
       {Step().seqs(512).seqLen(1000).parts(1).tokens(1024).onePassIs(1)}},
      {"plan_one_partition_without_onepass_kernel",
       {Step()
            .with({withoutOnePass()})
            .seqLen(200)
            .onePassIs(0)
            .parts(1)
            .gridIs({1, 8, 4})
            .reduceGridIs({8, 4, 1})}},
      // Fixed grid: capacity 2048*16 = 32768 tokens over 64 partitions ->
      // max(512, roundup(512, 16)) = 512 tokens, all 64 partitions launched;
      // 64 partitions: one head per reduce program (KernelBuilders.h). No
      // dependence on the SM count or the batch's lengths.
      {"plan_fixed_grid",
       {Step()
            .seqLen(0)
            .onePassIs(0)
            .tokens(512)
            .parts(64)
            .gridIs({64, 8, 4})
            .reduceGridIs({32, 4, 1}),
        Step().on(kV100).tokens(512).parts(64)}},
      // Bundles whose kernels take partition_split: the fixed grid has the
      // adaptive rule's count at the capacity (32768 tokens, 32 programs
      // per partition: 16, as plan_rule_direct) and each sequence is split
      // over it on the device in multiples of 512 tokens. Capacity 512:
      // one partition, the one-pass kernel. Without the parameter: every
      // workspace partition (plan_fixed_grid).
      {"plan_fixed_grid_split",
       {Step()
            .with({splitting()})
            .seqLen(0)
            .onePassIs(0)
            .tokens(512)
            .parts(16)
            .splitIs(16)
            .gridIs({16, 8, 4}),
        Step().seqLen(32768).parts(16).tokens(2048).splitIs(0),
        Step().seqLen(0).blocksPerSeq(32).onePassIs(1).parts(1).splitIs(1),
        Step().with({Spec()}).blocksPerSeq(2048).parts(64).splitIs(0)}},
      // A workspace smaller than capacity/partition_size: partitions grow.
      // ceil(32768/10) = 3277 -> roundup 16 = 3280 tokens x 10 partitions.
      {"plan_fixed_grid_small_workspace",
       {Step().seqLen(0).workspaceParts(10).tokens(3280).parts(10).coversTokens(
           32768)}},
      // 100 blocks per sequence: 1600 tokens in the one partition.
      {"plan_fixed_grid_one_pass",
       {Step()
            .seqLen(0)
            .workspaceParts(1)
            .blocksPerSeq(100)
            .onePassIs(1)
            .tokens(1600)
            .parts(1)}},
      // A wide twin (the same kernel with 8 warps per program) runs the
      // grids it holds in one wave, re-planned for its width; larger grids
      // run the default width. Host contexts: 16 warps per SM, so 264 slots
      // of 8-warp programs on 132 SMs (528 of 4 warps). Batch 1, one
      // partition of 512: 8 programs; fixed grid: the same programs,
      // whatever the lengths.
      {"plan_wide_twin_small_grid",
       {Step()
            .with(wideTwins())
            .seqs(1)
            .seqLen(512)
            .workspaceParts(1)
            .chooses(wide)
            .onePassIs(1)
            .gridIs({1, 8, 1})
            .blockIs({256, 1, 1}),
        Step().seqLen(0).chooses(wide)}},
      // 33 x 8 = 264 programs: one wave of 8-warp programs; 34 (272): more
      // than a wave, the default width. gqa-b64-L4096: 512 programs per
      // partition, the default width.
      {"plan_wide_twin_one_wave_boundary",
       {Step().with(wideTwins()).seqLen(512).seqs(33).blockIs({256, 1, 1}),
        Step().seqs(34).chooses(narrow).blockIs({128, 1, 1}),
        Step().seqs(64).seqLen(4096).blockIs({128, 1, 1}).parts(2)}},
      // One sequence of 32768 tokens, 8 programs per partition: 4-warp
      // programs take 64 partitions of 512 (0.97 of a wave); 8-warp ones at
      // least 512 tokens (64 per warp), 32 of 1024 (256 programs, one wave),
      // which is what runs. 8 x 4096 (64 programs per partition): 4
      // partitions of 1024 are 256 programs, one wave of 8-warp ones (4-warp
      // ones: 8 of 512).
      {"plan_wide_twin_replans",
       {Step()
            .with(wideTwins())
            .seqs(1)
            .seqLen(32768)
            .blockIs({256, 1, 1})
            .parts(32)
            .tokens(1024)
            .gridIs({32, 8, 1}),
        Step()
            .seqs(8)
            .seqLen(4096)
            .blockIs({256, 1, 1})
            .parts(4)
            .tokens(1024)}},
      // Only a kernel with the same parameters is a twin: a wide _ext bundle
      // does not serve a plain call's small grid, and serves an ALiBi call.
      {"plan_wide_twin_same_features_only",
       {Step().with(extWideTwins()).seqs(1).seqLen(512).chooses(narrow),
        Step().alibi(0x7000).chooses(wide)}},
      // A declared twin is never chosen on its own; it runs grids of at most
      // one program per two SMs, for groups its tile covers in as many
      // programs per KV head as the wmma tile (up to 4), and never for larger
      // groups, where it would read K and V twice.
      {"plan_declared_twin",
       {// Group 4: 8 programs.
        Step()
            .with(declaredTwins())
            .seqs(1)
            .seqLen(512)
            .workspaceParts(1)
            .chooses(twin)
            .gridIs({1, 8, 1})
            .blockIs({256, 1, 1}),
        // Group 8: the twin's tile would read K/V twice.
        Step().kvHeads(4).chooses(wmma).gridIs({1, 4, 1}),
        // Group 1: the 1-head tile, which has no twin.
        Step().kvHeads(32).chooses("f16_d128_b16_h1_sm70"),
        // At most one program per two SMs: 66 of the 132 here. 8 sequences
        // are 64 programs, 9 are 72.
        Step().kvHeads(8).seqs(8).chooses(twin), Step().seqs(9).chooses(wmma),
        // Group 4 past one wave of 8-warp programs (264 on a host context):
        // the wmma bundle, as without the twin.
        Step().seqs(64).seqLen(4096).workspaceParts(64).chooses(wmma),
        // Without the wmma bundle nothing serves the call.
        Step()
            .with({declaredTwins()[0]})
            .seqs(1)
            .seqLen(512)
            .workspaceParts(1)
            .refused(PA_ERROR_UNSUPPORTED)}},
      // The cluster kernel of the sm_90 _w8 twin runs one-pass plans whose
      // cluster grid (4 x the one-pass grid's x) fits one wave of the
      // twin's programs (264 on a host context). Batch 1 of GQA 32/8 heads,
      // 512 tokens: one partition of 512 on the twin, 8 one-pass programs,
      // 32 cluster programs in clusters of 4. Without a driver no
      // occupancy is known.
      {"plan_cluster_batch1",
       {Step()
            .with(clusterTwins())
            .on(kH100)
            .seqs(1)
            .seqLen(512)
            .chooses(wide)
            .onePassIs(1)
            .parts(1)
            .tokens(512)
            .clusterIs(4)
            .gridIs({4, 8, 1})
            .blockIs({256, 1, 1})
            .reduceGridIs({0, 0, 0})
            .reduceBlockIs({0, 0, 0})
            .residentIs(0),
        // The 4-warp bundle alone has no cluster kernel: its one-pass grid.
        Step()
            .with({clusterTwins()[1]})
            .seqLen(200)
            .chooses(narrow)
            .onePassIs(1)
            .clusterIs(0)
            .gridIs({1, 8, 1})
            .blockIs({128, 1, 1})}},
      // It runs in place of at most cluster_size partitions (and their
      // reduce): 600 tokens are 2 partitions of 384 on the twin, 2048 are 4
      // of 512; one pass over the whole context on 4 x 8 programs. 4096
      // tokens are 8 partitions, 32768 are 32; the fixed grid of capacity
      // 32768 is 64 (the 4-warp bundle).
      {"plan_cluster_few_partitions",
       {Step()
            .with(clusterTwins())
            .on(kH100)
            .seqs(1)
            .seqLen(600)
            .chooses(wide)
            .onePassIs(1)
            .parts(1)
            .tokens(640)
            .clusterIs(4)
            .gridIs({4, 8, 1})
            .blockIs({256, 1, 1})
            .reduceGridIs({0, 0, 0}),
        Step()
            .seqLen(2048)
            .chooses(wide)
            .onePassIs(1)
            .parts(1)
            .tokens(2048)
            .clusterIs(4)
            .gridIs({4, 8, 1}),
        Step()
            .seqLen(4096)
            .chooses(wide)
            .onePassIs(0)
            .parts(8)
            .clusterIs(0)
            .gridIs({8, 8, 1}),
        Step()
            .seqLen(32768)
            .chooses(wide)
            .onePassIs(0)
            .parts(32)
            .clusterIs(0)
            .gridIs({32, 8, 1}),
        Step().seqLen(0).onePassIs(0).parts(64).clusterIs(0),
        // A fixed grid of capacity 2048 splits it over the adaptive count
        // there (4): the cluster kernel, one pass over the capacity.
        Step()
            .seqLen(0)
            .blocksPerSeq(128)
            .workspaceParts(4)
            .chooses(wide)
            .onePassIs(1)
            .parts(1)
            .tokens(2048)
            .clusterIs(4)
            .gridIs({4, 8, 1}),
        // A fixed grid of one partition is one pass: the cluster kernel.
        Step()
            .seqLen(0)
            .blocksPerSeq(32)
            .workspaceParts(1)
            .chooses(wide)
            .onePassIs(1)
            .clusterIs(4)
            .gridIs({4, 8, 1})}},
      // One wave: 8 sequences are 256 cluster programs (of 264), 9 are
      // 288, which run as the twin's 72 one-pass programs instead; 34
      // sequences (272 partition programs) run the 4-warp bundle.
      {"plan_cluster_one_wave_boundary",
       {Step()
            .with(clusterTwins())
            .on(kH100)
            .seqLen(512)
            .seqs(4)
            .chooses(wide)
            .onePassIs(1)
            .clusterIs(4)
            .gridIs({4, 8, 4})
            .blockIs({256, 1, 1}),
        // 160 cluster programs: more than the 132 SMs, though the twin's
        // wave holds them.
        Step()
            .seqs(5)
            .chooses(wide)
            .onePassIs(1)
            .clusterIs(0)
            .gridIs({1, 8, 5})
            .blockIs({256, 1, 1}),
        Step().seqs(34).chooses(narrow).clusterIs(0).blockIs({128, 1, 1}),
        // Fewer SMs: 66 take 2 sequences' clusters (64) but not 3 (96).
        Step()
            .on(DeviceInfo{0, 90, 66})
            .seqs(2)
            .chooses(wide)
            .clusterIs(4)
            .gridIs({4, 8, 2}),
        Step().seqs(3).chooses(wide).onePassIs(1).clusterIs(0).gridIs(
            {1, 8, 3})}},
  };
  // clang-format on
  return cases;
}

void planTests() {
  for (const PlanCase &c : planCases())
    runPlanCase(c);

  // GQA grids: y = num_kv_heads * ceil(group / tile).
  run("plan_gqa_grids", [] {
    std::vector<Spec> tiles = {tileSpec(1), tileSpec(2), tileSpec(4),
                               tileSpec(8)};
    struct {
      int heads, kvHeads, tile;
      unsigned y;
    } cases[] = {{32, 32, 1, 32}, {32, 8, 4, 8},  {48, 8, 8, 8},
                 {56, 8, 8, 8},   {64, 4, 8, 8},  {64, 1, 8, 8},
                 {32, 1, 8, 4},   {16, 16, 1, 16}};
    for (const auto &c : cases) {
      pa_decode_args a = validArgs();
      a.num_heads = c.heads;
      a.num_kv_heads = c.kvHeads;
      a.max_seq_len = 100;
      pa_status st;
      pa_plan p = planOn(kH200, tiles, a, st);
      CHECK_OK(st);
      CHECK_EQ(std::string(p.variant),
               "f16_d128_b16_h" + std::to_string(c.tile) + "_sm70");
      CHECK_EQ(p.grid[1], c.y);
      CHECK_EQ(p.grid[2], unsigned(a.num_seqs));
    }
  });

  // The driver's occupancy sizes the wave: one resident 8-warp program per
  // SM is 132 slots, fewer than 33 x 8 programs.
  run("plan_wide_twin_driver_occupancy", [] {
    std::vector<BundleDesc> descs;
    for (const Spec &s : wideTwins())
      descs.push_back(descFor(s));
    linkWideTwins(descs);
    CHECK_EQ(descs[1].wideTwin, 0);
    CHECK_EQ(descs[0].wideTwin, -1);
    descs[0].residentPrograms = 1;
    descs[1].residentPrograms = 4;
    pa_decode_args a = validArgs();
    a.max_seq_len = 512;
    a.num_seqs = 16; // 128 programs
    DecodePlan plan;
    CHECK_OK(planDecode(kH200, descs, a, true, plan));
    CHECK_EQ(plan.variant, 0);
    a.num_seqs = 33;
    CHECK_OK(planDecode(kH200, descs, a, true, plan));
    CHECK_EQ(plan.variant, 1);
  });

  // The cluster kernel runs at most one program per SM whatever the
  // twin's occupancy: with 4 resident 8-warp programs per SM (528 slots)
  // 4 sequences' clusters (128 programs) run and not 5 (160), which run the
  // twin's one-pass kernel.
  run("plan_cluster_one_program_per_sm", [] {
    std::vector<BundleDesc> descs;
    for (const Spec &s : clusterTwins())
      descs.push_back(descFor(s));
    linkWideTwins(descs);
    CHECK_EQ(descs[1].wideTwin, 0);
    descs[0].residentPrograms = 4; // the twin: 528 slots
    descs[1].residentPrograms = 4;
    pa_decode_args a = validArgs();
    a.max_seq_len = 512;
    a.num_seqs = 4;
    DecodePlan plan;
    CHECK_OK(planDecode(kH100, descs, a, true, plan));
    CHECK_EQ(plan.variant, 0);
    CHECK(plan.onePass);
    CHECK_EQ(plan.clusterSize, 4);
    CHECK_EQ(plan.grid[0], 4u);
    CHECK_EQ(plan.grid[2], 4u);
    a.num_seqs = 5;
    CHECK_OK(planDecode(kH100, descs, a, true, plan));
    CHECK_EQ(plan.variant, 0);
    CHECK(plan.onePass);
    CHECK_EQ(plan.clusterSize, 0);
    CHECK_EQ(plan.grid[0], 1u);
    CHECK_EQ(plan.block[0], 256u);
    pa_plan out;
    exportPlan(plan, descs[plan.variant], out);
    CHECK_EQ(out.cluster_size, 0);
    CHECK_EQ(out.one_pass, 1);
  });

  // Only devices with thread-block clusters (compute capability 9.0 and
  // newer) run it. An sm_90 bundle does not even load on an sm_80 device;
  // were one selected there (its chip changed here after parsing), the
  // one-pass kernel would run.
  run("plan_cluster_needs_sm90_device", [] {
    std::vector<BundleDesc> descs;
    for (const Spec &s : clusterTwins())
      descs.push_back(descFor(s));
    CHECK(!isOk(checkChip(descs[0], kA100)));
    {
      pa_decode_args a = validArgs();
      a.num_seqs = 1;
      a.max_seq_len = 512;
      pa_status st;
      planOn(kA100, clusterTwins(), a, st);
      CHECK_EQ(int(st.code), int(PA_ERROR_UNSUPPORTED));
    }
    for (BundleDesc &d : descs) {
      d.chip = "sm_80";
      d.chipVersion = 80;
    }
    linkWideTwins(descs);
    pa_decode_args a = validArgs();
    a.num_seqs = 1;
    a.max_seq_len = 512;
    DecodePlan plan;
    CHECK_OK(planDecode(kA100, descs, a, true, plan));
    CHECK_EQ(plan.variant, 0); // the 8-warp twin
    CHECK(plan.onePass);
    CHECK_EQ(plan.clusterSize, 0);
    CHECK_EQ(plan.grid[0], 1u);
    CHECK_EQ(plan.block[0], 256u);
    // The same bundles on an sm_90 device: the cluster kernel.
    CHECK_OK(planDecode(kH100, descs, a, true, plan));
    CHECK_EQ(plan.clusterSize, 4);
    CHECK_EQ(plan.grid[0], 4u);
    // A newer device (the PTX through the JIT) has clusters too.
    CHECK_OK(planDecode(DeviceInfo{0, 100, 148}, descs, a, true, plan));
    CHECK_EQ(plan.clusterSize, 4);
  });

  // A cluster grid whose x is no multiple of cluster_size cannot be
  // launched in whole clusters: the one-pass kernel runs.
  run("plan_cluster_grid_not_whole_clusters", [] {
    std::vector<std::string> lines =
        replaced(manifestLines(clusterSpec()), "grid cluster",
                 "grid cluster 3*query_slots "
                 "num_kv_heads*ceil(group_size/heads_per_program) num_seqs");
    std::vector<BundleDesc> descs(1);
    CHECK_OK(parseManifest(join(lines), "mem/c.manifest", descs[0]));
    pa_decode_args a = validArgs();
    a.num_seqs = 1;
    a.max_seq_len = 512;
    DecodePlan plan;
    CHECK_OK(planDecode(kH100, descs, a, true, plan));
    CHECK(plan.onePass);
    CHECK_EQ(plan.clusterSize, 0);
    CHECK_EQ(plan.grid[0], 1u);
    // 8 (two clusters) is launchable.
    lines = replaced(lines, "grid cluster",
                     "grid cluster 8*query_slots "
                     "num_kv_heads*ceil(group_size/heads_per_program) "
                     "num_seqs");
    CHECK_OK(parseManifest(join(lines), "mem/c.manifest", descs[0]));
    CHECK_OK(planDecode(kH100, descs, a, true, plan));
    CHECK_EQ(plan.clusterSize, 4);
    CHECK_EQ(plan.grid[0], 8u);
  });

  // A cluster plan is a one-pass plan: no workspace, and the launch (which
  // a host context refuses after every check) is reached without one.
  run("plan_cluster_needs_no_workspace", [] {
    HostContext h(kH100, clusterTwins());
    pa_decode_args a = validArgs();
    a.num_seqs = 1;
    a.max_seq_len = 512;
    a.exp_sums = a.max_logits = a.tmp_output = 0;
    pa_plan p;
    std::memset(&p, 0xff, sizeof(p));
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &p));
    CHECK_EQ(p.cluster_size, 4);
    CHECK_EQ(p.one_pass, 1);
    CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), PA_ERROR_CUDA,
                 "no CUDA driver");
    // So does a plan of up to cluster_size partitions; eight need it.
    a.max_seq_len = 2048;
    CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), PA_ERROR_CUDA,
                 "no CUDA driver");
    a.max_seq_len = 4096;
    CHECK_STATUS(pa_decode_v2(h.ctx, &a, nullptr), PA_ERROR_INVALID_ARGUMENT,
                 "exp_sums");
  });

  // Several query tokens per sequence run it too, their packed rows in x
  // as in the one-pass grid: 4 tokens of group 4 are 2 tiles of 8 rows.
  run("plan_cluster_query_tokens", [] {
    std::vector<BundleDesc> descs;
    for (Spec s : clusterTwins()) {
      s.queryTokens = s.packsTokens = true;
      descs.push_back(descFor(s));
    }
    linkWideTwins(descs);
    pa_decode_args a = validArgs();
    a.num_seqs = 1;
    a.max_seq_len = 512;
    DecodePlan plan;
    CHECK_OK(planDecode(kH100, descs, a, true, plan));
    CHECK_EQ(plan.clusterSize, 4);
    CHECK_EQ(plan.grid[0], 4u);
    a.query_start_loc = 0x200000;
    a.max_query_len = 4;
    CHECK_OK(planDecode(kH100, descs, a, true, plan));
    CHECK(plan.onePass);
    CHECK_EQ(plan.clusterSize, 4);
    CHECK_EQ(plan.grid[0], 8u);
    CHECK_EQ(plan.block[0], 256u);
  });

  run("plan_internal_matches_public", [] {
    pa_decode_args a = validArgs();
    a.num_seqs = 16;
    a.max_seq_len = 9000;
    std::vector<BundleDesc> descs = {descFor(Spec())};
    DecodePlan internal;
    CHECK_OK(planDecode(kH200, descs, a, true, internal));
    pa_status st;
    pa_plan p = planOn(kH200, {Spec()}, a, st);
    CHECK_OK(st);
    CHECK_EQ(p.partition_tokens, internal.partitionTokens);
    CHECK_EQ(p.num_partitions, internal.numPartitions);
    CHECK_EQ(p.grid[0], internal.grid[0]);
    CHECK_EQ(internal.groupSize, 4);
    CHECK_EQ(internal.variant, 0);
  });

  // planPartitions on its own, 32768 tokens, at most 64 partitions of 512.
  run("plan_rule_direct", [] {
    struct {
      int64_t programsPerPartition;
      int residentPrograms; // 0: unknown, the host context's 16 warps/SM
      int32_t parts, tokens;
    } cases[] = {
        // 2112 programs per partition are 4 waves already: the longest
        // partitions allowed, 16 of 2048.
        {2112, 0, 16, 2048},
        // 8 programs: even 64 partitions fill 0.97 of a wave; the most win.
        {8, 0, 64, 512},
        // 33: 16 partitions of 2048 are exactly one wave (528 programs).
        {33, 0, 16, 2048},
        // The driver's occupancy sizes the waves: 8 resident programs per
        // SM (1056 slots) make 32 partitions of 1024 one wave.
        {33, 8, 32, 1024},
    };
    BundleDesc d = descFor(Spec());
    pa_decode_args a = validArgs();
    a.max_seq_len = 32768;
    for (const auto &c : cases) {
      d.residentPrograms = c.residentPrograms;
      PartitionPlan p;
      CHECK_OK(planPartitions(kH200, d, a, c.programsPerPartition, p));
      CHECK_EQ(p.parts, c.parts);
      CHECK_EQ(p.tokens, c.tokens);
      CHECK_EQ(p.split, 0);
    }
  });
}

//===----------------------------------------------------------------------===//
// Marshalling, workspace, status, driver, contexts
//===----------------------------------------------------------------------===//

namespace {

/// Kernel parameters in manifest order: the base kernels', an _ext
/// variant's features, the sinks.
void kernelParamTests() {
  // The fixed grid's split reaches the partition and reduce kernels right
  // after partition_tokens; the adaptive grid passes 0.
  run("marshal_partition_split", [] {
    BundleDesc d = descFor(splitting());
    pa_decode_args a = validArgs();
    a.max_seq_len = 0;
    for (int pass = 0; pass < 2; ++pass) {
      DecodePlan plan;
      CHECK_OK(planDecode(kH200, {d}, a, true, plan));
      CHECK_EQ(plan.partitionSplit, pass == 0 ? 16 : 0);
      for (Role role : {Role::Partition, Role::Reduce}) {
        const std::vector<ParamId> &ids = d.kernel(role).params;
        auto at = std::find(ids.begin(), ids.end(), ParamId::PartitionSplit);
        CHECK(at != ids.end() && at[-1] == ParamId::PartitionTokens);
        KernelArgs k;
        marshalParams(d.kernel(role), a, plan, k);
        CHECK_EQ(*static_cast<int32_t *>(k.pointers[at - ids.begin()]),
                 plan.partitionSplit);
      }
      a.max_seq_len = 32768;
    }
  });
  run("marshal_params_in_manifest_order", [] {
    BundleDesc d = descFor(Spec());
    pa_decode_args a = validArgs();
    DecodePlan plan;
    CHECK_OK(planDecode(kH200, {d}, a, true, plan));
    KernelArgs k;
    marshalParams(d.kernel(Role::Partition), a, plan, k);
    CHECK_EQ(k.count, 16);
    for (int i = 0; i < k.count; ++i)
      CHECK(k.pointers[i] == &k.values[i]);
    CHECK_EQ(k.values[0].ptr, a.query);
    CHECK_EQ(k.values[2].ptr, a.value_cache);
    CHECK_EQ(k.values[8].ptr, a.tmp_output);
    CHECK_EQ(*static_cast<float *>(k.pointers[9]), a.scale);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[10]), a.max_blocks_per_seq);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[11]), a.max_num_partitions);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[12]), plan.partitionTokens);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[13]), a.num_kv_heads);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[14]), 4);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[15]), 0); // no window
    marshalParams(d.kernel(Role::Reduce), a, plan, k);
    CHECK_EQ(k.count, 10);
    CHECK_EQ(k.values[0].ptr, a.output);
    CHECK_EQ(k.values[4].ptr, a.seq_lens);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[5]), a.num_heads);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[8]), 0); // no window
    // The launched partition count: the reduce derives its mapping from it.
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[9]), plan.numPartitions);
  });

  // An _ext variant's features: the slopes pointer with its flag, the
  // window and the cap, in manifest order; without slopes the flag is 0 and
  // the pointer a valid stand-in.
  run("marshal_feature_params", [] {
    Spec s;
    s.features = kExtFeatures;
    BundleDesc d = descFor(s);
    pa_decode_args a = validArgs();
    a.alibi_slopes = 0x7000;
    a.sliding_window = 4096;
    a.logits_soft_cap = 50.0f;
    DecodePlan plan;
    CHECK_OK(planDecode(kH200, {d}, a, true, plan));
    KernelArgs k;
    marshalParams(d.kernel(Role::Partition), a, plan, k);
    CHECK_EQ(k.count, 19);
    CHECK_EQ(k.values[15].ptr, CUdeviceptr(0x7000));
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[16]), 1);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[17]), 4096);
    CHECK_EQ(*static_cast<float *>(k.pointers[18]), 50.0f);
    a.alibi_slopes = 0;
    marshalParams(d.kernel(Role::Partition), a, plan, k);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[16]), 0);
    CHECK_EQ(k.values[15].ptr, a.exp_sums);
  });

  // Sinks: the pointer and its flag at the end of the one-pass and reduce
  // kernels, never the partition kernel's; without sinks the flag is 0 and
  // the pointer a valid stand-in that is not read.
  run("marshal_sink_params", [] {
    Spec s;
    s.sinks = true;
    BundleDesc d = descFor(s);
    CHECK(!d.takes(ParamId::Sinks, Role::Partition));
    pa_decode_args a = validArgs();
    a.sinks = 0x9000;
    DecodePlan plan;
    CHECK_OK(planDecode(kH200, {d}, a, true, plan));
    KernelArgs k;
    for (Role role : {Role::OnePass, Role::Reduce}) {
      marshalParams(d.kernel(role), a, plan, k);
      CHECK_EQ(k.count, role == Role::OnePass ? 18 : 12);
      CHECK_EQ(k.values[k.count - 2].ptr, CUdeviceptr(0x9000));
      CHECK_EQ(*static_cast<int32_t *>(k.pointers[k.count - 1]), 1);
    }
    a.sinks = 0;
    for (Role role : {Role::OnePass, Role::Reduce}) {
      marshalParams(d.kernel(role), a, plan, k);
      CHECK_EQ(k.values[k.count - 2].ptr, a.exp_sums);
      CHECK_EQ(*static_cast<int32_t *>(k.pointers[k.count - 1]), 0);
    }
  });
}

/// The fp8 scale parameters, with and without device scales, and what a
/// cache of the dtype passes for them.
void fp8ParamTests() {
  // fp8 bundles: the five scale parameters after the features, in
  // manifest order; scales_on_device has bit 0 for a device k_scale, bit 1
  // for a device v_scale. The reduce kernel is unchanged.
  run("marshal_fp8_scale_params", [] {
    BundleDesc d = descFor(fp8Spec("f8E4M3FN"));
    pa_decode_args a = validFp8Args();
    DecodePlan plan;
    CHECK_OK(planDecode(kH200, {d}, a, true, plan));
    KernelArgs k;
    for (Role role : {Role::Partition, Role::OnePass}) {
      a.k_scale_ptr = a.v_scale_ptr = 0;
      marshalParams(d.kernel(role), a, plan, k);
      CHECK_EQ(k.count, 21);
      CHECK_EQ(*static_cast<int32_t *>(k.pointers[15]), 0); // no window
      CHECK_EQ(*static_cast<float *>(k.pointers[16]), 0.043f);
      CHECK_EQ(*static_cast<float *>(k.pointers[17]), 0.021f);
      CHECK_EQ(k.values[18].ptr, CUdeviceptr(0));
      CHECK_EQ(k.values[19].ptr, CUdeviceptr(0));
      CHECK_EQ(*static_cast<int32_t *>(k.pointers[20]), 0);
      a.k_scale_ptr = 0xa000;
      marshalParams(d.kernel(role), a, plan, k);
      CHECK_EQ(k.values[18].ptr, CUdeviceptr(0xa000));
      CHECK_EQ(k.values[19].ptr, CUdeviceptr(0));
      CHECK_EQ(*static_cast<int32_t *>(k.pointers[20]), 1);
      a.k_scale_ptr = 0;
      a.v_scale_ptr = 0xb000;
      marshalParams(d.kernel(role), a, plan, k);
      CHECK_EQ(k.values[18].ptr, CUdeviceptr(0));
      CHECK_EQ(k.values[19].ptr, CUdeviceptr(0xb000));
      CHECK_EQ(*static_cast<int32_t *>(k.pointers[20]), 2);
      a.k_scale_ptr = 0xa000;
      a.k_scale = a.v_scale = 0.0f; // unused with both on the device
      marshalParams(d.kernel(role), a, plan, k);
      CHECK_EQ(*static_cast<int32_t *>(k.pointers[20]), 3);
      CHECK_EQ(*static_cast<float *>(k.pointers[16]), 0.0f);
      a.k_scale = 0.043f;
      a.v_scale = 0.021f;
    }
    marshalParams(d.kernel(Role::Reduce), a, plan, k);
    CHECK_EQ(k.count, 10);
  });

  run("marshal_fp8_ext_params", [] {
    Spec s = fp8Spec("f8E5M2", "bf16");
    s.features = kExtFeatures;
    BundleDesc d = descFor(s);
    pa_decode_args a = validFp8Args();
    a.dtype = PA_BF16;
    a.kv_cache_dtype = PA_KV_CACHE_FP8_E5M2;
    a.alibi_slopes = 0x7000;
    a.sliding_window = 100;
    a.logits_soft_cap = 30.0f;
    a.v_scale_ptr = 0xb000;
    DecodePlan plan;
    CHECK_OK(planDecode(kH200, {d}, a, true, plan));
    KernelArgs k;
    marshalParams(d.kernel(Role::Partition), a, plan, k);
    CHECK_EQ(k.count, 24);
    CHECK_EQ(k.values[15].ptr, CUdeviceptr(0x7000));
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[17]), 100);
    CHECK_EQ(*static_cast<float *>(k.pointers[18]), 30.0f);
    CHECK_EQ(*static_cast<float *>(k.pointers[19]), 0.043f);
    CHECK_EQ(*static_cast<float *>(k.pointers[20]), 0.021f);
    CHECK_EQ(k.values[21].ptr, CUdeviceptr(0));
    CHECK_EQ(k.values[22].ptr, CUdeviceptr(0xb000));
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[23]), 2);
  });

  // A cache of the dtype is not scaled: a kernel that takes the scales gets
  // 1 and no device copies, whatever the (unset) fields hold.
  run("marshal_scale_params_without_fp8", [] {
    BundleDesc d = descFor(fp8Spec("f8E4M3FN"));
    pa_decode_args a = validArgs(); // AUTO, k_scale = v_scale = 0
    DecodePlan plan;
    plan.groupSize = 4;
    KernelArgs k;
    marshalParams(d.kernel(Role::Partition), a, plan, k);
    CHECK_EQ(*static_cast<float *>(k.pointers[16]), 1.0f);
    CHECK_EQ(*static_cast<float *>(k.pointers[17]), 1.0f);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[20]), 0);
  });
}

/// The cluster kernel is marshalled from its own params record, which is the
/// one-pass kernel's: the same argument block, feature parameters included.
void clusterParamTests() {
  run("marshal_cluster_params_as_onepass", [] {
    Spec s = clusterSpec();
    s.sinks = s.queryTokens = s.packsTokens = s.bounds = true;
    s.features = kExtFeatures;
    BundleDesc d = descFor(s);
    pa_decode_args a = validArgs();
    a.num_seqs = 1;
    a.max_seq_len = 512;
    a.alibi_slopes = 0x7000;
    a.sinks = 0x7100;
    a.sliding_window = 100;
    std::vector<BundleDesc> descs = {d};
    DecodePlan plan;
    CHECK_OK(planDecode(kH100, descs, a, true, plan));
    CHECK_EQ(plan.clusterSize, 4);
    KernelArgs onePass, cluster;
    const CUdeviceptr errorWord = 0x9000;
    marshalParams(d.kernel(Role::OnePass), a, plan, onePass, errorWord);
    marshalParams(d.kernel(Role::Cluster), a, plan, cluster, errorWord);
    CHECK_EQ(cluster.count, onePass.count);
    CHECK_EQ(cluster.count, int(d.kernel(Role::OnePass).params.size()));
    for (int i = 0; i < cluster.count; ++i) {
      CHECK_MSG(std::memcmp(&cluster.values[i], &onePass.values[i],
                            sizeof(KernelArgs::Value)) == 0,
                std::string("parameter ") + std::to_string(i) + " (" +
                    paramName(d.kernel(Role::Cluster).params[i]) + ") differs");
      CHECK(cluster.pointers[i] == &cluster.values[i]);
    }
  });
}

/// pa_decode_args' layout, which the Python mirror depends on.
void decodeArgsAbiTests() {
  // The Python ctypes mirror depends on the fields' order: the fp8 fields
  // are appended after logits_soft_cap, then the sinks pointer, then
  // query_start_loc and max_query_len.
  run("abi_decode_args_fp8_fields_appended", [] {
    CHECK_EQ(sizeof(pa_kv_cache_dtype), sizeof(int32_t));
    CHECK_EQ(offsetof(pa_decode_args, kv_cache_dtype),
             offsetof(pa_decode_args, logits_soft_cap) + sizeof(float));
    CHECK_EQ(offsetof(pa_decode_args, k_scale),
             offsetof(pa_decode_args, kv_cache_dtype) + 4);
    CHECK_EQ(offsetof(pa_decode_args, v_scale),
             offsetof(pa_decode_args, k_scale) + 4);
    CHECK(offsetof(pa_decode_args, k_scale_ptr) >
          offsetof(pa_decode_args, v_scale));
    CHECK_EQ(offsetof(pa_decode_args, k_scale_ptr) % 8, size_t(0));
    CHECK_EQ(offsetof(pa_decode_args, v_scale_ptr),
             offsetof(pa_decode_args, k_scale_ptr) + 8);
    CHECK_EQ(offsetof(pa_decode_args, sinks),
             offsetof(pa_decode_args, v_scale_ptr) + 8);
    CHECK_EQ(offsetof(pa_decode_args, query_start_loc),
             offsetof(pa_decode_args, sinks) + 8);
    CHECK_EQ(offsetof(pa_decode_args, max_query_len),
             offsetof(pa_decode_args, query_start_loc) + 8);
    CHECK_EQ(sizeof(pa_decode_args),
             offsetof(pa_decode_args, max_query_len) + 8);
    CHECK_EQ(int(PA_KV_CACHE_AUTO), 0);
    CHECK_EQ(int(PA_KV_CACHE_FP8_E4M3), 1);
    CHECK_EQ(int(PA_KV_CACHE_FP8_E5M2), 2);
  });

  // pa_plan's cluster_size is appended after partition_split (the Python
  // mirror, runtime/python/paged_attn/_capi.py, lists it last).
  run("abi_plan_cluster_size_appended", [] {
    CHECK_EQ(offsetof(pa_plan, partition_split),
             offsetof(pa_plan, resident_programs) + 4);
    CHECK_EQ(offsetof(pa_plan, cluster_size),
             offsetof(pa_plan, partition_split) + 4);
    CHECK_EQ(sizeof(pa_plan), offsetof(pa_plan, cluster_size) + 4);
    CHECK_EQ(sizeof(pa_plan), size_t(200));
  });
}

/// pa_workspace_bytes, and its zero for invalid sizes.
void workspaceTests() {
  run("workspace_bytes", [] {
    // 2 seqs x 4 heads x ceil(1000/512) = 2 partitions = 16 rows:
    // 16 * (4 + 4) bytes of statistics + 16 * 128 * sizeof(tmp).
    CHECK_EQ(pa_workspace_bytes(2, 4, 128, 1000, 512, PA_F32),
             size_t(16 * 8 + 16 * 128 * 4));
    CHECK_EQ(pa_workspace_bytes(2, 4, 128, 1000, 512, PA_F16),
             size_t(16 * 8 + 16 * 128 * 2));
    CHECK_EQ(pa_workspace_bytes(2, 4, 128, 1024, 512, PA_BF16),
             size_t(16 * 8 + 16 * 128 * 2));
    CHECK_EQ(pa_workspace_bytes(1, 1, 64, 1, 512, PA_F32), size_t(8 + 256));
    CHECK_EQ(pa_workspace_bytes(256, 64, 256, 131072, 512, PA_F32),
             size_t(256) * 64 * 256 * (8 + 256 * 4));
    CHECK_EQ(pa_workspace_bytes(0, 4, 128, 1000, 512, PA_F32), size_t(0));
    CHECK_EQ(pa_workspace_bytes(2, 4, 128, 0, 512, PA_F32), size_t(0));
    CHECK_EQ(pa_workspace_bytes(2, 4, 128, 1000, 0, PA_F32), size_t(0));
    CHECK_EQ(pa_workspace_bytes(2, 4, -128, 1000, 512, PA_F32), size_t(0));
    CHECK_EQ(pa_workspace_bytes(2, 4, 128, 1000, 512, pa_dtype(9)), size_t(0));
  });
}

} // namespace

void marshalTests() {
  kernelParamTests();
  fp8ParamTests();
  clusterParamTests();
  decodeArgsAbiTests();
  workspaceTests();
}

} // namespace pa_test
