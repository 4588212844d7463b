//===- PartitionKernel.cpp - the SIMT partition (and one-pass) kernel -----===//
//
// Builds `<variant>_partition` and `<variant>_onepass` on CUDA cores (every
// chip, every dtype; sm_70 and f32 caches use it): one program per
// (partition, KV head x head tile, sequence). The program's warps take the
// partition's token steps round robin; in a step each lane group gathers
// its tokens' key chunks and one value chunk per head dim it owns with
// 16-byte loads through the block table, computes the scores of all the
// program's query heads (GQA packing: K and V are read once per KV head),
// and folds them into a per-lane online softmax (running max, sum, weighted
// V). Nothing crosses lanes inside the token loop except the xor-shuffle sum
// of a token's dot product. After the loop lane groups merge by shuffles,
// warps through workgroup memory, and the program writes either the
// partition's (max logit, exp sum, partial output) or, one-pass, the output.
//
// Sketch of the IR (one warp step, heads_per_program = 4, f16, d128, b16):
//
//   %phys = memref.load %block_tables[%row + %tok floordiv 16]
//   %k0 = vector.load %key_cache[%kofs0] {alignment = 16} : vector<8xf16>
//   ...                                           // 8 key, 8 value chunks
//   %s = math.fma %q, %k, %s ...                  // 4 heads x 8 tokens
//   %r, %valid = gpu.shuffle xor %s, %c1, %c32 ...  // dot product across lanes
//   %m1 = arith.maxnumf ...; %p = math.exp2 ...  // online softmax
//
//===----------------------------------------------------------------------===//

#include "KernelIdioms.h"
#include "PartitionProgram.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

/// Per-lane online-softmax state: for each head of the tile, running max m
/// (log2 domain), running sum l and weighted-V accumulators (one per head
/// dim the lane owns). Flattened for scf.for iter_args.
struct SoftmaxState {
  int64_t heads, dims;
  SmallVector<Value> values; // [m x heads][l x heads][acc x heads*dims]

  Value &m(int64_t g) { return values[g]; }
  Value &l(int64_t g) { return values[heads + g]; }
  Value &acc(int64_t g, int64_t j) { return values[2 * heads + g * dims + j]; }
};

/// The SIMT token loop: per-lane online softmax, shuffle dot products.
class SimtPartitionBuilder : public PartitionProgram {
public:
  using PartitionProgram::PartitionProgram;

private:
  void emitPartition(ImplicitLocOpBuilder &b) override;
  void loadQuery(ImplicitLocOpBuilder &b);
  SoftmaxState emitStep(ImplicitLocOpBuilder &b, Value step, bool masked,
                        SoftmaxState state);
  SoftmaxState mergeLaneGroups(ImplicitLocOpBuilder &b, SoftmaxState state);
  void storeWarpState(ImplicitLocOpBuilder &b, SoftmaxState state);
  /// The lane's i-th key chunk or head dim, `laneInGroup + i * lanesPerToken`,
  /// clamped below `count` (lanes past it redo valid work that is dropped),
  /// and whether it was in range.
  std::pair<Value, Value> laneItem(ImplicitLocOpBuilder &b, int64_t i,
                                   int64_t count);

  Value laneInGroup, group;
  /// ALiBi slope x log2(e) of each tile head.
  SmallVector<Value> slopes;
  /// Query of the tile, fp32, pre-scaled by scale * log2(e):
  /// q[g][i][e] for tile head g, lane chunk i, element e.
  SmallVector<SmallVector<SmallVector<Value>>> q;
};

} // namespace

std::pair<Value, Value>
SimtPartitionBuilder::laneItem(ImplicitLocOpBuilder &b, int64_t i,
                               int64_t count) {
  Value item =
      arith::AddIOp::create(b, laneInGroup, cIdx(b, i * plan.lanesPerToken));
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, item, cIdx(b, count));
  if ((i + 1) * plan.lanesPerToken > count)
    item = arith::MinUIOp::create(b, item, cIdx(b, count - 1));
  return {item, inRange};
}

