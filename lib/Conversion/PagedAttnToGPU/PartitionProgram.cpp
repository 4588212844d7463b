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
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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
  KernelRole role = clusterSize ? KernelRole::Cluster
                    : onePass   ? KernelRole::OnePass
                                : KernelRole::Partition;
  KernelSignature sig(role, plan);
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
  std::string name = plan.name() + "_" + roleName(role);
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
  // The cluster's shape, compiled in (.reqnctapercluster): a plain launch
  // whose grid x is a multiple of it runs the kernel in clusters.
  if (clusterSize)
    func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                  moduleBuilder.getDenseI32ArrayAttr(
                      {static_cast<int32_t>(clusterSize), 1, 1}));

  Block &entry = func.getBody().front();
  auto arg = [&](StringRef name) { return sig.arg(entry, name); };
  query = arg("query"), keyCache = arg("key_cache"),
  valueCache = arg("value_cache"), blockTables = arg("block_tables"),
  seqLens = arg("seq_lens"), output = arg("output"), expSums = arg("exp_sums"),
  maxLogits = arg("max_logits"), tmpOutput = arg("tmp_output"),
  scale = arg("scale"), maxBlocks = arg("max_blocks_per_seq"),
  maxParts = arg("max_num_partitions"), partTokens = arg("partition_tokens"),
  partSplit = onePass ? Value() : arg("partition_split"),
  numKvHeads = arg("num_kv_heads"), groupSize = arg("group_size"),
  blockSizeArg = arg("block_size"), alibiSlopes = arg("alibi_slopes"),
  hasAlibi = arg("has_alibi"), slidingWindow = arg("sliding_window"),
  logitsSoftCap = arg("logits_soft_cap"), sinks = arg("sinks"),
  hasSinks = arg("has_sinks"), queryStartLoc = arg("query_start_loc"),
  maxQueryLen = arg("max_query_len"), numBlocks = arg("num_blocks"),
  errorWord = arg("error_word"), tmpF32 = arg("tmp_f32");
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
      Value onDevice =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ne, flag,
                                arith::ConstantIntOp::create(b, 0, 32));
      auto ifOp = scf::IfOp::create(b, TypeRange{f32}, onDevice,
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(b, ValueRange{memref::LoadOp::create(
                                    b, arg(ptr), ValueRange{cIdx(b, 0)})});
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

Value PartitionProgram::tokensPerProgram(ImplicitLocOpBuilder &b,
                                         Value groupLen) {
  if (!packsTokens())
    return cIdx(b, 1);
  // max(heads_per_program / group, 1) with several query tokens per
  // sequence, else 1 (the manifest's grid says the same: ExportBundle).
  Value fit = arith::MaxUIOp::create(
      b, arith::DivUIOp::create(b, cIdx(b, plan.headsPerProgram), groupLen),
      cIdx(b, 1));
  Value multi = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, maxQueryLen,
                                      arith::ConstantIntOp::create(b, 0, 32));
  return arith::SelectOp::create(b, multi, fit, cIdx(b, 1));
}

PartitionProgram::Slot PartitionProgram::slotOf(ImplicitLocOpBuilder &b,
                                                Value g) {
  // One token: slot = tile * headsPerProgram + g, head = kvHead * group +
  // slot. Packed tokens (P > 1, one tile per KV head): token u = g / group,
  // head kvHead * group + g % group.
  Value groupLen = toIndex(b, groupSize);
  Value u = cIdx(b, 0), inGroup = g;
  if (packsTokens()) {
    Value packed = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt,
                                         perProgram, cIdx(b, 1));
    Value span = arith::SelectOp::create(b, packed, groupLen,
                                         cIdx(b, plan.headsPerProgram));
    u = arith::DivUIOp::create(b, g, span);
    inGroup = arith::RemUIOp::create(b, g, span);
  }
  Value slot = arith::AddIOp::create(
      b, arith::MulIOp::create(b, tile, cIdx(b, plan.headsPerProgram)),
      inGroup);
  Slot s;
  s.valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, slot, groupLen);
  s.head = arith::AddIOp::create(b, arith::MulIOp::create(b, kvHead, groupLen),
                                 slot);
  s.row = row;
  s.token = tokens.j0;
  if (!packsTokens())
    return s;
  Value token = arith::AddIOp::create(b, tokens.j0, u);
  Value tokenValid = arith::AndIOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, u, perProgram),
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, token, tokens.qLen));
  s.valid = arith::AndIOp::create(b, s.valid, tokenValid);
  // An invalid slot keeps the program's row and token: rows that exist.
  s.row = arith::SelectOp::create(b, s.valid, arith::AddIOp::create(b, row, u),
                                  row);
  s.token = arith::SelectOp::create(b, s.valid, token, tokens.j0);
  return s;
}

