//===- WmmaPartitionKernel.cpp - the wmma partition kernel (sm_7x, f16) ---===//
//
// Builds `<variant>_wmma_partition` and `_onepass` for f16 caches on sm_70
// and newer: the scores and the weighted values of a warp step are wmma
// products with fp32 accumulation (upstream's gpu.subgroup_mma_* ops, which
// convert-gpu-to-nvvm lowers to wmma.load / wmma.mma / wmma.store).
//
// Why wmma and not mma.sync: Volta's only register-level f16 mma is
// m8n8k4, which newer chips emulate (sm_70 PTX ran at 1.3-1.4 TB/s on an
// H200 through the driver's JIT with it). wmma is portable: the driver maps
// its m16n16k16 and m8n32k16 shapes onto each chip's own tensor-core
// instructions. The price is that a fragment's layout in the lanes is the
// hardware's secret, so every operand comes from memory in a layout wmma
// understands and every result goes back through memory; K and V are
// staged through each warp's workgroup memory.
//
// A warp step is T = 16 tokens, a tile is 8 query heads (rows 8..15 of the
// score product are zero):
//
//   stage K[T tokens][D] and V[D][T tokens] (16-byte loads from the caches;
//     values outside the range zeroed in edge steps)
//   S[16 heads x T] = Q[16 x D] . K^T           D/16 x m16n16k16
//   store S; each lane takes head lane/4, tokens T/4 (lane%4) .. + T/4 - 1:
//     online softmax (fp32, log2 domain), weights P[8 x T] as f16,
//     the rescale factor alpha of each head along its row of an 8 x 32
//     matrix
//   O[8 x 32j..] = O . alpha (elementwise, with an accumulator loaded from
//                  the alpha matrix: the same lane layout as O by
//                  construction)
//                  + P . V[.., 32j..]            D/32 x m8n32k16
//
// Whole steps load one step ahead: a warp stages the loads it issued in its
// previous step, issues the next step's, then computes, so it keeps a
// step's bytes in flight while it computes.
//
// Sketch of one step (f16, d128, b16):
//
//   %k = vector.load %key_cache[...] {alignment = 16} : vector<8xf16>   x 8
//   %v = vector.load %value_cache[...] {alignment = 16} : vector<8xf16> x 8
//   vector.store %k, %stage[...]; nvvm.bar.warp.sync
//   %s = gpu.subgroup_mma_compute %q, %kt, %s {b_transpose}             x 8
//   gpu.subgroup_mma_store_matrix %s, %shared[...]; nvvm.bar.warp.sync
//   ... softmax of 4 scores per lane, 2 xor shuffles ...
//   %o = gpu.subgroup_mma_elementwise mulf %o, %alpha                   x 4
//   %o = gpu.subgroup_mma_compute %p, %vt, %o {b_transpose}             x 4
//
//===----------------------------------------------------------------------===//

#include "KernelIdioms.h"
#include "PartitionProgram.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

/// Rows of the tile (query heads of a program) and tokens of a step.
constexpr int64_t kTile = 8;

/// The loop state: the running max m and sum l of the lane's head (lane / 4;
/// l over the lane's own tokens), then the O accumulators, one m8n32k16
/// fragment per 32 head dims.
struct WmmaState {
  SmallVector<Value> values;

  Value &m() { return values[0]; }
  Value &l() { return values[1]; }
  Value &acc(int64_t j) { return values[2 + j]; }
};

