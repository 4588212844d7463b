//===- MaterializeWorkspace.cpp - workspace for tensor-form decode_v2 -----===//
//
// Adds a tensor.empty workspace to tensor-form decode_v2 ops that lack one,
// sized for the partitions the context can need.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"
#include "PagedAttn/Dialect/PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::paged_attn {
#define GEN_PASS_DEF_PAGEDATTNMATERIALIZEWORKSPACE
#include "PagedAttn/Dialect/PagedAttn/Transforms/Passes.h.inc"
} // namespace mlir::paged_attn

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

/// Returns `value` for a static dim, else a tensor.dim op.
OpFoldResult dimOf(OpBuilder &b, Location loc, Value shaped, int64_t i) {
  auto type = cast<ShapedType>(shaped.getType());
  if (!type.isDynamicDim(i))
    return b.getIndexAttr(type.getDimSize(i));
  return tensor::DimOp::create(b, loc, shaped, i).getResult();
}

void materialize(DecodeV2Op op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t part = op.getPartitionSize();
  // Tokens the workspace must cover: max_seq_len, or the block table's reach
  // (a constant when the table's shape is static).
  OpFoldResult partsFold;
  auto btType = cast<ShapedType>(op.getBlockTables().getType());
  int64_t blockSize = op.getBlockSize();
  if (!op.getMaxSeqLen() && !btType.isDynamicDim(1) &&
      !ShapedType::isDynamic(blockSize)) {
    partsFold = b.getIndexAttr(
        llvm::divideCeil(btType.getDimSize(1) * blockSize, part));
  } else {
    auto dimValue = [&](Value shaped, int64_t i) {
      return getValueOrCreateConstantIndexOp(b, loc,
                                             dimOf(b, loc, shaped, i));
    };
    Value tokens = op.getMaxSeqLen();
    if (!tokens)
      tokens = arith::MulIOp::create(b, loc, dimValue(op.getBlockTables(), 1),
                                     dimValue(op.getKeyCache(), 3));
    partsFold = arith::CeilDivUIOp::create(
                    b, loc, tokens, arith::ConstantIndexOp::create(b, loc, part))
                    .getResult();
  }

  // One row per query token (per sequence without query_start_loc).
  OpFoldResult seqs = dimOf(b, loc, op.getQuery(), 0);
  OpFoldResult heads = b.getIndexAttr(op.getNumHeads());
  OpFoldResult headSize = b.getIndexAttr(op.getHeadSize());
  Type f32 = b.getF32Type();
  Value es = tensor::EmptyOp::create(b, loc, {seqs, heads, partsFold}, f32);
  Value ml = tensor::EmptyOp::create(b, loc, {seqs, heads, partsFold}, f32);
  Value tmp = tensor::EmptyOp::create(b, loc,
                                      {seqs, heads, partsFold, headSize}, f32);

  SmallVector<Type> resultTypes{op.getOutput().getType(), es.getType(),
                                ml.getType(), tmp.getType()};
  auto newOp = DecodeV2Op::create(
      b, loc, resultTypes, op.getQuery(), op.getKeyCache(),
      op.getValueCache(), op.getBlockTables(), op.getSeqLens(),
      op.getAlibiSlopes(), op.getSinks(), op.getQueryStartLoc(),
      op.getMaxQueryLen(), op.getKScale(), op.getVScale(), op.getMaxSeqLen(),
      op.getOutput(), es, ml, tmp, op.getScaleAttr(),
      op.getPartitionSizeAttr(), op.getSlidingWindowAttr(),
      op.getLogitsSoftCapAttr());
  op.getResult(0).replaceAllUsesWith(newOp.getResult(0));
  op.erase();
}

struct MaterializeWorkspacePass
    : public mlir::paged_attn::impl::PagedAttnMaterializeWorkspaceBase<
          MaterializeWorkspacePass> {
  void runOnOperation() override {
    SmallVector<DecodeV2Op> ops;
    getOperation()->walk([&](DecodeV2Op op) {
      if (!op.hasWorkspace() && !op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    for (DecodeV2Op op : ops)
      materialize(op);
  }
};

} // namespace