std::pair<Value, Value> PartitionProgram::headOfSlot(ImplicitLocOpBuilder &b,
                                                     Value g) {
  Slot s = slotOf(b, g);
  return {s.head, s.valid};
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
  for (int64_t base = 0; base < rows * chunks; base += plan.threads()) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i,
                                          cIdx(b, rows * chunks));
    auto ifOp = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    QueryChunk c = queryChunk(b, i, rows, liveRows, chunks, /*pinned=*/false);
    store(b, c.value, c.slot, c.chunk);
  }
  gpu::BarrierOp::create(b);
}

PartitionProgram::QueryChunk
PartitionProgram::queryChunk(ImplicitLocOpBuilder &b, Value i, int64_t rows,
                             int64_t liveRows, int64_t chunks, bool pinned) {
  const int64_t qPack = 8, qChunks = plan.headSize / qPack;
  Value zero = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({qPack}, plan.elemType),
                                b.getZeroAttr(plan.elemType)));
  Value slot = arith::DivUIOp::create(b, i, cIdx(b, chunks));
  Value chunk = arith::RemUIOp::create(b, i, cIdx(b, chunks));
  Slot s = slotOf(b, slot);
  Value head = s.head, valid = s.valid;
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
  Value safeChunk = arith::MinUIOp::create(b, chunk, cIdx(b, qChunks - 1));
  Value ofs = arith::AddIOp::create(
      b,
      arith::MulIOp::create(
          b,
          arith::AddIOp::create(b, arith::MulIOp::create(b, s.row, numHeads),
                                safeHead),
          cIdx(b, plan.headSize)),
      arith::MulIOp::create(b, safeChunk, cIdx(b, qPack)));
  Value v =
      arith::SelectOp::create(b, use,
                              pinned ? loadVectorPinned(b, query, ofs, qPack)
                                     : loadVector(b, query, ofs, qPack),
                              zero);
  return {Value(), slot, chunk, v};
}

SmallVector<PartitionProgram::QueryChunk>
PartitionProgram::loadQuery(ImplicitLocOpBuilder &b, int64_t rows,
                            int64_t liveRows, int64_t chunks) {
  SmallVector<QueryChunk> out;
  for (int64_t base = 0; base < rows * chunks; base += plan.threads()) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value live = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i,
                                       cIdx(b, rows * chunks));
    QueryChunk c = queryChunk(
        b, arith::MinUIOp::create(b, i, cIdx(b, rows * chunks - 1)), rows,
        liveRows, chunks, /*pinned=*/true);
    c.live = live;
    out.push_back(c);
  }
  return out;
}

