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
  n += "_d" + std::to_string(headSize) + "_h" + std::to_string(headsPerProgram);
  if (warps != 4)
    n += "_w" + std::to_string(warps);
  if (extLogits)
    n += "_ext";
  if (usesMma())
    n += "_mma";
  if (usesWmma())
    n += "_wmma";
  return n;
}

int64_t mlir::paged_attn::chipVersion(StringRef chip) {
  if (!chip.consume_front("sm_"))
    return 0;
  chip.consume_back("a");
  int64_t v = 0;
  if (chip.getAsInteger(10, v))
    return 0;
  return v;
}

int64_t mlir::paged_attn::defaultMmaHeadsPerProgram(int64_t groupSize,
                                                    int64_t headSize) {
  return groupSize > 8 && headSize <= 128 ? 16 : 8;
}

int64_t mlir::paged_attn::defaultHeadsPerProgram(int64_t groupSize,
                                                 int64_t headSize,
                                                 int64_t cacheBytes) {
  int64_t cap = cacheBytes == 4 && headSize <= 128 ? 8 : 4;
  return std::min<int64_t>(llvm::PowerOf2Ceil(groupSize), cap);
}

/// Programs per SM for `warps`-warp programs, from a count planned for
/// 4-warp programs: the same warps per SM, so the same register cap.
static int64_t perWarps(int64_t programsOf4Warps, int64_t warps) {
  return std::max<int64_t>(1, programsOf4Warps * 4 / warps);
}

/// The element types and key packing of `op`, every kernel's.
static KernelPlan planTypes(DecodeV2Op op) {
  KernelPlan p;
  p.elemType = op.getQueryType().getElementType();
  p.cacheType = op.getKeyCacheType().getElementType();
  p.headSize = op.getHeadSize();
  p.cacheBytes = p.cacheType.getIntOrFloatBitWidth() / 8;
  p.keyPack = 16 / p.cacheBytes;
  p.chunks = p.headSize / p.keyPack;
  p.extLogits = op.getAlibiSlopes() || op.getLogitsSoftCap();
  return p;
}

/// The partition kernel `p` runs on chip sm_`sm`: tensor cores where the
/// chip has mma.sync.m16n8k16 and the cache suits them, wmma on sm_7x for
/// f16 groups that fill its tile, else SIMT; `options.kernel` forces one.
static LogicalResult chooseKind(DecodeV2Op op,
                                const PagedAttnToGPUOptions &options,
                                int64_t sm, int64_t group, KernelPlan &p) {
  // fp8 caches join when the chip widens them to f16 in hardware, with f16
  // queries or bf16 ones staged as f16 (KernelPlan::queryToF16).
  bool mmaTypes = (p.cacheType == p.elemType &&
                   (p.cacheType.isF16() || p.cacheType.isBF16())) ||
                  (p.fp8Hardware && (p.elemType.isF16() || p.elemType.isBF16()));
  bool mmaChip = sm >= 80;
  // wmma: f16 only (sm_7x has no bf16 tensor cores), one 8-head tile, head
  // sizes whose value rows fill m8n32k16 blocks and whose staging fits the
  // 48 KB of static workgroup memory.
  bool wmmaOk = sm >= 70 && p.elemType.isF16() && p.cacheType.isF16() &&
                p.headSize % 32 == 0 && p.headSize <= 128 &&
                (options.headsPerProgram == 0 || options.headsPerProgram == 8);
  if (options.kernel == "wmma") {
    if (!wmmaOk)
      return op.emitOpError("kernel=wmma needs sm_70 or newer, an f16 query "
                            "and cache, head_size a multiple of 32 up to 128 "
                            "and heads-per-program 8 (got ")
             << options.chip << ", " << p.elemType << "/" << p.cacheType
             << ", head_size " << p.headSize << ", heads-per-program "
             << options.headsPerProgram << ")";
    p.kind = KernelKind::Wmma;
  } else if (options.kernel == "mma") {
    if (!mmaChip || !mmaTypes)
      return op.emitOpError("kernel=mma needs sm_80 or newer (got ")
             << options.chip << ") and f16 or bf16 caches of the query's "
             << "type, or fp8 caches with 16-bit queries on sm_89+ (got "
             << p.cacheType << ")";
    p.kind = KernelKind::Mma;
  } else if (options.kernel == "auto") {
    if (mmaChip && mmaTypes)
      p.kind = KernelKind::Mma;
    else if (sm < 80 && wmmaOk &&
             (options.headsPerProgram == 8 || group >= kWmmaMinGroup))
      p.kind = KernelKind::Wmma;
  } else if (options.kernel != "simt") {
    return op.emitOpError("kernel must be auto, simt, mma or wmma (got '")
           << options.kernel << "')";
  }
  return success();
}

