//===- host_tests_bounds.cpp - bad block tables: ABI and error word -------===//
//
// The kernels check every block-table entry against num_blocks and record
// a bad one (or a bad seq_len) in the context's error word (docs/runtime.md,
// "Bad block tables"). On the host: num_blocks and the context's error word
// are marshalled where a bundle takes them (and the reducer gets
// block_tables and max_blocks_per_seq); pa_context_last_error reads the word
// through the driver, clears it only when set, reports it with its message,
// and is a no-op on a host-only context. A fake driver stands in for the GPU.
//
//===----------------------------------------------------------------------===//

#include "host_test_support.h"

#include <dlfcn.h>

namespace pa_test {
namespace {

Spec boundsSpec() {
  Spec s;
  s.bounds = true;
  return s;
}

/// The fake device's error word and what the fake driver saw.
struct FakeWord {
  int32_t words[kErrorWords] = {0, 0, 0, 0};
  CUdeviceptr address = 0xE000;
  int copies = 0, syncs = 0, clears = 0, frees = 0;
  CUstream lastStream = nullptr;
  CUresult syncResult = CUDA_SUCCESS;
};
FakeWord word;

CUresult fakeCopy(void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
  ++word.copies;
  word.lastStream = s;
  if (src != word.address || bytes != sizeof(word.words))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, word.words, bytes);
  return CUDA_SUCCESS;
}
CUresult fakeSync(CUstream) {
  ++word.syncs;
  return word.syncResult;
}
CUresult fakeMemset(CUdeviceptr dst, unsigned value, size_t n, CUstream) {
  ++word.clears;
  if (dst != word.address || n != kErrorWords)
    return CUDA_ERROR_INVALID_VALUE;
  for (int32_t &w : word.words)
    w = int32_t(value);
  return CUDA_SUCCESS;
}
CUresult fakeFree(CUdeviceptr p) {
  word.frees += p == word.address;
  return CUDA_SUCCESS;
}
CUresult fakePush(CUcontext) { return CUDA_SUCCESS; }
CUresult fakePop(CUcontext *c) {
  *c = nullptr;
  return CUDA_SUCCESS;
}
CUresult fakeRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult fakeErrorName(CUresult, const char **name) {
  *name = "CUDA_ERROR_LAUNCH_FAILED";
  return CUDA_SUCCESS;
}
CUresult fakeErrorString(CUresult, const char **text) {
  *text = "fake driver error";
  return CUDA_SUCCESS;
}

/// A context whose error word lives in `word` (reset).
struct FakeErrorContext {
  pa_context *ctx;
  FakeErrorContext() {
    word = FakeWord();
    ctx = makeHostContext(kH200);
    ctx->primary = reinterpret_cast<CUcontext>(uintptr_t(0x3000));
    ctx->errorWord = word.address;
    DriverApi &api = ctx->api;
    api.library = dlopen(nullptr, RTLD_NOW); // closed by destroy; harmless
    api.cuMemcpyDtoHAsync = fakeCopy;
    api.cuStreamSynchronize = fakeSync;
    api.cuMemsetD32Async = fakeMemset;
    api.cuMemFree = fakeFree;
    api.cuCtxPushCurrent = fakePush;
    api.cuCtxPopCurrent = fakePop;
    api.cuDevicePrimaryCtxRelease = fakeRelease;
    api.cuGetErrorName = fakeErrorName;
    api.cuGetErrorString = fakeErrorString;
  }
  ~FakeErrorContext() { pa_context_destroy(ctx); }
};

/// The bounds parameters, marshalled where a bundle takes them.
void boundsMarshalTests() {
  // num_blocks ends the partition kernel's parameters, num_blocks and the
  // error word the one-pass and reduce kernels' (they record); the reducer
  // also takes block_tables and max_blocks_per_seq.
  run("bounds_marshal", [] {
    BundleDesc d = descFor(boundsSpec());
    pa_decode_args a = validArgs();
    a.num_blocks = 12345;
    DecodePlan plan;
    CHECK_OK(planDecode(kH200, {d}, a, true, plan));
    KernelArgs k;
    const CUdeviceptr errorWord = 0xE000;
    marshalParams(d.kernel(Role::Partition), a, plan, k, errorWord);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[k.count - 1]), 12345);
    for (Role role : {Role::OnePass, Role::Reduce}) {
      marshalParams(d.kernel(role), a, plan, k, errorWord);
      CHECK(k.count >= 2);
      CHECK_EQ(*static_cast<int32_t *>(k.pointers[k.count - 2]), 12345);
      CHECK_EQ(k.values[k.count - 1].ptr, errorWord);
      CHECK(k.pointers[k.count - 1] == &k.values[k.count - 1]);
    }
    CHECK_EQ(k.values[0].ptr, a.block_tables);
    CHECK_EQ(k.values[5].ptr, a.seq_lens);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[6]), a.max_blocks_per_seq);
    CHECK_EQ(*static_cast<int32_t *>(k.pointers[7]), a.num_heads);
    // The names parse, and the error word is a pointer (8 bytes).
    CHECK_EQ(std::string(paramName(ParamId::ErrorWord)), "error_word");
    CHECK_EQ(std::string(paramName(ParamId::NumBlocks)), "num_blocks");
    CHECK(isPointerParam(ParamId::ErrorWord));
    CHECK(!isPointerParam(ParamId::NumBlocks));
    // A bundle without them (older exports) still serves the call.
    CHECK_OK(planDecode(kH200, {descFor(Spec())}, a, true, plan));
  });
}

