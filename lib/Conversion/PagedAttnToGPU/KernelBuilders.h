//===- KernelBuilders.h - the three kernels of a variant --------*- C++ -*-===//
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

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

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

/// `<variant>_partition` (or `<variant>_onepass` when `onePass`):
/// (query, key_cache, value_cache, block_tables, seq_lens, output, exp_sums,
///  max_logits, tmp_output : flat memrefs, scale : f32, max_blocks_per_seq,
///  max_num_partitions, partition_tokens, num_kv_heads, group_size : i32).
/// Grid (partitions, num_kv_heads * head tiles, num_seqs), plan.threads().
gpu::GPUFuncOp buildPartitionKernel(OpBuilder &moduleBuilder, Location loc,
                                    const KernelPlan &plan, bool onePass);

/// Threads of the reduce kernel: one warp per query head.
inline constexpr int64_t kReduceWarps = 4;

/// `<variant>_reduce`: (output, exp_sums, max_logits, tmp_output, seq_lens :
/// flat memrefs, num_heads, max_num_partitions, partition_tokens : i32).
/// Grid (ceil(num_heads / 4), num_seqs), 128 threads.
gpu::GPUFuncOp buildReduceKernel(OpBuilder &moduleBuilder, Location loc,
                                 const KernelPlan &plan);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELBUILDERS_H
