//===- PartitionProgram.cpp - what both partition kernels share -----------===//
//
// Signature, prologue, sentinels and the cross-warp epilogue of the
// partition and one-pass kernels (see PartitionProgram.h).
//
//===----------------------------------------------------------------------===//

#include "PartitionProgram.h"
#include "KernelBuilders.h"
#include "KernelIdioms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

gpu::GPUFuncOp PartitionProgram::build(OpBuilder &moduleBuilder, Location loc) {
  MLIRContext *ctx = moduleBuilder.getContext();
  Type f32 = Float32Type::get(ctx);
  KernelSignature sig(onePass ? KernelRole::OnePass : KernelRole::Partition,
                      plan);
  SmallVector<Type> args = sig.types(ctx);
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto sharedType = MemRefType::get({plan.sharedFloats()}, f32,
                                    MemRefLayoutAttrInterface{}, workgroup);
  // The wmma kernel's buffer is bytes, viewed as f32 and f16.
  auto attributionType =
      plan.usesWmma()
          ? MemRefType::get({4 * plan.sharedFloats()}, IntegerType::get(ctx, 8),
                            MemRefLayoutAttrInterface{}, workgroup)
          : sharedType;
  std::string name = plan.name() + (onePass ? "_onepass" : "_partition");
  auto func = gpu::GPUFuncOp::create(moduleBuilder, loc, name,
                                     moduleBuilder.getFunctionType(args, {}),
                                     TypeRange{attributionType});
  if (plan.usesWmma()) // wmma rows must be 32-byte aligned
    func.setWorkgroupAttributionAttr(0, "llvm.align",
                                     moduleBuilder.getI64IntegerAttr(32));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                moduleBuilder.getUnitAttr());
  func.setKnownBlockSizeAttr(moduleBuilder.getDenseI32ArrayAttr(
      {static_cast<int32_t>(plan.threads()), 1, 1}));
  // The occupancy the plan is for: ptxas caps registers to fit it. The SIMT
  // kernel says one program per SM is acceptable (without it, ptxas for
  // sm_90 may cap registers for occupancy and spill the softmax state).
  func->setAttr("nvvm.minctasm",
                moduleBuilder.getI32IntegerAttr(plan.programsPerSM));

  Block &entry = func.getBody().front();
  auto arg = [&](StringRef name) { return sig.arg(entry, name); };
  query = arg("query"), keyCache = arg("key_cache"),
  valueCache = arg("value_cache"), blockTables = arg("block_tables"),
  seqLens = arg("seq_lens"), output = arg("output"), expSums = arg("exp_sums"),
  maxLogits = arg("max_logits"), tmpOutput = arg("tmp_output"),
  scale = arg("scale"), maxBlocks = arg("max_blocks_per_seq"),
  maxParts = arg("max_num_partitions"), partTokens = arg("partition_tokens"),
  numKvHeads = arg("num_kv_heads"), groupSize = arg("group_size"),
  alibiSlopes = arg("alibi_slopes"), hasAlibi = arg("has_alibi"),
  slidingWindow = arg("sliding_window"),
  logitsSoftCap = arg("logits_soft_cap"), sinks = arg("sinks"),
  hasSinks = arg("has_sinks"), queryStartLoc = arg("query_start_loc"),
  maxQueryLen = arg("max_query_len"), numBlocks = arg("num_blocks"),
  errorWord = arg("error_word");
  shared = func.getWorkgroupAttributions().front();

  ImplicitLocOpBuilder b(loc, ctx);
  b.setInsertionPointToStart(&entry);
  if (plan.usesWmma()) {
    sharedBuffer = shared;
    shared = memref::ViewOp::create(b, sharedType, sharedBuffer, cIdx(b, 0),
                                    ValueRange{});
  }
  if (plan.fp8Cache()) {
    // The dequantization scales: scalar arguments, or read on the device
    // (scales_on_device bit 0: k_scale_ptr[0], bit 1: v_scale_ptr[0]) so a
    // CUDA graph can change them. k_scale joins the query's scale
    // (q . (ks k) = (ks q) . k), v_scale the partition's output; both carry
    // the factor the in-register widening leaves out.
    auto pick = [&](StringRef scalar, StringRef ptr, int64_t bit) -> Value {
      Value flag = arith::AndIOp::create(
          b, arg("scales_on_device"), arith::ConstantIntOp::create(b, bit, 32));
      Value onDevice = arith::CmpIOp::create(
          b, arith::CmpIPredicate::ne, flag,
          arith::ConstantIntOp::create(b, 0, 32));
      auto ifOp = scf::IfOp::create(b, TypeRange{f32}, onDevice,
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(
            b, ValueRange{memref::LoadOp::create(b, arg(ptr),
                                                 ValueRange{cIdx(b, 0)})});
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, ValueRange{arg(scalar)});
      }
      return arith::MulFOp::create(b, ifOp.getResult(0),
                                   cF32(b, plan.cacheFactor()));
    };
    scale = arith::MulFOp::create(b, scale, pick("k_scale", "k_scale_ptr", 1));
    valueScale = pick("v_scale", "v_scale_ptr", 2);
  }
  emitBody(b);
  gpu::ReturnOp::create(b);
  return func;
}