class WmmaPartitionBuilder : public PartitionProgram {
public:
  using PartitionProgram::PartitionProgram;

private:
  void emitPartition(ImplicitLocOpBuilder &b) override;
  /// Stages the tile's query as Q[16][keyStride] f16 (rows past the tile
  /// and slots past the group zero); one barrier.
  void stageQuery(ImplicitLocOpBuilder &b);
  /// The 16-byte loads of the step at token tok0 (`values`): the lane's key
  /// pieces, then its value pieces; and whether each eighth's block-table
  /// entry is bad (`bad`, checkedEntry). `clamp` keeps a second block
  /// (block size 8) inside the sequence.
  struct StepLoads {
    SmallVector<Value> values, bad;
  };
  StepLoads loadStep(ImplicitLocOpBuilder &b, Value tok0, bool clamp);
  /// Whether any of the eighths' entries `bad` is bad.
  Value anyBad(ImplicitLocOpBuilder &b, ArrayRef<Value> bad);
  /// Whether the entry of the eighth holding the lane's tokens is bad.
  Value laneBad(ImplicitLocOpBuilder &b, ArrayRef<Value> bad);
  /// Stores a step's loads into the warp's K and V staging rows (values of
  /// tokens outside the range zeroed when `masked`).
  void stageStep(ImplicitLocOpBuilder &b, Value tok0, bool masked,
                 ArrayRef<Value> loads);
  /// The staged step's scores, online softmax and weighted values; the
  /// lane's logits are NaN (before the mask) where `bad` (i1): its tokens'
  /// block-table entry is bad.
  /// One warp step on staged K/V: the scores, the online softmax, the
  /// weights, the weighted values.
  WmmaState computeStep(ImplicitLocOpBuilder &b, Value tok0, bool masked,
                        Value bad, WmmaState state);
  /// S = Q . K^T into the warp's S rows; returns their f32 index.
  Value storeScores(ImplicitLocOpBuilder &b);
  /// The lane's logits from S, folded into the state; returns alpha.
  Value foldSoftmax(ImplicitLocOpBuilder &b, Value sIdx, Value myTok,
                    Value tok0, bool masked, Value bad, WmmaState &state,
                    SmallVector<Value> &p);
  /// P (f16) and alpha to workgroup memory; returns P's f16 index.
  Value storeWeights(ImplicitLocOpBuilder &b, Value sIdx, Value myTok,
                     Value alpha, ArrayRef<Value> p);
  void accumulateValues(ImplicitLocOpBuilder &b, Value sIdx, Value pIdx,
                        WmmaState &state);
  void storeWarpState(ImplicitLocOpBuilder &b, WmmaState state);

  gpu::MMAMatrixType fragType(int64_t rows, int64_t cols, Type elem,
                              StringRef operand) {
    return gpu::MMAMatrixType::get({rows, cols}, elem, operand);
  }
  Value loadFrag(ImplicitLocOpBuilder &b, gpu::MMAMatrixType type,
                 Value memref, Value index, int64_t ld, bool colMajor) {
    return gpu::SubgroupMmaLoadMatrixOp::create(
        b, type, memref, ValueRange{index}, b.getIndexAttr(ld),
        colMajor ? b.getUnitAttr() : UnitAttr());
  }
  void syncWarp(ImplicitLocOpBuilder &b) {
    NVVM::SyncWarpOp::create(b, arith::ConstantIntOp::create(b, -1, 32));
  }
  /// f16 element index of byte offset `bytes` of this warp's step area.
  Value warpHalf(ImplicitLocOpBuilder &b, int64_t bytes) {
    return arith::AddIOp::create(b, warpHalves, cIdx(b, bytes / 2));
  }
  /// f32 element index of byte offset `bytes` of this warp's step area.
  Value warpFloat(ImplicitLocOpBuilder &b, int64_t bytes) {
    return arith::AddIOp::create(b, warpFloats, cIdx(b, bytes / 4));
  }

  int64_t keyStride() const { return plan.wmmaKeyStride(); }
  int64_t valueStride() const { return plan.wmmaValueStride(); }
  int64_t scoreStride() const { return plan.wmmaScoreStride(); }
  int64_t alphaStride() const { return plan.wmmaAlphaStride(); }
  int64_t valueBlocks() const { return plan.headSize / 32; }

  /// The byte buffer as f16 (staging, query, weights).
  Value stage;
  /// This warp's step area, as f16 and f32 element indices.
  Value warpHalves, warpFloats;
  /// The lane's head (row of the tile) and quarter (its quarter of the
  /// step's tokens); its key token of the step (`pair`) and key chunk
  /// parity (`half`).
  Value row, quarter, pair, half;
  /// First of the 8 value tokens of the step the lane loads.
  Value valueToken(ImplicitLocOpBuilder &b) {
    return arith::MulIOp::create(b, half, cIdx(b, 8));
  }
  /// ALiBi slope x log2(e) of the lane's head (_ext variants).
  Value slope;
};

} // namespace

