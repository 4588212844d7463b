//===- context.cpp - contexts and bundle loading --------------------------===//
//
// A pa_context owns the driver table, the device's primary context and the
// loaded bundles; nothing lives outside it, so several contexts (one per GPU)
// work side by side. Loading a bundle or a library only indexes it: parses
// the manifest, refuses chips newer than the device and checks that its
// files exist. A bundle's module loads on its first use (loadModuleOnce,
// thread-safe) or on a preload: its SASS where CUDA runs it (its chip, or a
// later one of the same major version), else its PTX through the driver's
// JIT; then every kernel is checked to run
// with the block size its manifest states.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <unistd.h>

namespace pa {

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

/// Checks the PTX's `.target` against the manifest's chip, so a manifest
/// that lies about its chip fails at load instead of in the JIT.
static pa_status checkPtxTarget(const BundleDesc &desc,
                                const std::string &ptx) {
  if (ptx.compare(0, 4,
                  "\x7f"
                  "ELF") == 0)
    return okStatus(); // a cubin: the driver checks it
  size_t at = ptx.find(".target");
  if (at == std::string::npos)
    return makeStatus(PA_ERROR_BUNDLE,
                      "%s: '%s' has no .target directive: not PTX",
                      desc.manifestPath.c_str(), desc.ptxPath.c_str());
  // A file that ends at ".target" names nothing (npos would throw below).
  size_t begin = std::min(ptx.find_first_not_of(" \t", at + 7), ptx.size());
  size_t end = ptx.find_first_of(" \t,\r\n", begin);
  std::string target = ptx.substr(begin, end - begin);
  int version = 0;
  bool specific = false;
  if (!parseChip(target, version, specific) || version != desc.chipVersion ||
      specific != desc.chipArchSpecific)
    return makeStatus(PA_ERROR_BUNDLE,
                      "%s: the PTX '%s' targets %s but the manifest says chip "
                      "%s",
                      desc.manifestPath.c_str(), desc.ptxPath.c_str(),
                      target.c_str(), desc.chip.c_str());
  return okStatus();
}

static void unloadModule(const DriverApi &api, LoadedModule &m) {
  if (m.module)
    api.cuModuleUnload(m.module);
  m = LoadedModule();
}

static pa_status resolveKernels(const pa_context &ctx, const BundleDesc &desc,
                                const std::string &what, LoadedModule &m);

/// Loads `image` (PTX text or a cubin) into the context's primary context
/// (already current) and resolves the kernels; on failure nothing stays
/// loaded. `what` names the file in messages.
static pa_status loadImageCurrent(const pa_context &ctx, const BundleDesc &desc,
                                  const std::string &image,
                                  const std::string &what, LoadedModule &out) {
  const DriverApi &api = ctx.api;
  char errorLog[8192] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog, reinterpret_cast<void *>(sizeof(errorLog))};
  LoadedModule m;
  CUresult result =
      api.cuModuleLoadDataEx(&m.module, image.c_str(), 2, options, values);
  if (result != CUDA_SUCCESS) {
    pa_status status = cudaStatus(api, result, "loading '%s' of bundle '%s'",
                                  what.c_str(), desc.name.c_str());
    if (errorLog[0])
      appendMessage(status, "; JIT log: %s", errorLog);
    return status;
  }
  pa_status status = resolveKernels(ctx, desc, what, m);
  if (!isOk(status)) {
    unloadModule(api, m);
    return status;
  }
  out = m;
  return okStatus();
}

