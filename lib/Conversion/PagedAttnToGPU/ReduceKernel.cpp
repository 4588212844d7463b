//===- ReduceKernel.cpp - the log-sum-exp reduce kernel -------------------===//
//
// Builds `<variant>_reduce`. A program of kReduceWarps warps serves
// `heads` = ceil(4 / ceil(num_partitions / 8)) query heads (4, 2 or 1) of
// one query row (a sequence, or one of its query tokens: KernelIdioms.h,
// QueryRow), so each head gets warps = 4 / heads of them: a call with few
// partitions keeps every warp busy on its own head, a long context spreads
// one head's partitions over the whole program. The grid (manifest:
// ceil(num_heads/ceil(4/ceil(num_partitions/8)))*query_slots x num_seqs)
// and the kernel derive the mapping from the same launched partition count.
//
//   1. statistics: the head's threads fold partitions first + t, first + t +
//      32 * warps, ... (max and exp sum); each warp merges by xor shuffles,
//      the head's warps through workgroup memory: all get M and L;
//   2. partial outputs: the head's warp r walks partitions first + r,
//      + warps, ..., `kUnroll` of them per step so their tmp_output loads
//      are in flight together, each lane across its slices of head_size (4
//      elements: a 16-byte load of f32, 8 bytes of a 16-bit type):
//        acc_w[d] = sum_p tmp[p][d] * exp_sums[p] * exp(max_logits[p] - M)
//      tmp_output's type is the run-time tmp_f32: one loop per type, the
//      branch around them (uniform over the kernel).
//   3. the warps' accumulators meet in workgroup memory and the head's
//      threads store out[d] = sum_w acc_w[d] / L, one 16-byte slice each.
//   With attention sinks, the head's sink (one load) joins M and L after 1.
//   A head of one warp skips both workgroup merges (a branch uniform over
//   the program) and stores its lanes' registers.
//
// With a sliding window both walks start at the window's first partition:
// the ones before it hold sentinels and no tmp_output, so they are not read.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelIdioms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

/// Partitions of one warp whose tmp_output rows are loaded together.
static constexpr int64_t kUnroll = kReducePartitionsPerWarp;

namespace {

/// Builds one reduce kernel: the values every phase shares (the mapping of
/// warps to heads, the query row, the merged statistics) live here, one
/// method per phase, after upstream's GpuAllReduceRewriter.
struct ReduceKernelBuilder {
  ReduceKernelBuilder(OpBuilder &moduleBuilder, Location loc,
                      const KernelPlan &plan);

  gpu::GPUFuncOp build();

private:
  void createFunc();
  void mapWarpsToHeads();
  void locateQueryRow();
  void foldPartitionStatistics();
  void mergeWarpStatistics();
  void joinSink();
  void computeLaneSlices();
  void sumPartialOutputs();
  scf::ForOp weightedSumLoop(ImplicitLocOpBuilder &lb, Value tmp);
  void storeOutput();
  void storeFromRegisters();
  void storeThroughWorkgroup();
  void recordBadInputs();

  Value scaledExp(ImplicitLocOpBuilder &eb, Value a, Value m);
  void merge(ImplicitLocOpBuilder &mb, Value &m, Value &l, Value mOther,
             Value lOther);
  void storeSlice(ImplicitLocOpBuilder &sb, Value sum, Value ofs);
  void forSlices(llvm::function_ref<void(int64_t, Value)> body);

  OpBuilder &moduleBuilder;
  const KernelPlan &plan;
  MLIRContext *ctx;
  Type f32;
  KernelSignature sig;
  ImplicitLocOpBuilder b;

  // Sizes: head_size, slices of tmp_output (4 elements: 16 bytes of f32;
  // per row, per lane), and where the warps' maxima and exp sums sit in
  // workgroup memory.
  const int64_t d, threads, vec, vecs, vecsPerLane;
  const bool padded;
  const int64_t statM, statL;

