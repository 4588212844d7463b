//===- PartitionKernel.cpp - the SIMT partition (and one-pass) kernel -----===//
//
// Builds `<variant>_partition` and `<variant>_onepass` on CUDA cores (every
// chip, every dtype; sm_70 and f32 caches use it): one program per
// (partition, KV head x head tile, sequence). The program's warps take the
// partition's token steps round robin; in a step each lane group gathers
// its tokens' key chunks and one value chunk per head dim it owns with
// 16-byte loads through the block table, computes the scores of all the
// program's query heads (GQA packing: K and V are read once per KV head),
// and folds them into an online softmax (running max, sum, weighted V).
//
// The scores. A lane holds partial dot products for every (head, token)
// pair of its group's step (its pieces of each key); the group's xor tree
// that sums them is a reduce-scatter, not an all-reduce: at each level a
// lane adds the half of its partials its partner sends and drops the other
// half, so the tree costs fewer than heads * tokens shuffles instead
// of heads * tokens * log2(lanes). No select is needed because each lane holds
// its partials in an order permuted by its own lane bits: its query rows
// are those of head (a ^ ownHead0) and its key loads those of token
// (c ^ ownToken0), so the half to keep is always the same registers. A lane
// ends with the complete scores of one head (or a few) and a few tokens; it
// does the softmax of those only, then the group shares the weights
// p[head][token] and the rescale factors through a row of workgroup memory,
// and every lane reads back the weights it needs for its value rows.
//
// Sketch of the IR (one warp step, heads_per_program = 4, f16, d128, b16):
//
//   %phys = memref.load %block_tables[%row + %tok floordiv 16]
//   %k0 = vector.load %key_cache[%kofs0] {alignment = 16} : vector<8xf16>
//   ...                                  // 8 key, 8 value chunks
//   %s = math.fma %q, %k, %s ...         // 4 heads x 8 tokens of partials
//   %r, %valid = gpu.shuffle xor %s, %c8, %c32 ...  // reduce-scatter:
//                                        // 16 + 8 + 4 + 2 shuffles
//   %p = math.exp2 ...                   // the lane's 2 scores
//   memref.store %p, %shared[...]        // the group's score row
//   nvvm.bar.warp.sync ...; vector.load %shared[...] // all the weights
//   %acc = math.fma %p, %v, %acc ...     // 4 heads x 8 dims x 8 tokens
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

#include "llvm/Support/MathExtras.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

/// Per-lane online-softmax state in the form the merges take: for each head
/// of the tile, running max m (log2 domain), running sum l and weighted-V
/// accumulators (one per head dim the lane owns).
struct SoftmaxState {
  int64_t heads, dims;
  SmallVector<Value> values; // [m x heads][l x heads][acc x heads*dims]

  Value &m(int64_t g) { return values[g]; }
  Value &l(int64_t g) { return values[heads + g]; }
  Value &acc(int64_t g, int64_t j) { return values[2 * heads + g * dims + j]; }
};

/// The token loop's state (scf.for iter_args): m and l of the heads whose
/// scores the lane owns (slot a is tile head ownHead0 + a; its l counts the
/// lane's own tokens only), and the accumulators of every head of the tile.
struct LoopState {
  int64_t ownHeads, heads, dims;
  SmallVector<Value> values; // [m x ownHeads][l x ownHeads][acc x heads*dims]

  Value &m(int64_t a) { return values[a]; }
  Value &l(int64_t a) { return values[ownHeads + a]; }
  Value &acc(int64_t g, int64_t j) {
    return values[2 * ownHeads + g * dims + j];
  }
};

/// The SIMT token loop: reduce-scattered dot products, per-head online
/// softmax, weights shared through workgroup memory.
class SimtPartitionBuilder : public PartitionProgram {
public:
  using PartitionProgram::PartitionProgram;

private:
  void emitPartition(ImplicitLocOpBuilder &b) override;
  void planScoreTree(ImplicitLocOpBuilder &b);
  void loadQuery(ImplicitLocOpBuilder &b);
  /// One warp step's values, handed from phase to phase of emitStep.
  struct SimtStep {
    bool masked;
    /// First token of the lane group's chunk of the step; the chunk's block
    /// base and slot in its block; whether its block-table entry is bad.
    Value tok0, base, slot, bad;
    SmallVector<SmallVector<Value>> keys; // [piece i][slot c] vectors
    SmallVector<Value> values;            // [dim j] vectors of the chunk
  };