/// Looks up every kernel the manifest names in `m` and checks that it runs
/// with the block size the manifest states; sets desc.residentPrograms.
static pa_status resolveKernels(const pa_context &ctx, const BundleDesc &desc,
                                const std::string &what, LoadedModule &m) {
  const DriverApi &api = ctx.api;
  for (int r = 0; r < kNumRoles; ++r) {
    const KernelDesc &kernel = desc.kernels[r];
    if (!kernel.present)
      continue;
    if (api.cuModuleGetFunction(&m.functions[r], m.module,
                                kernel.symbol.c_str()) != CUDA_SUCCESS)
      return makeStatus(PA_ERROR_BUNDLE,
                        "%s: the %s kernel '%s' is not in '%s'",
                        desc.manifestPath.c_str(), roleName(Role(r)),
                        kernel.symbol.c_str(), what.c_str());
    int maxThreads = 0;
    PA_CUDA_RETURN_IF_ERROR(
        api,
        api.cuFuncGetAttribute(&maxThreads,
                               CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                               m.functions[r]),
        "cuFuncGetAttribute of '%s'", kernel.symbol.c_str());
    if (maxThreads < kernel.threads)
      return makeStatus(PA_ERROR_BUNDLE,
                        "%s: the %s kernel '%s' is launched with %d threads "
                        "but compiles to at most %d per block on device %d "
                        "(registers)",
                        desc.manifestPath.c_str(), roleName(Role(r)),
                        kernel.symbol.c_str(), kernel.threads, maxThreads,
                        ctx.info.ordinal);
  }
  // Programs of the partition kernel one SM holds at once, reported in
  // pa_plan.resident_programs: what a partition rule counting waves needs.
  const KernelDesc &partition = desc.kernel(Role::Partition);
  int resident = 0;
  PA_CUDA_RETURN_IF_ERROR(
      api,
      api.cuOccupancyMaxActiveBlocksPerMultiprocessor(
          &resident, m.functions[int(Role::Partition)], partition.threads,
          /*dynamicSMemSize=*/0),
      "cuOccupancyMaxActiveBlocksPerMultiprocessor of '%s'",
      partition.symbol.c_str());
  if (resident < 1)
    return makeStatus(PA_ERROR_BUNDLE,
                      "%s: the partition kernel '%s' cannot be resident "
                      "with %d threads on device %d",
                      desc.manifestPath.c_str(), partition.symbol.c_str(),
                      partition.threads, ctx.info.ordinal);
  desc.residentPrograms = resident;
  return okStatus();
}

/// Whether the bundle's SASS runs on this device. CUDA runs a cubin built
/// for sm_XY on the desktop chips of the same major version X and a minor
/// version >= Y (sm_70's on a T4's sm_75, sm_80's on sm_86 and sm_89), not
/// on Tegra ones (sm_72, sm_87); an arch-specific chip's (sm_90a) runs on
/// exactly that chip. Elsewhere the PTX goes through the JIT.
static bool sassRunsHere(const BundleDesc &desc, const DeviceInfo &device) {
  if (desc.sassPath.empty())
    return false;
  const int chip = desc.chipVersion, sm = device.smVersion;
  if (chip == sm)
    return true;
  const bool tegra = sm == 72 || sm == 87;
  return !desc.chipArchSpecific && !tegra && chip / 10 == sm / 10 && chip < sm;
}

/// Loads the bundle's SASS where it runs on the device, else (or if the
/// SASS will not load) its PTX; the context is current.
static pa_status loadBundleModuleCurrent(const pa_context &ctx,
                                         const BundleDesc &desc,
                                         ModuleSlot &slot) {
  pa_status sassStatus = okStatus();
  if (sassRunsHere(desc, ctx.info)) {
    std::string cubin;
    sassStatus = readFile(desc.sassPath, "SASS", cubin);
    if (isOk(sassStatus))
      sassStatus = loadImageCurrent(ctx, desc, cubin, desc.sassPath,
                                    slot.module);
    if (isOk(sassStatus)) {
      slot.source = ModuleSource::Sass;
      return okStatus();
    }
  }
  std::string ptx;
  PA_RETURN_IF_ERROR(readFile(desc.ptxPath, "PTX", ptx));
  PA_RETURN_IF_ERROR(checkPtxTarget(desc, ptx));
  pa_status status = loadImageCurrent(ctx, desc, ptx, desc.ptxPath,
                                      slot.module);
  if (!isOk(status)) {
    if (!isOk(sassStatus))
      appendMessage(status, " (its SASS would not load either: %s)",
                    sassStatus.message);
    return status;
  }
  slot.source = isOk(sassStatus) ? ModuleSource::Ptx
                                 : ModuleSource::PtxAfterSass;
  return okStatus();
}

