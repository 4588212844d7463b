//===- PagedAttnOps.cpp - paged_attn operations ---------------------------===//
//
// Interface hooks of decode_v2: its destination operands and its memory
// effects. The shape rules live in DecodeV2Verifier.cpp.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::paged_attn;

#define GET_OP_CLASSES
#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttnOps.cpp.inc"

MutableOperandRange DecodeV2Op::getDpsInitsMutable() {
  // output, exp_sums, max_logits and tmp_output are the last four operand
  // segments and are adjacent, so one range covers whichever are present.
  unsigned start = getOutputMutable().getOperandNumber();
  return MutableOperandRange(getOperation(), start,
                             getOperation()->getNumOperands() - start);
}

void DecodeV2Op::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // With value semantics the op is pure: its results are new values.
  if (!hasPureBufferSemantics())
    return;
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    if (isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}
