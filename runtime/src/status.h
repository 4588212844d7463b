//===- status.h - pa_status construction and return macros -----*- C++ -*-===//
//
// Errors are values: every entry returns a pa_status. These helpers build one
// (message formatted with printf rules, truncated to the struct's buffer) and
// the PA_RETURN_IF_ERROR / PA_CUDA_RETURN_IF_ERROR macros propagate them, the
// latter naming the CUresult through the context's own driver table (after
// IREE's CUDA_RETURN_IF_ERROR).
//
//===----------------------------------------------------------------------===//

#ifndef PA_RUNTIME_SRC_STATUS_H
#define PA_RUNTIME_SRC_STATUS_H

#include "pa_runtime/pa_runtime.h"

namespace pa {

struct DriverApi;

/// PA_OK with empty strings.
pa_status okStatus();

/// A status with `code` and a printf-formatted message.
pa_status makeStatus(pa_status_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// PA_ERROR_CUDA for `result`: driver_error is the CUresult's name (from
/// cuGetErrorName), the message is "<what>: <name>: <description>".
pa_status cudaStatus(const DriverApi &api, CUresult result, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));

/// Appends printf-formatted text to `status.message` (truncating).
void appendMessage(pa_status &status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

inline bool isOk(const pa_status &status) { return status.code == PA_OK; }

} // namespace pa

/// Returns the status of `expr` from the enclosing function unless it is OK.
#define PA_RETURN_IF_ERROR(expr)                                               \
  do {                                                                         \
    pa_status pa_status_ = (expr);                                             \
    if (pa_status_.code != PA_OK)                                              \
      return pa_status_;                                                       \
  } while (0)

/// Evaluates a driver call `expr` (a CUresult); on failure returns
/// PA_ERROR_CUDA naming the CUresult, with the printf-formatted context that
/// follows (what was being done).
#define PA_CUDA_RETURN_IF_ERROR(api, expr, ...)                                \
  do {                                                                         \
    CUresult pa_result_ = (expr);                                              \
    if (pa_result_ != CUDA_SUCCESS)                                            \
      return ::pa::cudaStatus((api), pa_result_, __VA_ARGS__);                 \
  } while (0)

#endif // PA_RUNTIME_SRC_STATUS_H