void WmmaPartitionBuilder::stageQuery(ImplicitLocOpBuilder &b) {
  // Q[16][keyStride] f16: the tile's 8 heads, then 8 zero rows.
  Value qBase = cIdx(b, plan.wmmaQueryOffset() / 2);
  PartitionProgram::stageQuery(
      b, 16, kTile, plan.headSize / 8,
      [&](ImplicitLocOpBuilder &nb, Value v, Value slot, Value chunk) {
        Value dst = arith::AddIOp::create(
            nb, qBase,
            arith::AddIOp::create(
                nb, arith::MulIOp::create(nb, slot, cIdx(nb, keyStride())),
                arith::MulIOp::create(nb, chunk, cIdx(nb, 8))));
        vector::StoreOp::create(nb, v, stage, ValueRange{dst},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      });
}

void WmmaPartitionBuilder::emitPartition(ImplicitLocOpBuilder &b) {
  auto bufferType = cast<MemRefType>(sharedBuffer.getType());
  stage = memref::ViewOp::create(
      b,
      MemRefType::get({plan.wmmaBytes() / 2}, b.getF16Type(),
                      MemRefLayoutAttrInterface{},
                      bufferType.getMemorySpace()),
      sharedBuffer, cIdx(b, 0), ValueRange{});
  warpHalves =
      arith::MulIOp::create(b, warp, cIdx(b, plan.wmmaWarpBytes() / 2));
  warpFloats =
      arith::MulIOp::create(b, warp, cIdx(b, plan.wmmaWarpBytes() / 4));
  row = arith::DivUIOp::create(b, lane, cIdx(b, 4));
  quarter = arith::RemUIOp::create(b, lane, cIdx(b, 4));
  pair = arith::DivUIOp::create(b, lane, cIdx(b, 2));
  half = arith::RemUIOp::create(b, lane, cIdx(b, 2));
  if (plan.extLogits) {
    auto [head, valid] = headOfSlot(b, row);
    Value safe = arith::SelectOp::create(
        b, valid, head, arith::MulIOp::create(b, kvHead, toIndex(b, groupSize)));
    slope = alibiSlopeLog2(b, safe);
  }

  WmmaState state;
  state.values.push_back(cF32(b, -FLT_MAX));
  state.values.push_back(cF32(b, 0.0f));
  auto accType = fragType(kTile, 32, b.getF32Type(), "COp");
  Value zeroAcc = gpu::SubgroupMmaConstantMatrixOp::create(b, accType,
                                                           cF32(b, 0.0f));
  for (int64_t j = 0; j < valueBlocks(); ++j)
    state.values.push_back(zeroAcc);

  // Whole steps load one step ahead: a step stages the loads it was handed
  // and issues the next step's before its arithmetic, so a warp keeps its
  // next step's tokens in flight while it computes. Edge steps load their
  // own.
  Value full;
  auto loadsOf = [&](ImplicitLocOpBuilder &nb, Value step) {
    // Only whole steps [0, full) are loaded ahead; past them, zeros. Last:
    // whether a block of the step is bad (every lane attends to all of a
    // whole step's tokens).
    Value inRange =
        arith::CmpIOp::create(nb, arith::CmpIPredicate::ult, step, full);
    SmallVector<Type> types;
    int64_t n = plan.chunks / 2 + plan.headSize / 16;
    auto vecType = VectorType::get({8}, plan.cacheType);
    types.assign(n, vecType);
    types.push_back(nb.getI1Type());
    auto ifOp = scf::IfOp::create(nb, types, inRange, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(nb);
    nb.setInsertionPointToStart(ifOp.thenBlock());
    StepLoads loads = loadStep(nb, stepToken(nb, step), /*clamp=*/true);
    loads.values.push_back(anyBad(nb, loads.bad));
    scf::YieldOp::create(nb, loads.values);
    nb.setInsertionPointToStart(ifOp.elseBlock());
    Value zero = arith::ConstantOp::create(
        nb, DenseElementsAttr::get(vecType, nb.getZeroAttr(plan.cacheType)));
    SmallVector<Value> zeros(n, zero);
    zeros.push_back(arith::ConstantIntOp::create(nb, 0, 1));
    scf::YieldOp::create(nb, zeros);
    return SmallVector<Value>(ifOp.getResults());
  };
  size_t carried = state.values.size();
  state.values = emitStepLoop(
      b, state.values,
      [&](ImplicitLocOpBuilder &nb, Value step, StepMask mask,
          SmallVector<Value> values) {
        bool masked = mask != StepMask::none;
        Value tok0 = stepToken(nb, step);
        WmmaState in{SmallVector<Value>(values.begin(),
                                        values.begin() + carried)};
        if (masked) {
          StepLoads loads = loadStep(nb, tok0, /*clamp=*/true);
          stageStep(nb, tok0, masked, loads.values);
          return computeStep(nb, tok0, masked, laneBad(nb, loads.bad), in)
              .values;
        }
        ArrayRef<Value> staged = ArrayRef<Value>(values).drop_front(carried);
        stageStep(nb, tok0, masked, staged.drop_back());
        SmallVector<Value> next = loadsOf(
            nb, arith::AddIOp::create(nb, step, cIdx(nb, plan.warps)));
        SmallVector<Value> out =
            computeStep(nb, tok0, masked, staged.back(), in).values;
        out.append(next);
        return out;
      },
      [&](ImplicitLocOpBuilder &nb, Value first, Value fullSteps) {
        // The first step's loads are in flight while the query is staged.
        full = fullSteps;
        SmallVector<Value> loads = loadsOf(nb, first);
        stageQuery(nb);
        return loads;
      });

  storeWarpState(b, state);
  emitEpilogue(b);
}

Value WmmaPartitionBuilder::anyBad(ImplicitLocOpBuilder &b,
                                   ArrayRef<Value> bad) {
  Value any = bad.front();
  for (Value flag : bad.drop_front())
    any = arith::OrIOp::create(b, any, flag);
  return any;
}

Value WmmaPartitionBuilder::laneBad(ImplicitLocOpBuilder &b,
                                    ArrayRef<Value> bad) {
  // The lane's tokens quarter * 4 .. + 3 lie in eighth quarter / 2.
  Value eighth = arith::DivUIOp::create(b, quarter, cIdx(b, 2));
  Value flag = bad.front();
  for (size_t k = 1; k < bad.size(); ++k)
    flag = arith::SelectOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, eighth,
                              cIdx(b, int64_t(k))),
        bad[k], flag);
  return flag;
}