  gpu::GPUFuncOp func;
  Block *entry = nullptr;
  Value output, expSums, maxLogits, tmpOutput, seqLens, numHeadsArg,
      maxPartsArg, partTokens, partSplit, slidingWindow, numPartsArg, sinks, hasSinks,
      shared;

  // The mapping of warps to heads.
  Value lane, warp, headsPerProgram, warps, slot, rank, firstWarp, headThreads,
      headTid, numHeads;
  // The query row, its head and partitions; its context and window start;
  // its seq_len as loaded and whether it is bad.
  Value seq, head, headValid, parts, firstPart, row, statBase, context,
      windowStart, rawLen, lenBad;
  // The head's statistics: M and L (the thread's, the warp's, the head's,
  // then with the sink), whether a head has several warps, and 1 / L.
  Value log2e, headM, headL, multi, invL;
  // The lane's slices of head_size and its accumulators (after the loop).
  SmallVector<Value> sliceOfs, sliceValid, acc;
  // The output store.
  VectorType accVecType, outVecType;
  llvm::MaybeAlign sharedAlign;
  Value outRow;
  int64_t outBytes = 0;
};

} // namespace

ReduceKernelBuilder::ReduceKernelBuilder(OpBuilder &moduleBuilder, Location loc,
                                         const KernelPlan &plan)
    : moduleBuilder(moduleBuilder), plan(plan), ctx(moduleBuilder.getContext()),
      f32(Float32Type::get(ctx)), sig(KernelRole::Reduce, plan), b(loc, ctx),
      d(plan.headSize), threads(kReduceWarps * 32), vec(4), vecs(d / vec),
      vecsPerLane(llvm::divideCeil(vecs, 32)), padded(vecsPerLane * 32 != vecs),
      statM(kReduceWarps * d), statL(statM + kReduceWarps) {}

/// The kernel, phase by phase; in IR terms (warps = 4 / heads per program):
///
///   %lane, %warp = tid % 32, tid / 32      // warp -> (slot, rank) of a head
///   %m, %l = scf.for %p = first + head_tid to parts step warps * 32
///              merge(max_logits[p], exp_sums[p])
///   5 x merge(%m, %l, shuffle xor)          // the warp's M and L
///   scf.if warps > 1 { lane 0 stores; gpu.barrier; scf.for over the head's
///                      warps: merge }      // the head's M and L
///   merge(sink); %invL = 1 / %l
///   %acc = scf.for %p0 = first + rank to parts step warps * kUnroll
///            kUnroll x (weight = exp_sums[p] * exp(max_logits[p] - M);
///                       tmp_output loads); fma   // in scf.if tmp_f32
///   scf.if warps > 1 { store %acc to workgroup memory; gpu.barrier;
///                      scf.if valid { scf.for slices: sum warps, store } }
///   else { scf.if valid { store %acc * %invL } }
gpu::GPUFuncOp ReduceKernelBuilder::build() {
  createFunc();
  // 1. Which head each warp serves, and that head's row and partitions.
  mapWarpsToHeads();
  locateQueryRow();
  // 2. Statistics: per thread, per warp, per head; then the sink.
  foldPartitionStatistics();
  mergeWarpStatistics();
  joinSink();
  // Cold: a row made NaN by a bad input has it recorded (here, before the
  // walk over the partial outputs: what it reads dies before that loop).
  recordBadInputs();
  // 3. The weighted sum of the partial outputs, per warp.
  computeLaneSlices();
  sumPartialOutputs();
  // 4. The warps' sums met, divided by L and stored.
  storeOutput();
  gpu::ReturnOp::create(b);
  return func;
}

