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

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include <algorithm>
#include <string>

namespace mlir::paged_attn {

class DecodeV2Op;

/// Which partition kernel a variant uses.
enum class KernelKind {
  /// fp32 FMAs on CUDA cores (every chip, every dtype): PartitionKernel.cpp.
  Simt,
  /// Tensor cores, mma.sync.m16n8k16 with fp32 accumulation (sm_80 and
  /// newer, f16 and bf16 caches; fp8 caches with f16 queries on sm_89 and
  /// newer, widened to f16 by cvt): MmaPartitionKernel.cpp.
  Mma,
  /// Tensor cores through the portable wmma instructions (m16n16k16 scores,
  /// m8n32k16 weighted values, fp32 accumulation), f16 caches on sm_70 to
  /// sm_7x: Volta's only register-level mma (m8n8k4) is emulated on newer
  /// chips, wmma is not. K and V pass through workgroup memory, whose
  /// fragment layout the instructions own: WmmaPartitionKernel.cpp.
  Wmma,
};

/// SIMT lane mapping (one warp, 32 lanes). A token's key is `chunks` 16-byte
/// chunks of `keyPack` elements, read as `pieces` pieces of `pieceElems`
/// (a whole chunk, or half of an fp8 one or of any chunk with
/// simt-piece-bytes=8); `lanesPerToken` lanes (a lane
/// group) share a token, each holding `piecesPerLane` of its pieces, so a
/// warp has `groups = 32 / lanesPerToken` lane groups. A group owns
/// `groupTokens` consecutive tokens per step — exactly one load of a value
/// row (16 bytes; 8 for fp8) —
/// so the scores a group computes for K are the weights it needs for V and
/// no value crosses lanes inside the token loop. A warp step consumes
/// `tokenStep = groups * groupTokens` tokens.
struct KernelPlan {
  KernelKind kind = KernelKind::Simt;
  // The variant key.
  Type elemType;      // query and output
  Type cacheType;     // key and value cache
  // No tmp_output type: the kernels take it at run time (`tmp_f32`), f32 or
  // the query's 16-bit type, so one variant serves both.
  int64_t headSize;
  // No block size: it is the kernels' run-time `block_size` parameter (a
  // power of two in [8, 128]), so one variant serves every block size.
  int64_t headsPerProgram; // GQA tile
  int64_t warps;
  /// ALiBi and the logits soft cap compiled in ("_ext" variants): they cost
  /// registers, so variants without them serve the calls that need neither.
  /// The sliding window is in every variant (it costs per partition, not
  /// per token).
  bool extLogits = false;
  /// Programs per SM the register allocation must allow (nvvm.minctasm):
  /// the occupancy the kernel is planned for, as high as ptxas can go
  /// without spilling.
  int64_t programsPerSM = 1;
  /// The tensor-core kernel's L2 prefetch size hint on its cache loads, in
  /// bytes (64, 128, 256; 0: plain loads): option l2-prefetch-bytes.
  int64_t l2PrefetchBytes = 0;
  /// Programs per thread-block cluster of the variant's cluster kernel (the
  /// one-pass kernel with each context split over the cluster's programs,
  /// merged over distributed shared memory); 0: the variant has none.
  int64_t clusterSize = 0;

  // Derived lane mapping (SIMT; the tensor-core kernel uses only
  // cacheBytes, keyPack and chunks, and a fixed 16-token step).
  int64_t cacheBytes;    // bytes per cache element
  int64_t keyPack;       // x: cache elements per 16 bytes
  int64_t chunks;        // head_size / x
  int64_t lanesPerToken; // power of two <= 32
  int64_t groups;        // 32 / lanesPerToken
  int64_t pieceElems;    // elements of a key piece: min(x, 8), or 8 bytes
  int64_t pieces;        // head_size / pieceElems
  int64_t piecesPerLane; // key pieces a lane holds per token
  int64_t groupTokens;   // tokens a lane group owns per step: min(x, 8)
  int64_t tokenStep;     // tokens a warp consumes per step
  int64_t dimsPerLane;   // value rows (head dims) a lane accumulates