WmmaPartitionBuilder::StepLoads
WmmaPartitionBuilder::loadStep(ImplicitLocOpBuilder &b, Value tok0,
                               bool clamp) {
  const int64_t x = plan.keyPack, d = plan.headSize;
  StepLoads out;
  Value lastBlock =
      blockOf(b, arith::SubIOp::create(b, seqLen, cIdx(b, 1)));
  // The step's T tokens are T / 8 eighths, each inside one block (block
  // sizes are powers of two from 8): one block-table entry per eighth,
  // equal for large blocks (those loads hit L1).
  SmallVector<Value> bases;
  for (int64_t k = 0; k < plan.tokenStep / 8; ++k) {
    Value logical =
        blockOf(b, arith::AddIOp::create(b, tok0, cIdx(b, 8 * k)));
    if (clamp && k > 0) // stay inside the sequence's blocks
      logical = arith::MinUIOp::create(b, logical, lastBlock);
    CheckedEntry entry = checkedEntry(
        b, memref::LoadOp::create(
               b, blockTables,
               ValueRange{arith::AddIOp::create(b, blockRow, logical)}));
    out.bad.push_back(entry.bad);
    bases.push_back(arith::AddIOp::create(
        b, arith::MulIOp::create(b, toIndex(b, entry.entry), blockStride),
        kvHeadOffset));
  }
  // Block base and slot of the step's token `u` (u + 8 stays in its block
  // for the value loads, which start at multiples of 8).
  auto place = [&](Value u) -> std::pair<Value, Value> {
    Value k = arith::DivUIOp::create(b, u, cIdx(b, 8));
    Value base = bases[0];
    for (size_t i = 1; i < bases.size(); ++i)
      base = arith::SelectOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, k,
                                cIdx(b, int64_t(i))),
          bases[i], base);
    return {base, blockSlotOf(b, arith::AddIOp::create(b, tok0, u))};
  };

  // Keys: load c takes token `pair` of chunk 2 c + half, so one
  // instruction of the warp reads two chunks of 16 tokens (2 x 256
  // contiguous bytes) and a quarter warp's stores hit distinct banks of the
  // staging rows.
  SmallVector<Value> &loads = out.values;
  for (int64_t c = 0; c < plan.chunks / 2; ++c) {
    auto [base, slot] = place(pair);
    Value chunk = arith::AddIOp::create(b, half, cIdx(b, 2 * c));
    Value ofs = keyChunkOffset(b, base, chunk, slot);
    loads.push_back(loadVector(b, keyCache, ofs, x));
  }
  // Values: load j takes tokens valueToken() .. + 7 of dim 16 j + pair.
  for (int64_t j = 0; j < d / 16; ++j) {
    auto [base, slot] = place(valueToken(b));
    Value dim = arith::AddIOp::create(b, pair, cIdx(b, 16 * j));
    // value_cache[phys, kvh, dim, slot : slot + 8]
    Value ofs = arith::AddIOp::create(
        b, base,
        arith::AddIOp::create(b, timesBlock(b, dim), slot));
    loads.push_back(loadVector(b, valueCache, ofs, 8));
  }
  return out;
}

