//===- Passes.h - paged_attn export -----------------------------*- C++ -*-===//
#ifndef PAGED_ATTN_TARGET_PASSES_H
#define PAGED_ATTN_TARGET_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::paged_attn {

#define GEN_PASS_DECL
#include "PagedAttn/Target/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "PagedAttn/Target/Passes.h.inc"

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_TARGET_PASSES_H
