//===- PartitionKernel.cpp - the partition (and one-pass) kernel ----------===//
//
// Builds `<variant>_partition` and `<variant>_onepass`: one program per
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

#include "KernelBuilders.h"
#include "KernelIdioms.h"

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

/// Builds one partition or one-pass kernel.
class PartitionKernelBuilder {
public:
  PartitionKernelBuilder(const KernelPlan &plan, bool onePass)
      : plan(plan), onePass(onePass) {}

  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, Location loc);

private:
  void emitBody(ImplicitLocOpBuilder &b);
  void emitSentinels(ImplicitLocOpBuilder &b);
  void emitPartition(ImplicitLocOpBuilder &b);
  void loadQuery(ImplicitLocOpBuilder &b);
  SoftmaxState emitStep(ImplicitLocOpBuilder &b, Value step, bool masked,
                        SoftmaxState state);
  SoftmaxState mergeLaneGroups(ImplicitLocOpBuilder &b, SoftmaxState state);
  void mergeWarpsAndStore(ImplicitLocOpBuilder &b, SoftmaxState state);
  /// Query head of tile slot g, and whether it exists (the last tile of a
  /// group that is not a multiple of the tile is masked).
  std::pair<Value, Value> headOf(ImplicitLocOpBuilder &b, int64_t g);
  /// The lane's i-th key chunk or head dim, `laneInGroup + i * lanesPerToken`,
  /// clamped below `count` (lanes past it redo valid work that is dropped),
  /// and whether it was in range.
  std::pair<Value, Value> laneItem(ImplicitLocOpBuilder &b, int64_t i,
                                   int64_t count);

  const KernelPlan &plan;
  bool onePass;

  // Kernel arguments.
  Value query, keyCache, valueCache, blockTables, seqLens, output, expSums,
      maxLogits, tmpOutput, scale, maxBlocks, maxParts, partTokens, numKvHeads,
      groupSize, shared;
  // Values computed once in the prologue.
  Value lane, warp, laneInGroup, group, part, seq, kvHead, tile, numHeads,
      seqLen, partStart, partEnd, blockRow, kvHeadOffset, blockStride;
  /// Query of the tile, fp32, pre-scaled by scale * log2(e):
  /// q[g][i][e] for tile head g, lane chunk i, element e.
  SmallVector<SmallVector<SmallVector<Value>>> q;
};

} // namespace

gpu::GPUFuncOp PartitionKernelBuilder::build(OpBuilder &moduleBuilder,
                                             Location loc) {
  MLIRContext *ctx = moduleBuilder.getContext();
  auto flat = [&](Type t) { return flatMemRefType(t); };
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  Type i32Flat = flat(i32), f32Flat = flat(f32);
  SmallVector<Type> args{flat(plan.elemType),  flat(plan.cacheType),
                         flat(plan.cacheType), i32Flat,
                         i32Flat,              flat(plan.elemType),
                         f32Flat,              f32Flat,
                         flat(plan.tmpType),   f32,
                         i32,                  i32,
                         i32,                  i32,
                         i32};
  auto sharedType = MemRefType::get(
      {plan.sharedFloats()}, f32, MemRefLayoutAttrInterface{},
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  std::string name = plan.name() + (onePass ? "_onepass" : "_partition");
  auto func = gpu::GPUFuncOp::create(moduleBuilder, loc, name,
                                     moduleBuilder.getFunctionType(args, {}),
                                     TypeRange{sharedType});
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                moduleBuilder.getUnitAttr());
  func.setKnownBlockSizeAttr(moduleBuilder.getDenseI32ArrayAttr(
      {static_cast<int32_t>(plan.threads()), 1, 1}));
  // Tell ptxas one program per SM is acceptable: without it, ptxas for
  // sm_90 may cap registers for occupancy and spill the softmax state.
  func->setAttr("nvvm.minctasm", moduleBuilder.getI32IntegerAttr(1));

  Block &entry = func.getBody().front();
  auto arg = [&](unsigned i) { return entry.getArgument(i); };
  query = arg(0), keyCache = arg(1), valueCache = arg(2), blockTables = arg(3),
  seqLens = arg(4), output = arg(5), expSums = arg(6), maxLogits = arg(7),
  tmpOutput = arg(8), scale = arg(9), maxBlocks = arg(10), maxParts = arg(11),
  partTokens = arg(12), numKvHeads = arg(13), groupSize = arg(14);
  shared = func.getWorkgroupAttributions().front();

  ImplicitLocOpBuilder b(loc, ctx);
  b.setInsertionPointToStart(&entry);
  emitBody(b);
  gpu::ReturnOp::create(b);
  return func;
}