void WmmaPartitionBuilder::stageStep(ImplicitLocOpBuilder &b, Value tok0,
                                     bool masked, ArrayRef<Value> loads) {
  const int64_t d = plan.headSize, x = plan.keyPack;
  const int64_t keys = plan.chunks / 2;
  Type f16 = b.getF16Type();
  // The previous step's fragments were read before this warp got here; the
  // sync orders it for the memory model.
  syncWarp(b);
  Value kRow = warpHalf(b, 0);
  for (int64_t c = 0; c < keys; ++c) {
    Value chunk = arith::AddIOp::create(b, half, cIdx(b, 2 * c));
    Value idx = arith::AddIOp::create(
        b, kRow,
        arith::AddIOp::create(
            b, arith::MulIOp::create(b, pair, cIdx(b, keyStride())),
            arith::MulIOp::create(b, chunk, cIdx(b, x))));
    vector::StoreOp::create(b, loads[c], stage, ValueRange{idx},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  // In edge steps the values of tokens outside the range are zeroed, so
  // that garbage (or NaN) never meets a zero weight.
  Value vZero = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({8}, f16), b.getZeroAttr(f16)));
  Value mask;
  if (masked) {
    SmallVector<Value> bits;
    for (int64_t i = 0; i < 8; ++i)
      bits.push_back(tokenValid(
          b, arith::AddIOp::create(
                 b, tok0, arith::AddIOp::create(b, valueToken(b), cIdx(b, i)))));
    mask = vector::FromElementsOp::create(
        b, VectorType::get({8}, b.getI1Type()), bits);
  }
  Value vRow = warpHalf(b, plan.wmmaValueOffset());
  for (int64_t j = 0; j < d / 16; ++j) {
    Value v = loads[keys + j];
    if (masked)
      v = arith::SelectOp::create(b, mask, v, vZero);
    Value dim = arith::AddIOp::create(b, pair, cIdx(b, 16 * j));
    Value idx = arith::AddIOp::create(
        b, vRow,
        arith::AddIOp::create(
            b, arith::MulIOp::create(b, dim, cIdx(b, valueStride())),
            valueToken(b)));
    vector::StoreOp::create(b, v, stage, ValueRange{idx},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  syncWarp(b);
}

WmmaState WmmaPartitionBuilder::computeStep(ImplicitLocOpBuilder &b,
                                            Value tok0, bool masked, Value bad,
                                            WmmaState state) {
  assert(plan.tokenStep == 16 && "one m16n16k16 block of scores per step");
  Value sIdx = storeScores(b);
  Value myTok = arith::MulIOp::create(b, quarter, cIdx(b, plan.tokenStep / 4));
  SmallVector<Value> p;
  Value alpha = foldSoftmax(b, sIdx, myTok, tok0, masked, bad, state, p);
  Value pIdx = storeWeights(b, sIdx, myTok, alpha, p);
  accumulateValues(b, sIdx, pIdx, state);
  return state;
}

Value WmmaPartitionBuilder::storeScores(ImplicitLocOpBuilder &b) {
  // S = Q . K^T over the head dims, 16 at a time, into the warp's S rows.
  auto aType = fragType(16, 16, b.getF16Type(), "AOp");
  auto bType = fragType(16, 16, b.getF16Type(), "BOp");
  auto sType = fragType(16, 16, b.getF32Type(), "COp");
  Value qBase = cIdx(b, plan.wmmaQueryOffset() / 2);
  Value kRow = warpHalf(b, 0);
  Value sIdx = warpFloat(b, plan.wmmaSOffset());
  Value s = gpu::SubgroupMmaConstantMatrixOp::create(b, sType, cF32(b, 0.0f));
  for (int64_t j = 0; j < plan.headSize / 16; ++j) {
    Value q = loadFrag(b, aType, stage,
                       arith::AddIOp::create(b, qBase, cIdx(b, 16 * j)),
                       keyStride(), /*colMajor=*/false);
    Value kt = loadFrag(b, bType, stage,
                        arith::AddIOp::create(b, kRow, cIdx(b, 16 * j)),
                        keyStride(), /*colMajor=*/true);
    s = gpu::SubgroupMmaComputeOp::create(b, q, kt, s, UnitAttr(),
                                          b.getUnitAttr());
  }
  gpu::SubgroupMmaStoreMatrixOp::create(b, s, shared, ValueRange{sIdx},
                                        b.getIndexAttr(scoreStride()),
                                        UnitAttr());
  syncWarp(b);
  return sIdx;
}

Value WmmaPartitionBuilder::foldSoftmax(ImplicitLocOpBuilder &b, Value sIdx,
                                        Value myTok, Value tok0, bool masked,
                                        Value bad, WmmaState &state,
                                        SmallVector<Value> &p) {
  // Online softmax of the lane's head `row`, its tokens myTok .. + mine - 1.
  const int64_t mine = plan.tokenStep / 4;
  Value rowScores = arith::AddIOp::create(
      b, sIdx,
      arith::AddIOp::create(
          b, arith::MulIOp::create(b, row, cIdx(b, scoreStride())), myTok));
  // A bad block's tokens: NaN logits, which the mask keeps where the head
  // attends to them.
  Value qScale =
      poisonIf(b, bad, arith::MulFOp::create(b, scale, cF32(b, M_LOG2E)));
  SmallVector<Value> logits;
  for (int64_t v = 0; v < mine / 4; ++v) {
    Value sv = loadVector(
        b, shared, arith::AddIOp::create(b, rowScores, cIdx(b, 4 * v)), 4);
    for (int64_t i = 0; i < 4; ++i)
      logits.push_back(arith::MulFOp::create(
          b, vector::ExtractOp::create(b, sv, i), qScale));
  }
  logits = softCap(b, logits);
  for (int64_t i = 0; i < mine; ++i) {
    Value tok = arith::AddIOp::create(
        b, tok0, arith::AddIOp::create(b, myTok, cIdx(b, i)));
    if (plan.extLogits)
      logits[i] = fma(b, slope, alibiPosition(b, tok), logits[i]);
    if (masked)
      logits[i] = arith::SelectOp::create(b, tokenValid(b, tok), logits[i],
                                          cF32(b, -INFINITY));
  }
  return foldOnlineSoftmax(b, state.m(), state.l(), logits, xorOffsets(1, 4),
                           p);
}

Value WmmaPartitionBuilder::storeWeights(ImplicitLocOpBuilder &b, Value sIdx,
                                         Value myTok, Value alpha,
                                         ArrayRef<Value> p) {
  // The weights P[head][token] (f16), and alpha along the head's row of the
  // 8 x 32 matrix that overlays S (once every lane has read its scores).
  const int64_t mine = plan.tokenStep / 4;
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  Value pVec = arith::TruncFOp::create(
      b, VectorType::get({mine}, f16),
      vector::FromElementsOp::create(b, VectorType::get({mine}, f32), p));
  Value pIdx = warpHalf(b, plan.wmmaPOffset());
  vector::StoreOp::create(
      b, pVec, stage,
      ValueRange{arith::AddIOp::create(
          b, pIdx,
          arith::AddIOp::create(
              b, arith::MulIOp::create(b, row, cIdx(b, valueStride())),
              myTok))},
      /*nontemporal=*/false, llvm::MaybeAlign(2 * mine));
  syncWarp(b);
  Value alphaVec =
      vector::BroadcastOp::create(b, VectorType::get({4}, f32), alpha);
  for (int64_t i = 0; i < 2; ++i) {
    Value idx = arith::AddIOp::create(
        b, sIdx,
        arith::AddIOp::create(
            b, arith::MulIOp::create(b, row, cIdx(b, alphaStride())),
            arith::AddIOp::create(
                b, arith::MulIOp::create(b, quarter, cIdx(b, 8)),
                cIdx(b, 4 * i))));
    vector::StoreOp::create(b, alphaVec, shared, ValueRange{idx},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  syncWarp(b);
  return pIdx;
}

void WmmaPartitionBuilder::accumulateValues(ImplicitLocOpBuilder &b, Value sIdx,
                                            Value pIdx, WmmaState &state) {
  // O = O . alpha + P . V, 32 head dims per fragment.
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  Value pa = loadFrag(b, fragType(kTile, 16, f16, "AOp"), stage, pIdx,
                      valueStride(), /*colMajor=*/false);
  auto accType = fragType(kTile, 32, f32, "COp");
  Value alphaFrag =
      loadFrag(b, accType, shared, sIdx, alphaStride(), /*colMajor=*/false);
  auto vType = fragType(16, 32, f16, "BOp");
  Value vRow = warpHalf(b, plan.wmmaValueOffset());
  for (int64_t j = 0; j < valueBlocks(); ++j) {
    Value acc = gpu::SubgroupMmaElementwiseOp::create(
        b, accType, ValueRange{state.acc(j), alphaFrag},
        gpu::MMAElementwiseOp::MULF);
    Value vt = loadFrag(
        b, vType, stage,
        arith::AddIOp::create(b, vRow, cIdx(b, 32 * j * valueStride())),
        valueStride(), /*colMajor=*/true);
    state.acc(j) = gpu::SubgroupMmaComputeOp::create(
        b, pa, vt, acc, UnitAttr(), b.getUnitAttr());
  }
}

void WmmaPartitionBuilder::storeWarpState(ImplicitLocOpBuilder &b,
                                          WmmaState state) {
  // The lane's sum covers its 4 tokens of each step: add the head's other
  // quarters (lane bits 0..1).
  Value l = clusterSum(b, state.l(), /*stride=*/1, /*size=*/4);
  // The epilogue layout overlays the warps' step areas: wait for all.
  gpu::BarrierOp::create(b);
  for (int64_t j = 0; j < valueBlocks(); ++j)
    gpu::SubgroupMmaStoreMatrixOp::create(
        b, state.acc(j), shared,
        ValueRange{accIndex(b, warp, cIdx(b, 0), cIdx(b, 32 * j))},
        b.getIndexAttr(plan.headSize), UnitAttr());
  Value first =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quarter, cIdx(b, 0));
  auto ifOp = scf::IfOp::create(b, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  memref::StoreOp::create(b, state.m(), shared,
                          ValueRange{mIndex(b, warp, row)});
  memref::StoreOp::create(b, l, shared, ValueRange{lIndex(b, warp, row)});
}

gpu::GPUFuncOp mlir::paged_attn::buildWmmaPartitionKernel(
    OpBuilder &moduleBuilder, Location loc, const KernelPlan &plan,
    KernelRole role) {
  return WmmaPartitionBuilder(plan, role).build(moduleBuilder, loc);
}
