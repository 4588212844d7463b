//===- MmaPartitionKernel.cpp - the tensor-core partition kernel ----------===//
//
// Builds `<variant>_mma_partition` and `_onepass` for f16 and bf16 caches on
// sm_80 and newer: the scores and the weighted values of a warp step are two
// mma.sync.m16n8k16 products with fp32 accumulation, so the arithmetic per
// byte of K/V is a few instructions and the kernel runs at the memory
// bandwidth whatever the GQA group (docs/kernels.md).
//
// A warp step is 16 tokens. With lane = 4 * g + t (g = lane / 4, t = lane % 4)
// and the mma fragment layouts of the PTX ISA:
//
//   S^T[16 tokens x 8 heads] = K[16 tokens x D] . Q^T[D x 8 heads]
//     A = K: rows g and g + 8 are tokens g and g + 8 of the step; the lane
//       loads their 16-byte key chunks 4j + t (j < ceil(D/32)), and the four
//       32-bit words of a chunk are its A operands of k16 blocks 2j and
//       2j + 1 (any permutation of the dims serves a dot product, as long as
//       Q's B operand uses the same one);
//     B = Q^T: column g is query head g of the n8 block, chunk 4j + t;
//     C: the lane holds tokens g, g + 8 x heads 2t, 2t + 1.
//   O^T[D x 8 heads] += V^T[D x 16 tokens] . P^T[16 tokens x 8 heads]
//     A = V^T: rows are dims 16m + g and 16m + g + 8; the lane loads 8 bytes,
//       tokens 4t .. 4t + 3, of each (value layout [D][block]);
//     B = P^T: head g, tokens 4t .. 4t + 3 - the weights of other lanes, so
//       each warp transposes them through 2 x 8 x 20 floats of workgroup
//       memory (double-buffered, one bar.warp.sync per step, two in a
//       masked step);
//     C: the lane holds dims 16m + g, 16m + g + 8 x heads 2t, 2t + 1 - the
//       heads whose online-softmax state (max, sum) it keeps.
//
// Sketch of one step (f16, d128, b16, 8 heads):
//
//   %k = vector.load %key_cache[...] {alignment = 16} : vector<8xf16>  x 8
//   %v = vector.load %value_cache[...] {alignment = 8} : vector<4xf16> x 16
//   %s = nvvm.mma.sync A[..] B[..] C[..] {shape = m16n8k16} x 8  // scores
//   %m = arith.select ... gpu.shuffle xor 4, 8, 16               // step max
//   memref.store %p, %scratch[...]; nvvm.bar.warp.sync; vector.load
//   %o = nvvm.mma.sync A[..] B[..] C[..] {shape = m16n8k16} x 8  // P . V
//
//===----------------------------------------------------------------------===//

#include "KernelIdioms.h"
#include "PartitionProgram.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

/// The per-lane state, flattened for scf.for iter_args: for each n8 block
/// `n` of heads and each of the lane's two heads `e` (2t + e), the running
/// max m (log2 domain) and sum l (over the lane's tokens), and the four
/// accumulators of each m16 block of dims.
struct MmaState {
  int64_t nBlocks, mBlocks;
  SmallVector<Value> values;

  Value &m(int64_t n, int64_t e) { return values[2 * n + e]; }
  Value &l(int64_t n, int64_t e) { return values[2 * nBlocks + 2 * n + e]; }
  Value &acc(int64_t n, int64_t mb, int64_t r) {
    return values[4 * nBlocks + (n * mBlocks + mb) * 4 + r];
  }
};

class MmaPartitionBuilder : public PartitionProgram {
public:
  using PartitionProgram::PartitionProgram;

private:
  /// One warp step's values, handed from phase to phase of emitStep.
  struct MmaStep {
    Value step, tok0;
    StepMask mask;
    /// The step's two halves of 8 tokens: block base, slot of the half's
    /// first token in its block, whether its block-table entry is bad.
    Value halfBase[2], halfSlot[2], halfBad[2];
    /// Key words [row half][chunk quad] -> 4 words; values [dim half][m block].
    SmallVector<SmallVector<Value>> keyWords[2];
    SmallVector<Value> vecV[2];
    /// The lane's value tokens (4t), the next value load's offset, the stride.
    Value vTok, vOfs, vStride;
    /// Token rows g and g + 8: offset in the step, ALiBi position, and with
    /// StepMask::range whether the token is in the program's range.
    Value rowTok[2], rowPos[2], rowValid[2];

    bool masked() const { return mask != StepMask::none; }
  };