/// The gpu.func with its workgroup memory: the warps' accumulators
/// (warps x head_size), then their maxima and exp sums (warps each).
void ReduceKernelBuilder::createFunc() {
  SmallVector<Type> args = sig.types(ctx);
  auto sharedType = MemRefType::get(
      {reduceSharedFloats(d)}, f32, MemRefLayoutAttrInterface{},
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  func = gpu::GPUFuncOp::create(
      moduleBuilder, b.getLoc(), plan.name() + "_reduce",
      moduleBuilder.getFunctionType(args, {}), TypeRange{sharedType});
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                moduleBuilder.getUnitAttr());
  func.setKnownBlockSizeAttr(moduleBuilder.getDenseI32ArrayAttr(
      {static_cast<int32_t>(threads), 1, 1}));
  entry = &func.getBody().front();
  auto arg = [&](StringRef name) { return sig.arg(*entry, name); };
  output = arg("output");
  expSums = arg("exp_sums");
  maxLogits = arg("max_logits");
  tmpOutput = arg("tmp_output");
  seqLens = arg("seq_lens");
  numHeadsArg = arg("num_heads");
  maxPartsArg = arg("max_num_partitions");
  partTokens = arg("partition_tokens");
  partSplit = arg("partition_split");
  slidingWindow = arg("sliding_window");
  numPartsArg = arg("num_partitions");
  sinks = arg("sinks");
  hasSinks = arg("has_sinks");
  shared = func.getWorkgroupAttributions().front();
  b.setInsertionPointToStart(entry);
}

/// Heads per program (4, 2 or 1) and warps per head, from the launched
/// partition count exactly as the grid formula computes them; each warp's
/// slot (which head) and rank (which of the head's warps).
void ReduceKernelBuilder::mapWarpsToHeads() {
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, tid, cIdx(b, 32));
  warp = arith::DivUIOp::create(b, tid, cIdx(b, 32));
  headsPerProgram = arith::CeilDivUIOp::create(
      b, cIdx(b, kReduceWarps),
      arith::CeilDivUIOp::create(b, toIndex(b, numPartsArg),
                                 cIdx(b, kReducePartitionsPerWarp)));
  warps = arith::DivUIOp::create(b, cIdx(b, kReduceWarps), headsPerProgram);
  slot = arith::DivUIOp::create(b, warp, warps);
  rank = arith::RemUIOp::create(b, warp, warps);
  firstWarp = arith::SubIOp::create(b, warp, rank);
  headThreads = arith::MulIOp::create(b, warps, cIdx(b, 32));
  headTid = arith::AddIOp::create(
      b, arith::MulIOp::create(b, rank, cIdx(b, 32)), lane);
  numHeads = toIndex(b, numHeadsArg);
}

/// The query row (one per sequence, or a token of it), the slot's head, and
/// the partitions of the row's context. Programs past their sequence's
/// tokens run with no partitions and store nothing (straight-line, as ptxas
/// keeps this kernel spill-free on sm_70).
void ReduceKernelBuilder::locateQueryRow() {
  seq = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  // A seq_len outside [0, max_blocks_per_seq * block_size] counts as 0
  // tokens (no partition is read) and the row's output is NaN, as the
  // partition kernel leaves it (docs/runtime.md, "Bad block tables").
  auto arg = [&](StringRef name) { return sig.arg(*entry, name); };
  Value maxBlocks = toIndex(b, arg("max_blocks_per_seq"));
  Value capacity =
      arith::MulIOp::create(b, maxBlocks, toIndex(b, arg("block_size")));
  QueryRow q = queryRowOf(b, gpu::BlockIdOp::create(b, gpu::Dimension::x), seq,
                          seqLens, arg("query_start_loc"), arg("max_query_len"),
                          /*perProgram=*/cIdx(b, 1), capacity);
  rawLen = q.rawLen, lenBad = q.lenBad;
  head = arith::AddIOp::create(
      b, arith::MulIOp::create(b, q.unit, headsPerProgram), slot);
  // A slot past the last head computes the last head again (every thread
  // reaches the barriers) and stores nothing.
  headValid = arith::AndIOp::create(
      b, q.live,
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, head, numHeads));
  head = arith::MinUIOp::create(b, head,
                                arith::SubIOp::create(b, numHeads, cIdx(b, 1)));
  context = arith::SelectOp::create(b, q.live, q.seqLen, cIdx(b, 0));
  Value size = partitionTokensOf(b, q.len, partTokens, partSplit);
  parts = arith::CeilDivUIOp::create(b, context, size);
  // The window's first token max(seq_len - W, 0) (W = 0: none) and its
  // partition: the first one with a result.
  windowStart = slidingWindowStart(b, context, slidingWindow);
  firstPart = arith::DivUIOp::create(b, windowStart, size);
  row =
      arith::AddIOp::create(b, arith::MulIOp::create(b, q.row, numHeads), head);
  statBase = arith::MulIOp::create(b, row, toIndex(b, maxPartsArg));
}

