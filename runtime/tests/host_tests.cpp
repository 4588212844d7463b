//===- host_tests.cpp - host-only tests of the paged_attn runtime ---------===//
//
// Runs without a GPU or a driver: manifest parsing (a valid bundle and one
// broken copy per error), grid expressions, variant selection (exact keys,
// GQA tiles), every argument check with its message, the partition rule in
// adaptive and fixed-grid mode, the one-pass choice, parameter marshalling,
// pa_workspace_bytes, and the public entries that fail before the driver.
// The public entries run on host-only contexts (src/internal.h). The groups
// live in host_tests_*.cpp; this file has the status, driver and loading
// tests and main().
//
// Prints "PASS name (N checks)" or "FAIL name: why" per case, then the
// assertions evaluated and "N passed, M failed";
// exits non-zero on any failure. lit runs it: test/Runtime/host-tests.test.
//
//===----------------------------------------------------------------------===//

#include "host_test_support.h"

#include <unistd.h>

namespace pa_test {
namespace {

CUresult fakeErrorName(CUresult result, const char **name) {
  *name = result == CUDA_ERROR_INVALID_PTX ? "CUDA_ERROR_INVALID_PTX" : nullptr;
  return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult fakeErrorString(CUresult, const char **text) {
  *text = "a PTX JIT compilation failed";
  return CUDA_SUCCESS;
}
CUresult failingCall() { return CUDA_ERROR_INVALID_PTX; }
CUresult succeedingCall() { return CUDA_SUCCESS; }

pa_status callThroughMacro(const DriverApi &api, bool fails) {
  PA_CUDA_RETURN_IF_ERROR(api, fails ? failingCall() : succeedingCall(),
                          "loading bundle '%s'", "k");
  return makeStatus(PA_ERROR_IO, "reached the end");
}

void statusAndDriverTests() {
  run("status_cuda_macro_names_the_error", [] {
    DriverApi api;
    api.cuGetErrorName = fakeErrorName;
    api.cuGetErrorString = fakeErrorString;
    pa_status st = callThroughMacro(api, true);
    CHECK_EQ(int(st.code), int(PA_ERROR_CUDA));
    CHECK_EQ(std::string(st.driver_error),
             std::string("CUDA_ERROR_INVALID_PTX"));
    CHECK_EQ(std::string(st.message),
             std::string("loading bundle 'k': CUDA_ERROR_INVALID_PTX: a PTX "
                         "JIT compilation failed"));
    CHECK_STATUS(callThroughMacro(api, false), PA_ERROR_IO, "reached the end");
    // A CUresult the driver cannot name still yields a name. (1000 is no
    // enumerator but inside CUresult's range, 0..1023: a value past it is
    // undefined in C++, which UBSan reports.)
    st = cudaStatus(api, CUresult(1000), "x");
    CHECK_EQ(std::string(st.driver_error), std::string("CUresult 1000"));
  });

  run("status_ok_is_empty", [] {
    pa_status st = okStatus();
    CHECK_EQ(int(st.code), int(PA_OK));
    CHECK_EQ(st.driver_error[0], '\0');
    CHECK_EQ(st.message[0], '\0');
    st = makeStatus(PA_ERROR_BUNDLE, "%s", std::string(5000, 'x').c_str());
    CHECK_EQ(std::strlen(st.message), sizeof(st.message) - 1); // truncated
  });

  run("driver_missing_library", [] {
    DriverApi api;
    CHECK_STATUS(loadDriver(api, "libpa-no-such-driver.so.1"), PA_ERROR_CUDA,
                 "CUDA driver (libpa-no-such-driver.so.1) not found");
    CHECK(api.library == nullptr);
    CHECK(api.cuLaunchKernel == nullptr);
    CHECK_EQ(std::string(kDriverLibrary), std::string("libcuda.so.1"));
  });

  run("driver_library_without_entry_points", [] {
    // libc is a loadable library that is not the driver.
    DriverApi api;
    CHECK_STATUS(loadDriver(api, "libc.so.6"), PA_ERROR_CUDA,
                 "lacks the entry point cuInit");
    CHECK(api.library == nullptr);
  });

  run("context_create_argument_checks", [] {
    CHECK_STATUS(pa_context_create(0, nullptr), PA_ERROR_INVALID_ARGUMENT,
                 "out is null");
    pa_context *ctx = reinterpret_cast<pa_context *>(0x1);
    CHECK_STATUS(pa_context_create(-1, &ctx), PA_ERROR_INVALID_ARGUMENT,
                 "device_ordinal (-1) must be >= 0");
    CHECK(ctx == nullptr);
  });

  run("context_create_on_this_machine", [] {
    // Without a driver: the documented error. With one (a GPU machine): a
    // context, or a driver error naming the CUresult.
    pa_context *ctx = nullptr;
    pa_status st = pa_context_create(0, &ctx);
    if (st.code == PA_OK) {
      CHECK(ctx != nullptr);
      pa_context_destroy(ctx);
      return;
    }
    CHECK(ctx == nullptr);
    CHECK_EQ(int(st.code), int(PA_ERROR_CUDA));
    bool noDriver =
        std::strstr(st.message, "CUDA driver (libcuda.so.1) not found") !=
        nullptr;
    CHECK(noDriver || st.driver_error[0] != '\0');
  });

  run("context_entries_reject_null", [] {
    CHECK_STATUS(pa_context_load_bundle(nullptr, "x.manifest"),
                 PA_ERROR_INVALID_ARGUMENT, "ctx is null");
    CHECK_STATUS(pa_context_load_library(nullptr, "."),
                 PA_ERROR_INVALID_ARGUMENT, "ctx is null");
    HostContext h(kH200, {});
    CHECK_STATUS(pa_context_load_bundle(h.ctx, nullptr),
                 PA_ERROR_INVALID_ARGUMENT, "manifest_path is null");
    CHECK_STATUS(pa_context_load_library(h.ctx, nullptr),
                 PA_ERROR_INVALID_ARGUMENT, "dir is null");
    CHECK_EQ(pa_context_num_variants(nullptr), size_t(0));
    pa_context_destroy(nullptr);
  });
}

/// pa_context_load_bundle: one bundle, loaded or refused.
void bundleLoadingTests() {
  run("load_bundle_host_context", [] {
    std::string dir = makeDir("load");
    std::string path = writeBundle(dir, Spec());
    HostContext h(kH200, {});
    CHECK_OK(pa_context_load_bundle(h.ctx, path.c_str()));
    CHECK_EQ(pa_context_num_variants(h.ctx), size_t(1));
    CHECK_STATUS(pa_context_load_bundle(h.ctx, path.c_str()), PA_ERROR_BUNDLE,
                 "a bundle named 'f16_d128_b16_h4_sm70' is already loaded");
    CHECK_EQ(pa_context_num_variants(h.ctx), size_t(1));
    pa_decode_args a = validArgs();
    pa_plan plan;
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
  });

  run("load_bundle_missing_ptx", [] {
    std::string dir = makeDir("noptx");
    std::string path = dir + "/k.manifest";
    writeFile(path, join(manifestLines(Spec())));
    HostContext h(kH200, {});
    CHECK_STATUS(pa_context_load_bundle(h.ctx, path.c_str()), PA_ERROR_IO,
                 "cannot open PTX");
    CHECK_EQ(pa_context_num_variants(h.ctx), size_t(0));
  });

  run("load_bundle_chip_newer_than_device", [] {
    std::string dir = makeDir("new");
    Spec s;
    s.name = "f16_sm90";
    s.chip = "sm_90";
    std::string path = writeBundle(dir, s);
    HostContext h(kV100, {});
    CHECK_STATUS(pa_context_load_bundle(h.ctx, path.c_str()), PA_ERROR_BUNDLE,
                 "bundle 'f16_sm90' (" + path +
                     ") is compiled for sm_90, newer than device 0 (sm_70");
  });

  run("load_bundle_broken_manifest", [] {
    std::string dir = makeDir("broken");
    std::string path = dir + "/b.manifest";
    writeFile(path, join(replaced(manifestLines(Spec()), "warps", "warps x")));
    HostContext h(kH200, {});
    CHECK_STATUS(pa_context_load_bundle(h.ctx, path.c_str()), PA_ERROR_BUNDLE,
                 (path + ":11: bad number 'x' for warps").c_str());
  });
}

/// pa_context_load_library: bundles for newer chips skipped, wide twins
/// linked in either load order.
void libraryChipAndWideTwinTests() {
  run("load_library_skips_newer_chips", [] {
    std::string dir = makeDir("lib");
    Spec a, b, c;
    a.name = "a_sm70";
    b.name = "b_sm80";
    b.chip = "sm_80";
    b.tile = 8;
    c.name = "c_sm90";
    c.chip = "sm_90";
    writeBundle(dir, a);
    writeBundle(dir, b);
    writeBundle(dir, c);
    writeFile(dir + "/README.txt", "not a manifest\n");
    HostContext h(DeviceInfo{0, 80, 108}, {});
    pa_status st = pa_context_load_library(h.ctx, dir.c_str());
    CHECK_OK(st);
    CHECK_EQ(pa_context_num_variants(h.ctx), size_t(2));
    CHECK(std::strstr(st.message, "indexed 2 bundle(s)") != nullptr);
    CHECK(std::strstr(st.message, "skipped 1 compiled for chips newer than "
                                  "sm_80: c_sm90.manifest") != nullptr);
    CHECK_EQ(h.ctx->variants[0].name, std::string("a_sm70")); // sorted
  });

  // Loading links each bundle with its wide twin, in either load order.
  run("load_links_wide_twins", [] {
    Spec narrow, wide, w16;
    narrow.name = "b_h8";
    wide.name = "a_h8_w8"; // sorts first: loaded before its narrow bundle
    wide.warps = 8;
    w16.name = "c_h8_w16";
    w16.warps = 16;
    std::string dir = makeDir("lib_twins");
    writeBundle(dir, narrow);
    writeBundle(dir, wide);
    HostContext h(kH200, {});
    CHECK_OK(pa_context_load_library(h.ctx, dir.c_str()));
    CHECK_EQ(h.ctx->variants[0].wideTwin, -1);
    CHECK_EQ(h.ctx->variants[1].wideTwin, 0);
    // A wider one loaded later becomes the twin of both narrower ones.
    std::string more = makeDir("lib_twins_more");
    writeBundle(more, w16);
    CHECK_OK(pa_context_load_library(h.ctx, more.c_str()));
    CHECK_EQ(h.ctx->variants[0].wideTwin, 2);
    CHECK_EQ(h.ctx->variants[1].wideTwin, 2);
    // A failed load unloads what it loaded, links included.
    std::string bad = makeDir("lib_twins_bad");
    Spec w32 = w16;
    w32.name = "d_h8_w32";
    w32.warps = 32;
    writeBundle(bad, w32);
    writeFile(bad + "/e_broken.manifest", "paged_attn-bundle 1\n");
    CHECK(!isOk(pa_context_load_library(h.ctx, bad.c_str())));
    CHECK_EQ(pa_context_num_variants(h.ctx), size_t(3));
    CHECK_EQ(h.ctx->variants[1].wideTwin, 2);
    CHECK_EQ(h.ctx->index.size(), size_t(3)); // the variant index too
  });
}

/// The sm_90 `_w8` twins have a cluster kernel their 4-warp bundles lack:
/// they are twins all the same (the cluster kernel's parameters are the
/// one-pass kernel's), loaded from files, and so is a declared twin with one.
void clusterTwinLoadingTests() {
  run("load_links_cluster_twins", [] {
    std::string dir = makeDir("lib_cluster_twins");
    for (const Spec &s : clusterTwins())
      writeBundle(dir, s);
    HostContext h(kH100, {});
    CHECK_OK(pa_context_load_library(h.ctx, dir.c_str()));
    CHECK_EQ(pa_context_num_variants(h.ctx), size_t(2));
    const BundleDesc &narrow = h.ctx->variants[0], &wide = h.ctx->variants[1];
    CHECK_EQ(narrow.name, std::string("f16_d128_b16_h8_mma_sm90")); // sorted
    CHECK(!narrow.hasCluster());
    CHECK(wide.hasCluster());
    CHECK_EQ(wide.clusterSize, 4);
    CHECK_EQ(narrow.wideTwin, 1);
    CHECK_EQ(wide.wideTwin, -1);
    // A declared twin (another tile) with a cluster kernel.
    Spec declared = clusterSpec();
    declared.name = "a_h4_w8_cluster_sm90";
    declared.tile = 4;
    declared.twinOf = narrow.name;
    std::string more = makeDir("lib_cluster_declared");
    writeBundle(more, declared);
    CHECK_OK(pa_context_load_library(h.ctx, more.c_str()));
    CHECK_EQ(h.ctx->variants[2].name, declared.name);
    CHECK(h.ctx->variants[2].hasCluster());
    // The 8-warp twin stays the widest; both are linked without error.
    CHECK_EQ(h.ctx->variants[0].wideTwin, 1);
    // A twin whose one-pass kernel takes other parameters is still refused.
    Spec other = declared;
    other.name = "b_h4_w8_sinks_sm90";
    other.sinks = true;
    std::string bad = makeDir("lib_cluster_declared_bad");
    writeBundle(bad, other);
    CHECK_STATUS(pa_context_load_library(h.ctx, bad.c_str()), PA_ERROR_BUNDLE,
                 "they serve different calls");
  });
}

/// Declared twins (`wide_twin_of`): linked to the bundle they name, or
/// refused with their load.
void declaredTwinLoadingTests() {
  // A declared twin (another kernel and tile, `wide_twin_of`) links to the
  // bundle it names whichever loads first, and to no other; one that serves
  // other calls or has no more warps is refused, and the load with it.
  run("load_links_declared_twins", [] {
    Spec base, twin, sameTile;
    base.name = "b_h8_wmma";
    base.tile = 8;
    twin.name = "a_h4_w8"; // sorts first: loaded before the bundle it names
    twin.warps = 8;
    twin.twinOf = "b_h8_wmma";
    sameTile.name = "c_h4"; // twin's own kernel with 4 warps: not linked
    std::string dir = makeDir("lib_declared");
    writeBundle(dir, base);
    writeBundle(dir, twin);
    writeBundle(dir, sameTile);
    HostContext h(kH200, {});
    CHECK_OK(pa_context_load_library(h.ctx, dir.c_str()));
    CHECK_EQ(h.ctx->variants[1].name, std::string("b_h8_wmma"));
    CHECK_EQ(h.ctx->variants[1].wideTwin, 0);
    CHECK_EQ(h.ctx->variants[0].wideTwin, -1);
    CHECK_EQ(h.ctx->variants[2].wideTwin, -1);
    // The bundle loaded first, its twin later.
    HostContext later(kH200, {});
    std::string d1 = makeDir("lib_declared_base"), d2 = makeDir("lib_declared_twin");
    writeBundle(d1, base);
    writeBundle(d2, twin);
    CHECK_OK(pa_context_load_library(later.ctx, d1.c_str()));
    CHECK_OK(pa_context_load_library(later.ctx, d2.c_str()));
    CHECK_EQ(later.ctx->variants[0].wideTwin, 1);
    // A twin of another head size, and one with no more warps: refused.
    Spec otherHead = twin, narrow = twin;
    otherHead.name = "d_h4_w8_d64";
    otherHead.head = 64;
    narrow.name = "e_h4_w4";
    narrow.warps = 4;
    for (const Spec &bad : {otherHead, narrow}) {
      std::string d3 = makeDir("lib_declared_bad_" + bad.name);
      writeBundle(d3, bad);
      pa_status st = pa_context_load_library(later.ctx, d3.c_str());
      CHECK_EQ(int(st.code), int(PA_ERROR_BUNDLE));
      CHECK(std::strstr(st.message, "declares itself the wide twin of "
                                    "'b_h8_wmma'") != nullptr);
      CHECK(std::strstr(st.message, bad.warps == 4
                                        ? "has no more warps per program"
                                        : "they serve different calls") !=
            nullptr);
      CHECK_EQ(pa_context_num_variants(later.ctx), size_t(2));
      CHECK_EQ(later.ctx->variants[0].wideTwin, 1);
      CHECK_EQ(later.ctx->index.size(), size_t(2));
    }
    // Calls plan on what stayed loaded (the variant index included): batch
    // 1, group 4, runs the twin.
    pa_decode_args a = validArgs();
    a.num_seqs = 1;
    a.max_seq_len = 512;
    a.max_num_partitions = 1;
    pa_plan p;
    CHECK_OK(pa_plan_decode_v2(later.ctx, &a, &p));
    CHECK_EQ(std::string(p.variant), std::string("a_h4_w8"));
  });
}

/// A library of fp8 bundles; a library that loads all or nothing; folders
/// that are no library.
void libraryLoadingTests() {
  run("load_library_fp8_bundles", [] {
    std::string dir = makeDir("lib_fp8");
    writeBundle(dir, Spec());
    writeBundle(dir, fp8Spec("f8E4M3FN"));
    writeBundle(dir, fp8Spec("f8E5M2", "bf16"));
    HostContext h(kH200, {});
    CHECK_OK(pa_context_load_library(h.ctx, dir.c_str()));
    CHECK_EQ(pa_context_num_variants(h.ctx), size_t(3));
    pa_decode_args a = validFp8Args();
    pa_plan plan;
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    CHECK_EQ(std::string(plan.variant),
             std::string("f16_f8E4M3FN_d128_b16_h4_sm70"));
    a.dtype = PA_BF16;
    a.kv_cache_dtype = PA_KV_CACHE_FP8_E5M2;
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    CHECK_EQ(std::string(plan.variant),
             std::string("bf16_f8E5M2_d128_b16_h4_sm70"));
    a.kv_cache_dtype = PA_KV_CACHE_FP8_E4M3;
    CHECK_STATUS(pa_plan_decode_v2(h.ctx, &a, &plan), PA_ERROR_UNSUPPORTED,
                 "dtype bf16, cache_dtype f8E4M3FN");
  });

  run("load_library_all_or_nothing", [] {
    std::string dir = makeDir("lib_broken");
    Spec a;
    a.name = "a_ok";
    writeBundle(dir, a);
    writeFile(dir + "/z_broken.manifest",
              join(replaced(manifestLines(Spec()), "dtype", "dtype fp8")));
    HostContext h(kH200, {});
    CHECK_STATUS(pa_context_load_library(h.ctx, dir.c_str()), PA_ERROR_BUNDLE,
                 "z_broken.manifest:5: unknown dtype 'fp8'");
    CHECK_EQ(pa_context_num_variants(h.ctx), size_t(0));
  });

  run("load_library_errors", [] {
    HostContext h(kV100, {});
    CHECK_STATUS(pa_context_load_library(h.ctx, (tempRoot + "/nope").c_str()),
                 PA_ERROR_IO, "cannot open kernel library folder");
    std::string empty = makeDir("empty");
    CHECK_STATUS(pa_context_load_library(h.ctx, empty.c_str()), PA_ERROR_BUNDLE,
                 "no *.manifest in");
    std::string dir = makeDir("lib_new");
    Spec s;
    s.chip = "sm_90";
    writeBundle(dir, s);
    CHECK_STATUS(pa_context_load_library(h.ctx, dir.c_str()), PA_ERROR_BUNDLE,
                 "none of the 1 bundles");
  });
}

void loadingTests() {
  bundleLoadingTests();
  libraryChipAndWideTwinTests();
  declaredTwinLoadingTests();
  clusterTwinLoadingTests();
  libraryLoadingTests();
}

void cleanup() {
  for (auto it = createdFiles.rbegin(); it != createdFiles.rend(); ++it)
    unlink(it->c_str());
  for (auto it = createdDirs.rbegin(); it != createdDirs.rend(); ++it)
    rmdir(it->c_str());
  rmdir(tempRoot.c_str());
}

} // namespace
} // namespace pa_test

int main() {
  using namespace pa_test;
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/pa_host_tests.XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data())) {
    std::perror("mkdtemp");
    return 2;
  }
  tempRoot = buffer.data();

  manifestTests();
  gridExprTests();
  variantTests();
  argumentTests();
  planTests();
  marshalTests();
  statusAndDriverTests();
  loadingTests();
  lazyLoadingTests();
  hostEntryTests();
  queryTokenTests();
  boundsTests();
  tmpDtypeTests();

  cleanup();
  std::printf("%ld checks evaluated\n", harness.checks);
  std::printf("%d passed, %d failed\n", harness.passed, harness.failed);
  return harness.failed ? 1 : 0;
}