  void emitPartition(ImplicitLocOpBuilder &b) override;
  /// Whether stageOperands issues the query's loads (stageQuery stores
  /// them): one-pass kernels whose threads load at most one chunk each.
  /// With the loads hoisted, ptxas 13 (sm_90) spilled the partition
  /// kernels at their register caps (d128, d256 _ext) and the one-pass
  /// kernels of two chunks per thread (d192).
  bool hoistsQuery() const {
    return onePass && plan.headsPerProgram * queryChunks() <= plan.threads();
  }
  void stageOperands(ImplicitLocOpBuilder &b) override {
    if (hoistsQuery())
      loadedQuery = loadQuery(b, plan.headsPerProgram, plan.headsPerProgram,
                              queryChunks());
  }
  /// Stages the tile's query in workgroup memory (one barrier).
  void stageQuery(ImplicitLocOpBuilder &b);
  SmallVector<QueryChunk> loadedQuery;
  /// Workgroup index of query chunk `chunk` of tile slot `slot`.
  Value qIndex(ImplicitLocOpBuilder &b, Value slot, Value chunk);
  /// Query chunks per staged row (zeros past head_size).
  int64_t queryChunks() const { return 4 * quads() * ratio(); }
  /// queryToF16: the staged bf16 rows rescaled by the tile's power of two
  /// and rounded to f16 in place (two barriers); logitScale takes it back.
  void scaleQueryToF16(ImplicitLocOpBuilder &b);
  /// The tile's largest |q| as bf16 bits, in every thread (one barrier).
  Value queryMaxBits(ImplicitLocOpBuilder &b);
  /// The staged chunks times `down`, as f16 in place (one barrier).
  void roundQueryToF16(ImplicitLocOpBuilder &b, Value down);
  /// Staged query chunk (slot, chunk) as 8 x i16.
  Value stagedChunkBits(ImplicitLocOpBuilder &b, Value slot, Value chunk);
  static Value pow2(ImplicitLocOpBuilder &b, Value e);
  /// Runs `body(live, slot, chunk)` for every staged query chunk (thread
  /// tid takes chunks tid, tid + threads, ...; `live`: whether it has one
  /// this round, uniform over a warp as the counts are multiples of 32).
  void forQueryChunks(
      ImplicitLocOpBuilder &b,
      llvm::function_ref<void(ImplicitLocOpBuilder &, Value live, Value slot,
                              Value chunk)>
          body);
  /// One warp step, in the phases below: every load, the score products,
  /// the logits, the online softmax, the weights through workgroup memory,
  /// the weighted values.
  MmaState emitStep(ImplicitLocOpBuilder &b, Value step, StepMask mask,
                    MmaState state);
  void locateHalves(ImplicitLocOpBuilder &b, MmaStep &st);
  void loadKeys(ImplicitLocOpBuilder &b, MmaStep &st);
  void planValueLoads(ImplicitLocOpBuilder &b, MmaStep &st);
  void loadValues(ImplicitLocOpBuilder &b, MmaStep &st);
  SmallVector<SmallVector<Value>> scoreProducts(ImplicitLocOpBuilder &b,
                                                MmaStep &st);
  /// Whether token `ofs` of the step is in the program's range (packed
  /// slots: in the union the step-relative i32 range covers).
  Value inRange(ImplicitLocOpBuilder &b, MmaStep &st, Value ofs);
  void planRows(ImplicitLocOpBuilder &b, MmaStep &st);
  Value slotValid(ImplicitLocOpBuilder &b, MmaStep &st, int64_t n, int64_t r,
                  int64_t e);
  SmallVector<Value> scaledLogits(ImplicitLocOpBuilder &b, MmaStep &st,
                                  ArrayRef<SmallVector<Value>> s);
  /// Logit [n][r][e] with ALiBi and the step's mask.
  Value logit(ImplicitLocOpBuilder &b, MmaStep &st, ArrayRef<Value> logits,
              int64_t n, int64_t r, int64_t e);
  void foldSoftmax(ImplicitLocOpBuilder &b, MmaStep &st, ArrayRef<Value> logits,
                   MmaState &state, SmallVector<Value> &alpha,
                   SmallVector<SmallVector<Value>> &p);
  SmallVector<SmallVector<Value>> shareWeights(ImplicitLocOpBuilder &b,
                                               MmaStep &st,
                                               ArrayRef<SmallVector<Value>> p);
  void accumulateValues(ImplicitLocOpBuilder &b, MmaStep &st,
                        ArrayRef<Value> alpha, ArrayRef<SmallVector<Value>> pB,
                        MmaState &state);
  void storeWarpState(ImplicitLocOpBuilder &b, MmaState state);

  /// The 32-bit words of a loaded vector of the cache type.
  SmallVector<Value> words(ImplicitLocOpBuilder &b, Value vec);
  /// The mma operand words of a loaded cache vector: its words, or for fp8
  /// caches its elements widened to f16 pairs (cvt.rn.f16x2.e4m3x2/e5m2x2).
  SmallVector<Value> cacheWords(ImplicitLocOpBuilder &b, Value vec);
  /// A 32-bit word as an mma operand: vector<2xf16> or i32 (bf16).
  Value operand(ImplicitLocOpBuilder &b, Value word);
  /// Two fp32 values rounded to one 32-bit word of the cache type.
  Value packWord(ImplicitLocOpBuilder &b, Value lo, Value hi);
  /// c += a . b, one m16n8k16 mma; `c` holds four f32.
  void mma(ImplicitLocOpBuilder &b, ArrayRef<Value> a, ArrayRef<Value> bOps,
           MutableArrayRef<Value> c);

  int64_t nBlocks() const { return plan.headsPerProgram / 8; }
  /// The mma's element type: the cache's, or f16 for fp8 (widened by
  /// cvt; a bf16 query is staged as f16: KernelPlan::queryToF16).
  Type mmaType() const {
    return plan.fp8Cache() ? Float16Type::get(plan.elemType.getContext())
                           : plan.cacheType;
  }
  /// 8-element query chunks per key chunk: 1, or 2 for fp8 (x = 16).
  int64_t ratio() const { return plan.keyPack / 8; }
  int64_t mBlocks() const { return plan.headSize / 16; }
  /// Chunk quads: k16-block pairs (fp8: quadruples) of the score product.
  int64_t quads() const { return llvm::divideCeil(plan.chunks, 4); }