std::pair<Value, Value> PartitionProgram::headOfSlot(ImplicitLocOpBuilder &b,
                                                     Value g) {
  // slot = tile * headsPerProgram + g; head = kvHead * groupSize + slot.
  Value slot = arith::AddIOp::create(
      b, arith::MulIOp::create(b, tile, cIdx(b, plan.headsPerProgram)), g);
  Value groupLen = toIndex(b, groupSize);
  Value valid =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, slot, groupLen);
  Value head = arith::AddIOp::create(
      b, arith::MulIOp::create(b, kvHead, groupLen), slot);
  return {head, valid};
}

std::pair<Value, Value> PartitionProgram::headOf(ImplicitLocOpBuilder &b,
                                                 int64_t g) {
  return headOfSlot(b, cIdx(b, g));
}

Value PartitionProgram::safeHeadOf(ImplicitLocOpBuilder &b, int64_t g) {
  auto [head, valid] = headOf(b, g);
  Value lastHead = arith::SubIOp::create(
      b,
      arith::MulIOp::create(b, arith::AddIOp::create(b, kvHead, cIdx(b, 1)),
                            toIndex(b, groupSize)),
      cIdx(b, 1));
  return arith::SelectOp::create(b, valid, head, lastHead);
}

void PartitionProgram::stageQuery(ImplicitLocOpBuilder &b, int64_t rows,
                                  int64_t liveRows, int64_t chunks,
                                  QueryStoreFn store) {
  const int64_t qPack = 8, qChunks = plan.headSize / qPack;
  Value zero = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({qPack}, plan.elemType),
                                b.getZeroAttr(plan.elemType)));
  for (int64_t base = 0; base < rows * chunks; base += plan.threads()) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i,
                                          cIdx(b, rows * chunks));
    auto ifOp = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value slot = arith::DivUIOp::create(b, i, cIdx(b, chunks));
    Value chunk = arith::RemUIOp::create(b, i, cIdx(b, chunks));
    auto [head, valid] = headOfSlot(b, slot);
    Value use = valid;
    if (liveRows < rows)
      use = arith::AndIOp::create(
          b, use,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, slot,
                                cIdx(b, liveRows)));
    if (chunks > qChunks)
      use = arith::AndIOp::create(
          b, use,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, chunk,
                                cIdx(b, qChunks)));
    Value safeHead = arith::SelectOp::create(
        b, valid, head, arith::MulIOp::create(b, kvHead, toIndex(b, groupSize)));
    Value safeChunk =
        arith::MinUIOp::create(b, chunk, cIdx(b, qChunks - 1));
    Value ofs = arith::AddIOp::create(
        b,
        arith::MulIOp::create(
            b,
            arith::AddIOp::create(b, arith::MulIOp::create(b, row, numHeads),
                                  safeHead),
            cIdx(b, plan.headSize)),
        arith::MulIOp::create(b, safeChunk, cIdx(b, qPack)));
    Value v = arith::SelectOp::create(
        b, use, loadVector(b, query, ofs, qPack), zero);
    store(b, v, slot, chunk);
  }
  gpu::BarrierOp::create(b);
}