  /// One warp step, in the phases below: every load, the partial dot
  /// products and their tree, the logits, the online softmax, the weights
  /// through the group's score row, the weighted values.
  LoopState emitStep(ImplicitLocOpBuilder &b, Value step, bool masked,
                     LoopState state);
  void locateChunk(ImplicitLocOpBuilder &b, SimtStep &st, Value step);
  void loadKeys(ImplicitLocOpBuilder &b, SimtStep &st);
  void loadValues(ImplicitLocOpBuilder &b, SimtStep &st);
  SmallVector<Value> partialScores(ImplicitLocOpBuilder &b, SimtStep &st);
  /// Soft cap, ALiBi, bad blocks and the mask on the lane's scores.
  void applyLogitTerms(ImplicitLocOpBuilder &b, SimtStep &st,
                       SmallVector<SmallVector<Value>> &scores);
  void foldSoftmax(ImplicitLocOpBuilder &b, ArrayRef<SmallVector<Value>> scores,
                   LoopState &state, SmallVector<Value> &alpha,
                   SmallVector<SmallVector<Value>> &p);
  /// Every head's weights and rescale factor of the group, in every lane.
  void shareWeights(ImplicitLocOpBuilder &b, ArrayRef<Value> alpha,
                    ArrayRef<SmallVector<Value>> p,
                    SmallVector<Value> &alphaAll, SmallVector<Value> &pAll);
  void accumulateValues(ImplicitLocOpBuilder &b, SimtStep &st,
                        ArrayRef<Value> alphaAll, ArrayRef<Value> pAll,
                        LoopState &state);
  /// The lane's step scores, summed over its group: [a][c] is tile head
  /// ownHead0 + a, token ownToken0 + c of the group's chunk.
  SmallVector<SmallVector<Value>> reduceScores(ImplicitLocOpBuilder &b,
                                               SmallVector<Value> partials);
  /// The loop state in the merges' form: every head's m and l in every lane.
  SoftmaxState gatherStats(ImplicitLocOpBuilder &b, LoopState state);
  SoftmaxState mergeLaneGroups(ImplicitLocOpBuilder &b, SoftmaxState state);
  void storeWarpState(ImplicitLocOpBuilder &b, SoftmaxState state);
  /// The lane's i-th key chunk or head dim, `laneInGroup + i * lanesPerToken`,
  /// clamped below `count` (lanes past it redo valid work that is dropped),
  /// and whether it was in range.
  std::pair<Value, Value> laneItem(ImplicitLocOpBuilder &b, int64_t i,
                                   int64_t count);
  /// Shuffle offset of level i of the group's xor tree (largest first), and
  /// the slot bit (in a * groupTokens + c) it scatters, 0 for an all-reduce
  /// level.
  int64_t levelOffset(int64_t i) const { return plan.lanesPerToken >> (i + 1); }
  int64_t levelSlotBit(int64_t i) const;
  /// The offsets of the token levels: the lanes holding a head's other
  /// tokens.
  SmallVector<int64_t> tokenLevelOffsets() const {
    SmallVector<int64_t> out;
    for (int64_t i = headLevels; i < headLevels + tokenLevels; ++i)
      out.push_back(levelOffset(i));
    return out;
  }
  /// headOfSlot, or the group's last head where the slot is masked.
  Value safeHeadOfSlot(ImplicitLocOpBuilder &b, Value slot);