/// PA_ERROR_CAPTURE when `stream` is capturing a CUDA graph.
static pa_status refuseDuringCapture(const pa_context &ctx,
                                     const BundleDesc &desc, CUstream stream) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  PA_CUDA_RETURN_IF_ERROR(ctx.api, ctx.api.cuStreamIsCapturing(stream, &capture),
                          "cuStreamIsCapturing");
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return makeStatus(PA_ERROR_CAPTURE,
                      "bundle '%s' is used for the first time while the "
                      "stream captures a CUDA graph, and a module cannot be "
                      "loaded then: preload it before capturing "
                      "(pa_context_preload, or one call outside the capture)",
                      desc.name.c_str());
  return okStatus();
}

pa_status loadModuleOnce(const pa_context &ctx, int variant, CUstream stream,
                         bool checkCapture) {
  if (!ctx.api.library)
    return okStatus(); // a host-only context loads nothing
  ModuleSlot &slot = *ctx.modules[variant];
  if (slot.ready.load(std::memory_order_acquire))
    return okStatus();
  const BundleDesc &desc = ctx.variants[variant];
  if (checkCapture)
    PA_RETURN_IF_ERROR(refuseDuringCapture(ctx, desc, stream));
  std::lock_guard<std::mutex> lock(ctx.loadMutex);
  if (slot.ready.load(std::memory_order_relaxed))
    return okStatus(); // another thread loaded it meanwhile
  PA_CUDA_RETURN_IF_ERROR(ctx.api, ctx.api.cuCtxPushCurrent(ctx.primary),
                          "cuCtxPushCurrent (device %d)", ctx.info.ordinal);
  pa_status status = loadBundleModuleCurrent(ctx, desc, slot);
  CUcontext popped = nullptr;
  ctx.api.cuCtxPopCurrent(&popped);
  if (isOk(status))
    slot.ready.store(true, std::memory_order_release);
  return status;
}

/// Unloads the bundles from index `from` on (newest first).
static void dropVariantsFrom(pa_context &ctx, size_t from) {
  if (ctx.primary && ctx.modules.size() > from &&
      ctx.api.cuCtxPushCurrent(ctx.primary) == CUDA_SUCCESS) {
    for (size_t i = ctx.modules.size(); i-- > from;)
      unloadModule(ctx.api, ctx.modules[i]->module);
    CUcontext popped = nullptr;
    ctx.api.cuCtxPopCurrent(&popped);
  }
  ctx.modules.resize(std::min(from, ctx.modules.size()));
  ctx.variants.resize(std::min(from, ctx.variants.size()));
  ctx.index.rebuild(ctx.variants);
  linkWideTwins(ctx.variants, ctx.index);
}

/// PA_ERROR_IO unless `path` names a readable file.
static pa_status checkReadable(const BundleDesc &desc, const std::string &path,
                               const char *what) {
  if (access(path.c_str(), R_OK) != 0)
    return makeStatus(PA_ERROR_IO, "%s: cannot open %s '%s': %s",
                      desc.manifestPath.c_str(), what, path.c_str(),
                      std::strerror(errno));
  return okStatus();
}