Value PartitionProgram::accIndex(ImplicitLocOpBuilder &b, Value warpIdx,
                                 Value g, Value dim) {
  Value wg = arith::AddIOp::create(
      b, arith::MulIOp::create(b, warpIdx, cIdx(b, plan.headsPerProgram)), g);
  return arith::AddIOp::create(
      b, arith::MulIOp::create(b, wg, cIdx(b, plan.headSize)), dim);
}

Value PartitionProgram::mIndex(ImplicitLocOpBuilder &b, Value warpIdx,
                               Value g) {
  int64_t base = plan.warps * plan.headsPerProgram * plan.headSize;
  Value wg = arith::AddIOp::create(
      b, arith::MulIOp::create(b, warpIdx, cIdx(b, plan.headsPerProgram)), g);
  return arith::AddIOp::create(b, wg, cIdx(b, base));
}

Value PartitionProgram::lIndex(ImplicitLocOpBuilder &b, Value warpIdx,
                               Value g) {
  int64_t base = plan.warps * plan.headsPerProgram * (plan.headSize + 1);
  Value wg = arith::AddIOp::create(
      b, arith::MulIOp::create(b, warpIdx, cIdx(b, plan.headsPerProgram)), g);
  return arith::AddIOp::create(b, wg, cIdx(b, base));
}

void PartitionProgram::emitBody(ImplicitLocOpBuilder &b) {
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, tid, cIdx(b, 32));
  warp = arith::DivUIOp::create(b, tid, cIdx(b, 32));
  Value kvTile = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  seq = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  // A seq_len outside [0, max_blocks_per_seq * block_size] counts as 0
  // tokens: the row reads nothing, its output is NaN and the error recorded.
  QueryRow q = queryRowOf(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::x), seq, seqLens,
      queryStartLoc, maxQueryLen,
      arith::MulIOp::create(b, toIndex(b, maxBlocks), cIdx(b, plan.blockSize)));
  part = q.unit, row = q.row, seqLen = q.seqLen;
  rawSeqLen = q.rawLen, seqLenBad = q.lenBad;
  bad = Value();
  // Programs past their sequence's query tokens have no row: they return.
  auto live = scf::IfOp::create(b, q.live, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(live.thenBlock());
  Value groupLen = toIndex(b, groupSize);
  Value tiles = arith::CeilDivUIOp::create(b, groupLen,
                                           cIdx(b, plan.headsPerProgram));
  kvHead = arith::DivUIOp::create(b, kvTile, tiles);
  tile = arith::RemUIOp::create(b, kvTile, tiles);
  numHeads = arith::MulIOp::create(b, toIndex(b, numKvHeads), groupLen);
  blockRow = arith::MulIOp::create(b, seq, toIndex(b, maxBlocks));
  // Elements of one (block, KV head) slab: head_size * block_size, for both
  // the key layout [D/x][bs][x] and the value layout [D][bs].
  int64_t slab = plan.headSize * plan.blockSize;
  kvHeadOffset = arith::MulIOp::create(b, kvHead, cIdx(b, slab));
  blockStride =
      arith::MulIOp::create(b, toIndex(b, numKvHeads), cIdx(b, slab));

  // Soft cap constants (unused when off; the selects keep them finite).
  if (plan.extLogits) {
    Value cap = logitsSoftCap;
    capOn = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, cap,
                                  cF32(b, 0.0f));
    Value safeCap = arith::SelectOp::create(b, capOn, cap, cF32(b, 1.0f));
    capLog2 = arith::MulFOp::create(b, safeCap, cF32(b, M_LOG2E));
    capInvScale = arith::DivFOp::create(b, cF32(b, 2.0 * M_LOG2E), capLog2);
  }

  // The sliding window's first token: max(seq_len - window, 0), 0 without.
  Value windowStart = slidingWindowStart(b, seqLen, slidingWindow);

  auto setRange = [&](Value start, Value end) {
    partStart = start;
    partEnd = end;
    rangeStart = arith::MaxUIOp::create(b, partStart, windowStart);
    Value step = cIdx(b, plan.tokenStep);
    stepBase = arith::AddIOp::create(
        b, partStart,
        arith::MulIOp::create(
            b,
            arith::DivUIOp::create(
                b, arith::SubIOp::create(b, rangeStart, partStart), step),
            step));
  };
  if (onePass) {
    setRange(cIdx(b, 0), seqLen);
    emitPartition(b);
    return;
  }
  Value tokens = toIndex(b, partTokens);
  Value start = arith::MulIOp::create(b, part, tokens);
  setRange(start, arith::MinUIOp::create(
                      b, arith::AddIOp::create(b, start, tokens), seqLen));
  // Partitions past the sequence's end, or wholly before its sliding
  // window, leave sentinels the reducer skips: they read nothing.
  Value empty = arith::OrIOp::create(
      b,
      arith::CmpIOp::create(b, arith::CmpIPredicate::uge, partStart, seqLen),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ule, partEnd,
                            windowStart));
  auto ifOp = scf::IfOp::create(b, empty, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard emptyGuard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  emitSentinels(b);
  b.setInsertionPointToStart(ifOp.elseBlock());
  emitPartition(b);
}