  // The score tree (planScoreTree): log2 of lanes, heads, tokens; how many
  // levels scatter head bits and token bits (the rest all-reduce); what a
  // lane owns after it.
  int64_t levels = 0, headBits = 0, tokenBits = 0, headLevels = 0,
          tokenLevels = 0, ownHeads = 1, ownTokens = 1;
  Value laneInGroup, group;
  /// First tile head and first token (of the group's chunk) the lane owns;
  /// ownToken0 times the key layout's token stride.
  Value ownHead0, ownToken0, ownTokenStride;
  /// The lane writes the weights it owns (lowest of its replicas) and the
  /// rescale factors too (lowest lane of its head).
  Value writesWeights, writesAlpha;
  /// This lane group's row of workgroup memory: p[head][token], alpha[head].
  Value scoreRow;
  /// ALiBi slope x log2(e) of each head the lane owns.
  SmallVector<Value> slopes;
  /// Query of the tile, fp32, pre-scaled by scale * log2(e), in the lane's
  /// order: q[a][i][e] is tile head a ^ ownHead0, lane chunk i, element e.
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

int64_t SimtPartitionBuilder::levelSlotBit(int64_t i) const {
  if (i < headLevels) // head bit headBits - 1 - i
    return plan.groupTokens << (headBits - 1 - i);
  if (i < headLevels + tokenLevels) // token bit tokenBits - 1 - (i - hl)
    return int64_t(1) << (tokenBits - 1 - (i - headLevels));
  return 0;
}

Value SimtPartitionBuilder::safeHeadOfSlot(ImplicitLocOpBuilder &b,
                                           Value slot) {
  auto [head, valid] = headOfSlot(b, slot);
  Value lastHead = arith::SubIOp::create(
      b,
      arith::MulIOp::create(b, arith::AddIOp::create(b, kvHead, cIdx(b, 1)),
                            toIndex(b, groupSize)),
      cIdx(b, 1));
  return arith::SelectOp::create(b, valid, head, lastHead);
}

void SimtPartitionBuilder::planScoreTree(ImplicitLocOpBuilder &b) {
  // Lane bits, high to low: head levels, token levels, replica levels.
  levels = llvm::Log2_64(plan.lanesPerToken);
  headBits = llvm::Log2_64(plan.headsPerProgram);
  tokenBits = llvm::Log2_64(plan.groupTokens);
  headLevels = std::min(headBits, levels);
  tokenLevels = std::min(tokenBits, levels - headLevels);
  int64_t replicaLevels = levels - headLevels - tokenLevels;
  ownHeads = plan.headsPerProgram >> headLevels;
  ownTokens = plan.groupTokens >> tokenLevels;

  auto field = [&](int64_t shift, int64_t bits, int64_t up) -> Value {
    if (bits == 0)
      return cIdx(b, 0);
    Value f = arith::ShRUIOp::create(b, laneInGroup, cIdx(b, shift));
    f = arith::AndIOp::create(b, f, cIdx(b, (int64_t(1) << bits) - 1));
    return arith::ShLIOp::create(b, f, cIdx(b, up));
  };
  ownHead0 = field(levels - headLevels, headLevels, headBits - headLevels);
  ownToken0 = field(replicaLevels, tokenLevels, tokenBits - tokenLevels);
  ownTokenStride = arith::MulIOp::create(b, ownToken0, cIdx(b, plan.keyPack));
  auto lowBitsZero = [&](int64_t bits) {
    return arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq,
        arith::AndIOp::create(b, laneInGroup,
                              cIdx(b, (int64_t(1) << bits) - 1)),
        cIdx(b, 0));
  };
  writesWeights = lowBitsZero(replicaLevels);
  writesAlpha = lowBitsZero(replicaLevels + tokenLevels);
  scoreRow = arith::AddIOp::create(
      b, cIdx(b, scratchBase()),
      arith::MulIOp::create(
          b,
          arith::AddIOp::create(
              b, arith::MulIOp::create(b, warp, cIdx(b, plan.groups)), group),
          cIdx(b, plan.simtScoreRowFloats())));
}