/// Indexes one bundle (its module loads on first use). With `skipNewer`, a
/// bundle for a newer chip is skipped (`skipped` set) rather than refused.
static pa_status loadBundle(pa_context &ctx, const std::string &path,
                            bool skipNewer, bool &skipped) {
  skipped = false;
  BundleDesc desc;
  PA_RETURN_IF_ERROR(readManifest(path, desc));
  int loaded = ctx.index.byName(desc.name);
  if (loaded >= 0)
    return makeStatus(PA_ERROR_BUNDLE,
                      "%s: a bundle named '%s' is already loaded (from %s)",
                      path.c_str(), desc.name.c_str(),
                      ctx.variants[loaded].manifestPath.c_str());
  pa_status chip = checkChip(desc, ctx.info);
  if (!isOk(chip)) {
    if (skipNewer) {
      skipped = true;
      return okStatus();
    }
    return chip;
  }
  PA_RETURN_IF_ERROR(checkReadable(desc, desc.ptxPath, "PTX"));
  if (sassRunsHere(desc, ctx.info))
    PA_RETURN_IF_ERROR(checkReadable(desc, desc.sassPath, "SASS"));
  ctx.variants.push_back(std::move(desc));
  ctx.modules.push_back(std::make_unique<ModuleSlot>());
  ctx.index.add(ctx.variants, ctx.variants.size() - 1);
  pa_status linked =
      linkWideTwin(ctx.variants, ctx.variants.size() - 1, ctx.index);
  if (!isOk(linked)) {
    dropVariantsFrom(ctx, ctx.variants.size() - 1);
    return linked;
  }
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

static pa_status openDevice(pa_context &ctx, int ordinal) {
  const DriverApi &api = ctx.api;
  PA_CUDA_RETURN_IF_ERROR(api, api.cuInit(0), "cuInit");
  int count = 0;
  PA_CUDA_RETURN_IF_ERROR(api, api.cuDeviceGetCount(&count),
                          "cuDeviceGetCount");
  if (ordinal >= count)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "device_ordinal (%d) is out of range: %d CUDA device(s)",
                      ordinal, count);
  PA_CUDA_RETURN_IF_ERROR(api, api.cuDeviceGet(&ctx.device, ordinal),
                          "cuDeviceGet(%d)", ordinal);
  int major = 0, minor = 0, sms = 0;
  PA_CUDA_RETURN_IF_ERROR(
      api,
      api.cuDeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx.device),
      "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  PA_CUDA_RETURN_IF_ERROR(
      api,
      api.cuDeviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx.device),
      "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  PA_CUDA_RETURN_IF_ERROR(
      api,
      api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                               ctx.device),
      "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  ctx.info.ordinal = ordinal;
  ctx.info.smVersion = major * 10 + minor;
  ctx.info.smCount = sms;
  PA_CUDA_RETURN_IF_ERROR(
      api, api.cuDevicePrimaryCtxRetain(&ctx.primary, ctx.device),
      "cuDevicePrimaryCtxRetain(device %d)", ordinal);
  // The kernels' error word, zeroed (docs/runtime.md, "Bad block tables"):
  // allocated here so that no decode call allocates.
  PA_CUDA_RETURN_IF_ERROR(api, api.cuCtxPushCurrent(ctx.primary),
                          "cuCtxPushCurrent (device %d)", ordinal);
  CUresult result = api.cuMemAlloc(&ctx.errorWord, kErrorWords * sizeof(int32_t));
  if (result == CUDA_SUCCESS)
    result = api.cuMemsetD32(ctx.errorWord, 0, kErrorWords);
  // A memset of device memory may return before it lands, on the legacy
  // stream, which a caller's non-blocking stream does not wait for: the
  // first call's kernels could record a bad input that the zeros then
  // overwrite. Wait for it here, once.
  if (result == CUDA_SUCCESS)
    result = api.cuStreamSynchronize(nullptr);
  CUcontext popped = nullptr;
  api.cuCtxPopCurrent(&popped);
  if (result != CUDA_SUCCESS)
    return cudaStatus(api, result, "allocating the error word (device %d)",
                      ordinal);
  return okStatus();
}

pa_context *makeHostContext(const DeviceInfo &device) {
  pa_context *ctx = new pa_context();
  ctx->info = device;
  return ctx;
}

} // namespace pa

using namespace pa;

PA_EXPORT pa_status pa_context_create(int device_ordinal, pa_context **out) {
  if (!out)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "out is null");
  *out = nullptr;
  if (device_ordinal < 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "device_ordinal (%d) must be >= 0", device_ordinal);
  pa_context *ctx = new pa_context();
  pa_status status = loadDriver(ctx->api);
  if (isOk(status))
    status = openDevice(*ctx, device_ordinal);
  if (!isOk(status)) {
    pa_context_destroy(ctx);
    return status;
  }
  *out = ctx;
  return okStatus();
}

PA_EXPORT void pa_context_destroy(pa_context *ctx) {
  if (!ctx)
    return;
  dropVariantsFrom(*ctx, 0);
  if (ctx->errorWord && ctx->api.cuCtxPushCurrent(ctx->primary) ==
                            CUDA_SUCCESS) {
    ctx->api.cuMemFree(ctx->errorWord);
    CUcontext popped = nullptr;
    ctx->api.cuCtxPopCurrent(&popped);
  }
  if (ctx->primary)
    ctx->api.cuDevicePrimaryCtxRelease(ctx->device);
  unloadDriver(ctx->api);
  delete ctx;
}

PA_EXPORT pa_status pa_context_load_bundle(pa_context *ctx,
                                           const char *manifest_path) {
  if (!ctx)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  if (!manifest_path)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "manifest_path is null");
  bool skipped = false;
  return loadBundle(*ctx, manifest_path, /*skipNewer=*/false, skipped);
}

