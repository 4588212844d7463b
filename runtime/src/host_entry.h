//===- host_entry.h - pa_host_decode_v2's argument filling ------*- C++ -*-===//
//
// The flat entry for compiled host code takes one parameter per row of
// HostABI.def (include/PagedAttn/Conversion/PagedAttnToRuntime); this fills
// pa_decode_args from them by name. Declared here for the host tests.
//
//===----------------------------------------------------------------------===//

#ifndef PA_RUNTIME_SRC_HOST_ENTRY_H
#define PA_RUNTIME_SRC_HOST_ENTRY_H

#include "pa_runtime/pa_runtime.h"

namespace pa {

/// The C types of the table's kinds.
using I32 = int32_t;
using F32 = float;
using PTR = void *;

/// pa_decode_args with every table field set from its parameter and every
/// other field zero.
pa_decode_args hostDecodeArgs(
#define PA_HOST_PARAM(name, kind) kind name,
#include "HostABI.def"
    int /*unused: ends the list*/ = 0);

} // namespace pa

#endif // PA_RUNTIME_SRC_HOST_ENTRY_H
