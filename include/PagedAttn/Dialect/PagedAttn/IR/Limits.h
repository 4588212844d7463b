//===- Limits.h - what the paged_attn kernels support -----------*- C++ -*-===//
//
// The variant space the lowering generates kernels for. The verifier rejects
// what lies outside it so that an op that verifies always lowers; the
// lowering, the kernel library and the runtime read the same lists.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_DIALECT_PAGEDATTN_IR_LIMITS_H
#define PAGED_ATTN_DIALECT_PAGEDATTN_IR_LIMITS_H

#include "llvm/ADT/ArrayRef.h"
#include <cstdint>

namespace mlir::paged_attn {

/// Head sizes the kernels specialize on.
inline constexpr int64_t kSupportedHeadSizes[] = {64, 80, 96, 112, 128, 192, 256};
/// Tokens per KV-cache block: powers of two, so that the kernels, which
/// take the block size as a run-time parameter, address blocks with a
/// shift and a mask, and the tokens a lane group or half warp loads
/// together (at most 8) never straddle two blocks. The runtime checks the
/// same range (runtime/src/checks.cpp).
inline constexpr int64_t kSupportedBlockSizes[] = {8, 16, 32, 64, 128};
/// Query tokens per sequence (query_start_loc): 1 + up to 15 draft tokens.
inline constexpr int64_t kMaxQueryLen = 16;
/// Bytes of one token's key that are contiguous in the x-packed key layout.
inline constexpr int64_t kKeyPackBytes = 16;
/// Partition sizes (tokens of context per partition program): powers of two
/// in this range, so that every kernel's token step divides them.
inline constexpr int64_t kMinPartitionSize = 64;
inline constexpr int64_t kMaxPartitionSize = 16384;

inline bool contains(llvm::ArrayRef<int64_t> list, int64_t v) {
  return llvm::is_contained(list, v);
}

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_DIALECT_PAGEDATTN_IR_LIMITS_H