/// pa_context_last_error with nothing recorded: a host-only context, a
/// clean word.
void lastErrorCleanTests() {
  // A host-only context launched nothing: nothing to report.
  run("bounds_last_error_host_only", [] {
    HostContext h(kH200, {boundsSpec()});
    pa_kernel_error e;
    std::memset(&e, 0x5a, sizeof(e));
    CHECK_OK(pa_context_last_error(h.ctx, nullptr, &e));
    CHECK_EQ(e.count, 0);
    CHECK_EQ(e.seq, 0);
    CHECK_EQ(e.index, 0);
    CHECK_EQ(e.value, 0);
    CHECK_OK(pa_context_last_error(h.ctx, nullptr, nullptr));
    CHECK_STATUS(pa_context_last_error(nullptr, nullptr, &e),
                 PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  });

  // Nothing recorded: one copy on the caller's stream, one synchronisation,
  // no clear.
  run("bounds_last_error_clean", [] {
    FakeErrorContext f;
    CUstream stream = reinterpret_cast<CUstream>(uintptr_t(0x77));
    pa_kernel_error e;
    CHECK_OK(pa_context_last_error(f.ctx, stream, &e));
    CHECK_EQ(e.count, 0);
    CHECK_EQ(word.copies, 1);
    CHECK_EQ(word.syncs, 1);
    CHECK_EQ(word.clears, 0);
    CHECK(word.lastStream == stream);
  });
}

/// pa_context_last_error reporting a bad entry, a bad seq_len, a driver
/// failure.
void lastErrorReportTests() {
  // A bad entry: reported with its message, then cleared; the next read
  // is clean.
  run("bounds_last_error_entry", [] {
    FakeErrorContext f;
    word.words[0] = 3;
    word.words[1] = 5;
    word.words[2] = 17;
    word.words[3] = 4096;
    pa_kernel_error e;
    CHECK_STATUS(pa_context_last_error(f.ctx, nullptr, &e), PA_ERROR_BAD_INPUT,
                 "block_tables[5][17] = 4096 is outside [0, num_blocks)");
    CHECK_EQ(e.count, 3);
    CHECK_EQ(e.seq, 5);
    CHECK_EQ(e.index, 17);
    CHECK_EQ(e.value, 4096);
    CHECK_EQ(word.clears, 1);
    CHECK_EQ(word.words[0], 0);
    CHECK_STATUS(pa_context_last_error(f.ctx, nullptr, &e), PA_OK, "");
    CHECK_EQ(e.count, 0);
    // The count is in the message when several programs found one.
    word.words[0] = 3;
    CHECK_STATUS(pa_context_last_error(f.ctx, nullptr, nullptr),
                 PA_ERROR_BAD_INPUT, "the first of 3 programs");
    // One program: no count.
    word.words[0] = 1;
    word.words[3] = -7;
    pa_status st = pa_context_last_error(f.ctx, nullptr, nullptr);
    CHECK_EQ(int(st.code), int(PA_ERROR_BAD_INPUT));
    CHECK(std::strstr(st.message, "= -7 is outside") != nullptr);
    CHECK(std::strstr(st.message, "programs") == nullptr);
  });

  // A bad seq_len: index -1.
  run("bounds_last_error_seq_len", [] {
    FakeErrorContext f;
    word.words[0] = 1;
    word.words[1] = 2;
    word.words[2] = -1;
    word.words[3] = -5;
    pa_kernel_error e;
    CHECK_STATUS(pa_context_last_error(f.ctx, nullptr, &e), PA_ERROR_BAD_INPUT,
                 "seq_lens[2] = -5 is outside [0, max_blocks_per_seq * "
                 "block_size]");
    CHECK_EQ(e.index, -1);
    CHECK_EQ(e.value, -5);
  });

  // A driver failure is a CUDA error (the word is neither read nor
  // cleared), and the context frees its word on destruction.
  run("bounds_last_error_driver_failure", [] {
    {
      FakeErrorContext f;
      word.words[0] = 1;
      word.syncResult = CUDA_ERROR_LAUNCH_FAILED;
      pa_kernel_error e;
      CHECK_STATUS(pa_context_last_error(f.ctx, nullptr, &e), PA_ERROR_CUDA,
                   "cuStreamSynchronize");
      CHECK_EQ(e.count, 0);
      CHECK_EQ(word.clears, 0);
    }
    CHECK_EQ(word.frees, 1);
  });
}

} // namespace

void boundsTests() {
  boundsMarshalTests();
  lastErrorCleanTests();
  lastErrorReportTests();
}

} // namespace pa_test