  /// Slot 2t + e of n8 block n, the lane's [2n + e].
  Slot laneSlot(ImplicitLocOpBuilder &b, int64_t n, int64_t e);
  /// queryToF16: scale * log2(e) * 2^k, the factor of every logit.
  Value logitScale;
  /// With ALiBi: the slopes and biases of the lane's slots.
  void planSlotAlibi(ImplicitLocOpBuilder &b);
  /// The token range of each of the lane's slots within the partition: a
  /// packed slot's query token attends to its own context (docs/features.md,
  /// "Several query tokens"). Built before the masked steps, which alone
  /// read it, so the whole steps keep no more live values.
  void planSlotRanges(ImplicitLocOpBuilder &b);

  Value g, t;
  /// ALiBi, per slot [2n + e]: slope x log2(e) of its head, and slope x
  /// (seq_len - the slot's context), its position's offset from the
  /// program's last token's (0 with one token per program).
  SmallVector<Value> slopes, alibiBias;
  /// Slot [2n + e]'s range as i32 offsets from stepBase: tokens lo + i for
  /// i < width. 32 bits: the partition is far shorter than 2^31 tokens, and
  /// 64-bit bounds made the d128/d192 tiles spill at their register caps.
  SmallVector<Value> lo, width;
  /// The program's range [rangeStart, partEnd), likewise.
  Value rangeLo, rangeWidth;
};

} // namespace

SmallVector<Value> MmaPartitionBuilder::words(ImplicitLocOpBuilder &b,
                                              Value vec) {
  auto type = cast<VectorType>(vec.getType());
  int64_t n = type.getNumElements() * type.getElementTypeBitWidth() / 32;
  Value asWords =
      vector::BitCastOp::create(b, VectorType::get({n}, b.getI32Type()), vec);
  SmallVector<Value> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(vector::ExtractOp::create(b, asWords, i));
  return out;
}

SmallVector<Value> MmaPartitionBuilder::cacheWords(ImplicitLocOpBuilder &b,
                                                   Value vec) {
  if (!plan.fp8Cache())
    return words(b, vec);
  auto type = cast<VectorType>(vec.getType());
  Value bytes = arith::BitcastOp::create(
      b, VectorType::get({type.getNumElements()}, b.getI8Type()), vec);
  SmallVector<Value> out;
  for (int64_t i = 0; i < type.getNumElements(); i += 2)
    out.push_back(
        words(b, fp8PairToF16(b, bytes, type.getElementType(), i)).front());
  return out;
}

Value MmaPartitionBuilder::operand(ImplicitLocOpBuilder &b, Value word) {
  if (mmaType().isBF16())
    return word;
  return LLVM::BitcastOp::create(b, VectorType::get({2}, b.getF16Type()), word);
}

Value MmaPartitionBuilder::packWord(ImplicitLocOpBuilder &b, Value lo,
                                    Value hi) {
  auto f32x2 = VectorType::get({2}, b.getF32Type());
  Value pair = vector::FromElementsOp::create(b, f32x2, ValueRange{lo, hi});
  Value narrow =
      arith::TruncFOp::create(b, VectorType::get({2}, mmaType()), pair);
  return words(b, narrow).front();
}

void MmaPartitionBuilder::mma(ImplicitLocOpBuilder &b, ArrayRef<Value> a,
                              ArrayRef<Value> bOps, MutableArrayRef<Value> c) {
  Type f32 = b.getF32Type();
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes type =
      mmaType().isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  SmallVector<Value> aOps, bVals;
  for (Value w : a)
    aOps.push_back(operand(b, w));
  for (Value w : bOps)
    bVals.push_back(operand(b, w));
  auto op = NVVM::MmaOp::create(
      b, resultType, aOps, bVals, SmallVector<Value>(c.begin(), c.end()),
      ArrayRef<int64_t>{16, 8, 16}, /*b1Op=*/std::nullopt,
      /*intOverflow=*/std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t r = 0; r < 4; ++r)
    c[r] = LLVM::ExtractValueOp::create(b, op.getRes(), r);
}

void MmaPartitionBuilder::stageQuery(ImplicitLocOpBuilder &b) {
  // The tile's query rows, 16-byte chunks of 8 elements, into workgroup
  // memory: slot h (masked slots and chunks past head_size as zeros) at
  // qIndex(h, chunk); the loads issued in stageOperands (hoistsQuery).
  auto f32x4 = VectorType::get({4}, b.getF32Type());
  auto store = [&](ImplicitLocOpBuilder &nb, Value v, Value slot,
                   Value chunk) {
    vector::StoreOp::create(nb, vector::BitCastOp::create(nb, f32x4, v),
                            shared, ValueRange{qIndex(nb, slot, chunk)},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  if (hoistsQuery())
    storeQuery(b, loadedQuery, store);
  else
    PartitionProgram::stageQuery(b, plan.headsPerProgram, plan.headsPerProgram,
                                 queryChunks(), store);
  if (plan.queryToF16())
    scaleQueryToF16(b);
}

void MmaPartitionBuilder::forQueryChunks(
    ImplicitLocOpBuilder &b,
    llvm::function_ref<void(ImplicitLocOpBuilder &, Value, Value, Value)>
        body) {
  const int64_t chunks = queryChunks(),
                items = plan.headsPerProgram * chunks;
  assert(items % 32 == 0 && "whole warps take the staged chunks");
  for (int64_t base = 0; base < items; base += plan.threads()) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value live =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, cIdx(b, items));
    Value safe = arith::MinUIOp::create(b, i, cIdx(b, items - 1));
    body(b, live, arith::DivUIOp::create(b, safe, cIdx(b, chunks)),
         arith::RemUIOp::create(b, safe, cIdx(b, chunks)));
  }
}

