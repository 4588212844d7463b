//===- driver.h - the CUDA driver, loaded at run time ----------*- C++ -*-===//
//
// The runtime never links libcuda: it dlopen()s libcuda.so.1 and resolves the
// entry points it uses into a DriverApi table that lives in the pa_context, so
// the library loads (and fails with a status, not a loader error) on machines
// without a driver, and holds no hidden global state.
//
//===----------------------------------------------------------------------===//

#ifndef PA_RUNTIME_SRC_DRIVER_H
#define PA_RUNTIME_SRC_DRIVER_H

#include "pa_runtime/pa_runtime.h"

namespace pa {

/// The driver entry points the runtime calls. cuda.h maps several names to
/// versioned ABI symbols (cuCtxPushCurrent -> cuCtxPushCurrent_v2); the table
/// is declared and resolved through the same macros, so each member has the
/// versioned symbol's name and type.
#define PA_DRIVER_FUNCTIONS(X)                                                 \
  X(cuInit)                                                                    \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleGetFunction)                                                       \
  X(cuModuleUnload)                                                            \
  X(cuFuncGetAttribute)                                                        \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                               \
  X(cuLaunchKernel)                                                             \
  X(cuStreamIsCapturing)                                                       \
  X(cuMemAllocAsync)                                                           \
  X(cuMemFreeAsync)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemsetD32)                                                               \
  X(cuMemsetD32Async)                                                          \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuStreamSynchronize)

struct DriverApi {
  /// dlopen handle; null when no driver is loaded.
  void *library = nullptr;
#define PA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  PA_DRIVER_FUNCTIONS(PA_DRIVER_MEMBER)
#undef PA_DRIVER_MEMBER
};

/// The shared object the runtime loads.
inline constexpr const char *kDriverLibrary = "libcuda.so.1";

/// Opens `soname` and resolves every entry point into `api`. Fails with
/// PA_ERROR_CUDA "CUDA driver (libcuda.so.1) not found" when it cannot be
/// opened, or naming the first missing symbol; `api` is then left empty.
pa_status loadDriver(DriverApi &api, const char *soname = kDriverLibrary);

/// Closes the library and clears the table.
void unloadDriver(DriverApi &api);

} // namespace pa

#endif // PA_RUNTIME_SRC_DRIVER_H