/// exp(a - m), as exp2 of the difference scaled by log2(e).
Value ReduceKernelBuilder::scaledExp(ImplicitLocOpBuilder &eb, Value a,
                                     Value m) {
  return exp2(
      eb, arith::MulFOp::create(eb, arith::SubFOp::create(eb, a, m), log2e));
}

/// (m, l) merged with (mOther, lOther): the larger max, the sums rescaled.
void ReduceKernelBuilder::merge(ImplicitLocOpBuilder &mb, Value &m, Value &l,
                                Value mOther, Value lOther) {
  Value mNew = maxf(mb, m, mOther);
  l = fma(mb, l, scaledExp(mb, m, mNew),
          arith::MulFOp::create(mb, lOther, scaledExp(mb, mOther, mNew)));
  m = mNew;
}

/// The head's thread t folds partitions first + t, + headThreads, ...; each
/// warp then merges its lanes by xor shuffles. A bad seq_len starts the sum
/// at NaN, which every merge keeps: the row's output is NaN.
void ReduceKernelBuilder::foldPartitionStatistics() {
  log2e = cF32(b, M_LOG2E);
  auto statLoop = scf::ForOp::create(
      b, arith::AddIOp::create(b, firstPart, headTid), parts, headThreads,
      ValueRange{cF32(b, -FLT_MAX),
                 arith::SelectOp::create(b, lenBad, cF32(b, NAN),
                                         cF32(b, 0.0f))},
      [&](OpBuilder &nested, Location nloc, Value p, ValueRange iter) {
        ImplicitLocOpBuilder nb(nloc, nested);
        Value idx = arith::AddIOp::create(nb, statBase, p);
        Value mt = iter[0], lt = iter[1];
        merge(nb, mt, lt,
              memref::LoadOp::create(nb, maxLogits, ValueRange{idx}),
              memref::LoadOp::create(nb, expSums, ValueRange{idx}));
        scf::YieldOp::create(nb, ValueRange{mt, lt});
      });
  headM = statLoop.getResult(0), headL = statLoop.getResult(1);
  for (int64_t off = 1; off < 32; off *= 2)
    merge(b, headM, headL, shuffleXor(b, headM, off),
          shuffleXor(b, headL, off));
}

/// A head of one warp has its M and L now; several warps merge theirs
/// through workgroup memory. `warps` is uniform over the program, so the
/// barriers inside the branch are reached by all of its threads.
void ReduceKernelBuilder::mergeWarpStatistics() {
  multi =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, warps, cIdx(b, 1));
  auto statIf = scf::IfOp::create(b, TypeRange{f32, f32}, multi,
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(statIf.elseBlock());
    scf::YieldOp::create(b, ValueRange{headM, headL});
    b.setInsertionPointToStart(statIf.thenBlock());
    Value isLane0 =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, cIdx(b, 0));
    auto ifOp = scf::IfOp::create(b, isLane0, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifOp.thenBlock());
    memref::StoreOp::create(
        b, headM, shared,
        ValueRange{arith::AddIOp::create(b, warp, cIdx(b, statM))});
    memref::StoreOp::create(
        b, headL, shared,
        ValueRange{arith::AddIOp::create(b, warp, cIdx(b, statL))});
    b.setInsertionPointAfter(ifOp);
    gpu::BarrierOp::create(b);
    // The head's threads merge its warps in the same order: one M and L.
    auto statMerge = scf::ForOp::create(
        b, firstWarp, arith::AddIOp::create(b, firstWarp, warps), cIdx(b, 1),
        ValueRange{cF32(b, -FLT_MAX), cF32(b, 0.0f)},
        [&](OpBuilder &nested, Location nloc, Value w, ValueRange iter) {
          ImplicitLocOpBuilder nb(nloc, nested);
          Value mw = iter[0], lw = iter[1];
          merge(nb, mw, lw,
                memref::LoadOp::create(
                    nb, shared,
                    ValueRange{arith::AddIOp::create(nb, w, cIdx(nb, statM))}),
                memref::LoadOp::create(
                    nb, shared,
                    ValueRange{arith::AddIOp::create(nb, w, cIdx(nb, statL))}));
          scf::YieldOp::create(nb, ValueRange{mw, lw});
        });
    scf::YieldOp::create(b, statMerge.getResults());
  }
  headM = statIf.getResult(0), headL = statIf.getResult(1);
}