void MmaPartitionBuilder::scaleQueryToF16(ImplicitLocOpBuilder &b) {
  // A bf16 element's exponent field is f32's (bias 127): a tile whose
  // largest |q| has field f is scaled by 2^-k, k = f - 141, into
  // [2^14, 2^15), where f16 holds every bf16 element down to 2^-28 of the
  // largest exactly, smaller ones to within 2^-25 * 2^k (k clamped to
  // [-110, 113]: an all-zero tile stays zero, NaN and inf stay so).
  Value k = arith::SubIOp::create(
      b, arith::ShRUIOp::create(b, queryMaxBits(b), cI32(b, 7)),
      cI32(b, 141));
  k = arith::MinSIOp::create(
      b, arith::MaxSIOp::create(b, k, cI32(b, -110)), cI32(b, 113));
  roundQueryToF16(b, pow2(b, arith::SubIOp::create(b, cI32(b, 0), k)));
  logitScale = arith::MulFOp::create(
      b, arith::MulFOp::create(b, scale, cF32(b, M_LOG2E)), pow2(b, k));
}

Value MmaPartitionBuilder::stagedChunkBits(ImplicitLocOpBuilder &b,
                                           Value slot, Value chunk) {
  Value raw = loadVector(b, shared, qIndex(b, slot, chunk), 4);
  return vector::BitCastOp::create(b, VectorType::get({8}, b.getI16Type()),
                                   raw);
}

Value MmaPartitionBuilder::queryMaxBits(ImplicitLocOpBuilder &b) {
  // Each thread's chunks (a positive bf16 orders as its bits), its warp's
  // by xor shuffles, one word per warp in the weight buffers (free until
  // the step loop); after a barrier every thread takes the warps' largest.
  Type i32 = b.getI32Type();
  Value m = cI32(b, 0);
  forQueryChunks(b, [&](ImplicitLocOpBuilder &, Value live, Value slot,
                        Value chunk) {
    Value bits = stagedChunkBits(b, slot, chunk);
    for (int64_t e = 0; e < 8; ++e) {
      Value mag = arith::AndIOp::create(
          b,
          arith::ExtUIOp::create(b, i32, vector::ExtractOp::create(b, bits, e)),
          cI32(b, 0x7fff));
      m = arith::MaxUIOp::create(
          b, m, arith::SelectOp::create(b, live, mag, cI32(b, 0)));
    }
  });
  for (int64_t off = 1; off < 32; off *= 2)
    m = arith::MaxUIOp::create(b, m, shuffleXor(b, m, off));
  {
    auto lane0 = scf::IfOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, cIdx(b, 0)),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(lane0.thenBlock());
    memref::StoreOp::create(
        b, arith::BitcastOp::create(b, b.getF32Type(), m), shared,
        ValueRange{arith::AddIOp::create(b, cIdx(b, scratchBase()), warp)});
  }
  gpu::BarrierOp::create(b);
  m = cI32(b, 0);
  for (int64_t w = 0; w < plan.warps; ++w)
    m = arith::MaxUIOp::create(
        b, m,
        arith::BitcastOp::create(
            b, i32,
            memref::LoadOp::create(b, shared,
                                   ValueRange{cIdx(b, scratchBase() + w)})));
  return m;
}

