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
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

gpu::GPUFuncOp PartitionProgram::build(OpBuilder &moduleBuilder, Location loc) {
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
  // The occupancy the plan is for: ptxas caps registers to fit it. The SIMT
  // kernel says one program per SM is acceptable (without it, ptxas for
  // sm_90 may cap registers for occupancy and spill the softmax state).
  func->setAttr("nvvm.minctasm",
                moduleBuilder.getI32IntegerAttr(plan.programsPerSM));

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
  blockRow = arith::MulIOp::create(b, seq, toIndex(b, maxBlocks));
  // Elements of one (block, KV head) slab: head_size * block_size, for both
  // the key layout [D/x][bs][x] and the value layout [D][bs].
  int64_t slab = plan.headSize * plan.blockSize;
  kvHeadOffset = arith::MulIOp::create(b, kvHead, cIdx(b, slab));
  blockStride =
      arith::MulIOp::create(b, toIndex(b, numKvHeads), cIdx(b, slab));

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
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  emitSentinels(b);
  b.setInsertionPointToStart(ifOp.elseBlock());
  emitPartition(b);
}

void PartitionProgram::emitSentinels(ImplicitLocOpBuilder &b) {
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

void PartitionProgram::emitEpilogue(ImplicitLocOpBuilder &b) {
  const int64_t heads = plan.headsPerProgram, d = plan.headSize;
  gpu::BarrierOp::create(b);
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
    for (int64_t w = 0; w < plan.warps; ++w) {
      // A warp without tokens holds m = -inf (or -FLT_MAX) and l = 0.
      Value f = exp2(b, arith::SubFOp::create(b, ms[w], mMax));
      sum = fma(b, load(lIndex(b, cIdx(b, w), g)), f, sum);
      acc = fma(b, load(accIndex(b, cIdx(b, w), g, dim)), f, acc);
    }
    Value result = arith::DivFOp::create(b, acc, sum);
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
  if (plan.usesMma())
    return buildMmaPartitionKernel(moduleBuilder, loc, plan, onePass);
  return buildSimtPartitionKernel(moduleBuilder, loc, plan, onePass);
}