/// The attention sink: a logit without a value row, so it joins M and L
/// only (weights below use the merged M).
void ReduceKernelBuilder::joinSink() {
  auto [mSink, lSink] = sinkState(b, sinks, hasSinks, head, 1.0);
  merge(b, headM, headL, mSink, lSink);
  invL = normalizer(b, headL);
}

/// Each lane's slices of head_size (clamped; padded lanes do not store).
void ReduceKernelBuilder::computeLaneSlices() {
  for (int64_t i = 0; i < vecsPerLane; ++i) {
    Value v = arith::AddIOp::create(b, lane, cIdx(b, 32 * i));
    sliceValid.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, v, cIdx(b, vecs)));
    if (padded)
      v = arith::MinUIOp::create(b, v, cIdx(b, vecs - 1));
    sliceOfs.push_back(arith::MulIOp::create(b, v, cIdx(b, vec)));
  }
}

/// The warp's weighted sum of its partitions' outputs, in the loop of the
/// call's tmp type (tmp_f32; f32 queries have only the f32 one).
void ReduceKernelBuilder::sumPartialOutputs() {
  TmpViews tmp =
      viewTmpOutput(b, tmpOutput, sig.arg(*entry, "tmp_f32"), plan.elemType);
  if (!tmp.both()) {
    acc = llvm::to_vector_of<Value>(weightedSumLoop(b, tmp.f32).getResults());
    return;
  }
  SmallVector<Type> types(vecsPerLane * vec, f32);
  auto ifOp = scf::IfOp::create(b, types, tmp.isF32, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, weightedSumLoop(b, tmp.f32).getResults());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, weightedSumLoop(b, tmp.half).getResults());
  }
  acc = llvm::to_vector_of<Value>(ifOp.getResults());
}

/// The loop over the warp's partitions p0 + u * warps (u < kUnroll) per
/// step, their loads of the `tmp` view (one vector per slice) in flight
/// together.
scf::ForOp ReduceKernelBuilder::weightedSumLoop(ImplicitLocOpBuilder &lb,
                                                Value tmp) {
  SmallVector<Value> init(vecsPerLane * vec, cF32(lb, 0.0f));
  Value lastPart = arith::SubIOp::create(lb, parts, cIdx(lb, 1));
  return scf::ForOp::create(
      lb, arith::AddIOp::create(lb, firstPart, rank), parts,
      arith::MulIOp::create(lb, warps, cIdx(lb, kUnroll)), init,
      [&](OpBuilder &nested, Location nloc, Value p0, ValueRange iter) {
        ImplicitLocOpBuilder nb(nloc, nested);
        SmallVector<Value> sums(iter);
        SmallVector<Value> weights;
        SmallVector<SmallVector<Value>> rows;
        for (int64_t u = 0; u < kUnroll; ++u) {
          Value p = arith::AddIOp::create(
              nb, p0, arith::MulIOp::create(nb, warps, cIdx(nb, u)));
          Value live =
              arith::CmpIOp::create(nb, arith::CmpIPredicate::ult, p, parts);
          Value pc = arith::MinUIOp::create(nb, p, lastPart);
          Value idx = arith::AddIOp::create(nb, statBase, pc);
          Value mp = memref::LoadOp::create(nb, maxLogits, ValueRange{idx});
          Value lp = memref::LoadOp::create(nb, expSums, ValueRange{idx});
          Value w = arith::MulFOp::create(nb, lp, scaledExp(nb, mp, headM));
          weights.push_back(
              arith::SelectOp::create(nb, live, w, cF32(nb, 0.0f)));
          Value rowBase = arith::MulIOp::create(nb, idx, cIdx(nb, d));
          rows.emplace_back();
          for (int64_t i = 0; i < vecsPerLane; ++i)
            rows.back().push_back(loadVector(
                nb, tmp, arith::AddIOp::create(nb, rowBase, sliceOfs[i]), vec));
        }
        for (int64_t u = 0; u < kUnroll; ++u)
          for (int64_t i = 0; i < vecsPerLane; ++i) {
            SmallVector<Value> vals = toF32Scalars(nb, rows[u][i]);
            for (int64_t e = 0; e < vec; ++e)
              sums[i * vec + e] =
                  fma(nb, weights[u], vals[e], sums[i * vec + e]);
          }
        scf::YieldOp::create(nb, sums);
      });
}