  int64_t threads() const { return warps * 32; }
  /// An fp8 cache (f8E4M3FN or f8E5M2): dequantized in registers, with the
  /// k_scale / v_scale parameters.
  bool fp8Cache() const {
    return isa<Float8E4M3FNType, Float8E5M2Type>(cacheType);
  }
  /// fp8 caches are widened by cvt.rn.f16x2.e4m3x2/e5m2x2 (sm_89 and
  /// newer) instead of integer shifts.
  bool fp8Hardware = false;
  /// What the in-register widening of a cache element leaves out: the
  /// software path widens e4m3 through f16 bits without rebiasing its
  /// exponent (value / 2^8), so 2^8 joins k_scale and v_scale.
  float cacheFactor() const {
    return isa<Float8E4M3FNType>(cacheType) && !fp8Hardware ? 256.0f : 1.0f;
  }
  bool usesMma() const { return kind == KernelKind::Mma; }
  bool usesWmma() const { return kind == KernelKind::Wmma; }
  /// A bf16 query over an fp8 cache on the tensor cores: the cache widens
  /// to f16 in hardware (no e4m3 -> bf16 cvt exists), so the tile's query
  /// is staged as f16, scaled by the power of two that puts its largest
  /// element in [2^14, 2^15) (exact for every element down to 2^-28 of
  /// it), and the logits scaled back.
  bool queryToF16() const {
    return usesMma() && fp8Cache() && elemType.isBF16();
  }
  /// Whether a program serves several query tokens of its sequence (the
  /// tensor-core tile, when its group is smaller than the tile: HostLaunch's
  /// query packs, PartitionProgram::slotOf). Not the fp8 tile of head size
  /// 192: its per-slot masks do not fit the 168 registers of 3 programs
  /// per SM (ptxas 13 spills 8 bytes on sm_90), so it runs one token per
  /// program, as the SIMT and wmma kernels do.
  bool packsTokens() const {
    return usesMma() && !(fp8Cache() && headSize == 192);
  }
  /// f32 words of workgroup memory for the cross-warp merge (the epilogue
  /// layout: acc[warp][head][dim], m[warp][head], l[warp][head]).
  int64_t epilogueFloats() const {
    return warps * headsPerProgram * (headSize + 2);
  }
  /// f32 words each warp of the tensor-core kernel uses to turn its scores
  /// into the PV operand: two buffers of [head][kMmaScoreStride].
  static constexpr int64_t kMmaScoreStride = 20;
  /// Then the tile's query, staged once: per head, ceil(chunks / 4) * 4
  /// key chunks' worth of 4-word query chunks (two per fp8 key chunk),
  /// padded by 16 words against bank conflicts.
  /// The SIMT kernel's scratch is one score row per lane group:
  /// simtScoreRowFloats() words, see there.
  int64_t scratchFloats() const {
    if (usesWmma())
      return 0; // its own layout: wmma* below
    if (!usesMma())
      return warps * groups * simtScoreRowFloats();
    int64_t queryRow = 16 * ((chunks + 3) / 4) * (keyPack / 8) + 16;
    return warps * 2 * headsPerProgram * kMmaScoreStride +
           headsPerProgram * queryRow;
  }
  /// A SIMT lane group's step weights p[head][token] and the heads' rescale
  /// factors alpha[head], rounded up to 16 bytes for vector loads.
  int64_t simtScoreRowFloats() const {
    return (headsPerProgram * (groupTokens + 1) + 3) / 4 * 4;
  }
  /// First f32 word of the scratch: after the epilogue layout, 16-byte
  /// aligned for vector loads.
  int64_t scratchBase() const { return (epilogueFloats() + 3) / 4 * 4; }
  /// The cluster kernel's merged program state, which the other programs
  /// of its cluster read (acc[head][dim], then m[head], l[head]): at the
  /// scratch's place, dead after the token loop.
  int64_t clusterFloats() const {
    return clusterSize ? headsPerProgram * (headSize + 2) : 0;
  }
  /// All the workgroup memory of the partition kernel, in f32 words.
  int64_t sharedFloats() const {
    return usesWmma() ? wmmaBytes() / 4
                      : scratchBase() + std::max(scratchFloats(),
                                                 clusterFloats());
  }

