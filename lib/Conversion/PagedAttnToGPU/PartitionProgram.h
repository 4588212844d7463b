//===- PartitionProgram.h - what both partition kernels share ---*- C++ -*-===//
//
// The SIMT and the tensor-core partition kernels differ only in how a warp
// consumes its token steps. Everything around that is here: the signature
// (the bundle ABI), the prologue (which program, which partition), the
// sentinels of empty partitions, and the epilogue that merges the warps'
// online-softmax states through workgroup memory and writes the partition's
// statistics and partial output (or, one-pass, the output).
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_PARTITIONPROGRAM_H
#define PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_PARTITIONPROGRAM_H

#include "KernelPlan.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::paged_attn {

/// Builds one partition (or one-pass) kernel; subclasses emit the token
/// loop. Grid (partitions, KV heads x head tiles, sequences).
class PartitionProgram {
public:
  PartitionProgram(const KernelPlan &plan, bool onePass)
      : plan(plan), onePass(onePass) {}
  virtual ~PartitionProgram() = default;

  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, Location loc);

protected:
  /// The work of a non-empty partition [partStart, partEnd): the token loop,
  /// ending with each warp's state stored in the epilogue layout (see
  /// storeWarpState), then emitEpilogue.
  virtual void emitPartition(ImplicitLocOpBuilder &b) = 0;

  /// Query head of tile slot g, and whether it exists (the last tile of a
  /// group that is not a multiple of the tile is masked).
  std::pair<Value, Value> headOf(ImplicitLocOpBuilder &b, int64_t g);
  /// headOf(g), or the group's last head where slot g is masked: a row of
  /// the query that exists, whose results are dropped.
  Value safeHeadOf(ImplicitLocOpBuilder &b, int64_t g);
  /// Same, for a slot index computed at run time.
  std::pair<Value, Value> headOfSlot(ImplicitLocOpBuilder &b, Value slot);

  /// Epilogue layout, in f32 words of `shared`: acc[warp][g][dim], then
  /// m[warp][g] (log2 domain), then l[warp][g].
  Value accIndex(ImplicitLocOpBuilder &b, Value warpIdx, Value g, Value dim);
  Value mIndex(ImplicitLocOpBuilder &b, Value warpIdx, Value g);
  Value lIndex(ImplicitLocOpBuilder &b, Value warpIdx, Value g);
  /// Index of the first f32 word after the epilogue layout (kernel scratch).
  int64_t scratchBase() const { return plan.epilogueFloats(); }

  /// After a barrier: every thread finishes (head, dim) pairs, merging the
  /// warps with the log-sum-exp rule, and stores tmp_output, exp_sums and
  /// max_logits (or the output, one-pass).
  void emitEpilogue(ImplicitLocOpBuilder &b);

  const KernelPlan &plan;
  bool onePass;

  // Kernel arguments.
  Value query, keyCache, valueCache, blockTables, seqLens, output, expSums,
      maxLogits, tmpOutput, scale, maxBlocks, maxParts, partTokens, numKvHeads,
      groupSize, shared;
  // Values computed once in the prologue.
  Value tid, lane, warp, part, seq, kvHead, tile, numHeads, seqLen, partStart,
      partEnd, blockRow, kvHeadOffset, blockStride;

private:
  void emitBody(ImplicitLocOpBuilder &b);
  void emitSentinels(ImplicitLocOpBuilder &b);
};

/// The tensor-core partition kernel (MmaPartitionKernel.cpp).
gpu::GPUFuncOp buildMmaPartitionKernel(OpBuilder &moduleBuilder, Location loc,
                                       const KernelPlan &plan, bool onePass);
/// The SIMT partition kernel (PartitionKernel.cpp).
gpu::GPUFuncOp buildSimtPartitionKernel(OpBuilder &moduleBuilder,
                                        Location loc, const KernelPlan &plan,
                                        bool onePass);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_PARTITIONPROGRAM_H