/// Stores out[ofs .. ofs + vec) = sum * (1 / L) in the output's type.
void ReduceKernelBuilder::storeSlice(ImplicitLocOpBuilder &sb, Value sum,
                                     Value ofs) {
  SmallVector<Value> outs;
  for (int64_t e = 0; e < vec; ++e)
    outs.push_back(
        fromF32(sb,
                arith::MulFOp::create(
                    sb, vector::ExtractOp::create(sb, sum, int64_t(e)), invL),
                plan.elemType));
  vector::StoreOp::create(
      sb, vector::FromElementsOp::create(sb, outVecType, outs), output,
      ValueRange{arith::AddIOp::create(sb, outRow, ofs)},
      /*nontemporal=*/false, llvm::MaybeAlign(std::min<int64_t>(outBytes, 16)));
}

/// Runs `body` for each of the lane's slices that is not padding, with the
/// slice's accumulators packed in a vector.
void ReduceKernelBuilder::forSlices(
    llvm::function_ref<void(int64_t, Value)> body) {
  for (int64_t i = 0; i < vecsPerLane; ++i) {
    SmallVector<Value> slice(ArrayRef<Value>(acc).slice(i * vec, vec));
    Value packed = vector::FromElementsOp::create(b, accVecType, slice);
    if (!padded) {
      body(i, packed);
      continue;
    }
    auto sliceIf =
        scf::IfOp::create(b, sliceValid[i], /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(sliceIf.thenBlock());
    body(i, packed);
  }
}

/// The output, out[d] = acc[d] / L in 16-byte slices: a head of one warp
/// stores its lanes' registers; several warps' accumulators first meet in
/// workgroup memory.
void ReduceKernelBuilder::storeOutput() {
  accVecType = VectorType::get({vec}, f32);
  sharedAlign = llvm::MaybeAlign(std::min<int64_t>(4 * vec, 16));
  outRow = arith::MulIOp::create(b, row, cIdx(b, d));
  outVecType = VectorType::get({vec}, plan.elemType);
  outBytes = vec * plan.elemType.getIntOrFloatBitWidth() / 8;
  auto outIf = scf::IfOp::create(b, multi, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(outIf.elseBlock());
  storeFromRegisters();
  b.setInsertionPointToStart(outIf.thenBlock());
  storeThroughWorkgroup();
}

/// A head of one warp: each lane stores its own slices.
void ReduceKernelBuilder::storeFromRegisters() {
  auto validIf = scf::IfOp::create(b, headValid, /*withElseRegion=*/false);
  b.setInsertionPointToStart(validIf.thenBlock());
  forSlices(
      [&](int64_t i, Value packed) { storeSlice(b, packed, sliceOfs[i]); });
}

/// A head of several warps: each warp writes its accumulators to its row of
/// workgroup memory; after the barrier the head's thread t sums slices t,
/// t + headThreads, ... over the head's warps and stores them.
void ReduceKernelBuilder::storeThroughWorkgroup() {
  Value warpRow = arith::MulIOp::create(b, warp, cIdx(b, d));
  forSlices([&](int64_t i, Value packed) {
    vector::StoreOp::create(
        b, packed, shared,
        ValueRange{arith::AddIOp::create(b, warpRow, sliceOfs[i])},
        /*nontemporal=*/false, sharedAlign);
  });
  gpu::BarrierOp::create(b);
  auto storeIf = scf::IfOp::create(b, headValid, /*withElseRegion=*/false);
  b.setInsertionPointToStart(storeIf.thenBlock());
  Value firstRow = arith::MulIOp::create(b, firstWarp, cIdx(b, d));
  scf::ForOp::create(
      b, headTid, cIdx(b, vecs), headThreads, ValueRange{},
      [&](OpBuilder &nested, Location nloc, Value v, ValueRange) {
        ImplicitLocOpBuilder nb(nloc, nested);
        Value ofs = arith::MulIOp::create(nb, v, cIdx(nb, vec));
        Value zero =
            vector::BroadcastOp::create(nb, accVecType, cF32(nb, 0.0f));
        auto sumLoop = scf::ForOp::create(
            nb, cIdx(nb, 0), warps, cIdx(nb, 1), ValueRange{zero},
            [&](OpBuilder &inner, Location iloc, Value w, ValueRange iter) {
              ImplicitLocOpBuilder ib(iloc, inner);
              Value at = arith::AddIOp::create(
                  ib, arith::AddIOp::create(ib, firstRow, ofs),
                  arith::MulIOp::create(ib, w, cIdx(ib, d)));
              Value part =
                  vector::LoadOp::create(ib, accVecType, shared, ValueRange{at},
                                         /*nontemporal=*/false, sharedAlign);
              scf::YieldOp::create(
                  ib, ValueRange{arith::AddFOp::create(ib, iter[0], part)});
            });
        storeSlice(nb, sumLoop.getResult(0), ofs);
        scf::YieldOp::create(nb);
      });
}

/// Bad block tables (docs/runtime.md): a row that read a bad block-table
/// entry in some partition has NaN exp_sums, so a NaN L (as has a bad
/// seq_len). Thread 0 then records the bad seq_len, or the last bad entry
/// of the row's attended blocks [window start, context) (none when the NaN
/// came from the inputs' values).
void ReduceKernelBuilder::recordBadInputs() {
  auto arg = [&](StringRef name) { return sig.arg(*entry, name); };
  Value lane0 =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, cIdx(b, 0));
  Value warp0 =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, cIdx(b, 0));
  Value first = arith::AndIOp::create(b, lane0, warp0);
  Value isNan =
      arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, headL, headL);
  auto ifOp = scf::IfOp::create(
      b,
      arith::AndIOp::create(b, arith::AndIOp::create(b, first, headValid),
                            isNan),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value errorWord = arg("error_word");
  auto lenIf = scf::IfOp::create(b, lenBad, /*withElseRegion=*/true);
  b.setInsertionPointToStart(lenIf.thenBlock());
  recordBadInput(b, errorWord, seq, arith::ConstantIntOp::create(b, -1, 32),
                 rawLen);
  b.setInsertionPointToStart(lenIf.elseBlock());
  Value shift = toIndex(
      b, LLVM::CountTrailingZerosOp::create(b, b.getI32Type(),
                                            arg("block_size"),
                                            /*is_zero_poison=*/false));
  Value tableRow =
      arith::MulIOp::create(b, seq, toIndex(b, arg("max_blocks_per_seq")));
  recordLastBadEntry(b, arg("block_tables"), tableRow, arg("num_blocks"),
                     shift, windowStart, context, errorWord, seq);
}

gpu::GPUFuncOp mlir::paged_attn::buildReduceKernel(OpBuilder &moduleBuilder,
                                                   Location loc,
                                                   const KernelPlan &plan) {
  return ReduceKernelBuilder(moduleBuilder, loc, plan).build();
}