  // The wmma kernel's workgroup memory, one byte buffer (32-byte aligned, as
  // wmma wants its rows) seen as f32 and as f16. The epilogue layout
  // (after the token loop) overlays the warps' step areas (during it);
  // the staged query follows both. Offsets in bytes (T = tokenStep):
  //   [0, wmmaWarpBytes * warps)  warp w's step area at w * wmmaWarpBytes:
  //       K      T x wmmaKeyStride f16     (the step's keys, [token][dim]),
  //       V      head_size x wmmaValueStride f16
  //                                        (its values, [dim][token]),
  //       S      16 x wmmaScoreStride f32  (its scores, [head][token]; rows
  //                                         8..15, of zero query rows,
  //                                         unread),
  //         then 8 x wmmaAlphaStride f32 at S   (each head's rescale factor
  //                                         along its row, once S is read)
  //         and  8 x wmmaValueStride f16 at wmmaPOffset  (the weights P,
  //                                         [head][token]; past the alpha
  //                                         matrix and S's rows 0..7);
  //   [wmmaQueryOffset, +16 x wmmaKeyStride f16)  the query, [head][dim],
  //       rows past the tile zero.
  // Every row stride is 32 or 96 bytes modulo the 128-byte bank period
  // (wmmaRowBytes), so the 8 rows a wmma load or store touches at once
  // spread over the banks (at most 2-way conflicts) instead of stacking on
  // the same ones.
  /// The row pitch in bytes for rows of `bytes`: a multiple of 32 (as wmma
  /// needs) that is 32 or 96 modulo 128.
  static int64_t wmmaRowBytes(int64_t bytes) {
    int64_t r = (bytes + 31) / 32 * 32;
    return r % 64 == 0 ? r + 32 : r;
  }
  /// Row strides, in elements: keys and query (f16), values and weights
  /// (f16), scores and the alpha matrix (f32).
  int64_t wmmaKeyStride() const { return wmmaRowBytes(2 * headSize) / 2; }
  int64_t wmmaValueStride() const { return wmmaRowBytes(2 * tokenStep) / 2; }
  int64_t wmmaScoreStride() const { return wmmaRowBytes(4 * tokenStep) / 4; }
  /// The alpha matrix's rows are 32 f32 (one m8n32k16 accumulator).
  static int64_t wmmaAlphaStride() { return wmmaRowBytes(4 * 32) / 4; }
  int64_t wmmaValueOffset() const { return 2 * tokenStep * wmmaKeyStride(); }
  int64_t wmmaSOffset() const {
    return wmmaValueOffset() + 2 * headSize * wmmaValueStride();
  }
  int64_t wmmaPOffset() const {
    return wmmaSOffset() +
           std::max(4 * 8 * wmmaAlphaStride(), 4 * 8 * wmmaScoreStride());
  }
  int64_t wmmaWarpBytes() const {
    return std::max(wmmaSOffset() + 4 * 16 * wmmaScoreStride(),
                    wmmaPOffset() + 2 * 8 * wmmaValueStride());
  }
  int64_t wmmaQueryOffset() const {
    return std::max(wmmaWarpBytes() * warps, 4 * epilogueFloats());
  }
  int64_t wmmaBytes() const {
    return wmmaQueryOffset() + 2 * 16 * wmmaKeyStride();
  }
  /// A stable name, e.g. "pa_f16_d128_h4", with
  /// "_ext" for ALiBi and soft cap, "_mma" and "_wmma" for the tensor-core
  /// kernels.
  std::string name() const;
};

/// The wmma kernel (sm_7x, f16): the smallest GQA group `kernel=auto` gives
/// it when the pass chooses the tile itself (heads-per-program 0); smaller
/// groups keep the SIMT kernel. heads-per-program 8 asks for it directly.
inline constexpr int64_t kWmmaMinGroup = 3;
/// Programs per SM the wmma kernel is planned for (nvvm.minctasm): what
/// ptxas fits without spilling on sm_70 (at 3 programs, head size 96 spills
/// in the _ext variants and 128 in all).
inline constexpr int64_t wmmaProgramsPerSM(int64_t headSize) {
  return headSize <= 64 ? 3 : 2;
}

/// Plans the variant for `op` (memref form); on failure reports why on the op.
FailureOr<KernelPlan> planKernel(DecodeV2Op op,
                                 const PagedAttnToGPUOptions &options);

/// Emits an error on `op` and fails if the conversion cannot lower it (tensor
/// form, features not implemented yet, no workspace, non-contiguous memrefs).
LogicalResult checkDecodeV2Lowerable(DecodeV2Op op);

/// The documented GQA tiling rule of the SIMT kernel: the smallest power of
/// two >= group size, capped by the register budget (no spills on sm_70 or
/// sm_90): 8 query heads per program for f32 caches up to head size 128,
/// else 4. Larger groups run ceil(group / tile) programs per KV head, each
/// reading the KV head's K/V.
int64_t defaultHeadsPerProgram(int64_t groupSize, int64_t headSize,
                               int64_t cacheBytes);

/// The tile rule of the tensor-core kernel: one n8 block of the mma (8 query
/// heads) for groups up to 8, two (16) for larger groups up to head size
/// 128, where the accumulators still fit in registers.
int64_t defaultMmaHeadsPerProgram(int64_t groupSize, int64_t headSize);

/// The SM version of a chip name ("sm_90a" -> 90), or 0 if it is not one.
int64_t chipVersion(StringRef chip);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELPLAN_H