std::pair<Value, Value> PartitionKernelBuilder::headOf(ImplicitLocOpBuilder &b,
                                                       int64_t g) {
  // slot = tile * headsPerProgram + g; head = kvHead * groupSize + slot.
  Value slot = arith::AddIOp::create(
      b, arith::MulIOp::create(b, tile, cIdx(b, plan.headsPerProgram)),
      cIdx(b, g));
  Value groupLen = toIndex(b, groupSize);
  Value valid =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, slot, groupLen);
  Value head = arith::AddIOp::create(
      b, arith::MulIOp::create(b, kvHead, groupLen), slot);
  return {head, valid};
}

std::pair<Value, Value>
PartitionKernelBuilder::laneItem(ImplicitLocOpBuilder &b, int64_t i,
                                 int64_t count) {
  Value item =
      arith::AddIOp::create(b, laneInGroup, cIdx(b, i * plan.lanesPerToken));
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, item, cIdx(b, count));
  if ((i + 1) * plan.lanesPerToken > count)
    item = arith::MinUIOp::create(b, item, cIdx(b, count - 1));
  return {item, inRange};
}

void PartitionKernelBuilder::emitBody(ImplicitLocOpBuilder &b) {
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, tid, cIdx(b, 32));
  warp = arith::DivUIOp::create(b, tid, cIdx(b, 32));
  laneInGroup = arith::RemUIOp::create(b, lane, cIdx(b, plan.lanesPerToken));
  group = arith::DivUIOp::create(b, lane, cIdx(b, plan.lanesPerToken));
  part = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value kvTile = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  seq = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value groupLen = toIndex(b, groupSize);
  Value tiles = arith::CeilDivUIOp::create(b, groupLen,
                                           cIdx(b, plan.headsPerProgram));
  kvHead = arith::DivUIOp::create(b, kvTile, tiles);
  tile = arith::RemUIOp::create(b, kvTile, tiles);
  numHeads = arith::MulIOp::create(b, toIndex(b, numKvHeads), groupLen);
  seqLen = toIndex(b, memref::LoadOp::create(b, seqLens, ValueRange{seq}));

  if (onePass) {
    partStart = cIdx(b, 0);
    partEnd = seqLen;
    emitPartition(b);
    return;
  }
  Value tokens = toIndex(b, partTokens);
  partStart = arith::MulIOp::create(b, part, tokens);
  partEnd = arith::MinUIOp::create(
      b, arith::AddIOp::create(b, partStart, tokens), seqLen);
  // Partitions past the sequence's end leave sentinels the reducer skips.
  Value empty = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, partStart,
                                      seqLen);
  auto ifOp = scf::IfOp::create(b, empty, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    emitSentinels(b);
    b.setInsertionPointToStart(ifOp.elseBlock());
    emitPartition(b);
  }
}

void PartitionKernelBuilder::emitSentinels(ImplicitLocOpBuilder &b) {
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  for (int64_t g = 0; g < plan.headsPerProgram; ++g) {
    auto [head, valid] = headOf(b, g);
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid,
                                        cIdx(b, 0));
    Value write = arith::AndIOp::create(b, valid, first);
    auto ifOp = scf::IfOp::create(b, write, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value row = arith::AddIOp::create(
        b, arith::MulIOp::create(b, seq, numHeads), head);
    Value idx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, row, toIndex(b, maxParts)), part);
    memref::StoreOp::create(b, cF32(b, -INFINITY), maxLogits, ValueRange{idx});
    memref::StoreOp::create(b, cF32(b, 0.0f), expSums, ValueRange{idx});
  }
}

