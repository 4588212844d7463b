//===- host_tests_lazy.cpp - lazy loading, SASS and preload, no GPU -------===//
//
// A context whose driver table is a fake (FakeDriver): module loads, kernel
// lookups, occupancy, capture status and launches are counted instead of
// reaching a GPU. What these tests pin down: loading a library indexes and
// loads no module; the first call of a key loads its module once, also when
// threads race; SASS is loaded on its exact chip, a corrupt one falls back
// to the PTX; nothing loads while the stream captures a CUDA graph; preload
// loads exactly the modules a key's calls use.
//
//===----------------------------------------------------------------------===//

#include "host_test_support.h"

#include <atomic>
#include <chrono>
#include <dlfcn.h>
#include <thread>

namespace pa_test {
namespace {

/// What the fake driver saw, and the capture status it reports.
struct FakeDriver {
  std::atomic<int> loads{0};       // cuModuleLoadDataEx calls
  std::atomic<int> sassLoads{0};   // of those, with an ELF image
  std::atomic<int> unloads{0};
  std::atomic<int> launches{0};
  std::atomic<bool> capturing{false};
  std::atomic<int> inLoad{0}, maxInLoad{0}; // concurrent loads
};
FakeDriver fake;

bool isElf(const void *image) {
  return std::memcmp(image, "\x7f" "ELF", 4) == 0;
}

CUresult fakeLoad(CUmodule *module, const void *image, unsigned, CUjit_option *,
                  void **) {
  int now = ++fake.inLoad;
  for (int seen = fake.maxInLoad; now > seen &&
                                  !fake.maxInLoad.compare_exchange_weak(seen, now);)
    ;
  std::this_thread::sleep_for(std::chrono::milliseconds(5)); // widen races
  --fake.inLoad;
  const char *text = static_cast<const char *>(image);
  if (std::strstr(text + 4, "CORRUPT"))
    return CUDA_ERROR_INVALID_IMAGE;
  ++fake.loads;
  fake.sassLoads += isElf(image);
  *module = reinterpret_cast<CUmodule>(uintptr_t(0x1000 + fake.loads));
  return CUDA_SUCCESS;
}
CUresult fakeGetFunction(CUfunction *f, CUmodule, const char *) {
  *f = reinterpret_cast<CUfunction>(uintptr_t(0x2000));
  return CUDA_SUCCESS;
}
CUresult fakeUnload(CUmodule) {
  ++fake.unloads;
  return CUDA_SUCCESS;
}
CUresult fakeAttribute(int *value, CUfunction_attribute, CUfunction) {
  *value = 1024;
  return CUDA_SUCCESS;
}
CUresult fakeOccupancy(int *blocks, CUfunction, int, size_t) {
  *blocks = 3;
  return CUDA_SUCCESS;
}
CUresult fakeIsCapturing(CUstream, CUstreamCaptureStatus *status) {
  *status = fake.capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                           : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult fakeLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned,
                    unsigned, unsigned, unsigned, CUstream, void **, void **) {
  ++fake.launches;
  return CUDA_SUCCESS;
}
CUresult fakePush(CUcontext) { return CUDA_SUCCESS; }
CUresult fakePop(CUcontext *c) {
  *c = nullptr;
  return CUDA_SUCCESS;
}
CUresult fakeRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult fakeErrorName(CUresult r, const char **name) {
  *name = r == CUDA_ERROR_INVALID_IMAGE ? "CUDA_ERROR_INVALID_IMAGE"
                                        : "CUDA_ERROR_OTHER";
  return CUDA_SUCCESS;
}
CUresult fakeErrorString(CUresult, const char **text) {
  *text = "fake driver error";
  return CUDA_SUCCESS;
}

/// A context on `device` whose driver is the fake (counters reset).
struct FakeContext {
  pa_context *ctx;
  explicit FakeContext(const DeviceInfo &device) {
    fake.loads = fake.sassLoads = fake.unloads = fake.launches = 0;
    fake.maxInLoad = 0;
    fake.capturing = false;
    ctx = makeHostContext(device);
    ctx->primary = reinterpret_cast<CUcontext>(uintptr_t(0x3000));
    DriverApi &api = ctx->api;
    api.library = dlopen(nullptr, RTLD_NOW); // closed by destroy; harmless
    api.cuModuleLoadDataEx = fakeLoad;
    api.cuModuleGetFunction = fakeGetFunction;
    api.cuModuleUnload = fakeUnload;
    api.cuFuncGetAttribute = fakeAttribute;
    api.cuOccupancyMaxActiveBlocksPerMultiprocessor = fakeOccupancy;
    api.cuStreamIsCapturing = fakeIsCapturing;
    api.cuLaunchKernel = fakeLaunch;
    api.cuCtxPushCurrent = fakePush;
    api.cuCtxPopCurrent = fakePop;
    api.cuDevicePrimaryCtxRelease = fakeRelease;
    api.cuGetErrorName = fakeErrorName;
    api.cuGetErrorString = fakeErrorString;
  }
  ~FakeContext() { pa_context_destroy(ctx); }
  pa_library_stats stats() const {
    pa_library_stats s;
    pa_status st = pa_context_library_stats(ctx, &s);
    if (st.code != PA_OK)
      s = pa_library_stats{~size_t(0), 0, 0, 0, 0};
    return s;
  }
};

/// A bundle of `chip` whose manifest names a SASS file; `cubin` is written
/// as that file unless empty.
std::string writeSassBundle(const std::string &dir, Spec s,
                            const std::string &cubin) {
  std::vector<std::string> lines = manifestLines(s);
  lines.push_back("sass " + s.chip + " " + s.name + ".cubin");
  std::string manifest = dir + "/" + s.name + ".manifest";
  writeFile(manifest, join(lines));
  writeFile(dir + "/" + s.name + ".ptx", ptxFor(s.chip));
  if (!cubin.empty())
    writeFile(dir + "/" + s.name + ".cubin", cubin);
  return manifest;
}

Spec chipSpec(const std::string &chip, int tile = 4) {
  Spec s = tileSpec(tile);
  s.chip = chip;
  s.name = "f16_d128_b16_h" + std::to_string(tile) + "_" + chip;
  return s;
}

const std::string kCubin = std::string("\x7f" "ELF") + " fake sm_90 cubin";

void indexAndFirstUseTests() {
  run("lazy_library_load_loads_no_module", [] {
    std::string dir = makeDir("lazy_index");
    writeBundle(dir, tileSpec(1));
    writeBundle(dir, tileSpec(4));
    writeBundle(dir, tileSpec(8));
    FakeContext f(kH200);
    pa_status st = pa_context_load_library(f.ctx, dir.c_str());
    CHECK_OK(st);
    CHECK(std::strstr(st.message, "indexed 3 bundle(s)") != nullptr);
    CHECK_EQ(fake.loads.load(), 0);
    CHECK_EQ(f.stats().bundles, size_t(3));
    CHECK_EQ(f.stats().modules_loaded, size_t(0));
  });

  run("lazy_first_call_loads_its_module_once", [] {
    std::string dir = makeDir("lazy_first");
    writeBundle(dir, tileSpec(1));
    writeBundle(dir, tileSpec(4));
    FakeContext f(kH200);
    CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
    pa_decode_args a = validArgs(); // group 4: the 4-head tile
    CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr));
    CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr));
    CHECK_EQ(fake.loads.load(), 1);
    CHECK_EQ(f.stats().modules_loaded, size_t(1));
    CHECK_EQ(f.stats().loaded_ptx, size_t(1)); // sm_70 bundle, sm_90 device
    CHECK(fake.launches.load() >= 2);
    pa_plan plan;
    CHECK_OK(pa_plan_decode_v2(f.ctx, &a, &plan));
    CHECK_EQ(std::string(plan.variant), std::string("f16_d128_b16_h4_sm70"));
    CHECK_EQ(plan.resident_programs, 3); // the module's occupancy
    CHECK_EQ(fake.loads.load(), 1);
  });

  run("lazy_racing_first_calls_load_once", [] {
    std::string dir = makeDir("lazy_race");
    writeBundle(dir, tileSpec(4));
    FakeContext f(kH200);
    CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t)
      threads.emplace_back([&] {
        pa_decode_args a = validArgs();
        failures += pa_decode_v2(f.ctx, &a, nullptr).code != PA_OK;
      });
    for (std::thread &t : threads)
      t.join();
    CHECK_EQ(failures.load(), 0);
    CHECK_EQ(fake.loads.load(), 1);
    CHECK_EQ(fake.maxInLoad.load(), 1);
  });

  run("lazy_ptx_checked_on_first_use", [] {
    std::string dir = makeDir("lazy_mismatch");
    Spec s = tileSpec(4);
    std::string path = writeBundle(dir, s);
    writeFile(dir + "/" + s.name + ".ptx", ptxFor("sm_80"));
    FakeContext f(kH200);
    CHECK_OK(pa_context_load_bundle(f.ctx, path.c_str()));
    pa_decode_args a = validArgs();
    CHECK_STATUS(pa_decode_v2(f.ctx, &a, nullptr), PA_ERROR_BUNDLE,
                 "targets sm_80 but the manifest says chip sm_70");
    CHECK_EQ(f.stats().modules_loaded, size_t(0));
    writeFile(dir + "/" + s.name + ".ptx", "not ptx at all\n");
    CHECK_STATUS(pa_decode_v2(f.ctx, &a, nullptr), PA_ERROR_BUNDLE,
                 "has no .target directive");
    // A PTX path naming a device is refused, not read forever.
    std::vector<std::string> lines = manifestLines(s);
    lines[lineOf(lines, "ptx ") - 1] = "ptx /dev/zero";
    lines[lineOf(lines, "name ") - 1] = "name dev_zero";
    std::string zero = dir + "/zero.manifest";
    writeFile(zero, join(lines));
    FakeContext g(kH200);
    CHECK_OK(pa_context_load_bundle(g.ctx, zero.c_str()));
    CHECK_STATUS(pa_decode_v2(g.ctx, &a, nullptr), PA_ERROR_IO,
                 "PTX '/dev/zero' is not a regular file");
    writeFile(dir + "/" + s.name + ".ptx", ptxFor("sm_70")); // repaired
    CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr));
    CHECK_EQ(fake.loads.load(), 1);
  });
}