void SimtPartitionBuilder::loadQuery(ImplicitLocOpBuilder &b) {
  // Scores are kept in the log2 domain: fold scale * log2(e) into q once.
  Value qScale = arith::MulFOp::create(b, scale, cF32(b, M_LOG2E));
  q.assign(plan.headsPerProgram, {});
  for (int64_t g = 0; g < plan.headsPerProgram; ++g) {
    // A masked slot reads its group's last head; its results are dropped.
    Value safeHead = safeHeadOf(b, g);
    Value row = arith::MulIOp::create(
        b,
        arith::AddIOp::create(b, arith::MulIOp::create(b, seq, numHeads),
                              safeHead),
        cIdx(b, plan.headSize));
    for (int64_t i = 0; i < plan.piecesPerLane; ++i) {
      auto [piece, inRange] = laneItem(b, i, plan.pieces);
      Value ofs = arith::AddIOp::create(
          b, row, arith::MulIOp::create(b, piece, cIdx(b, plan.pieceElems)));
      SmallVector<Value> vals =
          toF32Scalars(b, loadVector(b, query, ofs, plan.pieceElems));
      for (Value &v : vals) {
        v = arith::MulFOp::create(b, v, qScale);
        if ((i + 1) * plan.lanesPerToken > plan.pieces) // lanes past the
                                                          // last piece add 0
          v = arith::SelectOp::create(b, inRange, v, cF32(b, 0.0f));
      }
      q[g].push_back(std::move(vals));
    }
  }
}

void SimtPartitionBuilder::emitPartition(ImplicitLocOpBuilder &b) {
  laneInGroup = arith::RemUIOp::create(b, lane, cIdx(b, plan.lanesPerToken));
  group = arith::DivUIOp::create(b, lane, cIdx(b, plan.lanesPerToken));
  loadQuery(b);

  SoftmaxState state{plan.headsPerProgram, plan.dimsPerLane, {}};
  for (int64_t g = 0; g < plan.headsPerProgram; ++g)
    state.values.push_back(cF32(b, -FLT_MAX));
  for (int64_t g = 0; g < plan.headsPerProgram; ++g)
    state.values.push_back(cF32(b, 0.0f));
  for (int64_t i = 0; i < plan.headsPerProgram * plan.dimsPerLane; ++i)
    state.values.push_back(cF32(b, 0.0f));

  // ALiBi slopes of the tile's heads, log2 domain.
  slopes.clear();
  for (int64_t g = 0; g < plan.headsPerProgram && plan.extLogits; ++g)
    slopes.push_back(alibiSlopeLog2(b, safeHeadOf(b, g)));

  state.values = emitStepLoop(
      b, state.values,
      [&](ImplicitLocOpBuilder &nb, Value step, bool masked,
          SmallVector<Value> values) {
        SoftmaxState in{plan.headsPerProgram, plan.dimsPerLane,
                        std::move(values)};
        return emitStep(nb, step, masked, in).values;
      });

  state = mergeLaneGroups(b, state);
  storeWarpState(b, state);
  emitEpilogue(b);
}