/// The tensor-core kernel's tile and occupancy.
static LogicalResult planMma(DecodeV2Op op,
                             const PagedAttnToGPUOptions &options, int64_t sm,
                             int64_t group, KernelPlan &p) {
  p.headsPerProgram = options.headsPerProgram > 0
                          ? options.headsPerProgram
                          : defaultMmaHeadsPerProgram(group, p.headSize);
  if (p.headsPerProgram != 8 && p.headsPerProgram != 16)
    return op.emitOpError("heads-per-program (")
           << p.headsPerProgram
           << ") of the tensor-core kernel must be 8 or 16 (n8 blocks)";
  if (p.headsPerProgram == 16 && p.headSize > 128)
    return op.emitOpError("heads-per-program 16 of the tensor-core kernel "
                          "needs head_size <= 128 (got ")
           << p.headSize << "): its accumulators would spill";
  // One 16-token m-block of keys per warp step; its 8-byte value loads
  // need 4 tokens of one block.
  p.tokenStep = 16;
  // Occupancy: a memory-bound kernel wants as many warps in flight as the
  // registers allow. The accumulators (4 per m16 block and n8 block) set
  // the budget; these are the most programs per SM ptxas fits without
  // spilling, measured on every head size and tile for sm_80 and sm_90.
  // ALiBi and the soft cap (_ext) cost about as many registers as 16
  // more accumulators. ptxas for sm_80 needs a few more registers than
  // for sm_90 at the same tile, so its steps are 8 accumulators lower.
  int64_t accumulators = p.headSize / 4 * (p.headsPerProgram / 8) +
                         (p.extLogits ? 16 : 0);
  if (sm < 90)
    accumulators += 8;
  // With _ext logits a partial last chunk quad (head sizes 80, 112) costs
  // its clamped indices too (d112 spilled at 3 programs on sm_90).
  if (p.extLogits && p.chunks % 4 != 0)
    accumulators += 8;
  p.programsPerSM = perWarps(
      accumulators <= 32 ? 4 : accumulators <= 48 ? 3 : 2, p.warps);
  // The value loads read 32 bytes of a head dim's row per step: all of it
  // at block 16, a quarter at 64, an eighth at 128, each its own L2
  // request. Asking the L2 to fetch 256 bytes around a miss brought
  // blocks 64 and 128 from 1.021-1.053x block 16's time to 1.007-1.023x
  // on an H100 (GQA and MHA d128, 64 x 4096; block 16 unchanged;
  // docs/performance.md). Unmeasured before sm_90 (and PTX 7.4 there on
  // sm_80): none.
  p.l2PrefetchBytes = options.l2PrefetchBytes >= 0 ? options.l2PrefetchBytes
                      : sm >= 90                   ? 256
                                                   : 0;
  return success();
}