void SimtPartitionBuilder::loadQuery(ImplicitLocOpBuilder &b) {
  // Scores are kept in the log2 domain: fold scale * log2(e) into q once.
  Value qScale = arith::MulFOp::create(b, scale, cF32(b, M_LOG2E));
  q.assign(plan.headsPerProgram, {});
  for (int64_t a = 0; a < plan.headsPerProgram; ++a) {
    // A masked slot reads its group's last head; its results are dropped.
    Value slot = arith::XOrIOp::create(b, cIdx(b, a), ownHead0);
    Value safeHead = safeHeadOfSlot(b, slot);
    Value qBase = arith::MulIOp::create(
        b,
        arith::AddIOp::create(b, arith::MulIOp::create(b, row, numHeads),
                              safeHead),
        cIdx(b, plan.headSize));
    for (int64_t i = 0; i < plan.piecesPerLane; ++i) {
      auto [piece, inRange] = laneItem(b, i, plan.pieces);
      Value ofs = arith::AddIOp::create(
          b, qBase, arith::MulIOp::create(b, piece, cIdx(b, plan.pieceElems)));
      SmallVector<Value> vals =
          toF32Scalars(b, loadVector(b, query, ofs, plan.pieceElems));
      for (Value &v : vals) {
        v = arith::MulFOp::create(b, v, qScale);
        if ((i + 1) * plan.lanesPerToken > plan.pieces) // lanes past the
                                                          // last piece add 0
          v = arith::SelectOp::create(b, inRange, v, cF32(b, 0.0f));
      }
      q[a].push_back(std::move(vals));
    }
  }
}

void SimtPartitionBuilder::emitPartition(ImplicitLocOpBuilder &b) {
  laneInGroup = arith::RemUIOp::create(b, lane, cIdx(b, plan.lanesPerToken));
  group = arith::DivUIOp::create(b, lane, cIdx(b, plan.lanesPerToken));
  planScoreTree(b);
  loadQuery(b);

  LoopState state{ownHeads, plan.headsPerProgram, plan.dimsPerLane, {}};
  for (int64_t a = 0; a < ownHeads; ++a)
    state.values.push_back(cF32(b, -FLT_MAX));
  for (int64_t a = 0; a < ownHeads; ++a)
    state.values.push_back(cF32(b, 0.0f));
  for (int64_t i = 0; i < plan.headsPerProgram * plan.dimsPerLane; ++i)
    state.values.push_back(cF32(b, 0.0f));

  // ALiBi slopes of the lane's heads, log2 domain.
  slopes.clear();
  for (int64_t a = 0; a < ownHeads && plan.extLogits; ++a)
    slopes.push_back(alibiSlopeLog2(
        b, safeHeadOfSlot(b, arith::AddIOp::create(b, ownHead0, cIdx(b, a)))));

  state.values = emitStepLoop(
      b, state.values,
      [&](ImplicitLocOpBuilder &nb, Value step, StepMask mask,
          SmallVector<Value> values) {
        bool masked = mask != StepMask::none;
        LoopState in{ownHeads, plan.headsPerProgram, plan.dimsPerLane,
                     std::move(values)};
        return emitStep(nb, step, masked, in).values;
      });

  SoftmaxState merged = mergeLaneGroups(b, gatherStats(b, state));
  storeWarpState(b, merged);
  emitEpilogue(b);
}

SmallVector<SmallVector<Value>>
SimtPartitionBuilder::reduceScores(ImplicitLocOpBuilder &b,
                                   SmallVector<Value> part) {
  // part[k], k = a * tokens + c: the lane's partial for its slot (a, c).
  // At a scatter level the lane keeps slots with the level's bit clear and
  // adds the partner's same slots, which the partner holds under the bit
  // set (its lane bit differs, and so does its permutation).
  for (int64_t i = 0; i < levels; ++i) {
    int64_t off = levelOffset(i), bit = levelSlotBit(i);
    for (int64_t k = 0, e = part.size(); k < e; ++k) {
      if (!part[k] || (k & bit))
        continue;
      Value sent = bit ? part[k | bit] : part[k];
      part[k] = arith::AddFOp::create(b, part[k], shuffleXor(b, sent, off));
      if (bit)
        part[k | bit] = Value();
    }
  }
  SmallVector<SmallVector<Value>> scores(ownHeads);
  for (int64_t a = 0; a < ownHeads; ++a)
    for (int64_t c = 0; c < ownTokens; ++c)
      scores[a].push_back(part[a * plan.groupTokens + c]);
  return scores;
}

LoopState SimtPartitionBuilder::emitStep(ImplicitLocOpBuilder &b, Value step,
                                         bool masked, LoopState state) {
  SimtStep st{masked};
  locateChunk(b, st, step);
  // Every load of the step before any arithmetic: 16 bytes each.
  loadKeys(b, st);
  loadValues(b, st);
  SmallVector<SmallVector<Value>> scores =
      reduceScores(b, partialScores(b, st));
  applyLogitTerms(b, st, scores);
  SmallVector<Value> alpha;
  SmallVector<SmallVector<Value>> p;
  foldSoftmax(b, scores, state, alpha, p);
  SmallVector<Value> alphaAll, pAll;
  shareWeights(b, alpha, p, alphaAll, pAll);
  accumulateValues(b, st, alphaAll, pAll, state);
  return state;
}

