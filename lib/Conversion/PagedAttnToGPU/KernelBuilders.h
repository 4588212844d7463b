//===- KernelBuilders.h - the kernels of a variant --------------*- C++ -*-===//
//
// Builders of the device functions of one kernel variant, one per phase.
// Each creates a gpu.func at the builder's insertion point (inside the
// variant's gpu.module). Parameter order is the bundle ABI
// (docs/bundle-format.md).
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELBUILDERS_H
#define PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELBUILDERS_H

#include "KernelPlan.h"

#include "PagedAttn/Conversion/PagedAttnToGPU/KernelParams.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <string>

namespace mlir::paged_attn {

/// Elements of the flat view a kernel parameter takes. The kernels receive
/// bare pointers (the runtime passes CUdeviceptr); upstream's bare-pointer
/// calling convention needs a static shape, so the views are typed as large
/// as the address space allows and the kernels index inside the tensors the
/// host passes.
inline constexpr int64_t kFlatExtent = int64_t(1) << 40;

/// memref<kFlatExtent x elementType>, the type of every kernel pointer.
inline MemRefType flatMemRefType(Type elementType) {
  return MemRefType::get({kFlatExtent}, elementType);
}

/// One kernel's parameters (the table of KernelParams.h, filtered for the
/// variant): its gpu.func argument types, and its arguments by name.
class KernelSignature {
public:
  KernelSignature(KernelRole role, const KernelPlan &plan)
      : params(kernelParams(role, plan.extLogits, plan.fp8Cache())),
        plan(plan) {}
  /// The gpu.func argument types, in order.
  SmallVector<Type> types(MLIRContext *ctx) const;
  /// The argument `name` of the kernel's entry block, or null where this
  /// kernel (in this variant) does not take it.
  Value arg(Block &entry, StringRef name) const;

  const SmallVector<KernelParam> params;

private:
  const KernelPlan &plan;
};

/// `<variant>_partition`, `<variant>_onepass` or `<variant>_cluster` (`role`),
/// with the parameters KernelSignature gives for its role. Grid (partitions
/// * query slots, num_kv_heads * head tiles, num_seqs), plan.threads();
/// query_slots = max(max_query_len, 1) (KernelIdioms.h, QueryRow). The
/// cluster kernel's x is cluster size * query slots (programs of a cluster
/// adjacent in x).
gpu::GPUFuncOp buildPartitionKernel(OpBuilder &moduleBuilder, Location loc,
                                    const KernelPlan &plan, KernelRole role);

/// The partition grid's programs per (partition, KV tile, sequence) as a
/// manifest formula: the query slots, or, where the tile packs several
/// query tokens' heads (PartitionProgram::packsTokens), the packs of
/// max(heads_per_program / group_size, 1) tokens.
inline std::string queryPacks(bool packsTokens) {
  return packsTokens ? "ceil(query_slots/max(1,heads_per_program/group_size))"
                     : "query_slots";
}

/// Warps of a reduce program.
inline constexpr int64_t kReduceWarps = 4;
/// Partitions one reduce warp merges per step: a program serves
/// ceil(kReduceWarps / ceil(num_partitions / kReducePartitionsPerWarp))
/// query heads (4, 2 or 1), so a head with at most this many partitions is
/// one warp's single step and longer contexts spread over more warps.
inline constexpr int64_t kReducePartitionsPerWarp = 8;

/// The reduce grid's x dimension as a manifest formula
/// (docs/bundle-format.md): ceil(num_heads/ceil(4/ceil(num_partitions/8)))
/// programs per query row, times the query slots.
inline std::string reduceGridX() {
  return "ceil(num_heads/ceil(" + std::to_string(kReduceWarps) +
         "/ceil(num_partitions/" + std::to_string(kReducePartitionsPerWarp) +
         ")))*query_slots";
}

/// Workgroup floats of the reduce kernel: the warps' accumulators
/// (kReduceWarps x head_size), then their maxima and exp sums.
inline constexpr int64_t reduceSharedFloats(int64_t headSize) {
  return kReduceWarps * (headSize + 2);
}

/// `<variant>_reduce`, with the parameters KernelSignature gives for it
/// (num_partitions is the launched partition count). Grid
/// (ceil(num_heads / heads per program) * query_slots, num_seqs),
/// kReduceWarps * 32 threads.
gpu::GPUFuncOp buildReduceKernel(OpBuilder &moduleBuilder, Location loc,
                                 const KernelPlan &plan);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELBUILDERS_H