void PartitionProgram::storeQuery(ImplicitLocOpBuilder &b,
                                  ArrayRef<QueryChunk> loaded,
                                  QueryStoreFn store) {
  for (const QueryChunk &c : loaded) {
    auto ifOp = scf::IfOp::create(b, c.live, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    store(b, c.value, c.slot, c.chunk);
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
  Value groupLen = toIndex(b, groupSize);
  perProgram = tokensPerProgram(b, groupLen);
  // A seq_len outside [0, max_blocks_per_seq * block_size] counts as 0
  // tokens: the rows read nothing, their output is NaN and the error
  // recorded.
  Value maxBlocksIdx = toIndex(b, maxBlocks);
  Value capacity =
      arith::MulIOp::create(b, maxBlocksIdx, toIndex(b, blockSizeArg));
  tokens = queryRowOf(b, gpu::BlockIdOp::create(b, gpu::Dimension::x), seq,
                      seqLens, queryStartLoc, maxQueryLen, perProgram,
                      capacity, clusterSize);
  part = tokens.unit, row = tokens.row, seqLen = tokens.seqLen;
  seqLenBad = tokens.lenBad;
  // Programs past their sequence's query tokens have no row: they return.
  auto live = scf::IfOp::create(b, tokens.live, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(live.thenBlock());
  Value tiles =
      arith::CeilDivUIOp::create(b, groupLen, cIdx(b, plan.headsPerProgram));
  kvHead = arith::DivUIOp::create(b, kvTile, tiles);
  tile = arith::RemUIOp::create(b, kvTile, tiles);
  numHeads = arith::MulIOp::create(b, toIndex(b, numKvHeads), groupLen);
  blockRow = arith::MulIOp::create(b, seq, toIndex(b, maxBlocks));
  emitBlockAddressing(b);
  prefetchFirstBlocks(b);
  stageOperands(b);

  // Soft cap constants (unused when off; the selects keep them finite).
  if (plan.extLogits) {
    Value cap = logitsSoftCap;
    capOn =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, cap, cF32(b, 0.0f));
    Value safeCap = arith::SelectOp::create(b, capOn, cap, cF32(b, 1.0f));
    capLog2 = arith::MulFOp::create(b, safeCap, cF32(b, M_LOG2E));
    capInvScale = arith::DivFOp::create(b, cF32(b, 2.0 * M_LOG2E), capLog2);
  }

  // The sliding window's first token: max(seq_len - window, 0), 0 without
  // (of the program's first token: the others' windows start later).
  Value firstContext =
      packsTokens() ? tokenContext(b, tokens, tokens.j0) : seqLen;
  Value windowStart = slidingWindowStart(b, firstContext, slidingWindow);

  auto setRange = [&](Value start, Value end) {
    partStart = start;
    partEnd = end;
    rangeStart = arith::MaxUIOp::create(b, partStart, windowStart);
    innerStart = rangeStart, innerEnd = partEnd;
    if (packsTokens()) { // the last token's window, the first one's end
      innerStart = arith::MaxUIOp::create(
          b, rangeStart, slidingWindowStart(b, seqLen, slidingWindow));
      innerEnd = arith::MinUIOp::create(b, partEnd, firstContext);
    }
    Value step = cIdx(b, plan.tokenStep);
    stepBase = arith::AddIOp::create(
        b, partStart,
        arith::MulIOp::create(
            b,
            arith::DivUIOp::create(
                b, arith::SubIOp::create(b, rangeStart, partStart), step),
            step));
  };
  auto [start, end] = partitionOf(b, part, seqLen);
  setRange(start, end);
  if (onePass) {
    // A bad seq_len: NaN rows, recorded, nothing read (as the partition
    // kernel's empty partitions, after which the reducer does it).
    auto lenIf = scf::IfOp::create(b, seqLenBad, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard lenGuard(b);
    b.setInsertionPointToStart(lenIf.thenBlock());
    if (clusterSize) { // the cluster's first program, once
      auto first = scf::IfOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, part,
                                   cIdx(b, 0)),
          /*withElseRegion=*/false);
      b.setInsertionPointToStart(first.thenBlock());
    }
    emitBadLength(b);
    b.setInsertionPointToStart(lenIf.elseBlock());
    emitRangeCheck(b);
    emitPartition(b);
    return;
  }
  // Partitions past the sequence's end, or wholly before its sliding
  // window, leave sentinels the reducer skips: they read nothing.
  Value empty = arith::OrIOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::uge, partStart, seqLen),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ule, partEnd,
                            windowStart));
  auto ifOp = scf::IfOp::create(b, empty, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard emptyGuard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  emitSentinels(b);
  b.setInsertionPointToStart(ifOp.elseBlock());
  emitPartition(b);
}

void PartitionProgram::prefetchFirstBlocks(ImplicitLocOpBuilder &b) {
  // One-pass only: in the partition kernels of the tensor-core tiles at
  // their register caps, ptxas 13 (sm_90) spilled with it (d96 x 16).
  // Every thread asks for entry 0's line; a warp's asks are one. Not into
  // a block table without columns (the compiled host path allows one; its
  // contexts are empty).
  if (!onePass)
    return;
  Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, maxBlocks,
                                    arith::ConstantIntOp::create(b, 0, 32));
  auto ifOp = scf::IfOp::create(b, any, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  prefetchL1(b, blockTables, blockRow);
}