void PartitionProgram::emitSentinels(ImplicitLocOpBuilder &b) {
  // A bad seq_len makes every partition empty: one thread of each records
  // it (the reducer makes the row NaN).
  {
    auto ifOp = scf::IfOp::create(
        b,
        arith::AndIOp::create(b, seqLenBad,
                              arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                    tid, cIdx(b, 0))),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    recordError(b, arith::ConstantIntOp::create(b, -1, 32), rawSeqLen);
  }
  for (int64_t g = 0; g < plan.headsPerProgram; ++g) {
    auto [head, valid] = headOf(b, g);
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid,
                                        cIdx(b, 0));
    Value write = arith::AndIOp::create(b, valid, first);
    auto ifOp = scf::IfOp::create(b, write, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value headRow = arith::AddIOp::create(
        b, arith::MulIOp::create(b, row, numHeads), head);
    Value idx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, headRow, toIndex(b, maxParts)), part);
    memref::StoreOp::create(b, cF32(b, -INFINITY), maxLogits, ValueRange{idx});
    memref::StoreOp::create(b, cF32(b, 0.0f), expSums, ValueRange{idx});
  }
}

void PartitionProgram::emitEpilogue(ImplicitLocOpBuilder &b) {
  const int64_t heads = plan.headsPerProgram, d = plan.headSize;
  // The barrier before the merge ORs the lanes' bad-entry flags (bar.red.or:
  // no extra synchronisation). A program that saw one stores NaN; one of its
  // threads records the first bad entry (a cold branch).
  Value flag = arith::OrIOp::create(b, takeBad(b), seqLenBad);
  Value anyBad = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ne,
      NVVM::BarrierOp::create(
          b, b.getI32Type(), /*barrierId=*/Value(), /*numberOfThreads=*/Value(),
          NVVM::BarrierReductionAttr::get(b.getContext(),
                                          NVVM::BarrierReduction::OR),
          arith::ExtUIOp::create(b, b.getI32Type(), flag))
          .getResult(0),
      arith::ConstantIntOp::create(b, 0, 32));
  {
    auto ifOp = scf::IfOp::create(
        b,
        arith::AndIOp::create(b, anyBad,
                              arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                    tid, cIdx(b, 0))),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    emitErrorRecord(b);
  }
  Value nan = cF32(b, NAN);
  // Each thread finishes (head, dim) pairs: merge the warps and store.
  int64_t total = heads * d, threads = plan.threads();
  for (int64_t base = 0; base < total; base += threads) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value inRange =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, cIdx(b, total));
    // The head slot and dim of pair i.
    Value g = arith::DivUIOp::create(b, i, cIdx(b, d));
    Value dim = arith::RemUIOp::create(b, i, cIdx(b, d));
    auto [head, slotValid] = headOfSlot(b, g);
    Value valid = arith::AndIOp::create(b, inRange, slotValid);
    auto ifOp = scf::IfOp::create(b, valid, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto load = [&](Value idx) {
      return memref::LoadOp::create(b, shared, ValueRange{idx}).getResult();
    };
    SmallVector<Value> ms;
    Value mMax = cF32(b, -FLT_MAX);
    for (int64_t w = 0; w < plan.warps; ++w) {
      ms.push_back(load(mIndex(b, cIdx(b, w), g)));
      mMax = maxf(b, mMax, ms.back());
    }
    Value sum = cF32(b, 0.0f), acc = cF32(b, 0.0f);
    if (onePass) {
      // The attention sink joins where the softmax is normalized: here, or
      // in the reducer after a partition kernel (which never reads it).
      auto [mSink, lSink] = sinkState(b, sinks, hasSinks, head, M_LOG2E);
      mMax = maxf(b, mMax, mSink);
      sum = arith::MulFOp::create(
          b, lSink, exp2(b, arith::SubFOp::create(b, mSink, mMax)));
    }
    for (int64_t w = 0; w < plan.warps; ++w) {
      // A warp without tokens holds m = -inf (or -FLT_MAX) and l = 0.
      Value f = exp2(b, arith::SubFOp::create(b, ms[w], mMax));
      sum = fma(b, load(lIndex(b, cIdx(b, w), g)), f, sum);
      acc = fma(b, load(accIndex(b, cIdx(b, w), g, dim)), f, acc);
    }
    Value result = arith::DivFOp::create(b, acc, sum);
    if (valueScale) // fp8: v_scale (with the cache factor)
      result = arith::MulFOp::create(b, result, valueScale);
    // A bad entry: NaN here, and NaN exp_sums for the reducer.
    result = arith::SelectOp::create(b, anyBad, nan, result);
    sum = arith::SelectOp::create(b, anyBad, nan, sum);
    Value headRow = arith::AddIOp::create(
        b, arith::MulIOp::create(b, row, numHeads), head);
    if (onePass) {
      Value idx = arith::AddIOp::create(
          b, arith::MulIOp::create(b, headRow, cIdx(b, d)), dim);
      memref::StoreOp::create(b, fromF32(b, result, plan.elemType), output,
                              ValueRange{idx});
      continue;
    }
    Value partIdx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, headRow, toIndex(b, maxParts)), part);
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