void SimtPartitionBuilder::locateChunk(ImplicitLocOpBuilder &b, SimtStep &st,
                                       Value step) {
  const int64_t tokens = plan.groupTokens;
  st.tok0 = arith::AddIOp::create(
      b, stepToken(b, step), arith::MulIOp::create(b, group, cIdx(b, tokens)));
  Value addrTok = st.tok0;
  if (st.masked) {
    // Keep addresses inside the sequence's blocks: groups past the end read
    // the last chunk again and mask everything.
    Value last = arith::SubIOp::create(b, seqLen, cIdx(b, 1));
    Value lastChunk = arith::MulIOp::create(
        b, arith::DivUIOp::create(b, last, cIdx(b, tokens)), cIdx(b, tokens));
    addrTok = arith::MinUIOp::create(b, st.tok0, lastChunk);
  }
  // The group's tokens lie in one block (block_size % groupTokens == 0).
  Value logical = blockOf(b, addrTok);
  st.slot = blockSlotOf(b, addrTok);
  CheckedEntry entry = checkedEntry(
      b, memref::LoadOp::create(
             b, blockTables,
             ValueRange{arith::AddIOp::create(b, blockRow, logical)}));
  st.bad = entry.bad;
  Value phys = toIndex(b, entry.entry);
  st.base = arith::AddIOp::create(
      b, arith::MulIOp::create(b, phys, blockStride), kvHeadOffset);
}

void SimtPartitionBuilder::loadKeys(ImplicitLocOpBuilder &b, SimtStep &st) {
  // The lane's key slot c holds token c ^ ownToken0 of the chunk; the XOR
  // touches only the token bits the tree scatters (ownTokens apart).
  const int64_t x = plan.keyPack, tokens = plan.groupTokens;
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
    // key_cache[phys, kvh, chunk, slot + token, within : within + pieceElems]
    Value rowOfs = arith::AddIOp::create(
        b, st.base,
        arith::AddIOp::create(
            b,
            arith::MulIOp::create(
                b, arith::AddIOp::create(b, timesBlock(b, chunk), st.slot),
                cIdx(b, x)),
            within));
    st.keys.emplace_back();
    for (int64_t hi = 0; hi < tokens; hi += ownTokens) {
      Value hiOfs = cIdx(b, hi * x);
      if (tokenLevels > 0)
        hiOfs = arith::XOrIOp::create(b, hiOfs, ownTokenStride);
      Value rowHi = arith::AddIOp::create(b, rowOfs, hiOfs);
      for (int64_t lo = 0; lo < ownTokens; ++lo)
        st.keys.back().push_back(loadVector(
            b, keyCache, arith::AddIOp::create(b, rowHi, cIdx(b, lo * x)),
            plan.pieceElems));
    }
  }
}

void SimtPartitionBuilder::loadValues(ImplicitLocOpBuilder &b, SimtStep &st) {
  // One vector of the chunk's tokens per head dim the lane owns:
  // value_cache[phys, kvh, dim, slot : slot + tokens].
  for (int64_t j = 0; j < plan.dimsPerLane; ++j) {
    Value dim = laneItem(b, j, plan.headSize).first;
    Value ofs = arith::AddIOp::create(
        b, st.base, arith::AddIOp::create(b, timesBlock(b, dim), st.slot));
    st.values.push_back(loadVector(b, valueCache, ofs, plan.groupTokens));
  }
}

