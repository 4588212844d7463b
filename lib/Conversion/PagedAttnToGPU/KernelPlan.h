//===- KernelPlan.h - the shape of one kernel variant -----------*- C++ -*-===//
//
// Everything the kernel builders need to know about a variant, derived once
// from the op's types and the pass options: how a warp's lanes map onto the
// x-packed key layout and the value layout, how many tokens a warp consumes
// per step, how many query heads a program computes.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELPLAN_H
#define PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELPLAN_H

#include "PagedAttn/Conversion/PagedAttnToGPU/PagedAttnToGPU.h"

#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include <string>

namespace mlir::paged_attn {

class DecodeV2Op;

/// Lane mapping (one warp, 32 lanes). A token's key is `chunks` 16-byte
/// chunks of `keyPack` elements; `lanesPerToken` lanes (a lane group) share
/// a token, each holding `chunksPerLane` of its chunks, so a warp has
/// `groups = 32 / lanesPerToken` lane groups. A group owns `groupTokens`
/// consecutive tokens per step — exactly one 16-byte chunk of a value row —
/// so the scores a group computes for K are the weights it needs for V and
/// no value crosses lanes inside the token loop. A warp step consumes
/// `tokenStep = groups * groupTokens` tokens.
struct KernelPlan {
  // The variant key.
  Type elemType;      // query and output
  Type cacheType;     // key and value cache
  Type tmpType;       // tmp_output
  int64_t headSize;
  int64_t blockSize;
  int64_t headsPerProgram; // GQA tile
  int64_t warps;

  // Derived lane mapping.
  int64_t cacheBytes;    // bytes per cache element
  int64_t keyPack;       // x: cache elements per 16 bytes
  int64_t chunks;        // head_size / x
  int64_t lanesPerToken; // power of two <= 32
  int64_t groups;        // 32 / lanesPerToken
  int64_t chunksPerLane; // key chunks a lane holds per token
  int64_t groupTokens;   // tokens a lane group owns per step (= x)
  int64_t tokenStep;     // tokens a warp consumes per step
  int64_t dimsPerLane;   // value rows (head dims) a lane accumulates

  int64_t threads() const { return warps * 32; }
  /// f32 words of workgroup memory for the cross-warp merge.
  int64_t sharedFloats() const { return warps * headsPerProgram * (headSize + 2); }
  /// A stable name, e.g. "pa_f16_d128_b16_h4" (tmp_output f32).
  std::string name() const;
};

/// Plans the variant for `op` (memref form); on failure reports why on the op.
FailureOr<KernelPlan> planKernel(DecodeV2Op op,
                                 const PagedAttnToGPUOptions &options);

/// Emits an error on `op` and fails if the conversion cannot lower it (tensor
/// form, features not implemented yet, no workspace, non-contiguous memrefs).
LogicalResult checkDecodeV2Lowerable(DecodeV2Op op);

/// The documented GQA tiling rule: the smallest power of two >= group size,
/// capped by the register budget (no spills on sm_70 or sm_90): 8 query heads
/// per program for f32 caches up to head size 128, else 4. Larger groups run
/// ceil(group / tile) programs per KV head, each reading the KV head's K/V.
int64_t defaultHeadsPerProgram(int64_t groupSize, int64_t headSize,
                               int64_t cacheBytes);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELPLAN_H
