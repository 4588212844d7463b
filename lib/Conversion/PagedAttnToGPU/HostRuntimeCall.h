//===- HostRuntimeCall.h - decode_v2 to a runtime call ----------*- C++ -*-===//
//
// The host phase of convert-paged-attn-to-gpu{host=runtime}: a call of the
// runtime's flat entry pa_host_decode_v2 instead of gpu.launch_func, so the
// host code lowers to LLVM IR and an object without GPU host wrappers.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_HOSTRUNTIMECALL_H
#define PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_HOSTRUNTIMECALL_H

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::paged_attn {

/// Gives every func.func that holds a decode_v2 its context, stream and
/// status arguments (appended as !llvm.ptr with kHostArgAttrName, unless
/// the function has them already) and the C interface attribute. Fails,
/// with an error, on a function the module calls (its callers would not
/// pass them), a decode_v2 outside a func.func, or one whose output or
/// shared workspace bufferization allocated on the host.
LogicalResult prepareRuntimeHostFunctions(ModuleOp module);

/// Replaces memref-form `op` with `func.call @pa_host_decode_v2` on its
/// function's context, stream and status, declaring the entry once.
LogicalResult lowerDecodeV2ToRuntimeCall(RewriterBase &rewriter,
                                         DecodeV2Op op);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_HOSTRUNTIMECALL_H
