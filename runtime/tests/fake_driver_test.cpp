//===- fake_driver_test.cpp - the runtime over the fake driver ------------===//
//
// Run with fake-driver/ (tests/fake_driver.cpp) first on LD_LIBRARY_PATH
// (lit: test/Runtime/fake-driver.test): creates a context on device 0,
// reads its error word (pa_context_last_error) and destroys it, then prints
// the driver calls the runtime made, in order, for FileCheck.
//
//===----------------------------------------------------------------------===//

#include "pa_runtime/pa_runtime.h"

#include <cstdio>
#include <dlfcn.h>

int main() {
  pa_context *ctx = nullptr;
  pa_status st = pa_context_create(0, &ctx);
  std::printf("create: %s\n", st.code == PA_OK ? "ok" : st.message);
  if (st.code != PA_OK)
    return 1;
  pa_kernel_error error;
  st = pa_context_last_error(ctx, nullptr, &error);
  std::printf("last_error: %s, count %d\n",
              st.code == PA_OK ? "ok" : st.message, int(error.count));
  pa_context_destroy(ctx);
  // The runtime opened the fake with RTLD_LOCAL: open it again (the same
  // object) to reach its log.
  void *fake = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto log = fake ? reinterpret_cast<const char *(*)()>(
                        dlsym(fake, "paFakeDriverLog"))
                  : nullptr;
  if (!log) {
    std::printf("error: libcuda.so.1 is not the fake driver\n");
    return 1;
  }
  std::printf("driver calls:\n%s", log());
  return 0;
}