std::pair<Value, Value> PartitionProgram::partitionOf(ImplicitLocOpBuilder &b,
                                                     Value unit, Value ctx) {
  if (onePass && !clusterSize)
    return {cIdx(b, 0), ctx};
  // The cluster kernel splits the sequence over its cluster as the fixed
  // grid does over its partitions, in whole steps; a program past the
  // context has an empty range (and still merges).
  auto i32 = [&](int64_t v) { return arith::ConstantIntOp::create(b, v, 32); };
  Value size =
      clusterSize
          ? partitionTokensOf(b, tokens.len, i32(plan.tokenStep),
                              i32(clusterSize))
          : partitionTokensOf(b, tokens.len, partTokens, partSplit);
  Value start = arith::MulIOp::create(b, unit, size);
  if (clusterSize)
    start = arith::MinUIOp::create(b, start, ctx);
  return {start, arith::MinUIOp::create(
                     b, arith::AddIOp::create(b, start, size), ctx)};
}

void PartitionProgram::emitSentinels(ImplicitLocOpBuilder &b) {
  for (int64_t g = 0; g < plan.headsPerProgram; ++g) {
    Slot s = slotOf(b, cIdx(b, g));
    Value head = s.head, valid = s.valid;
    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cIdx(b, 0));
    Value write = arith::AndIOp::create(b, valid, first);
    auto ifOp = scf::IfOp::create(b, write, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value headRow = arith::AddIOp::create(
        b, arith::MulIOp::create(b, s.row, numHeads), head);
    Value idx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, headRow, toIndex(b, maxParts)), part);
    memref::StoreOp::create(b, cF32(b, -INFINITY), maxLogits, ValueRange{idx});
    memref::StoreOp::create(b, cF32(b, 0.0f), expSums, ValueRange{idx});
  }
}

PartitionProgram::MergeState
PartitionProgram::mergeWarps(ImplicitLocOpBuilder &b, Value g, Value dim,
                             Value head) {
  auto load = [&](Value idx) {
    return memref::LoadOp::create(b, shared, ValueRange{idx}).getResult();
  };
  SmallVector<Value> ms;
  MergeState st{cF32(b, -FLT_MAX), cF32(b, 0.0f), cF32(b, 0.0f)};
  for (int64_t w = 0; w < plan.warps; ++w) {
    ms.push_back(load(mIndex(b, cIdx(b, w), g)));
    st.m = maxf(b, st.m, ms.back());
  }
  if (head) {
    // The attention sink joins where the softmax is normalized: here, or
    // in the reducer after a partition kernel (which never reads it).
    auto [mSink, lSink] = sinkState(b, sinks, hasSinks, head, M_LOG2E);
    st.m = maxf(b, st.m, mSink);
    st.l = arith::MulFOp::create(
        b, lSink, exp2(b, arith::SubFOp::create(b, mSink, st.m)));
  }
  for (int64_t w = 0; w < plan.warps; ++w) {
    // A warp without tokens holds m = -inf (or -FLT_MAX) and l = 0.
    Value f = exp2(b, arith::SubFOp::create(b, ms[w], st.m));
    st.l = fma(b, load(lIndex(b, cIdx(b, w), g)), f, st.l);
    st.acc = fma(b, load(accIndex(b, cIdx(b, w), g, dim)), f, st.acc);
  }
  return st;
}

void PartitionProgram::emitEpilogue(ImplicitLocOpBuilder &b) {
  const int64_t heads = plan.headsPerProgram, d = plan.headSize;
  gpu::BarrierOp::create(b);
  if (clusterSize)
    return emitClusterEpilogue(b);
  if (!onePass)
    tmp = viewTmpOutput(b, tmpOutput, tmpF32, plan.elemType);
  // Each thread finishes (head, dim) pairs: merge the warps and store.
  int64_t total = heads * d, threads = plan.threads();
  for (int64_t base = 0; base < total; base += threads) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value inRange =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, cIdx(b, total));
    // The head slot and dim of pair i.
    Value g = arith::DivUIOp::create(b, i, cIdx(b, d));
    Value dim = arith::RemUIOp::create(b, i, cIdx(b, d));
    Slot s = slotOf(b, g);
    Value head = s.head;
    Value valid = arith::AndIOp::create(b, inRange, s.valid);
    auto ifOp = scf::IfOp::create(b, valid, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    MergeState st = mergeWarps(b, g, dim, onePass ? head : Value());
    Value mMax = st.m, sum = st.l;
    if (onePass) {
      storeOutput(b, s, dim, st);
      continue;
    }
    Value result = arith::DivFOp::create(b, st.acc, sum);
    if (valueScale) // fp8: v_scale (with the cache factor)
      result = arith::MulFOp::create(b, result, valueScale);
    Value headRow = arith::AddIOp::create(
        b, arith::MulIOp::create(b, s.row, numHeads), head);
    Value partIdx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, headRow, toIndex(b, maxParts)), part);
    Value tmpIdx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, partIdx, cIdx(b, d)), dim);
    storeTmp(b, result, tmpIdx);
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

