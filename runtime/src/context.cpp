//===- context.cpp - contexts and bundle loading --------------------------===//
//
// A pa_context owns the driver table, the device's primary context and the
// loaded bundles; nothing lives outside it, so several contexts (one per GPU)
// work side by side. Loading parses the manifest, refuses chips newer than
// the device, JIT-compiles the PTX and checks that every kernel can run with
// the block size its manifest states.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>

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

/// JIT-loads the PTX into the context's primary context (already current)
/// and resolves the kernels; on failure nothing stays loaded.
static pa_status loadModuleCurrent(const pa_context &ctx, BundleDesc &desc,
                                   const std::string &ptx, LoadedModule &out) {
  const DriverApi &api = ctx.api;
  char errorLog[8192] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog, reinterpret_cast<void *>(sizeof(errorLog))};
  LoadedModule m;
  CUresult result =
      api.cuModuleLoadDataEx(&m.module, ptx.c_str(), 2, options, values);
  if (result != CUDA_SUCCESS) {
    pa_status status = cudaStatus(api, result,
                                  "JIT-loading the PTX '%s' of "
                                  "bundle '%s'",
                                  desc.ptxPath.c_str(), desc.name.c_str());
    if (errorLog[0])
      appendMessage(status, "; JIT log: %s", errorLog);
    return status;
  }
  for (int r = 0; r < kNumRoles; ++r) {
    const KernelDesc &kernel = desc.kernels[r];
    if (!kernel.present)
      continue;
    if (api.cuModuleGetFunction(&m.functions[r], m.module,
                                kernel.symbol.c_str()) != CUDA_SUCCESS) {
      unloadModule(api, m);
      return makeStatus(PA_ERROR_BUNDLE,
                        "%s: the %s kernel '%s' is not in the PTX '%s'",
                        desc.manifestPath.c_str(), roleName(Role(r)),
                        kernel.symbol.c_str(), desc.ptxPath.c_str());
    }
    int maxThreads = 0;
    CUresult attr = api.cuFuncGetAttribute(
        &maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, m.functions[r]);
    if (attr != CUDA_SUCCESS) {
      pa_status status = cudaStatus(api, attr, "cuFuncGetAttribute of '%s'",
                                    kernel.symbol.c_str());
      unloadModule(api, m);
      return status;
    }
    if (maxThreads < kernel.threads) {
      unloadModule(api, m);
      return makeStatus(PA_ERROR_BUNDLE,
                        "%s: the %s kernel '%s' is launched with %d threads "
                        "but compiles to at most %d per block on device %d "
                        "(registers)",
                        desc.manifestPath.c_str(), roleName(Role(r)),
                        kernel.symbol.c_str(), kernel.threads, maxThreads,
                        ctx.info.ordinal);
    }
  }
  // Programs of the partition kernel one SM holds at once, reported in
  // pa_plan.resident_programs: what a partition rule counting waves needs.
  const KernelDesc &partition = desc.kernel(Role::Partition);
  CUresult occupancy = api.cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &desc.residentPrograms, m.functions[int(Role::Partition)],
      partition.threads, /*dynamicSMemSize=*/0);
  if (occupancy != CUDA_SUCCESS || desc.residentPrograms < 1) {
    pa_status status =
        occupancy != CUDA_SUCCESS
            ? cudaStatus(api, occupancy,
                         "cuOccupancyMaxActiveBlocksPerMultiprocessor of '%s'",
                         partition.symbol.c_str())
            : makeStatus(PA_ERROR_BUNDLE,
                         "%s: the partition kernel '%s' cannot be resident "
                         "with %d threads on device %d",
                         desc.manifestPath.c_str(), partition.symbol.c_str(),
                         partition.threads, ctx.info.ordinal);
    unloadModule(api, m);
    return status;
  }
  out = m;
  return okStatus();
}

static pa_status loadModule(const pa_context &ctx, BundleDesc &desc,
                            const std::string &ptx, LoadedModule &out) {
  PA_CUDA_RETURN_IF_ERROR(ctx.api, ctx.api.cuCtxPushCurrent(ctx.primary),
                          "cuCtxPushCurrent (device %d)", ctx.info.ordinal);
  pa_status status = loadModuleCurrent(ctx, desc, ptx, out);
  CUcontext popped = nullptr;
  ctx.api.cuCtxPopCurrent(&popped);
  return status;
}

/// Unloads the bundles from index `from` on (newest first).
static void dropVariantsFrom(pa_context &ctx, size_t from) {
  if (ctx.primary && ctx.modules.size() > from &&
      ctx.api.cuCtxPushCurrent(ctx.primary) == CUDA_SUCCESS) {
    for (size_t i = ctx.modules.size(); i-- > from;)
      unloadModule(ctx.api, ctx.modules[i]);
    CUcontext popped = nullptr;
    ctx.api.cuCtxPopCurrent(&popped);
  }
  ctx.modules.resize(std::min(from, ctx.modules.size()));
  ctx.variants.resize(std::min(from, ctx.variants.size()));
  linkWideTwins(ctx.variants);
  ctx.index.rebuild(ctx.variants);
}

/// Loads one bundle. With `skipNewer`, a bundle for a newer chip is skipped
/// (`skipped` set) rather than refused.
static pa_status loadBundle(pa_context &ctx, const std::string &path,
                            bool skipNewer, bool &skipped) {
  skipped = false;
  BundleDesc desc;
  PA_RETURN_IF_ERROR(readManifest(path, desc));
  for (const BundleDesc &loaded : ctx.variants)
    if (loaded.name == desc.name)
      return makeStatus(PA_ERROR_BUNDLE,
                        "%s: a bundle named '%s' is already loaded (from %s)",
                        path.c_str(), desc.name.c_str(),
                        loaded.manifestPath.c_str());
  pa_status chip = checkChip(desc, ctx.info);
  if (!isOk(chip)) {
    if (skipNewer) {
      skipped = true;
      return okStatus();
    }
    return chip;
  }
  std::string ptx;
  PA_RETURN_IF_ERROR(readFile(desc.ptxPath, "PTX", ptx));
  PA_RETURN_IF_ERROR(checkPtxTarget(desc, ptx));
  LoadedModule module;
  if (ctx.api.library)
    PA_RETURN_IF_ERROR(loadModule(ctx, desc, ptx, module));
  ctx.variants.push_back(std::move(desc));
  ctx.modules.push_back(module);
  pa_status linked = linkWideTwin(ctx.variants, ctx.variants.size() - 1);
  if (!isOk(linked)) {
    dropVariantsFrom(ctx, ctx.variants.size() - 1);
    return linked;
  }
  ctx.index.add(ctx.variants, ctx.variants.size() - 1);
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
  appendMessage(status, "loaded %zu bundle(s) from '%s'", loaded, dir);
  if (skipped)
    appendMessage(status,
                  "; skipped %d compiled for chips newer than sm_%d: %s",
                  skipped, ctx->info.smVersion, skippedNames.c_str());
  return status;
}

PA_EXPORT size_t pa_context_num_variants(const pa_context *ctx) {
  return ctx ? ctx->variants.size() : 0;
}