void sassTests() {
  run("sass_loaded_on_its_exact_chip", [] {
    std::string dir = makeDir("sass_exact");
    writeSassBundle(dir, chipSpec("sm_90"), kCubin);
    FakeContext f(kH200);
    CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
    pa_decode_args a = validArgs();
    CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr));
    CHECK_EQ(fake.sassLoads.load(), 1);
    CHECK_EQ(f.stats().loaded_sass, size_t(1));
    CHECK_EQ(f.stats().sass_fallbacks, size_t(0));
  });

  run("sass_of_another_major_is_not_loaded", [] {
    std::string dir = makeDir("sass_other");
    writeSassBundle(dir, chipSpec("sm_80"), kCubin);
    FakeContext f(kH200); // sm_90: the sm_80 bundle runs from its PTX
    CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
    pa_decode_args a = validArgs();
    CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr));
    CHECK_EQ(fake.sassLoads.load(), 0);
    CHECK_EQ(f.stats().loaded_ptx, size_t(1));
  });

  // CUDA runs a cubin for sm_XY on desktop chips sm_XZ, Z >= Y: an A10
  // (sm_86) or an L4 (sm_89) loads the sm_80 machine code, a T4 (sm_75)
  // the sm_70 one, with no JIT; a Tegra chip (sm_87, sm_72) the PTX.
  run("sass_runs_on_later_minors_of_its_major", [] {
    const struct {
      const char *chip;
      int device;
      bool sass;
    } cases[] = {{"sm_80", 86, true},  {"sm_80", 89, true},
                 {"sm_70", 75, true},  {"sm_80", 87, false},
                 {"sm_70", 72, false}, {"sm_90", 100, false}};
    for (const auto &c : cases) {
      std::string dir = makeDir(std::string("sass_minor_") + c.chip + "_" +
                                std::to_string(c.device));
      writeSassBundle(dir, chipSpec(c.chip), kCubin);
      FakeContext f(DeviceInfo{0, c.device, 80});
      CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
      pa_decode_args a = validArgs();
      CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr));
      CHECK_EQ(fake.sassLoads.load(), c.sass ? 1 : 0);
      CHECK_EQ(f.stats().loaded_sass, size_t(c.sass ? 1 : 0));
      CHECK_EQ(f.stats().loaded_ptx, size_t(c.sass ? 0 : 1));
    }
  });

  run("sass_corrupt_falls_back_to_ptx", [] {
    std::string dir = makeDir("sass_corrupt");
    writeSassBundle(dir, chipSpec("sm_90"),
                    std::string("\x7f" "ELF") + " CORRUPT");
    FakeContext f(kH200);
    CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
    pa_decode_args a = validArgs();
    CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr));
    CHECK_EQ(fake.sassLoads.load(), 0);
    CHECK_EQ(f.stats().loaded_ptx, size_t(1));
    CHECK_EQ(f.stats().sass_fallbacks, size_t(1));
  });

  run("sass_missing_refused_at_index", [] {
    std::string dir = makeDir("sass_missing");
    std::string path = writeSassBundle(dir, chipSpec("sm_90"), "");
    FakeContext f(kH200);
    CHECK_STATUS(pa_context_load_bundle(f.ctx, path.c_str()), PA_ERROR_IO,
                 "cannot open SASS");
    CHECK_EQ(pa_context_num_variants(f.ctx), size_t(0));
    // On a device where the SASS does not run, only the PTX must exist;
    // where it runs, a later minor of its major, it must.
    FakeContext older(DeviceInfo{0, 100, 132});
    CHECK_OK(pa_context_load_bundle(older.ctx, path.c_str()));
    std::string path80 = writeSassBundle(dir, chipSpec("sm_80"), "");
    FakeContext a10(DeviceInfo{0, 86, 84});
    CHECK_STATUS(pa_context_load_bundle(a10.ctx, path80.c_str()), PA_ERROR_IO,
                 "cannot open SASS");
  });

  run("sass_record_checked", [] {
    Spec s = chipSpec("sm_90");
    std::vector<std::string> lines = manifestLines(s);
    lines.push_back("sass sm_80 x.cubin");
    BundleDesc d;
    CHECK_STATUS(parseManifest(join(lines), "m/k.manifest", d),
                 PA_ERROR_BUNDLE,
                 "the SASS is for sm_80 but the bundle's chip is sm_90");
    lines.back() = "sass sm_90";
    CHECK_STATUS(parseManifest(join(lines), "m/k.manifest", d),
                 PA_ERROR_BUNDLE, "expected 'sass CHIP FILE'");
    lines.back() = "sass sm_90 k.cubin";
    lines.push_back("sass sm_90 k.cubin");
    CHECK_STATUS(parseManifest(join(lines), "m/k.manifest", d),
                 PA_ERROR_BUNDLE, "duplicate record 'sass'");
    lines.pop_back();
    CHECK_OK(parseManifest(join(lines), "m/k.manifest", d));
    CHECK_EQ(d.sassPath, std::string("m/k.cubin"));
  });
}