SmallVector<Value> SimtPartitionBuilder::partialScores(ImplicitLocOpBuilder &b,
                                                       SimtStep &st) {
  // Partial dot products over this lane's pieces, for every slot. One
  // token's key is widened at a time and consumed by every head, to keep
  // few fp32 copies live.
  const int64_t heads = plan.headsPerProgram, tokens = plan.groupTokens;
  SmallVector<Value> partials(heads * tokens);
  for (int64_t c = 0; c < tokens; ++c) {
    SmallVector<SmallVector<Value>> key; // [piece i][element e]
    for (int64_t i = 0; i < plan.piecesPerLane; ++i)
      key.push_back(toF32Scalars(b, st.keys[i][c], plan.fp8Hardware));
    for (int64_t a = 0; a < heads; ++a) {
      Value s = cF32(b, 0.0f);
      for (int64_t i = 0; i < plan.piecesPerLane; ++i)
        for (int64_t e = 0; e < plan.pieceElems; ++e)
          s = fma(b, q[a][i][e], key[i][e], s);
      partials[a * tokens + c] = s;
    }
  }
  return partials;
}

void SimtPartitionBuilder::applyLogitTerms(
    ImplicitLocOpBuilder &b, SimtStep &st,
    SmallVector<SmallVector<Value>> &scores) {
  // The lane's tokens: validity (masked steps: from the window's start to
  // the range's end) and ALiBi positions.
  Value myTok0 = arith::AddIOp::create(b, st.tok0, ownToken0);
  SmallVector<Value> valid, position;
  Value pos0 = plan.extLogits ? alibiPosition(b, myTok0) : Value();
  for (int64_t c = 0; c < ownTokens; ++c) {
    if (plan.extLogits)
      position.push_back(
          c ? arith::AddFOp::create(b, pos0, cF32(b, float(c))) : pos0);
    if (st.masked)
      valid.push_back(
          tokenValid(b, arith::AddIOp::create(b, myTok0, cIdx(b, c))));
  }
  // Soft cap, ALiBi, then the mask (last: a masked token stays -inf). The
  // tokens of a bad block (the group's tokens lie in one) have NaN logits
  // before the mask: a head that attends to one gets a NaN sum.
  SmallVector<Value> flat;
  for (auto &row : scores)
    flat.append(row.begin(), row.end());
  flat = softCap(b, flat);
  for (int64_t a = 0; a < ownHeads; ++a)
    for (int64_t c = 0; c < ownTokens; ++c) {
      Value s = flat[a * ownTokens + c];
      if (plan.extLogits)
        s = fma(b, slopes[a], position[c], s);
      s = poisonIf(b, st.bad, s);
      if (st.masked)
        s = arith::SelectOp::create(b, valid[c], s, cF32(b, -INFINITY));
      scores[a][c] = s;
    }
}

void SimtPartitionBuilder::foldSoftmax(ImplicitLocOpBuilder &b,
                                       ArrayRef<SmallVector<Value>> scores,
                                       LoopState &state,
                                       SmallVector<Value> &alpha,
                                       SmallVector<SmallVector<Value>> &p) {
  // Online softmax of the lane's heads: the step's max over the head's
  // tokens (the lane's, then its token levels'), the rescale of the old
  // state, the weights.
  alpha.assign(ownHeads, Value());
  p.assign(ownHeads, {});
  for (int64_t a = 0; a < ownHeads; ++a)
    alpha[a] = foldOnlineSoftmax(b, state.m(a), state.l(a), scores[a],
                                 tokenLevelOffsets(), p[a]);
}