Value PartitionProgram::stepToken(ImplicitLocOpBuilder &b, Value step) {
  return arith::AddIOp::create(
      b, stepBase, arith::MulIOp::create(b, step, cIdx(b, plan.tokenStep)));
}

Value PartitionProgram::keyChunkOffset(ImplicitLocOpBuilder &b, Value base,
                                       Value chunk, Value slot) {
  return arith::AddIOp::create(
      b, base,
      arith::MulIOp::create(
          b,
          arith::AddIOp::create(
              b, arith::MulIOp::create(b, chunk, cIdx(b, plan.blockSize)),
              slot),
          cIdx(b, plan.keyPack)));
}

Value PartitionProgram::tokenValid(ImplicitLocOpBuilder &b, Value tok) {
  return arith::AndIOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::uge, tok, rangeStart),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tok, partEnd));
}

SmallVector<Value> PartitionProgram::emitStepLoop(ImplicitLocOpBuilder &b,
                                                  SmallVector<Value> state,
                                                  StepFn step,
                                                  PrologueFn prologue) {
  Value stepLen = cIdx(b, plan.tokenStep), zero = cIdx(b, 0);
  Value tokens = arith::SubIOp::create(b, partEnd, stepBase);
  Value full = arith::DivUIOp::create(b, tokens, stepLen);
  Value warps = cIdx(b, plan.warps);
  auto eq = [&](Value l, Value r) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, l, r);
  };
  // Step 0 is partial when the sliding window starts inside it (the head),
  // the step after the last full one when the range ends inside it (the
  // tail). Only they are masked; a range shorter than a step is one tail.
  Value hasHead = arith::AndIOp::create(
      b,
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, stepBase, rangeStart),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, full, zero));
  Value hasTail = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ne, arith::RemUIOp::create(b, tokens, stepLen),
      zero);

  // The whole steps, round robin over the warps; warp 0 skips a head.
  Value first = arith::SelectOp::create(
      b, arith::AndIOp::create(b, hasHead, eq(warp, zero)),
      arith::AddIOp::create(b, warp, warps), warp);
  size_t carried = state.size();
  if (prologue)
    state.append(prologue(b, first, full));
  // Both loops carry the lane's bad-entry flag (checkedEntry) last.
  auto stepWithFlag = [&](ImplicitLocOpBuilder &nb, Value at, bool masked,
                          ValueRange iterArgs) {
    bad = iterArgs.back();
    SmallVector<Value> out = step(
        nb, at, masked, llvm::to_vector(iterArgs.drop_back()));
    out.push_back(takeBad(nb));
    scf::YieldOp::create(nb, out);
  };
  state.push_back(takeBad(b));
  auto loop = scf::ForOp::create(
      b, first, full, warps, state,
      [&](OpBuilder &nested, Location loc, Value iv, ValueRange iterArgs) {
        ImplicitLocOpBuilder nb(loc, nested);
        stepWithFlag(nb, iv, /*masked=*/false, iterArgs);
      });
  state = SmallVector<Value>(loop.getResults().take_front(carried));
  state.push_back(loop.getResults().back());

  // The head (step 0, warp 0's) and the tail (step `full`, on the warp whose
  // turn it is): one masked body, over k in [head ? 0 : 1, tail ? 2 : 1).
  Value headHere = arith::AndIOp::create(b, hasHead, eq(warp, zero));
  Value tailHere = arith::AndIOp::create(
      b, hasTail, eq(arith::RemUIOp::create(b, full, warps), warp));
  Value one = cIdx(b, 1);
  Value from = arith::SelectOp::create(b, headHere, zero, one);
  Value to = arith::SelectOp::create(b, tailHere, cIdx(b, 2), one);
  auto edges = scf::ForOp::create(
      b, from, to, one, state,
      [&](OpBuilder &nested, Location loc, Value k, ValueRange iterArgs) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value at = arith::SelectOp::create(
            nb,
            arith::CmpIOp::create(nb, arith::CmpIPredicate::eq, k, cIdx(nb, 0)),
            cIdx(nb, 0), full);
        stepWithFlag(nb, at, /*masked=*/true, iterArgs);
      });
  bad = edges.getResults().back();
  return SmallVector<Value>(edges.getResults().drop_back());
}

