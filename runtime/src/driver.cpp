//===- driver.cpp - dlopen the CUDA driver into a function table ----------===//
//
// Resolves the driver entry points into the DriverApi a context owns. Each
// symbol is looked up by the name cuda.h's versioning macros give it
// (stringified after expansion), so the table matches the header the runtime
// was compiled against.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <dlfcn.h>

namespace pa {

#define PA_STRINGIFY_EXPANDED(name) PA_STRINGIFY(name)
#define PA_STRINGIFY(name) #name

pa_status loadDriver(DriverApi &api, const char *soname) {
  api = DriverApi();
  void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    return makeStatus(PA_ERROR_CUDA, "CUDA driver (%s) not found: %s", soname,
                      why ? why : "dlopen failed");
  }
  DriverApi loaded;
  loaded.library = library;
#define PA_RESOLVE(name)                                                       \
  loaded.name = reinterpret_cast<decltype(loaded.name)>(                       \
      dlsym(library, PA_STRINGIFY_EXPANDED(name)));                            \
  if (!loaded.name) {                                                          \
    dlclose(library);                                                          \
    return makeStatus(PA_ERROR_CUDA,                                           \
                      "CUDA driver (%s) lacks the entry point %s: the driver " \
                      "is older than the CUDA headers the runtime was built "  \
                      "with",                                                  \
                      soname, PA_STRINGIFY_EXPANDED(name));                    \
  }
  PA_DRIVER_FUNCTIONS(PA_RESOLVE)
#undef PA_RESOLVE
  api = loaded;
  return okStatus();
}

void unloadDriver(DriverApi &api) {
  if (api.library)
    dlclose(api.library);
  api = DriverApi();
}

} // namespace pa