SoftmaxState SimtPartitionBuilder::emitStep(ImplicitLocOpBuilder &b,
                                              Value step, bool masked,
                                              SoftmaxState state) {
  const int64_t heads = plan.headsPerProgram, x = plan.keyPack,
                tokens = plan.groupTokens;
  // First token of this lane group's chunk of the step.
  Value tok0 = arith::AddIOp::create(
      b, stepToken(b, step), arith::MulIOp::create(b, group, cIdx(b, tokens)));
  Value addrTok = tok0;
  if (masked) {
    // Keep addresses inside the sequence's blocks: groups past the end read
    // the last chunk again and mask everything.
    Value last = arith::SubIOp::create(b, seqLen, cIdx(b, 1));
    Value lastChunk = arith::MulIOp::create(
        b, arith::DivUIOp::create(b, last, cIdx(b, tokens)), cIdx(b, tokens));
    addrTok = arith::MinUIOp::create(b, tok0, lastChunk);
  }
  Value logical = arith::DivUIOp::create(b, addrTok, cIdx(b, plan.blockSize));
  Value slot = arith::RemUIOp::create(b, addrTok, cIdx(b, plan.blockSize));
  Value phys = toIndex(b, memref::LoadOp::create(
                              b, blockTables,
                              ValueRange{arith::AddIOp::create(b, blockRow,
                                                               logical)}));
  Value base = arith::AddIOp::create(
      b, arith::MulIOp::create(b, phys, blockStride), kvHeadOffset);

  // Issue every load of the step before any arithmetic: 16 bytes each.
  SmallVector<SmallVector<Value>> keys; // [piece i][token j] vectors
  const int64_t perChunk = x / plan.pieceElems;
  for (int64_t i = 0; i < plan.piecesPerLane; ++i) {
    Value piece = laneItem(b, i, plan.pieces).first;
    Value chunk = piece, within = cIdx(b, 0);
    if (perChunk > 1) {
      chunk = arith::DivUIOp::create(b, piece, cIdx(b, perChunk));
      within = arith::MulIOp::create(
          b, arith::RemUIOp::create(b, piece, cIdx(b, perChunk)),
          cIdx(b, plan.pieceElems));
    }
    // key_cache[phys, kvh, chunk, slot + j, within : within + pieceElems]
    Value rowOfs = arith::AddIOp::create(
        b, base,
        arith::AddIOp::create(
            b,
            arith::MulIOp::create(
                b,
                arith::AddIOp::create(
                    b, arith::MulIOp::create(b, chunk, cIdx(b, plan.blockSize)),
                    slot),
                cIdx(b, x)),
            within));
    keys.emplace_back();
    for (int64_t j = 0; j < tokens; ++j)
      keys.back().push_back(
          loadVector(b, keyCache, arith::AddIOp::create(b, rowOfs, cIdx(b, j * x)),
                     plan.pieceElems));
  }
  SmallVector<Value> values; // [dim j] vectors of `tokens` tokens
  for (int64_t j = 0; j < plan.dimsPerLane; ++j) {
    Value dim = laneItem(b, j, plan.headSize).first;
    // value_cache[phys, kvh, dim, slot : slot + tokens]
    Value ofs = arith::AddIOp::create(
        b, base,
        arith::AddIOp::create(
            b, arith::MulIOp::create(b, dim, cIdx(b, plan.blockSize)), slot));
    values.push_back(loadVector(b, valueCache, ofs, tokens));
  }

  // Token validity (masked steps: from the window's start to the range's
  // end) and ALiBi positions.
  SmallVector<Value> valid, position;
  Value pos0 = plan.extLogits ? alibiPosition(b, tok0) : Value();
  for (int64_t j = 0; j < tokens; ++j) {
    if (plan.extLogits)
      position.push_back(
          j ? arith::AddFOp::create(b, pos0, cF32(b, float(j))) : pos0);
    Value tok = arith::AddIOp::create(b, tok0, cIdx(b, j));
    if (masked)
      valid.push_back(tokenValid(b, tok));
  }

  // Scores: partial dot products over this lane's chunks, then summed over
  // the lane group with xor shuffles. One token's key is widened at a time
  // and consumed by every head, to keep few fp32 copies live.
  SmallVector<SmallVector<Value>> scores(heads, SmallVector<Value>(tokens));
  for (int64_t j = 0; j < tokens; ++j) {
    SmallVector<SmallVector<Value>> key; // [piece i][element e]
    for (int64_t i = 0; i < plan.piecesPerLane; ++i)
      key.push_back(toF32Scalars(b, keys[i][j], plan.fp8Hardware));
    for (int64_t g = 0; g < heads; ++g) {
      Value s = cF32(b, 0.0f);
      for (int64_t i = 0; i < plan.piecesPerLane; ++i)
        for (int64_t e = 0; e < plan.pieceElems; ++e)
          s = fma(b, q[g][i][e], key[i][e], s);
      scores[g][j] = s;
    }
  }
  SmallVector<Value> flat;
  for (int64_t g = 0; g < heads; ++g)
    for (int64_t j = 0; j < tokens; ++j) {
      Value s = scores[g][j];
      for (int64_t off = 1; off < plan.lanesPerToken; off *= 2)
        s = arith::AddFOp::create(b, s, shuffleXor(b, s, off));
      flat.push_back(s);
    }
  // Soft cap, ALiBi, then the mask (last: a masked token stays -inf).
  flat = softCap(b, flat);
  for (int64_t g = 0; g < heads; ++g)
    for (int64_t j = 0; j < tokens; ++j) {
      Value s = flat[g * tokens + j];
      if (plan.extLogits)
        s = fma(b, slopes[g], position[j], s);
      if (masked)
        s = arith::SelectOp::create(b, valid[j], s, cF32(b, -INFINITY));
      scores[g][j] = s;
    }

  // Online softmax, per head of the tile, within this lane: new max, the
  // rescale of the old state, the weights of this step's tokens.
  SmallVector<Value> alpha(heads);
  SmallVector<SmallVector<Value>> p(heads);
  for (int64_t g = 0; g < heads; ++g) {
    Value mNew = state.m(g);
    for (Value s : scores[g])
      mNew = maxf(b, mNew, s);
    alpha[g] = exp2(b, arith::SubFOp::create(b, state.m(g), mNew));
    Value sum = cF32(b, 0.0f);
    for (Value s : scores[g]) {
      p[g].push_back(exp2(b, arith::SubFOp::create(b, s, mNew)));
      sum = arith::AddFOp::create(b, sum, p[g].back());
    }
    state.l(g) = fma(b, state.l(g), alpha[g], sum);
    state.m(g) = mNew;
  }

  // Weighted values: one head dim's chunk widened at a time.
  for (int64_t j = 0; j < plan.dimsPerLane; ++j) {
    SmallVector<Value> v = toF32Scalars(b, values[j], plan.fp8Hardware);
    if (masked) // garbage outside the range must not meet a zero weight
      for (int64_t t = 0; t < tokens; ++t)
        v[t] = arith::SelectOp::create(b, valid[t], v[t], cF32(b, 0.0f));
    for (int64_t g = 0; g < heads; ++g) {
      Value acc = arith::MulFOp::create(b, state.acc(g, j), alpha[g]);
      for (int64_t t = 0; t < tokens; ++t)
        acc = fma(b, p[g][t], v[t], acc);
      state.acc(g, j) = acc;
    }
  }
  return state;
}

