//===- BufferizableOpInterfaceImpl.cpp - bufferize decode_v2 --------------===//
//
// decode_v2 is destination-passing: its inits (output and workspace) are
// written in place, its other tensor operands are only read. The generic
// destination-style model supplies the aliasing; bufferize() swaps every
// tensor operand for its buffer and rebuilds the op in memref form.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"
#include "PagedAttn/Dialect/PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::paged_attn;

namespace {

struct DecodeV2OpInterface
    : public DstBufferizableOpInterfaceExternalModel<DecodeV2OpInterface,
                                                     DecodeV2Op> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto decode = cast<DecodeV2Op>(op);
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      if (!isa<TensorType>(v.getType())) {
        operands.push_back(v);
        continue;
      }
      FailureOr<Value> buffer = getBuffer(rewriter, v, options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
    }
    rewriter.setInsertionPoint(op);
    auto newOp = DecodeV2Op::create(rewriter, op->getLoc(), TypeRange{},
                                    operands, op->getAttrs());
    SmallVector<Value> inits(newOp.getDpsInits());
    replaceOpWithBufferizedValues(rewriter, decode, inits);
    return success();
  }
};

} // namespace

void mlir::paged_attn::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, PagedAttnDialect *) {
    DecodeV2Op::attachInterface<DecodeV2OpInterface>(*ctx);
  });
}