void SimtPartitionBuilder::shareWeights(ImplicitLocOpBuilder &b,
                                        ArrayRef<Value> alpha,
                                        ArrayRef<SmallVector<Value>> p,
                                        SmallVector<Value> &alphaAll,
                                        SmallVector<Value> &pAll) {
  // The group's score row: each weight and factor written once, then read
  // back whole by every lane. The first barrier keeps the previous step's
  // reads ahead of these writes.
  const int64_t heads = plan.headsPerProgram, tokens = plan.groupTokens;
  Value full = arith::ConstantIntOp::create(b, -1, 32);
  NVVM::SyncWarpOp::create(b, full);
  {
    auto writeIf = scf::IfOp::create(b, writesWeights, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(writeIf.thenBlock());
    Value pBase = arith::AddIOp::create(
        b, scoreRow,
        arith::AddIOp::create(
            b, arith::MulIOp::create(b, ownHead0, cIdx(b, tokens)), ownToken0));
    for (int64_t a = 0; a < ownHeads; ++a)
      for (int64_t c = 0; c < ownTokens; ++c)
        memref::StoreOp::create(
            b, p[a][c], shared,
            ValueRange{arith::AddIOp::create(b, pBase,
                                             cIdx(b, a * tokens + c))});
    auto alphaIf = scf::IfOp::create(b, writesAlpha, /*withElseRegion=*/false);
    b.setInsertionPointToStart(alphaIf.thenBlock());
    Value aBase = arith::AddIOp::create(
        b, scoreRow,
        arith::AddIOp::create(b, ownHead0, cIdx(b, heads * tokens)));
    for (int64_t a = 0; a < ownHeads; ++a)
      memref::StoreOp::create(
          b, alpha[a], shared,
          ValueRange{arith::AddIOp::create(b, aBase, cIdx(b, a))});
  }
  NVVM::SyncWarpOp::create(b, full);
  Value av = loadVector(
      b, shared, arith::AddIOp::create(b, scoreRow, cIdx(b, heads * tokens)),
      heads);
  for (int64_t g = 0; g < heads; ++g)
    alphaAll.push_back(vector::ExtractOp::create(b, av, g));
  for (int64_t g = 0; g < heads; ++g) {
    Value pv = loadVector(
        b, shared, arith::AddIOp::create(b, scoreRow, cIdx(b, g * tokens)),
        tokens);
    for (int64_t t = 0; t < tokens; ++t)
      pAll.push_back(vector::ExtractOp::create(b, pv, t));
  }
}

void SimtPartitionBuilder::accumulateValues(ImplicitLocOpBuilder &b,
                                            SimtStep &st,
                                            ArrayRef<Value> alphaAll,
                                            ArrayRef<Value> pAll,
                                            LoopState &state) {
  // Weighted values: one head dim's chunk widened at a time.
  const int64_t heads = plan.headsPerProgram, tokens = plan.groupTokens;
  SmallVector<Value> rowValid; // the group's tokens, masked steps
  for (int64_t t = 0; t < tokens && st.masked; ++t)
    rowValid.push_back(
        tokenValid(b, arith::AddIOp::create(b, st.tok0, cIdx(b, t))));
  for (int64_t j = 0; j < plan.dimsPerLane; ++j) {
    SmallVector<Value> v = toF32Scalars(b, st.values[j], plan.fp8Hardware);
    if (st.masked) // garbage outside the range must not meet a zero weight
      for (int64_t t = 0; t < tokens; ++t)
        v[t] = arith::SelectOp::create(b, rowValid[t], v[t], cF32(b, 0.0f));
    for (int64_t g = 0; g < heads; ++g) {
      Value acc = arith::MulFOp::create(b, state.acc(g, j), alphaAll[g]);
      for (int64_t t = 0; t < tokens; ++t)
        acc = fma(b, pAll[g * tokens + t], v[t], acc);
      state.acc(g, j) = acc;
    }
  }
}

SoftmaxState SimtPartitionBuilder::gatherStats(ImplicitLocOpBuilder &b,
                                               LoopState state) {
  // A head's l: the sum over the lanes of its token levels (replicas hold
  // the same). Then every lane takes each head's m and l from the lowest
  // lane owning it.
  SmallVector<Value> lSum(ownHeads);
  for (int64_t a = 0; a < ownHeads; ++a)
    lSum[a] = xorReduce(b, state.l(a), tokenLevelOffsets(), addf);
  SoftmaxState out{plan.headsPerProgram, plan.dimsPerLane, {}};
  out.values.resize(2 * plan.headsPerProgram);
  Value groupLane0 =
      arith::MulIOp::create(b, group, cIdx(b, plan.lanesPerToken));
  for (int64_t g = 0; g < plan.headsPerProgram; ++g) {
    int64_t a = g % ownHeads, field = g / ownHeads;
    Value src = arith::AddIOp::create(
        b, groupLane0, cIdx(b, field << (levels - headLevels)));
    out.m(g) = shuffleIdx(b, state.m(a), src);
    out.l(g) = shuffleIdx(b, lSum[a], src);
  }
  for (int64_t i = 0; i < plan.headsPerProgram * plan.dimsPerLane; ++i)
    out.values.push_back(state.values[2 * ownHeads + i]);
  return out;
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
    KernelRole role) {
  return SimtPartitionBuilder(plan, role).build(moduleBuilder, loc);
}
