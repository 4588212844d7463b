//===- PagedAttnDialect.cpp - paged_attn dialect --------------------------===//
//
// Registers the dialect's operations.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"

using namespace mlir;
using namespace mlir::paged_attn;

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttnOpsDialect.cpp.inc"

void PagedAttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttnOps.cpp.inc"
      >();
}