void PartitionKernelBuilder::loadQuery(ImplicitLocOpBuilder &b) {
  // Scores are kept in the log2 domain: fold scale * log2(e) into q once.
  Value qScale = arith::MulFOp::create(b, scale, cF32(b, M_LOG2E));
  q.assign(plan.headsPerProgram, {});
  for (int64_t g = 0; g < plan.headsPerProgram; ++g) {
    auto [head, valid] = headOf(b, g);
    // A masked slot reads its group's last head; its results are dropped.
    Value lastHead = arith::SubIOp::create(
        b,
        arith::MulIOp::create(b, arith::AddIOp::create(b, kvHead, cIdx(b, 1)),
                              toIndex(b, groupSize)),
        cIdx(b, 1));
    Value safeHead = arith::SelectOp::create(b, valid, head, lastHead);
    Value row = arith::MulIOp::create(
        b,
        arith::AddIOp::create(b, arith::MulIOp::create(b, seq, numHeads),
                              safeHead),
        cIdx(b, plan.headSize));
    for (int64_t i = 0; i < plan.chunksPerLane; ++i) {
      auto [chunk, inRange] = laneItem(b, i, plan.chunks);
      Value ofs = arith::AddIOp::create(
          b, row, arith::MulIOp::create(b, chunk, cIdx(b, plan.keyPack)));
      SmallVector<Value> vals =
          toF32Scalars(b, loadVector(b, query, ofs, plan.keyPack));
      for (Value &v : vals) {
        v = arith::MulFOp::create(b, v, qScale);
        if ((i + 1) * plan.lanesPerToken > plan.chunks) // lanes past the
                                                          // last chunk add 0
          v = arith::SelectOp::create(b, inRange, v, cF32(b, 0.0f));
      }
      q[g].push_back(std::move(vals));
    }
  }
}

void PartitionKernelBuilder::emitPartition(ImplicitLocOpBuilder &b) {
  loadQuery(b);
  blockRow = arith::MulIOp::create(b, seq, toIndex(b, maxBlocks));
  // Elements of one (block, KV head) slab: head_size * block_size, for both
  // the key layout [D/x][bs][x] and the value layout [D][bs].
  int64_t slab = plan.headSize * plan.blockSize;
  Value kvHeads = toIndex(b, numKvHeads);
  kvHeadOffset = arith::MulIOp::create(b, kvHead, cIdx(b, slab));
  blockStride = arith::MulIOp::create(b, kvHeads, cIdx(b, slab));

  SoftmaxState state{plan.headsPerProgram, plan.dimsPerLane, {}};
  for (int64_t g = 0; g < plan.headsPerProgram; ++g)
    state.values.push_back(cF32(b, -FLT_MAX));
  for (int64_t g = 0; g < plan.headsPerProgram; ++g)
    state.values.push_back(cF32(b, 0.0f));
  for (int64_t i = 0; i < plan.headsPerProgram * plan.dimsPerLane; ++i)
    state.values.push_back(cF32(b, 0.0f));

  // Full steps without masks, warps round robin; then at most one tail step.
  Value tokens = arith::SubIOp::create(b, partEnd, partStart);
  Value step = cIdx(b, plan.tokenStep);
  Value fullSteps = arith::DivUIOp::create(b, tokens, step);
  auto loop = scf::ForOp::create(
      b, warp, fullSteps, cIdx(b, plan.warps), state.values,
      [&](OpBuilder &nested, Location loc, Value iv, ValueRange iterArgs) {
        ImplicitLocOpBuilder nb(loc, nested);
        SoftmaxState in{plan.headsPerProgram, plan.dimsPerLane,
                        llvm::to_vector(iterArgs)};
        SoftmaxState out = emitStep(nb, iv, /*masked=*/false, in);
        scf::YieldOp::create(nb, out.values);
      });
  state.values = SmallVector<Value>(loop.getResults());

  Value hasTail = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ne,
      arith::RemUIOp::create(b, tokens, step), cIdx(b, 0));
  Value tailWarp = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, fullSteps, cIdx(b, plan.warps)), warp);
  Value doTail = arith::AndIOp::create(b, hasTail, tailWarp);
  auto tailIf = scf::IfOp::create(b, ValueRange(state.values).getTypes(),
                                  doTail, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tailIf.thenBlock());
    SoftmaxState out = emitStep(b, fullSteps, /*masked=*/true, state);
    scf::YieldOp::create(b, out.values);
    b.setInsertionPointToStart(tailIf.elseBlock());
    scf::YieldOp::create(b, state.values);
  }
  state.values = SmallVector<Value>(tailIf.getResults());

  state = mergeLaneGroups(b, state);
  mergeWarpsAndStore(b, state);
}