Value PartitionProgram::checkedEntry(ImplicitLocOpBuilder &b, Value rawEntry) {
  // Negative entries are huge unsigned: one compare covers both bounds.
  Value isBad = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, rawEntry,
                                      numBlocks);
  addBad(b, isBad);
  return arith::SelectOp::create(b, isBad,
                                 arith::ConstantIntOp::create(b, 0, 32),
                                 rawEntry);
}

Value PartitionProgram::takeBad(ImplicitLocOpBuilder &b) {
  Value flag = bad ? bad : arith::ConstantIntOp::create(b, 0, 1).getResult();
  bad = Value();
  return flag;
}

void PartitionProgram::addBad(ImplicitLocOpBuilder &b, Value flag) {
  bad = bad ? arith::OrIOp::create(b, bad, flag).getResult() : flag;
}

void PartitionProgram::recordError(ImplicitLocOpBuilder &b, Value index,
                                   Value value) {
  Type i32 = b.getI32Type();
  Value old = memref::AtomicRMWOp::create(
      b, arith::AtomicRMWKind::addi, arith::ConstantIntOp::create(b, 1, 32),
      errorWord, ValueRange{cIdx(b, 0)});
  auto ifOp = scf::IfOp::create(
      b,
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, old,
                            arith::ConstantIntOp::create(b, 0, 32)),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  memref::StoreOp::create(b, arith::IndexCastOp::create(b, i32, seq), errorWord,
                          ValueRange{cIdx(b, 1)});
  memref::StoreOp::create(b, index, errorWord, ValueRange{cIdx(b, 2)});
  memref::StoreOp::create(b, value, errorWord, ValueRange{cIdx(b, 3)});
}