PA_EXPORT pa_status pa_context_load_library(pa_context *ctx, const char *dir) {
  if (!ctx)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  if (!dir)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "dir is null");
  DIR *folder = opendir(dir);
  if (!folder)
    return makeStatus(PA_ERROR_IO, "cannot open kernel library folder '%s': %s",
                      dir, std::strerror(errno));
  static const char kSuffix[] = ".manifest";
  const size_t suffixLen = sizeof(kSuffix) - 1;
  std::vector<std::string> names;
  while (dirent *entry = readdir(folder)) {
    std::string name = entry->d_name;
    if (name.size() > suffixLen &&
        name.compare(name.size() - suffixLen, suffixLen, kSuffix) == 0)
      names.push_back(name);
  }
  closedir(folder);
  std::sort(names.begin(), names.end());
  if (names.empty())
    return makeStatus(PA_ERROR_BUNDLE, "no *.manifest in '%s'", dir);

  // All or nothing: a broken bundle unloads the ones this call loaded.
  size_t before = ctx->variants.size();
  std::string skippedNames;
  int skipped = 0;
  for (const std::string &name : names) {
    std::string path = std::string(dir) + "/" + name;
    bool wasSkipped = false;
    pa_status status = loadBundle(*ctx, path, /*skipNewer=*/true, wasSkipped);
    if (!isOk(status)) {
      dropVariantsFrom(*ctx, before);
      return status;
    }
    if (wasSkipped) {
      ++skipped;
      skippedNames += (skippedNames.empty() ? "" : ", ") + name;
    }
  }
  size_t loaded = ctx->variants.size() - before;
  if (loaded == 0)
    return makeStatus(PA_ERROR_BUNDLE,
                      "none of the %zu bundles in '%s' runs on device %d "
                      "(sm_%d): all are compiled for newer chips (%s)",
                      names.size(), dir, ctx->info.ordinal, ctx->info.smVersion,
                      skippedNames.c_str());
  pa_status status = okStatus();
  appendMessage(status, "indexed %zu bundle(s) from '%s' (modules load on "
                        "first use)", loaded, dir);
  if (skipped)
    appendMessage(status,
                  "; skipped %d compiled for chips newer than sm_%d: %s",
                  skipped, ctx->info.smVersion, skippedNames.c_str());
  return status;
}

PA_EXPORT size_t pa_context_num_variants(const pa_context *ctx) {
  return ctx ? ctx->variants.size() : 0;
}

/// The bundles calls like `args` may run (for a preload): the variant chosen
/// for its key and that variant's wide twin.
static pa_status variantsServing(const pa_context &ctx,
                                 const pa_decode_args &args,
                                 std::vector<int> &out) {
  if (args.num_heads <= 0 || args.num_kv_heads <= 0 ||
      args.num_heads % args.num_kv_heads != 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "num_heads (%d) must be a positive multiple of "
                      "num_kv_heads (%d)",
                      args.num_heads, args.num_kv_heads);
  VariantKey key = variantKeyOf(args);
  int chosen = selectVariant(ctx.variants, ctx.index, ctx.info, key);
  if (chosen < 0)
    return unsupported(ctx.variants, key);
  out.clear();
  auto add = [&](int v) {
    for (int w : {v, ctx.variants[v].wideTwin})
      if (w >= 0 && std::find(out.begin(), out.end(), w) == out.end())
        out.push_back(w);
  };
  add(chosen);
  // With several query tokens the tile depends on max_query_len (a
  // tensor-core tile packs tokens): the calls of this key may run any of
  // those tiles, so that none loads a module later (a capture refuses it).
  VariantKey tokens = key;
  tokens.queryTokens = true;
  for (int len = 1; len <= PA_MAX_QUERY_LEN; ++len) {
    tokens.queryLen = len;
    int v = selectVariant(ctx.variants, ctx.index, ctx.info, tokens);
    if (v >= 0)
      add(v);
  }
  return okStatus();
}

