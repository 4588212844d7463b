//===- KernelPlan.cpp - the shape of one kernel variant -------------------===//
//
// The planning rule, in one place. See KernelPlan.h for the lane mapping and
// docs/kernels.md for why it is shaped this way.
//
//===----------------------------------------------------------------------===//

#include "KernelPlan.h"

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::paged_attn;

static std::string typeName(Type t) {
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  if (t.isF32())
    return "f32";
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

std::string KernelPlan::name() const {
  std::string n = "pa_" + typeName(elemType);
  if (cacheType != elemType)
    n += "_kv" + typeName(cacheType);
  n += "_d" + std::to_string(headSize) + "_b" + std::to_string(blockSize) +
       "_h" + std::to_string(headsPerProgram);
  if (!tmpType.isF32())
    n += "_tmp" + typeName(tmpType);
  if (warps != 4)
    n += "_w" + std::to_string(warps);
  return n;
}

int64_t mlir::paged_attn::defaultHeadsPerProgram(int64_t groupSize,
                                                 int64_t headSize,
                                                 int64_t cacheBytes) {
  int64_t cap = cacheBytes == 4 && headSize <= 128 ? 8 : 4;
  return std::min<int64_t>(llvm::PowerOf2Ceil(groupSize), cap);
}

FailureOr<KernelPlan>
mlir::paged_attn::planKernel(DecodeV2Op op,
                             const PagedAttnToGPUOptions &options) {
  KernelPlan p;
  p.elemType = op.getQueryType().getElementType();
  p.cacheType = op.getKeyCacheType().getElementType();
  p.tmpType = op.getTmpOutput()
                  ? cast<ShapedType>(op.getTmpOutput().getType())
                        .getElementType()
                  : Float32Type::get(op.getContext());
  p.headSize = op.getHeadSize();
  p.blockSize = op.getBlockSize();
  int64_t group = op.getNumHeads() / op.getNumKvHeads();
  p.headsPerProgram = options.headsPerProgram > 0
                          ? options.headsPerProgram
                          : defaultHeadsPerProgram(
                                group, p.headSize,
                                p.cacheType.getIntOrFloatBitWidth() / 8);
  p.warps = options.warps;
  if (!llvm::isPowerOf2_64(p.headsPerProgram) || p.headsPerProgram > 16)
    return op.emitOpError("heads-per-program (")
           << p.headsPerProgram << ") must be a power of two up to 16";
  if (p.warps < 1 || p.warps > 16)
    return op.emitOpError("warps (") << p.warps << ") must be in [1, 16]";

  p.cacheBytes = p.cacheType.getIntOrFloatBitWidth() / 8;
  p.keyPack = 16 / p.cacheBytes;
  p.chunks = p.headSize / p.keyPack;
  int64_t padded = llvm::PowerOf2Ceil(p.chunks);
  p.lanesPerToken = std::min<int64_t>(padded, 32);
  p.groups = 32 / p.lanesPerToken;
  p.chunksPerLane = padded / p.lanesPerToken;
  // A value row's 16-byte chunk holds keyPack tokens of one block.
  p.groupTokens = p.keyPack;
  if (p.blockSize % p.groupTokens != 0)
    return op.emitOpError("block_size ")
           << p.blockSize << " is smaller than one 16-byte value chunk ("
           << p.groupTokens << " tokens of " << p.cacheType
           << "): not supported by the lowering";
  p.tokenStep = p.groups * p.groupTokens;
  p.dimsPerLane = llvm::divideCeil(p.headSize, p.lanesPerToken);
  if (op.getPartitionSize() % p.tokenStep != 0)
    return op.emitOpError("partition_size ")
           << op.getPartitionSize() << " must be a multiple of the kernel's "
           << "token step (" << p.tokenStep << ")";
  return p;
}