void PartitionProgram::emitErrorRecord(ImplicitLocOpBuilder &b) {
  auto lenIf = scf::IfOp::create(b, seqLenBad, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(lenIf.thenBlock());
  recordError(b, arith::ConstantIntOp::create(b, -1, 32), rawSeqLen);
  // Else the first bad entry of the blocks the program read: those of its
  // steps' tokens [stepBase, partEnd) (a masked first step starts before a
  // sliding window's first token).
  b.setInsertionPointToStart(lenIf.elseBlock());
  Value bs = cIdx(b, plan.blockSize);
  auto scan = scf::ForOp::create(
      b, arith::DivUIOp::create(b, stepBase, bs),
      arith::CeilDivUIOp::create(b, partEnd, bs), cIdx(b, 1),
      ValueRange{arith::ConstantIntOp::create(b, 0, 1)},
      [&](OpBuilder &nested, Location loc, Value logical, ValueRange iter) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value entry = memref::LoadOp::create(
            nb, blockTables,
            ValueRange{arith::AddIOp::create(nb, blockRow, logical)});
        Value isBad = arith::CmpIOp::create(nb, arith::CmpIPredicate::uge,
                                            entry, numBlocks);
        Value firstBad = arith::AndIOp::create(
            nb, isBad,
            arith::XOrIOp::create(nb, iter[0],
                                  arith::ConstantIntOp::create(nb, 1, 1)));
        auto ifOp = scf::IfOp::create(nb, firstBad, /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard inner(nb);
          nb.setInsertionPointToStart(ifOp.thenBlock());
          recordError(nb,
                      arith::IndexCastOp::create(nb, nb.getI32Type(), logical),
                      entry);
        }
        scf::YieldOp::create(
            nb, ValueRange{arith::OrIOp::create(nb, iter[0], isBad)});
      });
  (void)scan;
}

Value PartitionProgram::alibiSlopeLog2(ImplicitLocOpBuilder &b, Value head) {
  assert(plan.extLogits && "ALiBi is compiled into _ext variants only");
  Value on = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, hasAlibi,
                                   arith::ConstantIntOp::create(b, 0, 32));
  auto ifOp = scf::IfOp::create(b, TypeRange{b.getF32Type()}, on,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value slope = memref::LoadOp::create(b, alibiSlopes, ValueRange{head});
  scf::YieldOp::create(
      b, ValueRange{arith::MulFOp::create(b, slope, cF32(b, M_LOG2E))});
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, ValueRange{cF32(b, 0.0f)});
  return ifOp.getResult(0);
}

Value PartitionProgram::alibiPosition(ImplicitLocOpBuilder &b, Value tok) {
  Value rel = arith::SubIOp::create(
      b, arith::AddIOp::create(b, tok, cIdx(b, 1)), seqLen);
  return arith::SIToFPOp::create(
      b, b.getF32Type(),
      arith::IndexCastOp::create(b, b.getI32Type(), rel));
}

SmallVector<Value> PartitionProgram::softCap(ImplicitLocOpBuilder &b,
                                             ArrayRef<Value> scores) {
  if (!plan.extLogits)
    return SmallVector<Value>(scores);
  SmallVector<Type> types(scores.size(), b.getF32Type());
  auto ifOp = scf::IfOp::create(b, types, capOn, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> capped;
  for (Value s : scores) {
    // C tanh(s / C) = C (1 - 2 / (1 + 2^(2 log2(e) s / C))).
    Value e = exp2(b, arith::MulFOp::create(b, s, capInvScale));
    Value frac = arith::DivFOp::create(
        b, cF32(b, 2.0f), arith::AddFOp::create(b, e, cF32(b, 1.0f)));
    capped.push_back(arith::MulFOp::create(
        b, capLog2, arith::SubFOp::create(b, cF32(b, 1.0f), frac)));
  }
  scf::YieldOp::create(b, capped);
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, SmallVector<Value>(scores));
  return SmallVector<Value>(ifOp.getResults());
}

gpu::GPUFuncOp mlir::paged_attn::buildPartitionKernel(OpBuilder &moduleBuilder,
                                                      Location loc,
                                                      const KernelPlan &plan,
                                                      bool onePass) {
  if (plan.usesMma())
    return buildMmaPartitionKernel(moduleBuilder, loc, plan, onePass);
  if (plan.usesWmma())
    return buildWmmaPartitionKernel(moduleBuilder, loc, plan, onePass);
  return buildSimtPartitionKernel(moduleBuilder, loc, plan, onePass);
}