void MmaPartitionBuilder::roundQueryToF16(ImplicitLocOpBuilder &b,
                                          Value down) {
  // Each thread's staged chunks times `down`, rounded to f16 in place; a
  // barrier before the step loop reads them.
  forQueryChunks(b, [&](ImplicitLocOpBuilder &, Value live, Value slot,
                        Value chunk) {
    auto liveIf = scf::IfOp::create(b, live, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(liveIf.thenBlock());
    Value q = vector::BitCastOp::create(
        b, VectorType::get({8}, b.getBF16Type()),
        stagedChunkBits(b, slot, chunk));
    SmallVector<Value> halves;
    for (Value x : toF32Scalars(b, q))
      halves.push_back(arith::TruncFOp::create(
          b, b.getF16Type(), arith::MulFOp::create(b, x, down)));
    Value packed = vector::FromElementsOp::create(
        b, VectorType::get({8}, b.getF16Type()), halves);
    vector::StoreOp::create(
        b,
        vector::BitCastOp::create(b, VectorType::get({4}, b.getF32Type()),
                                  packed),
        shared, ValueRange{qIndex(b, slot, chunk)},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
  });
  gpu::BarrierOp::create(b);
}

/// 2^e as f32 (e an i32 in [-126, 127]): the exponent field alone.
Value MmaPartitionBuilder::pow2(ImplicitLocOpBuilder &b, Value e) {
  return arith::BitcastOp::create(
      b, b.getF32Type(),
      arith::ShLIOp::create(b, arith::AddIOp::create(b, e, cI32(b, 127)),
                            cI32(b, 23)));
}

Value MmaPartitionBuilder::qIndex(ImplicitLocOpBuilder &b, Value slot,
                                  Value chunk) {
  // Rows of 4 words per chunk, padded by 16 words so the two heads of a
  // quarter warp's 16-byte loads fall in different banks.
  int64_t stride = 16 * quads() * ratio() + 16;
  return arith::AddIOp::create(
      b,
      cIdx(b, scratchBase() + plan.scratchFloats() -
                  plan.headsPerProgram * stride),
      arith::AddIOp::create(b, arith::MulIOp::create(b, slot, cIdx(b, stride)),
                            arith::MulIOp::create(b, chunk, cIdx(b, 4))));
}

void MmaPartitionBuilder::emitPartition(ImplicitLocOpBuilder &b) {
  g = arith::DivUIOp::create(b, lane, cIdx(b, 4));
  t = arith::RemUIOp::create(b, lane, cIdx(b, 4));
  stageQuery(b);

  MmaState state{nBlocks(), mBlocks(), {}};
  for (int64_t i = 0; i < 2 * nBlocks(); ++i)
    state.values.push_back(cF32(b, -FLT_MAX));
  for (int64_t i = 0; i < 2 * nBlocks() + 4 * nBlocks() * mBlocks(); ++i)
    state.values.push_back(cF32(b, 0.0f));

  if (plan.extLogits)
    planSlotAlibi(b);
  state.values = emitStepLoop(
      b, state.values,
      [&](ImplicitLocOpBuilder &nb, Value step, StepMask mask,
          SmallVector<Value> values) {
        MmaState in{nBlocks(), mBlocks(), std::move(values)};
        return emitStep(nb, step, mask, in).values;
      },
      /*prologue=*/nullptr,
      [&](ImplicitLocOpBuilder &nb) { planSlotRanges(nb); });

  storeWarpState(b, state);
  emitEpilogue(b);
}

PartitionProgram::Slot MmaPartitionBuilder::laneSlot(ImplicitLocOpBuilder &b,
                                                     int64_t n, int64_t e) {
  return slotOf(
      b, arith::AddIOp::create(b, arith::MulIOp::create(b, t, cIdx(b, 2)),
                               cIdx(b, 8 * n + e)));
}

void MmaPartitionBuilder::planSlotAlibi(ImplicitLocOpBuilder &b) {
  slopes.clear(), alibiBias.clear();
  for (int64_t n = 0; n < nBlocks(); ++n)
    for (int64_t e = 0; e < 2; ++e) {
      Slot s = laneSlot(b, n, e);
      Value safe = arith::SelectOp::create(
          b, s.valid, s.head,
          arith::MulIOp::create(b, kvHead, toIndex(b, groupSize)));
      slopes.push_back(alibiSlopeLog2(b, safe));
      Value len = tokenContext(b, tokens, s.token);
      Value delta = arith::SIToFPOp::create(
          b, b.getF32Type(),
          arith::IndexCastOp::create(b, b.getI32Type(),
                                     arith::SubIOp::create(b, seqLen, len)));
      alibiBias.push_back(arith::MulFOp::create(b, slopes.back(), delta));
    }
}

void MmaPartitionBuilder::planSlotRanges(ImplicitLocOpBuilder &b) {
  lo.clear(), width.clear();
  auto rel = [&](Value tok) {
    return arith::IndexCastOp::create(b, b.getI32Type(),
                                      arith::SubIOp::create(b, tok, stepBase));
  };
  rangeLo = rel(rangeStart);
  rangeWidth = arith::SubIOp::create(b, rel(partEnd), rangeLo);
  for (int64_t n = 0; n < nBlocks(); ++n)
    for (int64_t e = 0; e < 2; ++e) {
      Value len = tokenContext(b, tokens, laneSlot(b, n, e).token);
      Value first = rel(arith::MaxUIOp::create(
          b, rangeStart, slidingWindowStart(b, len, slidingWindow)));
      Value end = rel(arith::MinUIOp::create(b, partEnd, len));
      // A slot whose context ends before its window or the partition
      // starts gets width 0.
      lo.push_back(first);
      width.push_back(arith::SubIOp::create(
          b, arith::MaxSIOp::create(b, end, first), first));
    }
}

MmaState MmaPartitionBuilder::emitStep(ImplicitLocOpBuilder &b, Value step,
                                       StepMask mask, MmaState state) {
  MmaStep st{step, stepToken(b, step), mask};
  locateHalves(b, st);
  loadKeys(b, st);
  planValueLoads(b, st);
  // A masked step (at most two per warp) loads its values after the
  // softmax: its masks would otherwise meet every load of the step in
  // registers, over the caps of the d192 and fp8 tiles.
  if (!st.masked())
    loadValues(b, st);
  SmallVector<SmallVector<Value>> s = scoreProducts(b, st);
  planRows(b, st);
  SmallVector<Value> logits = scaledLogits(b, st, s);
  SmallVector<Value> alpha;
  SmallVector<SmallVector<Value>> p;
  foldSoftmax(b, st, logits, state, alpha, p);
  SmallVector<SmallVector<Value>> pB = shareWeights(b, st, p);
  if (st.masked())
    loadValues(b, st);
  accumulateValues(b, st, alpha, pB, state);
  return state;
}

void MmaPartitionBuilder::locateHalves(ImplicitLocOpBuilder &b, MmaStep &st) {
  auto physOf = [&](Value logical, int64_t half) {
    CheckedEntry entry = checkedEntry(
        b, memref::LoadOp::create(
               b, blockTables,
               ValueRange{arith::AddIOp::create(b, blockRow, logical)}));
    st.halfBad[half] = entry.bad;
    return arith::AddIOp::create(
        b, arith::MulIOp::create(b, toIndex(b, entry.entry), blockStride),
        kvHeadOffset);
  };
  // The step's 16 tokens are two halves of 8, each inside one block (block
  // sizes are powers of two from 8): the halves' block-table entries, equal
  // for blocks of 16 and more (the second load then hits L1).
  Value tok1 = arith::AddIOp::create(b, st.tok0, cIdx(b, 8));
  Value logical1 = blockOf(b, tok1);
  if (st.masked()) // stay inside the sequence's blocks
    logical1 = arith::MinUIOp::create(
        b, logical1, blockOf(b, arith::SubIOp::create(b, seqLen, cIdx(b, 1))));
  st.halfBase[0] = physOf(blockOf(b, st.tok0), 0);
  st.halfBase[1] = physOf(logical1, 1);
  st.halfSlot[0] = blockSlotOf(b, st.tok0);
  st.halfSlot[1] = blockSlotOf(b, tok1);
}

void MmaPartitionBuilder::loadKeys(ImplicitLocOpBuilder &b, MmaStep &st) {
  // Key chunks (16 bytes) of rows g and g + 8, every load of the step
  // before any arithmetic. With block_size a run-time value the offsets
  // between a row's loads are no longer load immediates; each load's offset
  // is the previous one's plus one run-time stride (a chain), so the only
  // loop-invariant values are the strides: offsets j * stride computed once
  // would be hoisted out of the step loop and live through it (20 64-bit
  // registers at d128, which made the tile spill at 4 programs per SM).
  // Key quad j of a row is 4 j chunks past quad 0: (4 x) << log2(bs).
  const int64_t x = plan.keyPack;
  Value quadStride = timesBlock(b, cIdx(b, 4 * x));
  for (int64_t r = 0; r < 2; ++r) {
    Value base = st.halfBase[r];
    Value slot = arith::AddIOp::create(b, st.halfSlot[r], g);
    Value ofs = keyChunkOffset(b, base, t, slot);
    for (int64_t j = 0; j < quads(); ++j) {
      if (j > 0)
        ofs = arith::AddIOp::create(b, ofs, quadStride);
      Value at = ofs;
      if (4 * (j + 1) > plan.chunks) {
        Value chunk = arith::MinUIOp::create(
            b, arith::AddIOp::create(b, t, cIdx(b, 4 * j)),
            cIdx(b, plan.chunks - 1));
        at = keyChunkOffset(b, base, chunk, slot);
      }
      st.keyWords[r].push_back(cacheWords(
          b, loadVectorL2(b, keyCache, at, x, plan.l2PrefetchBytes)));
    }
  }
}

void MmaPartitionBuilder::planValueLoads(ImplicitLocOpBuilder &b, MmaStep &st) {
  // The lane's value tokens 4t .. 4t + 3 of dims g + 8 k (k = 2 mb + r):
  // value_cache[phys, kvh, dim, slot : slot + 4], dim k's row 8 << log2(bs)
  // elements past dim k - 1's.
  st.vTok = arith::MulIOp::create(b, t, cIdx(b, 4));
  Value second =
      arith::CmpIOp::create(b, arith::CmpIPredicate::uge, t, cIdx(b, 2));
  Value vBase =
      arith::SelectOp::create(b, second, st.halfBase[1], st.halfBase[0]);
  Value vSlot = blockSlotOf(b, arith::AddIOp::create(b, st.tok0, st.vTok));
  st.vStride = timesBlock(b, cIdx(b, 8));
  st.vOfs = arith::AddIOp::create(
      b, vBase, arith::AddIOp::create(b, timesBlock(b, g), vSlot));
}

void MmaPartitionBuilder::loadValues(ImplicitLocOpBuilder &b, MmaStep &st) {
  for (int64_t mb = 0; mb < mBlocks(); ++mb)
    for (int64_t r = 0; r < 2; ++r) {
      if (mb + r > 0)
        st.vOfs = arith::AddIOp::create(b, st.vOfs, st.vStride);
      st.vecV[r].push_back(
          loadVectorL2(b, valueCache, st.vOfs, 4, plan.l2PrefetchBytes));
    }
}

SmallVector<SmallVector<Value>>
MmaPartitionBuilder::scoreProducts(ImplicitLocOpBuilder &b, MmaStep &st) {
  // S^T per n8 block of heads, 2 mma per chunk quad; Q's B operand (chunk
  // 4j + t of head 8n + g) from workgroup memory.
  SmallVector<SmallVector<Value>> s(nBlocks());
  for (int64_t n = 0; n < nBlocks(); ++n) {
    SmallVector<Value> c(4, cF32(b, 0.0f));
    Value slot = arith::AddIOp::create(b, g, cIdx(b, 8 * n));
    for (int64_t j = 0; j < quads(); ++j)
      for (int64_t sub = 0; sub < ratio(); ++sub) {
        // Query chunk (4j + t) * ratio + sub holds the dims of key words
        // 4 sub .. 4 sub + 3.
        Value chunk = arith::AddIOp::create(
            b,
            arith::MulIOp::create(b,
                                  arith::AddIOp::create(b, t, cIdx(b, 4 * j)),
                                  cIdx(b, ratio())),
            cIdx(b, sub));
        SmallVector<Value> q =
            words(b, loadVector(b, shared, qIndex(b, slot, chunk), 4));
        auto &k = st.keyWords;
        for (int64_t h = 0; h < 2; ++h) {
          int64_t w = 4 * sub + 2 * h;
          mma(b, {k[0][j][w], k[1][j][w], k[0][j][w + 1], k[1][j][w + 1]},
              {q[2 * h], q[2 * h + 1]}, c);
        }
      }
    s[n] = c;
  }
  return s;
}

Value MmaPartitionBuilder::inRange(ImplicitLocOpBuilder &b, MmaStep &st,
                                   Value ofs) {
  if (st.mask != StepMask::slots)
    return tokenValid(b, arith::AddIOp::create(b, st.tok0, ofs));
  Value tok = arith::IndexCastOp::create(
      b, b.getI32Type(),
      arith::AddIOp::create(
          b, arith::MulIOp::create(b, st.step, cIdx(b, plan.tokenStep)), ofs));
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                               arith::SubIOp::create(b, tok, rangeLo),
                               rangeWidth);
}

void MmaPartitionBuilder::planRows(ImplicitLocOpBuilder &b, MmaStep &st) {
  // Tokens g and g + 8 of the step: ALiBi positions, and with the
  // program's range as the mask whether they are inside it.
  for (int64_t r = 0; r < 2; ++r) {
    st.rowTok[r] = arith::AddIOp::create(b, g, cIdx(b, 8 * r));
    if (plan.extLogits)
      st.rowPos[r] =
          alibiPosition(b, arith::AddIOp::create(b, st.tok0, st.rowTok[r]));
    if (st.mask == StepMask::range)
      st.rowValid[r] = inRange(b, st, st.rowTok[r]);
  }
}

Value MmaPartitionBuilder::slotValid(ImplicitLocOpBuilder &b, MmaStep &st,
                                     int64_t n, int64_t r, int64_t e) {
  // Token row r against slot (n, e)'s range: the program's, or with
  // several tokens per program the slot's own [lo, lo + width).
  if (st.mask != StepMask::slots)
    return st.rowValid[r];
  Value tok = arith::IndexCastOp::create(
      b, b.getI32Type(),
      arith::AddIOp::create(
          b, arith::MulIOp::create(b, st.step, cIdx(b, plan.tokenStep)),
          st.rowTok[r]));
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                               arith::SubIOp::create(b, tok, lo[2 * n + e]),
                               width[2 * n + e]);
}