void PartitionProgram::storeOutput(ImplicitLocOpBuilder &b, const Slot &s,
                                   Value dim, const MergeState &st) {
  Value result = normalize(b, st.acc, st.l);
  if (valueScale) // fp8: v_scale (with the cache factor)
    result = arith::MulFOp::create(b, result, valueScale);
  Value headRow = arith::AddIOp::create(
      b, arith::MulIOp::create(b, s.row, numHeads), s.head);
  Value idx = arith::AddIOp::create(
      b, arith::MulIOp::create(b, headRow, cIdx(b, plan.headSize)), dim);
  memref::StoreOp::create(b, fromF32(b, result, plan.elemType), output,
                          ValueRange{idx});
}

Value PartitionProgram::clusterIndex(ImplicitLocOpBuilder &b, Value idx,
                                     int64_t offset) {
  return arith::AddIOp::create(b, idx, cIdx(b, scratchBase() + offset));
}

void PartitionProgram::emitClusterEpilogue(ImplicitLocOpBuilder &b) {
  storeProgramState(b);
  // Release / acquire over the cluster: every program's area is written.
  NVVM::ClusterArriveOp::create(b, /*aligned=*/UnitAttr());
  NVVM::ClusterWaitOp::create(b, /*aligned=*/UnitAttr());
  mergeCluster(b);
  // No program leaves (its workgroup memory with it) while another of its
  // cluster may still read it.
  NVVM::ClusterArriveOp::create(b, /*aligned=*/UnitAttr());
  NVVM::ClusterWaitOp::create(b, /*aligned=*/UnitAttr());
}

void PartitionProgram::storeProgramState(ImplicitLocOpBuilder &b) {
  const int64_t heads = plan.headsPerProgram, d = plan.headSize;
  const int64_t total = heads * d;
  for (int64_t base = 0; base < total; base += plan.threads()) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    auto ifOp = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i,
                                 cIdx(b, total)),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value g = arith::DivUIOp::create(b, i, cIdx(b, d));
    Value dim = arith::RemUIOp::create(b, i, cIdx(b, d));
    MergeState st = mergeWarps(b, g, dim, Value());
    memref::StoreOp::create(b, st.acc, shared,
                            ValueRange{clusterIndex(b, i, 0)});
    auto first = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, dim, cIdx(b, 0)),
        /*withElseRegion=*/false);
    b.setInsertionPointToStart(first.thenBlock());
    memref::StoreOp::create(b, st.m, shared,
                            ValueRange{clusterIndex(b, g, total)});
    memref::StoreOp::create(b, st.l, shared,
                            ValueRange{clusterIndex(b, g, total + heads)});
  }
}

