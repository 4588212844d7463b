//===- PagedAttn.h - paged_attn dialect -------------------------*- C++ -*-===//
//
// The paged_attn dialect and its operations.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_DIALECT_PAGEDATTN_IR_PAGEDATTN_H
#define PAGED_ATTN_DIALECT_PAGEDATTN_IR_PAGEDATTN_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttnOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttnOps.h.inc"

#endif // PAGED_ATTN_DIALECT_PAGEDATTN_IR_PAGEDATTN_H
