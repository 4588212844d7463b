//===- status.cpp - pa_status construction --------------------------------===//
//
// Builds the status values every entry returns. Messages are formatted into
// the fixed buffers of pa_status and truncated, never allocated, so building
// an error cannot itself fail.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace pa {

pa_status okStatus() {
  pa_status status;
  std::memset(&status, 0, sizeof(status));
  status.code = PA_OK;
  return status;
}

static void formatInto(char *buffer, size_t size, const char *fmt,
                       va_list args) {
  int n = std::vsnprintf(buffer, size, fmt, args);
  if (n < 0)
    buffer[0] = '\0';
}

pa_status makeStatus(pa_status_code code, const char *fmt, ...) {
  pa_status status = okStatus();
  status.code = code;
  va_list args;
  va_start(args, fmt);
  formatInto(status.message, sizeof(status.message), fmt, args);
  va_end(args);
  return status;
}

pa_status cudaStatus(const DriverApi &api, CUresult result, const char *fmt,
                     ...) {
  pa_status status = okStatus();
  status.code = PA_ERROR_CUDA;
  const char *name = nullptr;
  if (!api.cuGetErrorName ||
      api.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (name)
    std::snprintf(status.driver_error, sizeof(status.driver_error), "%s", name);
  else
    std::snprintf(status.driver_error, sizeof(status.driver_error),
                  "CUresult %d", int(result));

  char what[512];
  va_list args;
  va_start(args, fmt);
  formatInto(what, sizeof(what), fmt, args);
  va_end(args);

  const char *description = nullptr;
  if (!api.cuGetErrorString ||
      api.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  if (description)
    std::snprintf(status.message, sizeof(status.message), "%s: %s: %s", what,
                  status.driver_error, description);
  else
    std::snprintf(status.message, sizeof(status.message), "%s: %s", what,
                  status.driver_error);
  return status;
}

void appendMessage(pa_status &status, const char *fmt, ...) {
  size_t used = std::strlen(status.message);
  if (used + 1 >= sizeof(status.message))
    return;
  va_list args;
  va_start(args, fmt);
  formatInto(status.message + used, sizeof(status.message) - used, fmt, args);
  va_end(args);
}

} // namespace pa