void PartitionProgram::mergeCluster(ImplicitLocOpBuilder &b) {
  const int64_t heads = plan.headsPerProgram, d = plan.headSize;
  const int64_t total = heads * d;
  const int64_t per = llvm::divideCeil(total, clusterSize);
  SmallVector<Value> ranks = clusterViews(b);
  for (int64_t base = 0; base < per; base += plan.threads()) {
    Value j = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value i = arith::AddIOp::create(
        b, arith::MulIOp::create(b, part, cIdx(b, per)), j);
    Value g = arith::DivUIOp::create(b, i, cIdx(b, d));
    Value dim = arith::RemUIOp::create(b, i, cIdx(b, d));
    Slot s = slotOf(b, g);
    Value valid = arith::AndIOp::create(
        b,
        arith::AndIOp::create(
            b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j,
                                     cIdx(b, per)),
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i,
                                  cIdx(b, total))),
        s.valid);
    auto ifOp = scf::IfOp::create(b, valid, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    SmallVector<Value> ms, ls, accs;
    auto [mSink, lSink] = sinkState(b, sinks, hasSinks, s.head, M_LOG2E);
    MergeState st{mSink, cF32(b, 0.0f), cF32(b, 0.0f)};
    for (int64_t q = 0; q < clusterSize; ++q) {
      ms.push_back(loadRemote(b, ranks[q], clusterIndex(b, g, total)));
      ls.push_back(loadRemote(b, ranks[q], clusterIndex(b, g, total + heads)));
      accs.push_back(loadRemote(b, ranks[q], clusterIndex(b, i, 0)));
      st.m = maxf(b, st.m, ms.back());
    }
    st.l = arith::MulFOp::create(
        b, lSink, exp2(b, arith::SubFOp::create(b, mSink, st.m)));
    for (int64_t q = 0; q < clusterSize; ++q) {
      Value f = exp2(b, arith::SubFOp::create(b, ms[q], st.m));
      st.l = fma(b, ls[q], f, st.l);
      st.acc = fma(b, accs[q], f, st.acc);
    }
    storeOutput(b, s, dim, st);
  }
}

SmallVector<Value> PartitionProgram::clusterViews(ImplicitLocOpBuilder &b) {
  // `shared` as a shared-memory pointer (address space 3), mapped into
  // each rank's window of the cluster's (address space 7).
  Value addr = arith::IndexCastOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, shared));
  Value own = LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), 3), addr);
  auto remote = LLVM::LLVMPointerType::get(b.getContext(), 7);
  SmallVector<Value> views;
  for (int64_t q = 0; q < clusterSize; ++q)
    views.push_back(NVVM::MapaOp::create(
        b, remote, own, arith::ConstantIntOp::create(b, q, 32)));
  return views;
}

Value PartitionProgram::loadRemote(ImplicitLocOpBuilder &b, Value view,
                                   Value idx) {
  Value at = LLVM::GEPOp::create(
      b, view.getType(), b.getF32Type(), view,
      ValueRange{arith::IndexCastOp::create(b, b.getI32Type(), idx)});
  return LLVM::LoadOp::create(b, b.getF32Type(), at);
}