void captureAndPreloadTests() {
  run("capture_refuses_a_first_load", [] {
    std::string dir = makeDir("capture");
    writeBundle(dir, tileSpec(4));
    FakeContext f(kH200);
    CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
    pa_decode_args a = validArgs();
    fake.capturing = true;
    CHECK_STATUS(pa_decode_v2(f.ctx, &a, nullptr), PA_ERROR_CAPTURE,
                 "while the stream captures a CUDA graph");
    CHECK_EQ(fake.loads.load(), 0);
    CHECK_EQ(fake.launches.load(), 0);
    CHECK_OK(pa_context_preload(f.ctx, &a, 1));
    CHECK_EQ(fake.loads.load(), 1);
    CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr)); // loaded: capture is fine
    CHECK(fake.launches.load() >= 1);
  });

  run("preload_loads_the_keys_modules_only", [] {
    std::string dir = makeDir("preload");
    writeBundle(dir, tileSpec(1));
    writeBundle(dir, tileSpec(4));
    Spec wide = tileSpec(4);
    wide.name = "f16_d128_b16_h4_w8_sm70";
    wide.warps = 8;
    writeBundle(dir, wide);
    FakeContext f(kH200);
    CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
    pa_decode_args keys[2] = {validArgs(), validArgs()};
    keys[1].num_heads = keys[1].num_kv_heads; // group 1
    CHECK_OK(pa_context_preload(f.ctx, keys, 1)); // h4 and its w8 twin
    CHECK_EQ(fake.loads.load(), 2);
    CHECK_OK(pa_context_preload(f.ctx, keys, 2)); // + h1
    CHECK_EQ(fake.loads.load(), 3);
    CHECK_EQ(f.stats().modules_loaded, size_t(3));
    pa_decode_args bad = validArgs();
    bad.head_size = 96;
    CHECK_STATUS(pa_context_preload(f.ctx, &bad, 1), PA_ERROR_UNSUPPORTED,
                 "preloading key 0: no loaded variant serves dtype f16");
    bad = validArgs();
    bad.num_kv_heads = 0;
    CHECK_STATUS(pa_context_preload(f.ctx, &bad, 1),
                 PA_ERROR_INVALID_ARGUMENT, "must be a positive multiple");
  });

  run("preload_all_and_destroy_unloads", [] {
    std::string dir = makeDir("preload_all");
    writeBundle(dir, tileSpec(1));
    writeBundle(dir, tileSpec(4));
    {
      FakeContext f(kH200);
      CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
      CHECK_OK(pa_context_preload_all(f.ctx));
      CHECK_OK(pa_context_preload_all(f.ctx)); // loaded once
      CHECK_EQ(fake.loads.load(), 2);
    }
    CHECK_EQ(fake.unloads.load(), 2);
  });

  run("preload_rejects_null", [] {
    FakeContext f(kH200);
    CHECK_STATUS(pa_context_preload(nullptr, nullptr, 0),
                 PA_ERROR_INVALID_ARGUMENT, "ctx is null");
    CHECK_STATUS(pa_context_preload(f.ctx, nullptr, 1),
                 PA_ERROR_INVALID_ARGUMENT, "args is null");
    CHECK_OK(pa_context_preload(f.ctx, nullptr, 0));
    CHECK_STATUS(pa_context_preload_all(nullptr), PA_ERROR_INVALID_ARGUMENT,
                 "ctx is null");
    CHECK_STATUS(pa_context_library_stats(f.ctx, nullptr),
                 PA_ERROR_INVALID_ARGUMENT, "out is null");
  });
  run("preload_loads_every_query_length_tile", [] {
    // Tensor-core tiles of 8 and 16 rows: one token per sequence runs the
    // 8-row tile, several the 16-row one (it packs them). A preload of the
    // key loads both, so a captured multi-token call loads nothing.
    std::string dir = makeDir("preload-tiles");
    for (int rows : {8, 16}) {
      Spec s = tileSpec(rows);
      s.name = "f16_d128_h" + std::to_string(rows) + "_mma_sm90";
      s.chip = "sm_90", s.block = 0, s.queryTokens = s.packsTokens = true;
      writeBundle(dir, s);
    }
    FakeContext f(kH200);
    CHECK_OK(pa_context_load_library(f.ctx, dir.c_str()));
    pa_decode_args a = validArgs();
    CHECK_OK(pa_context_preload(f.ctx, &a, 1));
    CHECK_EQ(fake.loads.load(), 2);
    a.query_start_loc = 0x200000;
    a.max_query_len = 8;
    fake.capturing = true;
    CHECK_OK(pa_decode_v2(f.ctx, &a, nullptr));
    CHECK_EQ(fake.loads.load(), 2);
    fake.capturing = false;
  });
}

} // namespace

void lazyLoadingTests() {
  indexAndFirstUseTests();
  sassTests();
  captureAndPreloadTests();
}

} // namespace pa_test