/// The SIMT kernel's lane mapping (KernelPlan.h).
static LogicalResult planSimt(DecodeV2Op op,
                              const PagedAttnToGPUOptions &options,
                              int64_t group, KernelPlan &p) {
  p.headsPerProgram = options.headsPerProgram > 0
                          ? options.headsPerProgram
                          : defaultHeadsPerProgram(group, p.headSize,
                                                   p.cacheBytes);
  if (!llvm::isPowerOf2_64(p.headsPerProgram) || p.headsPerProgram > 16)
    return op.emitOpError("heads-per-program (")
           << p.headsPerProgram << ") must be a power of two up to 16";
  // A lane holds pieces of a token's key of at most 8 elements: 16 bytes
  // (8 for fp8, whose 16-element chunks would need twice the registers), or
  // 8 bytes with simt-piece-bytes=8, which puts twice the lanes on a token
  // and needs fewer registers (f16 d128 tile 4 on sm_70: 222 -> 159) but
  // was no faster through the JIT (docs/performance.md, 2026-12-05).
  int64_t pieceBytes = options.simtPieceBytes ? options.simtPieceBytes : 16;
  p.pieceElems = std::min<int64_t>(pieceBytes / p.cacheBytes, 8);
  p.pieces = p.headSize / p.pieceElems;
  int64_t padded = llvm::PowerOf2Ceil(p.pieces);
  p.lanesPerToken = std::min<int64_t>(padded, 32);
  p.groups = 32 / p.lanesPerToken;
  p.piecesPerLane = padded / p.lanesPerToken;
  // A lane group owns the tokens of one value-row load per step: keyPack
  // (16 bytes) for 16- and 32-bit caches, 8 (8 bytes) for fp8, whose 16
  // tokens' scores would not fit the registers.
  p.groupTokens = std::min<int64_t>(p.keyPack, 8);
  // block_size is a run-time parameter, a power of two from 8 (the
  // verifier and the runtime check it): a group's tokens never straddle
  // two blocks.
  assert(p.groupTokens <= 8 && "block sizes start at 8");
  p.tokenStep = p.groups * p.groupTokens;
  p.dimsPerLane = llvm::divideCeil(p.headSize, p.lanesPerToken);
  return success();
}

FailureOr<KernelPlan>
mlir::paged_attn::planKernel(DecodeV2Op op,
                             const PagedAttnToGPUOptions &options) {
  KernelPlan p = planTypes(op);
  int64_t group = op.getNumHeads() / op.getNumKvHeads();
  if (options.simtPieceBytes != 0 && options.simtPieceBytes != 8 &&
      options.simtPieceBytes != 16)
    return op.emitOpError("simt-piece-bytes (")
           << options.simtPieceBytes << ") must be 8 or 16";
  if (!llvm::is_contained({-1, 0, 64, 128, 256}, options.l2PrefetchBytes))
    return op.emitOpError("l2-prefetch-bytes (")
           << options.l2PrefetchBytes << ") must be 0, 64, 128 or 256 (-1: "
           << "the rule)";
  int64_t sm = chipVersion(options.chip);
  if (sm == 0)
    return op.emitOpError("unknown chip '") << options.chip << "'";
  p.fp8Hardware = p.fp8Cache() && sm >= 89;
  if (failed(chooseKind(op, options, sm, group, p)))
    return failure();

  p.warps = options.warps;
  if (p.warps < 1 || p.warps > 16)
    return op.emitOpError("warps (") << p.warps << ") must be in [1, 16]";
  LogicalResult planned = success();
  if (p.usesMma()) {
    planned = planMma(op, options, sm, group, p);
  } else if (p.usesWmma()) {
    p.headsPerProgram = 8;
    // A step is one m16n16k16 score block: 16 tokens.
    p.tokenStep = 16;
    p.programsPerSM = perWarps(wmmaProgramsPerSM(p.headSize), p.warps);
  } else {
    planned = planSimt(op, options, group, p);
  }
  if (failed(planned))
    return failure();
  if (options.clusterSize != 0) {
    // Thread-block clusters are sm_90's; 8 is the portable cluster size.
    if (options.clusterSize < 2 || options.clusterSize > 8)
      return op.emitOpError("cluster-size (")
             << options.clusterSize << ") must be 0 or in [2, 8]";
    if (sm < 90 || !p.usesMma())
      return op.emitOpError("cluster-size needs the tensor-core kernel on "
                            "sm_90 or newer (chip ")
             << options.chip << ")";
    p.clusterSize = options.clusterSize;
  }
  if (op.getPartitionSize() % p.tokenStep != 0)
    return op.emitOpError("partition_size ")
           << op.getPartitionSize() << " must be a multiple of the kernel's "
           << "token step (" << p.tokenStep << ")";
  return p;
}