SmallVector<Value>
MmaPartitionBuilder::scaledLogits(ImplicitLocOpBuilder &b, MmaStep &st,
                                  ArrayRef<SmallVector<Value>> s) {
  // The scores scaled to the log2 domain and soft-capped, [n][r][e]. A bad
  // block's tokens get NaN logits (a NaN scale for their row), which the
  // masks keep where a slot attends to them. Every slot attends to all of
  // an unmasked step's tokens: one flag serves both rows.
  Value qScale = logitScale
                     ? logitScale
                     : arith::MulFOp::create(b, scale, cF32(b, M_LOG2E));
  Value rowScale[2];
  if (st.masked()) {
    rowScale[0] = poisonIf(b, st.halfBad[0], qScale);
    rowScale[1] = poisonIf(b, st.halfBad[1], qScale);
  } else {
    rowScale[0] = rowScale[1] = poisonIf(
        b, arith::OrIOp::create(b, st.halfBad[0], st.halfBad[1]), qScale);
  }
  SmallVector<Value> logits;
  for (int64_t n = 0; n < nBlocks(); ++n)
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t e = 0; e < 2; ++e)
        logits.push_back(
            arith::MulFOp::create(b, s[n][2 * r + e], rowScale[r]));
  return softCap(b, logits);
}

