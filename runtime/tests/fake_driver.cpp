//===- fake_driver.cpp - a libcuda.so.1 stand-in that logs its calls ------===//
//
// Built as fake-driver/libcuda.so.1: with it first on LD_LIBRARY_PATH the
// runtime dlopen()s this instead of the CUDA driver, so the paths that need
// a device (context creation, the index, its error word) run on a machine
// without a GPU. One device (sm_90, 132 SMs); memory calls succeed without
// memory; module loads fail (CUDA_ERROR_NOT_SUPPORTED). Every call appends
// its name (and the stream, for stream calls) to a log that
// paFakeDriverLog() returns, one call per line.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <cstring>
#include <mutex>
#include <string>

namespace {
std::mutex logMutex;
std::string callLog;

void note(const char *call, const void *stream = nullptr,
          bool withStream = false) {
  std::lock_guard<std::mutex> lock(logMutex);
  callLog += call;
  if (withStream)
    callLog += stream ? " stream" : " legacy-stream";
  callLog += '\n';
}
} // namespace

extern "C" {
__attribute__((visibility("default"))) const char *paFakeDriverLog() {
  static std::string copy;
  std::lock_guard<std::mutex> lock(logMutex);
  copy = callLog;
  return copy.c_str();
}

CUresult cuInit(unsigned) { return note("cuInit"), CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult, const char **name) {
  *name = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "an error of the fake driver";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return note("cuDeviceGetCount"), CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    break;
  default:
    *value = 1;
  }
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  *context = reinterpret_cast<CUcontext>(0x1);
  return note("cuDevicePrimaryCtxRetain"), CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) {
  return note("cuDevicePrimaryCtxRelease"), CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent(CUcontext *context) {
  if (context)
    *context = nullptr;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *, const void *, unsigned, CUjit_option *,
                            void **) {
  return note("cuModuleLoadDataEx"), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult cuFuncGetAttribute(int *, CUfunction_attribute, CUfunction) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *, CUfunction, int,
                                                     size_t) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, CUstream stream, void **,
                        void **) {
  return note("cuLaunchKernel", stream, true), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *status) {
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t, CUstream stream) {
  *ptr = 0x1000;
  return note("cuMemAllocAsync", stream, true), CUDA_SUCCESS;
}
CUresult cuMemFreeAsync(CUdeviceptr, CUstream stream) {
  return note("cuMemFreeAsync", stream, true), CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *ptr, size_t) {
  *ptr = 0x1000;
  return note("cuMemAlloc"), CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr) { return note("cuMemFree"), CUDA_SUCCESS; }
CUresult cuMemsetD32(CUdeviceptr, unsigned, size_t) {
  return note("cuMemsetD32"), CUDA_SUCCESS;
}
CUresult cuMemsetD32Async(CUdeviceptr, unsigned, size_t, CUstream stream) {
  return note("cuMemsetD32Async", stream, true), CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr, size_t bytes,
                           CUstream stream) {
  std::memset(dst, 0, bytes);
  return note("cuMemcpyDtoHAsync", stream, true), CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream stream) {
  return note("cuStreamSynchronize", stream, true), CUDA_SUCCESS;
}
}