/// tmp_output[idx] = result in the call's tmp type: a branch on tmp_f32,
/// uniform over the kernel (f32 queries store f32 only).
void PartitionProgram::storeTmp(ImplicitLocOpBuilder &b, Value result,
                                Value idx) {
  if (!tmp.both()) {
    memref::StoreOp::create(b, result, tmp.f32, ValueRange{idx});
    return;
  }
  auto ifOp = scf::IfOp::create(b, tmp.isF32, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  memref::StoreOp::create(b, result, tmp.f32, ValueRange{idx});
  b.setInsertionPointToStart(ifOp.elseBlock());
  memref::StoreOp::create(b, fromF32(b, result, plan.elemType), tmp.half,
                          ValueRange{idx});
}

void PartitionProgram::emitBlockAddressing(ImplicitLocOpBuilder &b) {
  // block_size is a power of two (the runtime checks it): token -> block
  // and slot are a shift and a mask, log2 computed once.
  blockShift = toIndex(
      b, LLVM::CountTrailingZerosOp::create(b, b.getI32Type(), blockSizeArg,
                                            /*is_zero_poison=*/false));
  blockLen = toIndex(b, blockSizeArg);
  blockMask = arith::SubIOp::create(b, blockLen, cIdx(b, 1));
  // Elements of one (block, KV head) slab: head_size * block_size, for both
  // the key layout [D/x][bs][x] and the value layout [D][bs].
  Value slab = arith::ShLIOp::create(b, cIdx(b, plan.headSize), blockShift);
  kvHeadOffset = arith::MulIOp::create(b, kvHead, slab);
  blockStride = arith::MulIOp::create(b, toIndex(b, numKvHeads), slab);
}

Value PartitionProgram::blockOf(ImplicitLocOpBuilder &b, Value tok) {
  return arith::ShRUIOp::create(b, tok, blockShift);
}

Value PartitionProgram::blockSlotOf(ImplicitLocOpBuilder &b, Value tok) {
  return arith::AndIOp::create(b, tok, blockMask);
}

Value PartitionProgram::timesBlock(ImplicitLocOpBuilder &b, Value v) {
  return arith::ShLIOp::create(b, v, blockShift);
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
          b, arith::AddIOp::create(b, timesBlock(b, chunk), slot),
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
                                                  PrologueFn prologue,
                                                  SetupFn edgeSetup) {
  Value stepLen = cIdx(b, plan.tokenStep), warps = cIdx(b, plan.warps);
  // Steps from stepBase to token `tok` (none before stepBase), rounded.
  auto stepsTo = [&](Value tok, bool up) -> Value {
    Value d = arith::SubIOp::create(b, arith::MaxUIOp::create(b, tok, stepBase),
                                    stepBase);
    if (up)
      return arith::CeilDivUIOp::create(b, d, stepLen);
    return arith::DivUIOp::create(b, d, stepLen);
  };
  // Steps [0, steps); whole ones [uFirst, uEnd); masked: the rest.
  Value steps = stepsTo(partEnd, /*up=*/true);
  Value uFirst = arith::MinUIOp::create(b, stepsTo(innerStart, true), steps);
  Value uEnd = arith::MaxUIOp::create(b, stepsTo(innerEnd, false), uFirst);

  // Masked step k of [0, edges): step k before the whole ones, uEnd +
  // (k - uFirst) after; the warps' turns go on from the whole steps'. In
  // i32 (a few steps, the warp count): they live through the whole steps.
  // (Recomputing them after the whole steps instead, or loading a masked
  // step's values before its softmax, made other tiles spill: ptxas at the
  // caps; every variant of this loop is checked by the ptxas covering tests.)
  auto i32 = [&](Value v) -> Value {
    return arith::IndexCastOp::create(b, b.getI32Type(), v);
  };
  Value edges = i32(
      arith::SubIOp::create(b, arith::AddIOp::create(b, uFirst, steps), uEnd));
  Value turn =
      arith::RemUIOp::create(b, arith::SubIOp::create(b, uEnd, uFirst), warps);
  Value kFirst = i32(arith::RemUIOp::create(
      b, arith::SubIOp::create(b, arith::AddIOp::create(b, warp, warps), turn),
      warps));
  Value heads = i32(uFirst);

  Value first = arith::AddIOp::create(b, uFirst, warp);
  size_t carried = state.size();
  if (prologue)
    state.append(prologue(b, first, uEnd));
  auto loop = scf::ForOp::create(
      b, first, uEnd, warps, state,
      [&](OpBuilder &nested, Location loc, Value iv, ValueRange iterArgs) {
        ImplicitLocOpBuilder nb(loc, nested);
        scf::YieldOp::create(
            nb, step(nb, iv, StepMask::none, llvm::to_vector(iterArgs)));
      });
  state = SmallVector<Value>(loop.getResults().take_front(carried));

  Value tailBase = i32(uEnd);
  StepMask mask = packsTokens() ? StepMask::slots : StepMask::range;
  if (edgeSetup && mask == StepMask::slots)
    edgeSetup(b);
  auto masked = scf::ForOp::create(
      b, kFirst, edges, arith::ConstantIntOp::create(b, plan.warps, 32), state,
      [&](OpBuilder &nested, Location loc, Value k, ValueRange iterArgs) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value at = arith::IndexCastUIOp::create(
            nb, nb.getIndexType(),
            arith::SelectOp::create(
                nb,
                arith::CmpIOp::create(nb, arith::CmpIPredicate::ult, k, heads),
                k,
                arith::AddIOp::create(nb, arith::SubIOp::create(nb, k, heads),
                                      tailBase)));
        scf::YieldOp::create(nb, step(nb, at, mask, llvm::to_vector(iterArgs)));
      });
  return SmallVector<Value>(masked.getResults());
}

PartitionProgram::CheckedEntry
PartitionProgram::checkedEntry(ImplicitLocOpBuilder &b, Value rawEntry) {
  // Negative entries are huge unsigned: one compare covers both bounds.
  Value isBad = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, rawEntry,
                                      numBlocks);
  return {arith::SelectOp::create(b, isBad,
                                  arith::ConstantIntOp::create(b, 0, 32),
                                  rawEntry),
          isBad};
}

