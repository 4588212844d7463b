//===- Passes.h - paged_attn transforms -------------------------*- C++ -*-===//
//
// Passes on the paged_attn dialect and its bufferization model.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_DIALECT_PAGEDATTN_TRANSFORMS_PASSES_H
#define PAGED_ATTN_DIALECT_PAGEDATTN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class DialectRegistry;
namespace arith {
class ArithDialect;
} // namespace arith
namespace tensor {
class TensorDialect;
} // namespace tensor
} // namespace mlir

namespace mlir::paged_attn {

#define GEN_PASS_DECL
#include "PagedAttn/Dialect/PagedAttn/Transforms/Passes.h.inc"

/// Attaches the BufferizableOpInterface model of decode_v2, so that
/// one-shot-bufferize turns its tensor form into its memref form.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

#define GEN_PASS_REGISTRATION
#include "PagedAttn/Dialect/PagedAttn/Transforms/Passes.h.inc"

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_DIALECT_PAGEDATTN_TRANSFORMS_PASSES_H
