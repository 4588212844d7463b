//===- host_entry.cpp - pa_host_decode_v2, the entry of compiled code -----===//
//
// Host code lowered by convert-paged-attn-to-runtime calls pa_host_decode_v2
// with one scalar or pointer per pa_decode_args field instead of building
// the struct, so the struct's layout is written once, in pa_runtime.h. The
// parameter order is HostABI.def's table; this file checks at compile time
// that the header's prototype agrees with the table (and the enum values
// the lowering emits as constants with the header's), fills the struct
// from the parameters by name and calls pa_decode_v2.
//
//===----------------------------------------------------------------------===//

#include "host_entry.h"
#include "internal.h"

#include <cstring>
#include <type_traits>

namespace {

/// The prototype the table describes: ctx, stream, the rows, the status.
template <typename... T> struct TypeList {};
template <typename List> struct EntryOf;
template <typename First, typename... T>
struct EntryOf<TypeList<First, T...>> {
  using type = int32_t(pa_context *, CUstream, T..., pa_status *);
};
#define PA_HOST_PARAM(name, kind) , pa::kind
using TableTypes = TypeList<void
#include "HostABI.def"
                            >;
static_assert(std::is_same_v<decltype(pa_host_decode_v2),
                             EntryOf<TableTypes>::type>,
              "pa_host_decode_v2 in pa_runtime.h disagrees with HostABI.def");

#define PA_HOST_ENUM(name, value)                                              \
  static_assert(int(name) == (value), #name " disagrees with HostABI.def");
#include "HostABI.def"

/// One field from its parameter: enums from their I32, addresses from
/// pointers.
template <typename Field, typename Param>
void assign(Field &field, Param value) {
  if constexpr (std::is_pointer_v<Param>)
    field = static_cast<Field>(reinterpret_cast<uintptr_t>(value));
  else
    field = static_cast<Field>(value);
}

} // namespace

pa_decode_args pa::hostDecodeArgs(
#define PA_HOST_PARAM(name, kind) kind name,
#include "HostABI.def"
    int) {
  pa_decode_args args;
  std::memset(&args, 0, sizeof(args));
#define PA_HOST_PARAM(name, kind) assign(args.name, name);
#include "HostABI.def"
  return args;
}

PA_EXPORT int32_t pa_host_decode_v2(
    pa_context *ctx, CUstream stream,
#define PA_HOST_PARAM(name, kind) pa::kind name,
#include "HostABI.def"
    pa_status *status) {
  if (status && status->code != PA_OK)
    return status->code;
  pa_decode_args args = pa::hostDecodeArgs(
#define PA_HOST_PARAM(name, kind) name,
#include "HostABI.def"
      0);
  pa_status result = pa_decode_v2(ctx, &args, stream);
  if (result.code != PA_OK && status)
    *status = result;
  return result.code;
}

namespace {

/// Runs `body` with ctx's primary context current (for the driver's memory
/// calls); a context without a driver refuses.
template <typename Body>
pa_status withDevice(pa_context *ctx, const char *what, Body body) {
  if (!ctx)
    return pa::makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  if (!ctx->api.library)
    return pa::makeStatus(PA_ERROR_CUDA,
                          "%s: this context has no CUDA driver", what);
  PA_CUDA_RETURN_IF_ERROR(ctx->api, ctx->api.cuCtxPushCurrent(ctx->primary),
                          "cuCtxPushCurrent (device %d)", ctx->info.ordinal);
  pa_status status = body();
  CUcontext popped;
  ctx->api.cuCtxPopCurrent(&popped);
  return status;
}

} // namespace

PA_EXPORT void *pa_host_alloc(pa_context *ctx, CUstream stream, int64_t bytes,
                              pa_status *status) {
  if (status && status->code != PA_OK)
    return nullptr;
  CUdeviceptr ptr = 0;
  pa_status result = withDevice(ctx, "pa_host_alloc", [&] {
    if (bytes <= 0)
      return pa::makeStatus(PA_ERROR_INVALID_ARGUMENT,
                            "pa_host_alloc: bytes (%lld) must be positive",
                            (long long)bytes);
    PA_CUDA_RETURN_IF_ERROR(ctx->api,
                            ctx->api.cuMemAllocAsync(&ptr, size_t(bytes),
                                                     stream),
                            "cuMemAllocAsync (%lld bytes)", (long long)bytes);
    return pa::okStatus();
  });
  if (result.code != PA_OK) {
    if (status)
      *status = result;
    return nullptr;
  }
  return reinterpret_cast<void *>(uintptr_t(ptr));
}

PA_EXPORT int32_t pa_host_free(pa_context *ctx, CUstream stream, void *ptr,
                               pa_status *status) {
  if (!ptr)
    return PA_OK;
  pa_status result = withDevice(ctx, "pa_host_free", [&] {
    PA_CUDA_RETURN_IF_ERROR(
        ctx->api,
        ctx->api.cuMemFreeAsync(CUdeviceptr(uintptr_t(ptr)), stream),
        "cuMemFreeAsync");
    return pa::okStatus();
  });
  if (result.code != PA_OK && status && status->code == PA_OK)
    *status = result;
  return result.code;
}
