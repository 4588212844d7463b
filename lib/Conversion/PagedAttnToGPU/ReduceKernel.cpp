//===- ReduceKernel.cpp - the log-sum-exp reduce kernel -------------------===//
//
// Builds `<variant>_reduce`: one warp per (sequence, query head), four
// heads per program. The partitions' statistics are merged lane-parallel
// (each lane folds every 32nd partition's max and exp sum, then the warp
// merges by xor shuffles), which gives every lane the global max M and the
// total L. The lanes then walk the partitions, `kUnroll` at a time so their
// 16-byte loads of tmp_output are in flight together, each lane across its
// slice of head_size:
//
//   out[d] = sum_p tmp[p][d] * exp_sums[p] * exp(max_logits[p] - M) / L
//
// With a sliding window both walks start at the window's first partition:
// the ones before it hold sentinels and no tmp_output, so they are not read.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelIdioms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

/// Partitions whose tmp_output rows are loaded together.
static constexpr int64_t kUnroll = 4;

gpu::GPUFuncOp mlir::paged_attn::buildReduceKernel(OpBuilder &moduleBuilder,
                                                   Location loc,
                                                   const KernelPlan &plan) {
  MLIRContext *ctx = moduleBuilder.getContext();
  auto flat = [&](Type t) { return flatMemRefType(t); };
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  SmallVector<Type> args{flat(plan.elemType), flat(f32), flat(f32),
                         flat(plan.tmpType),  flat(i32), i32,
                         i32,                 i32,       i32};
  auto func = gpu::GPUFuncOp::create(moduleBuilder, loc,
                                     plan.name() + "_reduce",
                                     moduleBuilder.getFunctionType(args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                moduleBuilder.getUnitAttr());
  func.setKnownBlockSizeAttr(moduleBuilder.getDenseI32ArrayAttr(
      {static_cast<int32_t>(kReduceWarps * 32), 1, 1}));
  Block &entry = func.getBody().front();
  Value output = entry.getArgument(0), expSums = entry.getArgument(1),
        maxLogits = entry.getArgument(2), tmpOutput = entry.getArgument(3),
        seqLens = entry.getArgument(4), numHeadsArg = entry.getArgument(5),
        maxPartsArg = entry.getArgument(6), partTokens = entry.getArgument(7),
        slidingWindow = entry.getArgument(8);

  ImplicitLocOpBuilder b(loc, ctx);
  b.setInsertionPointToStart(&entry);
  const int64_t d = plan.headSize;
  const int64_t vec = 16 / (plan.tmpType.getIntOrFloatBitWidth() / 8);
  const int64_t vecs = d / vec;
  const int64_t vecsPerLane = llvm::divideCeil(vecs, 32);
  const bool padded = vecsPerLane * 32 != vecs;

  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, tid, cIdx(b, 32));
  Value warp = arith::DivUIOp::create(b, tid, cIdx(b, 32));
  Value head = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            cIdx(b, kReduceWarps)),
      warp);
  Value seq = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value numHeads = toIndex(b, numHeadsArg);
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, head, numHeads);
  auto ifOp = scf::IfOp::create(b, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifOp.thenBlock());

  Value seqLen = toIndex(b, memref::LoadOp::create(b, seqLens, ValueRange{seq}));
  Value parts = arith::CeilDivUIOp::create(b, seqLen, toIndex(b, partTokens));
  // The window's first token max(seq_len - W, 0) (W = 0: none) and its
  // partition: the first one with a result.
  Value firstPart = arith::DivUIOp::create(
      b, slidingWindowStart(b, seqLen, slidingWindow), toIndex(b, partTokens));
  Value row = arith::AddIOp::create(b, arith::MulIOp::create(b, seq, numHeads),
                                    head);
  Value statBase = arith::MulIOp::create(b, row, toIndex(b, maxPartsArg));
  Value log2e = cF32(b, M_LOG2E);
  auto scaledExp = [&](Value a, Value m) {
    return exp2(b, arith::MulFOp::create(b, arith::SubFOp::create(b, a, m),
                                         log2e));
  };

  // Statistics, lane-parallel: lane l folds partitions first + l, + 32, ...
  auto statLoop = scf::ForOp::create(
      b, arith::AddIOp::create(b, firstPart, lane), parts, cIdx(b, 32), ValueRange{cF32(b, -FLT_MAX), cF32(b, 0.0f)},
      [&](OpBuilder &nested, Location nloc, Value p, ValueRange iter) {
        ImplicitLocOpBuilder nb(nloc, nested);
        Value idx = arith::AddIOp::create(nb, statBase, p);
        Value mp = memref::LoadOp::create(nb, maxLogits, ValueRange{idx});
        Value lp = memref::LoadOp::create(nb, expSums, ValueRange{idx});
        Value mNew = maxf(nb, iter[0], mp);
        auto e = [&](Value a) {
          return exp2(nb, arith::MulFOp::create(
                              nb, arith::SubFOp::create(nb, a, mNew), log2e));
        };
        Value l = fma(nb, iter[1], e(iter[0]),
                      arith::MulFOp::create(nb, lp, e(mp)));
        scf::YieldOp::create(nb, ValueRange{mNew, l});
      });
  Value m = statLoop.getResult(0), l = statLoop.getResult(1);
  for (int64_t off = 1; off < 32; off *= 2) {
    Value mOther = shuffleXor(b, m, off), lOther = shuffleXor(b, l, off);
    Value mNew = maxf(b, m, mOther);
    l = fma(b, l, scaledExp(m, mNew),
            arith::MulFOp::create(b, lOther, scaledExp(mOther, mNew)));
    m = mNew;
  }
  Value invL = arith::DivFOp::create(b, cF32(b, 1.0f), l);

  // Each lane's slices of head_size (clamped; padded lanes do not store).
  SmallVector<Value> sliceOfs, sliceValid;
  for (int64_t i = 0; i < vecsPerLane; ++i) {
    Value v = arith::AddIOp::create(b, lane, cIdx(b, 32 * i));
    sliceValid.push_back(
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, v, cIdx(b, vecs)));
    if (padded)
      v = arith::MinUIOp::create(b, v, cIdx(b, vecs - 1));
    sliceOfs.push_back(arith::MulIOp::create(b, v, cIdx(b, vec)));
  }

  // Weighted sum of the partial outputs, kUnroll partitions per step.
  SmallVector<Value> init(vecsPerLane * vec, cF32(b, 0.0f));
  Value lastPart = arith::SubIOp::create(b, parts, cIdx(b, 1));
  auto accLoop = scf::ForOp::create(
      b, firstPart, parts, cIdx(b, kUnroll), init,
      [&](OpBuilder &nested, Location nloc, Value p0, ValueRange iter) {
        ImplicitLocOpBuilder nb(nloc, nested);
        SmallVector<Value> acc(iter);
        SmallVector<Value> weights;
        SmallVector<SmallVector<Value>> rows;
        for (int64_t u = 0; u < kUnroll; ++u) {
          Value p = arith::AddIOp::create(nb, p0, cIdx(nb, u));
          Value live =
              arith::CmpIOp::create(nb, arith::CmpIPredicate::ult, p, parts);
          Value pc = arith::MinUIOp::create(nb, p, lastPart);
          Value idx = arith::AddIOp::create(nb, statBase, pc);
          Value mp = memref::LoadOp::create(nb, maxLogits, ValueRange{idx});
          Value lp = memref::LoadOp::create(nb, expSums, ValueRange{idx});
          Value w = arith::MulFOp::create(
              nb, lp,
              exp2(nb, arith::MulFOp::create(
                           nb, arith::SubFOp::create(nb, mp, m), log2e)));
          weights.push_back(
              arith::SelectOp::create(nb, live, w, cF32(nb, 0.0f)));
          Value rowBase = arith::MulIOp::create(nb, idx, cIdx(nb, d));
          rows.emplace_back();
          for (int64_t i = 0; i < vecsPerLane; ++i)
            rows.back().push_back(loadVector(
                nb, tmpOutput, arith::AddIOp::create(nb, rowBase, sliceOfs[i]),
                vec));
        }
        for (int64_t u = 0; u < kUnroll; ++u)
          for (int64_t i = 0; i < vecsPerLane; ++i) {
            SmallVector<Value> vals = toF32Scalars(nb, rows[u][i]);
            for (int64_t e = 0; e < vec; ++e)
              acc[i * vec + e] = fma(nb, weights[u], vals[e], acc[i * vec + e]);
          }
        scf::YieldOp::create(nb, acc);
      });

  Value outRow = arith::MulIOp::create(b, row, cIdx(b, d));
  auto outVecType = VectorType::get({vec}, plan.elemType);
  int64_t outBytes = vec * plan.elemType.getIntOrFloatBitWidth() / 8;
  for (int64_t i = 0; i < vecsPerLane; ++i) {
    SmallVector<Value> outs;
    for (int64_t e = 0; e < vec; ++e)
      outs.push_back(fromF32(
          b, arith::MulFOp::create(b, accLoop.getResult(i * vec + e), invL),
          plan.elemType));
    Value packed = vector::FromElementsOp::create(b, outVecType, outs);
    auto store = [&](ImplicitLocOpBuilder &sb) {
      vector::StoreOp::create(
          sb, packed, output,
          ValueRange{arith::AddIOp::create(sb, outRow, sliceOfs[i])},
          /*nontemporal=*/false,
          llvm::MaybeAlign(std::min<int64_t>(outBytes, 16)));
    };
    if (!padded) {
      store(b);
      continue;
    }
    auto storeIf = scf::IfOp::create(b, sliceValid[i], /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(storeIf.thenBlock());
    store(b);
  }

  b.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(b);
  return func;
}