PA_EXPORT pa_status pa_context_preload(pa_context *ctx,
                                       const pa_decode_args *args,
                                       size_t count) {
  if (!ctx)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  if (!args && count)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "args is null");
  for (size_t i = 0; i < count; ++i) {
    std::vector<int> used;
    pa_status status = variantsServing(*ctx, args[i], used);
    for (size_t k = 0; isOk(status) && k < used.size(); ++k)
      status = loadModuleOnce(*ctx, used[k], nullptr, /*checkCapture=*/false);
    if (!isOk(status)) {
      pa_status out = makeStatus(status.code, "preloading key %zu: %s", i,
                                 status.message);
      std::memcpy(out.driver_error, status.driver_error,
                  sizeof(out.driver_error));
      return out;
    }
  }
  return okStatus();
}

PA_EXPORT pa_status pa_context_preload_all(pa_context *ctx) {
  if (!ctx)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  for (size_t i = 0; i < ctx->variants.size(); ++i)
    PA_RETURN_IF_ERROR(
        loadModuleOnce(*ctx, int(i), nullptr, /*checkCapture=*/false));
  return okStatus();
}

PA_EXPORT pa_status pa_context_library_stats(const pa_context *ctx,
                                             pa_library_stats *out) {
  if (!ctx)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  if (!out)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "out is null");
  *out = pa_library_stats();
  out->bundles = ctx->variants.size();
  for (const std::unique_ptr<ModuleSlot> &slot : ctx->modules) {
    if (!slot->ready.load(std::memory_order_acquire))
      continue;
    ++out->modules_loaded;
    out->loaded_sass += slot->source == ModuleSource::Sass;
    out->loaded_ptx += slot->source != ModuleSource::Sass;
    out->sass_fallbacks += slot->source == ModuleSource::PtxAfterSass;
  }
  return okStatus();
}

namespace pa {

std::string describeKernelError(const pa_kernel_error &e) {
  char text[512];
  if (e.index < 0)
    std::snprintf(text, sizeof(text),
                  "seq_lens[%d] = %d is outside [0, max_blocks_per_seq * "
                  "block_size]: the kernels read none of its blocks and its "
                  "rows of the output are NaN",
                  e.seq, e.value);
  else
    std::snprintf(text, sizeof(text),
                  "block_tables[%d][%d] = %d is outside [0, num_blocks): the "
                  "kernels did not read that block and the rows of sequence "
                  "%d that attend to it are NaN",
                  e.seq, e.index, e.value, e.seq);
  std::string out = text;
  if (e.count > 1) {
    std::snprintf(text, sizeof(text),
                  " (the first of %d programs that found a bad block-table "
                  "entry or seq_len since the last check)",
                  e.count);
    out += text;
  }
  return out;
}

} // namespace pa

PA_EXPORT pa_status pa_context_last_error(pa_context *ctx, CUstream stream,
                                          pa_kernel_error *out) {
  if (!ctx)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  pa_kernel_error e = {0, 0, 0, 0};
  if (out)
    *out = e;
  // A host-only context has launched nothing.
  if (!ctx->api.library || !ctx->errorWord)
    return okStatus();
  const DriverApi &api = ctx->api;
  PA_CUDA_RETURN_IF_ERROR(api, api.cuCtxPushCurrent(ctx->primary),
                          "cuCtxPushCurrent (device %d)", ctx->info.ordinal);
  int32_t words[kErrorWords] = {0, 0, 0, 0};
  const char *what = "cuMemcpyDtoHAsync of the error word";
  CUresult result = api.cuMemcpyDtoHAsync(words, ctx->errorWord,
                                          sizeof(words), stream);
  if (result == CUDA_SUCCESS) {
    what = "cuStreamSynchronize";
    result = api.cuStreamSynchronize(stream);
  }
  // Cleared in stream order: kernels queued on `stream` after this call
  // record afresh.
  if (result == CUDA_SUCCESS && words[0] != 0) {
    what = "cuMemsetD32Async of the error word";
    result = api.cuMemsetD32Async(ctx->errorWord, 0, kErrorWords, stream);
  }
  CUcontext popped = nullptr;
  api.cuCtxPopCurrent(&popped);
  if (result != CUDA_SUCCESS)
    return cudaStatus(api, result, "%s (device %d)", what, ctx->info.ordinal);
  if (words[0] == 0)
    return okStatus();
  e = {words[0], words[1], words[2], words[3]};
  if (out)
    *out = e;
  return makeStatus(PA_ERROR_BAD_INPUT, "%s", describeKernelError(e).c_str());
}