Value MmaPartitionBuilder::logit(ImplicitLocOpBuilder &b, MmaStep &st,
                                 ArrayRef<Value> logits, int64_t n, int64_t r,
                                 int64_t e) {
  // ALiBi, then the mask (last, so a masked token stays -inf whatever the
  // cap does).
  Value v = logits[(n * 2 + r) * 2 + e];
  if (plan.extLogits)
    v = fma(b, slopes[2 * n + e], st.rowPos[r], v);
  // A packed slot's position is offset from the program's last token's.
  if (plan.extLogits)
    v = arith::AddFOp::create(b, v, alibiBias[2 * n + e]);
  return st.masked() ? arith::SelectOp::create(b, slotValid(b, st, n, r, e), v,
                                               cF32(b, -INFINITY))
                     : v;
}

void MmaPartitionBuilder::foldSoftmax(ImplicitLocOpBuilder &b, MmaStep &st,
                                      ArrayRef<Value> logits, MmaState &state,
                                      SmallVector<Value> &alpha,
                                      SmallVector<SmallVector<Value>> &p) {
  // Online softmax per head the lane owns (2t + e of each n8 block): the
  // step max over the 16 tokens (rows g, g + 8 here, the other g by xor
  // shuffles over lane bits 2..4), the rescale, the weights p[n][2r + e].
  alpha.assign(2 * nBlocks(), Value());
  p.assign(nBlocks(), SmallVector<Value>(4));
  for (int64_t n = 0; n < nBlocks(); ++n)
    for (int64_t e = 0; e < 2; ++e) {
      SmallVector<Value> pe;
      alpha[2 * n + e] = foldOnlineSoftmax(
          b, state.m(n, e), state.l(n, e),
          {logit(b, st, logits, n, 0, e), logit(b, st, logits, n, 1, e)},
          xorOffsets(4, 32), pe);
      p[n][e] = pe[0];
      p[n][2 + e] = pe[1];
    }
}

