//===- host_tests_hostentry.cpp - pa_host_decode_v2 ----------------------===//
//
// Host tests of the flat entry compiled host code calls: each parameter
// lands in its pa_decode_args field (written out by hand here, so a table
// row that moved or a field filled from the wrong parameter fails), the
// call reaches the checks and the launch, and a status that already holds
// an error stops the call.
//
//===----------------------------------------------------------------------===//

#include "host_entry.h"
#include "host_test_support.h"

namespace pa_test {

namespace {

void *addr(uintptr_t a) { return reinterpret_cast<void *>(a); }

/// pa_host_decode_v2 with validArgs()'s values; `numHeads` varies.
int32_t callValid(pa_context *ctx, pa_status *status, int32_t numHeads = 32) {
  pa_decode_args a = validArgs();
  return pa_host_decode_v2(
      ctx, nullptr, a.dtype, a.tmp_dtype, a.num_seqs, numHeads, a.num_kv_heads,
      a.head_size, a.block_size, a.num_blocks, a.max_blocks_per_seq,
      a.max_num_partitions, a.partition_size, a.max_seq_len, a.scale,
      addr(a.query), addr(a.key_cache), addr(a.value_cache),
      addr(a.block_tables), addr(a.seq_lens), addr(a.output),
      addr(a.exp_sums), addr(a.max_logits), addr(a.tmp_output), nullptr, 0,
      0.0f, PA_KV_CACHE_AUTO, 0.0f, 0.0f, nullptr, nullptr, /*sinks=*/nullptr,
      /*query_start_loc=*/nullptr, /*max_query_len=*/0, status);
}

/// Each parameter of the flat entry lands in its pa_decode_args field.
void hostEntryArgsTests() {
  run("host_entry_fills_args", [] {
    // A distinct value per parameter, in the prototype's order.
    pa_decode_args a = pa::hostDecodeArgs(
        /*dtype=*/PA_BF16, /*tmp_dtype=*/PA_F32, /*num_seqs=*/3,
        /*num_heads=*/4, /*num_kv_heads=*/5, /*head_size=*/6,
        /*block_size=*/7, /*num_blocks=*/8, /*max_blocks_per_seq=*/9,
        /*max_num_partitions=*/10, /*partition_size=*/11,
        /*max_seq_len=*/12, /*scale=*/13.5f, addr(0x1000), addr(0x2000),
        addr(0x3000), addr(0x4000), addr(0x5000), addr(0x6000), addr(0x7000),
        addr(0x8000), addr(0x9000), /*alibi_slopes=*/addr(0xa000),
        /*sliding_window=*/14, /*logits_soft_cap=*/15.5f,
        /*kv_cache_dtype=*/PA_KV_CACHE_FP8_E5M2, /*k_scale=*/16.5f,
        /*v_scale=*/17.5f, addr(0xb000), addr(0xc000), /*sinks=*/addr(0xd000),
        /*query_start_loc=*/addr(0xe000), /*max_query_len=*/18);
    CHECK_EQ(int(a.dtype), int(PA_BF16));
    CHECK_EQ(int(a.tmp_dtype), int(PA_F32));
    CHECK_EQ(a.num_seqs, 3);
    CHECK_EQ(a.num_heads, 4);
    CHECK_EQ(a.num_kv_heads, 5);
    CHECK_EQ(a.head_size, 6);
    CHECK_EQ(a.block_size, 7);
    CHECK_EQ(a.num_blocks, 8);
    CHECK_EQ(a.max_blocks_per_seq, 9);
    CHECK_EQ(a.max_num_partitions, 10);
    CHECK_EQ(a.partition_size, 11);
    CHECK_EQ(a.max_seq_len, 12);
    CHECK_EQ(a.scale, 13.5f);
    CHECK_EQ(a.query, CUdeviceptr(0x1000));
    CHECK_EQ(a.key_cache, CUdeviceptr(0x2000));
    CHECK_EQ(a.value_cache, CUdeviceptr(0x3000));
    CHECK_EQ(a.block_tables, CUdeviceptr(0x4000));
    CHECK_EQ(a.seq_lens, CUdeviceptr(0x5000));
    CHECK_EQ(a.output, CUdeviceptr(0x6000));
    CHECK_EQ(a.exp_sums, CUdeviceptr(0x7000));
    CHECK_EQ(a.max_logits, CUdeviceptr(0x8000));
    CHECK_EQ(a.tmp_output, CUdeviceptr(0x9000));
    CHECK_EQ(a.alibi_slopes, CUdeviceptr(0xa000));
    CHECK_EQ(a.sliding_window, 14);
    CHECK_EQ(a.logits_soft_cap, 15.5f);
    CHECK_EQ(int(a.kv_cache_dtype), int(PA_KV_CACHE_FP8_E5M2));
    CHECK_EQ(a.k_scale, 16.5f);
    CHECK_EQ(a.v_scale, 17.5f);
    CHECK_EQ(a.k_scale_ptr, CUdeviceptr(0xb000));
    CHECK_EQ(a.v_scale_ptr, CUdeviceptr(0xc000));
    CHECK_EQ(a.sinks, CUdeviceptr(0xd000));
    CHECK_EQ(a.query_start_loc, CUdeviceptr(0xe000));
    CHECK_EQ(a.max_query_len, 18);
  });
}

/// Calls through the flat entries: the launch, a failed check, a status
/// that already holds an error, pa_host_alloc and pa_host_free.
void hostEntryCallTests() {
  run("host_entry_reaches_launch", [] {
    // Every check passes; the host-only context then refuses to launch,
    // and the status says so.
    HostContext h(kH200);
    pa_status st;
    std::memset(&st, 0, sizeof(st));
    CHECK_EQ(callValid(h.ctx, &st), int32_t(PA_ERROR_CUDA));
    CHECK_EQ(int(st.code), int(PA_ERROR_CUDA));
    CHECK(std::strstr(st.message, "host-only context") != nullptr);
  });

  run("host_entry_reports_checks", [] {
    HostContext h(kH200);
    pa_status st;
    std::memset(&st, 0, sizeof(st));
    CHECK_EQ(callValid(h.ctx, &st, /*numHeads=*/30),
             int32_t(PA_ERROR_INVALID_ARGUMENT));
    CHECK(std::strstr(st.message, "num_heads (30) must be a multiple of "
                                  "num_kv_heads (8)") != nullptr);
    // Without a status the code alone comes back.
    CHECK_EQ(callValid(h.ctx, nullptr, /*numHeads=*/30),
             int32_t(PA_ERROR_INVALID_ARGUMENT));
    CHECK_EQ(callValid(nullptr, nullptr), int32_t(PA_ERROR_INVALID_ARGUMENT));
  });

  run("host_entry_first_error_stays", [] {
    // A status holding an error: the call does nothing (not even its own
    // checks) and returns that code; the message is the first one.
    HostContext h(kH200);
    pa_status st;
    std::memset(&st, 0, sizeof(st));
    st.code = PA_ERROR_UNSUPPORTED;
    std::strcpy(st.message, "the first error");
    CHECK_EQ(callValid(h.ctx, &st, /*numHeads=*/30),
             int32_t(PA_ERROR_UNSUPPORTED));
    CHECK_EQ(int(st.code), int(PA_ERROR_UNSUPPORTED));
    CHECK_EQ(std::string(st.message), std::string("the first error"));
  });

  run("host_alloc_needs_a_driver", [] {
    // A host-only context cannot allocate: null, and the status says why;
    // a status holding an error stops the allocation; freeing null is a
    // no-op.
    HostContext h(kH200);
    pa_status st;
    std::memset(&st, 0, sizeof(st));
    CHECK(pa_host_alloc(h.ctx, nullptr, 1024, &st) == nullptr);
    CHECK_EQ(int(st.code), int(PA_ERROR_CUDA));
    CHECK(std::strstr(st.message, "pa_host_alloc: this context has no CUDA "
                                  "driver") != nullptr);
    std::memset(&st, 0, sizeof(st));
    CHECK(pa_host_alloc(nullptr, nullptr, 1024, &st) == nullptr);
    CHECK_EQ(int(st.code), int(PA_ERROR_INVALID_ARGUMENT));
    std::strcpy(st.message, "the first error");
    CHECK(pa_host_alloc(h.ctx, nullptr, 1024, &st) == nullptr);
    CHECK_EQ(std::string(st.message), std::string("the first error"));
    CHECK_EQ(pa_host_free(h.ctx, nullptr, nullptr, &st), int32_t(PA_OK));
    CHECK_EQ(pa_host_free(h.ctx, nullptr, &st, nullptr),
             int32_t(PA_ERROR_CUDA));
  });
}

} // namespace

void hostEntryTests() {
  hostEntryArgsTests();
  hostEntryCallTests();
}

} // namespace pa_test