Value PartitionProgram::poisonIf(ImplicitLocOpBuilder &b, Value isBad,
                                 Value v) {
  return arith::SelectOp::create(b, isBad, cF32(b, NAN), v);
}

void PartitionProgram::emitRangeCheck(ImplicitLocOpBuilder &b) {
  // The blocks of the program's range [rangeStart, partEnd), each holding a
  // token some slot attends to: thread t checks blocks t, t + threads, ...
  // (one-pass contexts are short: mostly one load) and records the last bad
  // one it found.
  Type i32 = b.getI32Type();
  Value from = blockOf(b, rangeStart);
  Value nonEmpty =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, partEnd, rangeStart);
  Value blocks = arith::SelectOp::create(
      b, nonEmpty,
      arith::SubIOp::create(
          b,
          blockOf(b, arith::AddIOp::create(
                         b, arith::SubIOp::create(b, partEnd, cIdx(b, 1)),
                         blockLen)),
          from),
      cIdx(b, 0));
  // The thread's last bad block and its entry (-1: none).
  Value none = arith::ConstantIntOp::create(b, -1, 32);
  auto check = scf::ForOp::create(
      b, tid, blocks, cIdx(b, plan.threads()), ValueRange{none, none},
      [&](OpBuilder &nested, Location loc, Value i, ValueRange iter) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value logical = arith::AddIOp::create(nb, from, i);
        Value entry = memref::LoadOp::create(
            nb, blockTables,
            ValueRange{arith::AddIOp::create(nb, blockRow, logical)});
        Value bad = arith::CmpIOp::create(nb, arith::CmpIPredicate::uge,
                                          entry, numBlocks);
        Value index = arith::IndexCastOp::create(nb, i32, logical);
        scf::YieldOp::create(
            nb, ValueRange{arith::SelectOp::create(nb, bad, index, iter[0]),
                           arith::SelectOp::create(nb, bad, entry, iter[1])});
      });
  Value found = arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                                      check.getResult(0), none);
  // A barrier keeps the check apart from the token loop's code: without
  // it, ptxas spilled tiles at their register caps.
  gpu::BarrierOp::create(b);
  auto ifOp = scf::IfOp::create(b, found, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  recordBadInput(b, errorWord, seq, check.getResult(0), check.getResult(1));
}

void PartitionProgram::emitBadLength(ImplicitLocOpBuilder &b) {
  Value first =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cIdx(b, 0));
  {
    auto ifOp = scf::IfOp::create(b, first, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    recordBadInput(b, errorWord, seq, arith::ConstantIntOp::create(b, -1, 32),
                   tokens.rawLen);
  }
  // Every (slot, dim) of the tile's rows: NaN.
  const int64_t d = plan.headSize, total = plan.headsPerProgram * d;
  Value nan = fromF32(b, cF32(b, NAN), plan.elemType);
  for (int64_t base = 0; base < total; base += plan.threads()) {
    Value i = arith::AddIOp::create(b, tid, cIdx(b, base));
    Value inRange =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, cIdx(b, total));
    Slot s = slotOf(b, arith::DivUIOp::create(b, i, cIdx(b, d)));
    auto ifOp = scf::IfOp::create(b, arith::AndIOp::create(b, inRange, s.valid),
                                  /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value headRow = arith::AddIOp::create(
        b, arith::MulIOp::create(b, s.row, numHeads), s.head);
    Value idx = arith::AddIOp::create(
        b, arith::MulIOp::create(b, headRow, cIdx(b, d)),
        arith::RemUIOp::create(b, i, cIdx(b, d)));
    memref::StoreOp::create(b, nan, output, ValueRange{idx});
  }
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
      b, b.getF32Type(), arith::IndexCastOp::create(b, b.getI32Type(), rel));
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
                                                      KernelRole role) {
  if (plan.usesMma())
    return buildMmaPartitionKernel(moduleBuilder, loc, plan, role);
  assert(role != KernelRole::Cluster && "cluster kernels are tensor-core's");
  if (plan.usesWmma())
    return buildWmmaPartitionKernel(moduleBuilder, loc, plan, role);
  return buildSimtPartitionKernel(moduleBuilder, loc, plan, role);
}