SoftmaxState SimtPartitionBuilder::mergeLaneGroups(ImplicitLocOpBuilder &b,
                                                     SoftmaxState state) {
  // Lanes with the same position in their group own the same head dims and
  // different tokens: merge their states with the log-sum-exp rule.
  for (int64_t off = plan.lanesPerToken; off < 32; off *= 2)
    for (int64_t g = 0; g < plan.headsPerProgram; ++g) {
      Value mOther = shuffleXor(b, state.m(g), off);
      Value mNew = maxf(b, state.m(g), mOther);
      Value a = exp2(b, arith::SubFOp::create(b, state.m(g), mNew));
      Value c = exp2(b, arith::SubFOp::create(b, mOther, mNew));
      Value lOther = shuffleXor(b, state.l(g), off);
      state.l(g) = fma(b, state.l(g), a, arith::MulFOp::create(b, lOther, c));
      for (int64_t j = 0; j < plan.dimsPerLane; ++j) {
        Value accOther = shuffleXor(b, state.acc(g, j), off);
        state.acc(g, j) = fma(b, state.acc(g, j), a,
                              arith::MulFOp::create(b, accOther, c));
      }
      state.m(g) = mNew;
    }
  return state;
}

void SimtPartitionBuilder::storeWarpState(ImplicitLocOpBuilder &b,
                                          SoftmaxState state) {
  const int64_t heads = plan.headsPerProgram, d = plan.headSize;
  Value firstGroup = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, group,
                                           cIdx(b, 0));
  auto ifOp = scf::IfOp::create(b, firstGroup, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  for (int64_t g = 0; g < heads; ++g) {
    for (int64_t j = 0; j < plan.dimsPerLane; ++j) {
      auto [dim, ok] = laneItem(b, j, d);
      Value idx = accIndex(b, warp, cIdx(b, g), dim);
      if ((j + 1) * plan.lanesPerToken > d) {
        auto inner = scf::IfOp::create(b, ok, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(inner.thenBlock());
        memref::StoreOp::create(b, state.acc(g, j), shared, ValueRange{idx});
      } else {
        memref::StoreOp::create(b, state.acc(g, j), shared, ValueRange{idx});
      }
    }
    // Every lane of the group holds the same m and l: one store each.
    memref::StoreOp::create(b, state.m(g), shared,
                            ValueRange{mIndex(b, warp, cIdx(b, g))});
    memref::StoreOp::create(b, state.l(g), shared,
                            ValueRange{lIndex(b, warp, cIdx(b, g))});
  }
}

gpu::GPUFuncOp mlir::paged_attn::buildSimtPartitionKernel(
    OpBuilder &moduleBuilder, Location loc, const KernelPlan &plan,
    bool onePass) {
  return SimtPartitionBuilder(plan, onePass).build(moduleBuilder, loc);
}