SoftmaxState PartitionKernelBuilder::emitStep(ImplicitLocOpBuilder &b,
                                              Value step, bool masked,
                                              SoftmaxState state) {
  const int64_t heads = plan.headsPerProgram, x = plan.keyPack,
                tokens = plan.groupTokens;
  // First token of this lane group's chunk of the step.
  Value tok0 = arith::AddIOp::create(
      b,
      arith::AddIOp::create(
          b, partStart, arith::MulIOp::create(b, step, cIdx(b, plan.tokenStep))),
      arith::MulIOp::create(b, group, cIdx(b, tokens)));
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
  SmallVector<SmallVector<Value>> keys; // [chunk i][token j] vectors
  for (int64_t i = 0; i < plan.chunksPerLane; ++i) {
    Value chunk = laneItem(b, i, plan.chunks).first;
    // key_cache[phys, kvh, chunk, slot + j, :]
    Value rowOfs = arith::AddIOp::create(
        b, base,
        arith::MulIOp::create(
            b,
            arith::AddIOp::create(
                b, arith::MulIOp::create(b, chunk, cIdx(b, plan.blockSize)),
                slot),
            cIdx(b, x)));
    keys.emplace_back();
    for (int64_t j = 0; j < tokens; ++j)
      keys.back().push_back(loadVector(
          b, keyCache, arith::AddIOp::create(b, rowOfs, cIdx(b, j * x)), x));
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

  // Token validity (tail step only).
  SmallVector<Value> tokenValid;
  if (masked)
    for (int64_t j = 0; j < tokens; ++j)
      tokenValid.push_back(arith::CmpIOp::create(
          b, arith::CmpIPredicate::ult,
          arith::AddIOp::create(b, tok0, cIdx(b, j)), seqLen));

  // Scores: partial dot products over this lane's chunks, then summed over
  // the lane group with xor shuffles. One token's key is widened at a time
  // and consumed by every head, to keep few fp32 copies live.
  SmallVector<SmallVector<Value>> scores(heads, SmallVector<Value>(tokens));
  for (int64_t j = 0; j < tokens; ++j) {
    SmallVector<SmallVector<Value>> key; // [chunk i][element e]
    for (int64_t i = 0; i < plan.chunksPerLane; ++i)
      key.push_back(toF32Scalars(b, keys[i][j]));
    for (int64_t g = 0; g < heads; ++g) {
      Value s = cF32(b, 0.0f);
      for (int64_t i = 0; i < plan.chunksPerLane; ++i)
        for (int64_t e = 0; e < x; ++e)
          s = fma(b, q[g][i][e], key[i][e], s);
      scores[g][j] = s;
    }
  }
  for (int64_t g = 0; g < heads; ++g)
    for (int64_t j = 0; j < tokens; ++j) {
      Value s = scores[g][j];
      for (int64_t off = 1; off < plan.lanesPerToken; off *= 2)
        s = arith::AddFOp::create(b, s, shuffleXor(b, s, off));
      if (masked)
        s = arith::SelectOp::create(b, tokenValid[j], s, cF32(b, -INFINITY));
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
    SmallVector<Value> v = toF32Scalars(b, values[j]);
    if (masked) // garbage past the end must not meet a zero weight
      for (int64_t t = 0; t < tokens; ++t)
        v[t] = arith::SelectOp::create(b, tokenValid[t], v[t], cF32(b, 0.0f));
    for (int64_t g = 0; g < heads; ++g) {
      Value acc = arith::MulFOp::create(b, state.acc(g, j), alpha[g]);
      for (int64_t t = 0; t < tokens; ++t)
        acc = fma(b, p[g][t], v[t], acc);
      state.acc(g, j) = acc;
    }
  }
  return state;
}

SoftmaxState PartitionKernelBuilder::mergeLaneGroups(ImplicitLocOpBuilder &b,
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

void PartitionKernelBuilder::mergeWarpsAndStore(ImplicitLocOpBuilder &b,
                                                SoftmaxState state) {
  const int64_t heads = plan.headsPerProgram, d = plan.headSize;
  // Workgroup layout: acc[warp][g][d], then m[warp][g], then l[warp][g].
  int64_t mBase = plan.warps * heads * d;
  int64_t lBase = mBase + plan.warps * heads;
  Value firstGroup = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, group,
                                           cIdx(b, 0));
  {
    auto ifOp = scf::IfOp::create(b, firstGroup, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    for (int64_t g = 0; g < heads; ++g) {
      Value wg = arith::AddIOp::create(
          b, arith::MulIOp::create(b, warp, cIdx(b, heads)), cIdx(b, g));
      for (int64_t j = 0; j < plan.dimsPerLane; ++j) {
        auto [dim, ok] = laneItem(b, j, d);
        Value idx = arith::AddIOp::create(
            b, arith::MulIOp::create(b, wg, cIdx(b, d)), dim);
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
                              ValueRange{arith::AddIOp::create(
                                  b, wg, cIdx(b, mBase))});
      memref::StoreOp::create(b, state.l(g), shared,
                              ValueRange{arith::AddIOp::create(
                                  b, wg, cIdx(b, lBase))});
    }
  }
  gpu::BarrierOp::create(b);

  // Each thread finishes (head, dim) pairs: merge the warps and store.
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  int64_t total = heads * d, threads = plan.threads();
  for (int64_t base = 0; base < total; base += threads) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value inRange =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, cIdx(b, total));
    // The head slot and dim of pair i.
    Value g = arith::DivUIOp::create(b, i, cIdx(b, d));
    Value dim = arith::RemUIOp::create(b, i, cIdx(b, d));
    Value slot = arith::AddIOp::create(
        b, arith::MulIOp::create(b, tile, cIdx(b, heads)), g);
    Value valid = arith::AndIOp::create(
        b, inRange,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, slot,
                              toIndex(b, groupSize)));
    auto ifOp = scf::IfOp::create(b, valid, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto load = [&](Value idx) {
      return memref::LoadOp::create(b, shared, ValueRange{idx}).getResult();
    };
    SmallVector<Value> ms;
    Value mMax = cF32(b, -FLT_MAX);
    for (int64_t w = 0; w < plan.warps; ++w) {
      Value wg = arith::AddIOp::create(b, g, cIdx(b, w * heads));
      ms.push_back(load(arith::AddIOp::create(b, wg, cIdx(b, mBase))));
      mMax = maxf(b, mMax, ms.back());
    }
    Value sum = cF32(b, 0.0f), acc = cF32(b, 0.0f);
    for (int64_t w = 0; w < plan.warps; ++w) {
      Value wg = arith::AddIOp::create(b, g, cIdx(b, w * heads));
      Value f = exp2(b, arith::SubFOp::create(b, ms[w], mMax));
      sum = fma(b, load(arith::AddIOp::create(b, wg, cIdx(b, lBase))), f, sum);
      Value accIdx = arith::AddIOp::create(
          b, arith::MulIOp::create(b, wg, cIdx(b, d)), dim);
      acc = fma(b, load(accIdx), f, acc);
    }
    Value result = arith::DivFOp::create(b, acc, sum);
    Value head = arith::AddIOp::create(
        b, arith::MulIOp::create(b, kvHead, toIndex(b, groupSize)), slot);
    Value row = arith::AddIOp::create(b, arith::MulIOp::create(b, seq, numHeads),
                                      head);
    if (onePass) {
      Value idx = arith::AddIOp::create(
          b, arith::MulIOp::create(b, row, cIdx(b, d)), dim);
      memref::StoreOp::create(b, fromF32(b, result, plan.elemType), output,
                              ValueRange{idx});
      continue;
    }
    Value partIdx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, row, toIndex(b, maxParts)), part);
    Value tmpIdx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, partIdx, cIdx(b, d)), dim);
    memref::StoreOp::create(b, fromF32(b, result, plan.tmpType), tmpOutput,
                            ValueRange{tmpIdx});
    // One thread per head writes the partition's statistics, with the max
    // back in the natural-log domain.
    Value firstDim =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, dim, cIdx(b, 0));
    auto statIf = scf::IfOp::create(b, firstDim, /*withElseRegion=*/false);
    b.setInsertionPointToStart(statIf.thenBlock());
    memref::StoreOp::create(b, sum, expSums, ValueRange{partIdx});
    memref::StoreOp::create(b, arith::MulFOp::create(b, mMax, cF32(b, M_LN2)),
                            maxLogits, ValueRange{partIdx});
  }
}

gpu::GPUFuncOp mlir::paged_attn::buildPartitionKernel(OpBuilder &moduleBuilder,
                                                      Location loc,
                                                      const KernelPlan &plan,
                                                      bool onePass) {
  return PartitionKernelBuilder(plan, onePass).build(moduleBuilder, loc);
}