SmallVector<SmallVector<Value>>
MmaPartitionBuilder::shareWeights(ImplicitLocOpBuilder &b, MmaStep &st,
                                  ArrayRef<SmallVector<Value>> p) {
  // The weights to the B operand of P . V through scratch[head][token] of
  // this warp, buffer (step / warps) % 2: each lane stores its own and
  // loads its tokens 4t .. 4t + 3 of head 8n + g. The whole steps
  // alternate buffers; a masked step may follow a step of the same parity
  // (a window's first step runs after the whole ones), so it first waits
  // for the warp's loads of the previous step.
  if (st.masked())
    NVVM::SyncWarpOp::create(b, arith::ConstantIntOp::create(b, -1, 32));
  const int64_t stride = KernelPlan::kMmaScoreStride;
  const int64_t bufFloats = plan.headsPerProgram * stride;
  Value buf = arith::RemUIOp::create(
      b, arith::DivUIOp::create(b, st.step, cIdx(b, plan.warps)), cIdx(b, 2));
  Value bufBase = arith::AddIOp::create(
      b, cIdx(b, scratchBase()),
      arith::MulIOp::create(
          b,
          arith::AddIOp::create(b, arith::MulIOp::create(b, warp, cIdx(b, 2)),
                                buf),
          cIdx(b, bufFloats)));
  for (int64_t n = 0; n < nBlocks(); ++n)
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t e = 0; e < 2; ++e) {
        Value head = arith::AddIOp::create(
            b, arith::MulIOp::create(b, t, cIdx(b, 2)), cIdx(b, 8 * n + e));
        Value idx = arith::AddIOp::create(
            b, bufBase,
            arith::AddIOp::create(
                b, arith::MulIOp::create(b, head, cIdx(b, stride)),
                arith::AddIOp::create(b, g, cIdx(b, 8 * r))));
        memref::StoreOp::create(b, p[n][2 * r + e], shared, ValueRange{idx});
      }
  NVVM::SyncWarpOp::create(b, arith::ConstantIntOp::create(b, -1, 32));
  SmallVector<SmallVector<Value>> pB(nBlocks());
  for (int64_t n = 0; n < nBlocks(); ++n) {
    Value idx = arith::AddIOp::create(
        b, bufBase,
        arith::AddIOp::create(
            b,
            arith::MulIOp::create(b,
                                  arith::AddIOp::create(b, g, cIdx(b, 8 * n)),
                                  cIdx(b, stride)),
            st.vTok));
    Value pv = loadVector(b, shared, idx, 4);
    SmallVector<Value> f;
    for (int64_t i = 0; i < 4; ++i)
      f.push_back(vector::ExtractOp::create(b, pv, i));
    pB[n] = {packWord(b, f[0], f[1]), packWord(b, f[2], f[3])};
  }
  return pB;
}

void MmaPartitionBuilder::accumulateValues(ImplicitLocOpBuilder &b, MmaStep &st,
                                           ArrayRef<Value> alpha,
                                           ArrayRef<SmallVector<Value>> pB,
                                           MmaState &state) {
  // O^T = O^T . alpha + V^T . P^T per m16 block of dims. In masked steps,
  // values outside the range are zeroed: garbage must not meet a zero
  // weight.
  Value vMask;
  if (st.masked()) {
    SmallVector<Value> bits;
    for (int64_t i = 0; i < 4; ++i)
      bits.push_back(
          inRange(b, st, arith::AddIOp::create(b, st.vTok, cIdx(b, i))));
    vMask = vector::FromElementsOp::create(
        b, VectorType::get({4}, b.getI1Type()), bits);
  }
  Value vZero = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({4}, plan.cacheType),
                                b.getZeroAttr(plan.cacheType)));
  for (int64_t mb = 0; mb < mBlocks(); ++mb) {
    SmallVector<Value> w[2];
    for (int64_t r = 0; r < 2; ++r) {
      Value v = st.vecV[r][mb];
      if (st.masked())
        v = arith::SelectOp::create(b, vMask, v, vZero);
      w[r] = cacheWords(b, v);
    }
    for (int64_t n = 0; n < nBlocks(); ++n) {
      SmallVector<Value> c;
      for (int64_t r = 0; r < 4; ++r)
        c.push_back(arith::MulFOp::create(b, state.acc(n, mb, r),
                                          alpha[2 * n + (r & 1)]));
      mma(b, {w[0][0], w[1][0], w[0][1], w[1][1]}, pB[n], c);
      for (int64_t r = 0; r < 4; ++r)
        state.acc(n, mb, r) = c[r];
    }
  }
}

void MmaPartitionBuilder::storeWarpState(ImplicitLocOpBuilder &b,
                                         MmaState state) {
  // The lane's sums cover its rows g, g + 8: add the other g (lane bits
  // 2..4) so every lane holds its heads' totals.
  for (int64_t n = 0; n < nBlocks(); ++n)
    for (int64_t e = 0; e < 2; ++e)
      state.l(n, e) = clusterSum(b, state.l(n, e), /*stride=*/4, /*size=*/8);
  for (int64_t n = 0; n < nBlocks(); ++n)
    for (int64_t e = 0; e < 2; ++e) {
      Value head = arith::AddIOp::create(
          b, arith::MulIOp::create(b, t, cIdx(b, 2)), cIdx(b, 8 * n + e));
      for (int64_t mb = 0; mb < mBlocks(); ++mb)
        for (int64_t r = 0; r < 2; ++r) {
          Value dim = arith::AddIOp::create(b, g, cIdx(b, 16 * mb + 8 * r));
          memref::StoreOp::create(b, state.acc(n, mb, 2 * r + e), shared,
                                  ValueRange{accIndex(b, warp, head, dim)});
        }
    }
  Value firstRow =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, g, cIdx(b, 0));
  auto ifOp = scf::IfOp::create(b, firstRow, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  for (int64_t n = 0; n < nBlocks(); ++n)
    for (int64_t e = 0; e < 2; ++e) {
      Value head = arith::AddIOp::create(
          b, arith::MulIOp::create(b, t, cIdx(b, 2)), cIdx(b, 8 * n + e));
      memref::StoreOp::create(b, state.m(n, e), shared,
                              ValueRange{mIndex(b, warp, head)});
      memref::StoreOp::create(b, state.l(n, e), shared,
                              ValueRange{lIndex(b, warp, head)});
    }
}

gpu::GPUFuncOp
mlir::paged_attn::buildMmaPartitionKernel(OpBuilder &moduleBuilder,
                                          Location loc, const KernelPlan &plan,
                                          KernelRole role) {
  return MmaPartitionBuilder(plan, role).build(moduleBuilder, loc);
}
