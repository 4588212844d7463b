//===- KernelIdioms.cpp - small IR idioms the kernels share ---------------===//

#include "KernelIdioms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cassert>
#include <cfloat>

using namespace mlir;
using namespace mlir::paged_attn;

Value mlir::paged_attn::cIdx(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value mlir::paged_attn::cF32(ImplicitLocOpBuilder &b, float v) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
}

Value mlir::paged_attn::cI32(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, v, 32);
}

Value mlir::paged_attn::toIndex(ImplicitLocOpBuilder &b, Value i32) {
  return arith::IndexCastOp::create(b, b.getIndexType(), i32);
}

Value mlir::paged_attn::loadVector(ImplicitLocOpBuilder &b, Value memref,
                                   Value offset, int64_t n) {
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  auto type = VectorType::get({n}, elem);
  int64_t bytes = n * elem.getIntOrFloatBitWidth() / 8;
  return vector::LoadOp::create(b, type, memref, ValueRange{offset},
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(std::min<int64_t>(bytes, 16)));
}

/// The global address of memref[offset] as an i64 (the generic address;
/// the asm converts it with cvta.to.global).
static Value addressOf(ImplicitLocOpBuilder &b, Value memref, Value offset) {
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  int64_t elemBytes = elem.getIntOrFloatBitWidth() / 8;
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, memref);
  Value at = arith::AddIOp::create(
      b, base, arith::MulIOp::create(b, offset, cIdx(b, elemBytes)));
  return arith::IndexCastUIOp::create(b, b.getI64Type(), at);
}

void mlir::paged_attn::prefetchL1(ImplicitLocOpBuilder &b, Value memref,
                                  Value offset) {
  LLVM::InlineAsmOp::create(
      b, Type(), ValueRange{addressOf(b, memref, offset)},
      "{ .reg .u64 pa_g; cvta.to.global.u64 pa_g, $0; prefetch.global.L1 "
      "[pa_g]; }",
      "l", /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, /*asm_dialect=*/nullptr,
      /*operand_attrs=*/nullptr);
}

/// `n` elements at memref[offset] (4, 8 or 16 bytes) by one inline-PTX
/// ld.global`qualifier`; `pinned`: an asm with side effects, which LLVM
/// neither moves nor removes.
static Value asmLoad(ImplicitLocOpBuilder &b, Value memref, Value offset,
                     int64_t n, StringRef qualifier, bool pinned) {
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  int64_t words = n * (elem.getIntOrFloatBitWidth() / 8) / 4;
  assert((words == 1 || words == 2 || words == 4) && "4, 8 or 16 bytes");
  Value address = addressOf(b, memref, offset);
  // {$0..$w-1} <- [global(address)].
  std::string outs, constraints;
  for (int64_t i = 0; i < words; ++i) {
    outs += (i ? ", $" : "$") + std::to_string(i);
    constraints += "=r,";
  }
  std::string vec = words == 1 ? "" : ".v" + std::to_string(words);
  std::string asmText =
      "{ .reg .u64 pa_g; cvta.to.global.u64 pa_g, $" + std::to_string(words) +
      "; ld.global" + qualifier.str() + vec + ".b32 " +
      (words == 1 ? outs : "{" + outs + "}") + ", [pa_g]; }";
  Type i32 = b.getI32Type();
  Type result = words == 1 ? i32
                           : LLVM::LLVMStructType::getLiteral(
                                 b.getContext(), SmallVector<Type>(words, i32));
  Value loaded =
      LLVM::InlineAsmOp::create(
          b, result, ValueRange{address}, asmText, constraints + "l",
          /*has_side_effects=*/pinned, /*is_align_stack=*/false,
          LLVM::TailCallKind::None, /*asm_dialect=*/nullptr,
          /*operand_attrs=*/nullptr)
          .getResult(0);
  SmallVector<Value> parts;
  for (int64_t i = 0; i < words; ++i)
    parts.push_back(words == 1 ? loaded
                               : LLVM::ExtractValueOp::create(b, loaded, i));
  Value packed = vector::FromElementsOp::create(
      b, VectorType::get({words}, i32), parts);
  return vector::BitCastOp::create(b, VectorType::get({n}, elem), packed);
}

Value mlir::paged_attn::loadVectorL2(ImplicitLocOpBuilder &b, Value memref,
                                     Value offset, int64_t n,
                                     int64_t l2Bytes) {
  if (l2Bytes == 0)
    return loadVector(b, memref, offset, n);
  return asmLoad(b, memref, offset, n, ".L2::" + std::to_string(l2Bytes) + "B",
                 /*pinned=*/false);
}

Value mlir::paged_attn::loadVectorPinned(ImplicitLocOpBuilder &b, Value memref,
                                         Value offset, int64_t n) {
  return asmLoad(b, memref, offset, n, "", /*pinned=*/true);
}

Value mlir::paged_attn::slidingWindowStart(ImplicitLocOpBuilder &b,
                                          Value seqLen, Value window) {
  Value w = toIndex(b, window);
  Value windowed = arith::AndIOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, w, cIdx(b, 0)),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, seqLen, w));
  return arith::SelectOp::create(b, windowed, arith::SubIOp::create(b, seqLen, w),
                                 cIdx(b, 0));
}

Value mlir::paged_attn::partitionTokensOf(ImplicitLocOpBuilder &b, Value len,
                                         Value tokens, Value split) {
  Value unit = toIndex(b, tokens);
  Value perPart = arith::CeilDivUIOp::create(
      b, len, arith::MaxUIOp::create(b, toIndex(b, split), cIdx(b, 1)));
  Value units = arith::MaxUIOp::create(
      b, arith::CeilDivUIOp::create(b, perPart, unit), cIdx(b, 1));
  Value on = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, split,
                                   arith::ConstantIntOp::create(b, 0, 32));
  return arith::SelectOp::create(b, on, arith::MulIOp::create(b, units, unit),
                                 unit);
}

QueryRow mlir::paged_attn::queryRowOf(ImplicitLocOpBuilder &b, Value gridX,
                                      Value seq, Value seqLens,
                                      Value queryStartLoc, Value maxQueryLen,
                                      Value perProgram, Value capacity,
                                      int64_t clusterSize) {
  QueryRow r;
  // seq_lens[seq] first: its load is in flight with query_start_loc's.
  r.rawLen = memref::LoadOp::create(b, seqLens, ValueRange{seq});
  r.len = toIndex(b, r.rawLen);
  if (capacity) {
    // Negative lengths are huge unsigned: one compare covers both bounds.
    r.lenBad =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, r.len, capacity);
    r.len = arith::SelectOp::create(b, r.lenBad, cIdx(b, 0), r.len);
  }
  Value slots = arith::MaxUIOp::create(b, toIndex(b, maxQueryLen), cIdx(b, 1));
  std::optional<int64_t> one = getConstantIntValue(perProgram);
  Value packs = one && *one == 1
                    ? slots
                    : arith::CeilDivUIOp::create(b, slots, perProgram).getResult();
  Value multi = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, maxQueryLen,
                                      arith::ConstantIntOp::create(b, 0, 32));
  // The sequence's first row and token count: from query_start_loc, or
  // (row seq, 1) with one token per sequence.
  Type index = b.getIndexType();
  auto ifOp = scf::IfOp::create(b, TypeRange{index, index}, multi,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto at = [&](Value i) {
      return toIndex(b, memref::LoadOp::create(b, queryStartLoc, ValueRange{i}));
    };
    Value start = at(seq);
    Value end = at(arith::AddIOp::create(b, seq, cIdx(b, 1)));
    scf::YieldOp::create(
        b, ValueRange{start, arith::SubIOp::create(b, end, start)});
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, ValueRange{seq, cIdx(b, 1)});
  }
  r.start = ifOp.getResult(0), r.qLen = ifOp.getResult(1);
  r.j0 = clusterSize
             ? arith::DivUIOp::create(b, gridX, cIdx(b, clusterSize)).getResult()
             : arith::RemUIOp::create(b, gridX, packs).getResult();
  if (!one || *one != 1)
    r.j0 = arith::MulIOp::create(b, r.j0, perProgram);
  r.unit = clusterSize
               ? arith::RemUIOp::create(b, gridX, cIdx(b, clusterSize)).getResult()
               : arith::DivUIOp::create(b, gridX, packs).getResult();
  r.row = arith::AddIOp::create(b, r.start, r.j0);
  r.live = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, r.j0, r.qLen);
  // The program's last token: min(j0 + P, q_len) - 1.
  Value last = arith::SubIOp::create(
      b,
      arith::MinSIOp::create(b, arith::AddIOp::create(b, r.j0, perProgram),
                             r.qLen),
      cIdx(b, 1));
  r.seqLen = tokenContext(b, r, last);
  return r;
}

Value mlir::paged_attn::tokenContext(ImplicitLocOpBuilder &b,
                                     const QueryRow &q, Value j) {
  // Token j stands at p = seq_len - q_len + j and attends to 0..p.
  Value attended = arith::AddIOp::create(
      b, arith::SubIOp::create(b, q.len, q.qLen),
      arith::AddIOp::create(b, j, cIdx(b, 1)));
  return arith::MaxSIOp::create(b, attended, cIdx(b, 0));
}

void mlir::paged_attn::recordBadInput(ImplicitLocOpBuilder &b, Value errorWord,
                                      Value seq, Value index, Value value) {
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

void mlir::paged_attn::recordLastBadEntry(ImplicitLocOpBuilder &b,
                                           Value blockTables, Value tableRow,
                                           Value numBlocks, Value shift,
                                           Value start, Value end,
                                           Value errorWord, Value seq) {
  // Downwards from the range's last block, stopping at the first bad one;
  // block numbers in i32 (a row has fewer than 2^31 blocks). `n` is one
  // past the block to look at next.
  Type i32 = b.getI32Type();
  auto toI32 = [&](Value v) -> Value {
    return arith::IndexCastOp::create(b, i32, v);
  };
  Value from = toI32(arith::ShRUIOp::create(b, start, shift));
  Value n0 = arith::SelectOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, end, start),
      arith::AddIOp::create(
          b,
          toI32(arith::ShRUIOp::create(
              b, arith::SubIOp::create(b, end, cIdx(b, 1)), shift)),
          arith::ConstantIntOp::create(b, 1, 32)),
      from);
  auto entryOf = [&](ImplicitLocOpBuilder &eb, Value n) -> Value {
    Value logical = arith::SubIOp::create(
        eb, n, arith::ConstantIntOp::create(eb, 1, 32));
    return memref::LoadOp::create(
        eb, blockTables,
        ValueRange{arith::AddIOp::create(
            eb, tableRow,
            arith::IndexCastUIOp::create(eb, eb.getIndexType(), logical))});
  };
  auto scan = scf::WhileOp::create(
      b, TypeRange{i32}, ValueRange{n0},
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value more = arith::CmpIOp::create(nb, arith::CmpIPredicate::ugt,
                                           args[0], from);
        auto good = scf::IfOp::create(nb, TypeRange{nb.getI1Type()}, more,
                                      /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(nb);
        nb.setInsertionPointToStart(good.thenBlock());
        scf::YieldOp::create(
            nb, ValueRange{arith::CmpIOp::create(nb, arith::CmpIPredicate::ult,
                                                 entryOf(nb, args[0]),
                                                 numBlocks)});
        nb.setInsertionPointToStart(good.elseBlock());
        Value no = arith::ConstantIntOp::create(nb, 0, 1);
        scf::YieldOp::create(nb, ValueRange{no});
        nb.setInsertionPointAfter(good);
        scf::ConditionOp::create(nb, good.getResult(0), args);
      },
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder nb(loc, nested);
        scf::YieldOp::create(
            nb, ValueRange{arith::SubIOp::create(
                    nb, args[0], arith::ConstantIntOp::create(nb, 1, 32))});
      });
  Value n = scan.getResult(0);
  auto found = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, n, from),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(found.thenBlock());
  Value entry = entryOf(b, n);
  Value logical =
      arith::SubIOp::create(b, n, arith::ConstantIntOp::create(b, 1, 32));
  recordBadInput(b, errorWord, seq, logical, entry);
}

Value mlir::paged_attn::fp8PairToF16(ImplicitLocOpBuilder &b, Value bytes,
                                     Type fp8Type, int64_t i) {
  Value pair =
      vector::ShuffleOp::create(b, bytes, bytes, ArrayRef<int64_t>{i, i + 1});
  return NVVM::ConvertF8x2ToF16x2Op::create(
      b, VectorType::get({2}, b.getF16Type()), pair, b.getBoolAttr(false),
      TypeAttr::get(fp8Type));
}

/// fp8 bytes (vector<n x i8>) as f16 (vector<n x f16>) without conversion
/// instructions. A zero byte under each fp8 byte (one byte permute, prmt,
/// per f16 pair) gives b << 8. e5m2 is the top byte of an f16: done. e4m3's
/// 7 exponent/mantissa bits sit under f16's sign shifted by 7, i.e. the
/// value / 2^8 (the caller folds KernelPlan::cacheFactor into its scales):
/// s eeee mmm 0^8 becomes s 0 eeee mmm 0^7, the low seven bits one place
/// right, the sign kept. On i32 words of two halves that is one shift and
/// two masks, (w >> 1) & 0x3f803f80 | w & 0x80008000 (the bit the shift
/// moves across the halves falls outside the first mask).
static Value fp8BytesToF16(ImplicitLocOpBuilder &b, Value bytes, Type fp8Type) {
  auto byteType = cast<VectorType>(bytes.getType());
  int64_t n = byteType.getNumElements();
  auto f16s = VectorType::get({n}, b.getF16Type());
  Value zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(byteType, b.getI8IntegerAttr(0)));
  SmallVector<int64_t> interleave; // little-endian: low byte 0, high b_i
  for (int64_t i = 0; i < n; ++i)
    interleave.append({n + i, i});
  Value high = vector::ShuffleOp::create(b, bytes, zeros, interleave);
  if (isa<Float8E5M2Type>(fp8Type))
    return vector::BitCastOp::create(b, f16s, high);
  assert(n % 2 == 0 && "fp8 loads are whole pairs (powers of two)");
  auto wordType = VectorType::get({n / 2}, b.getI32Type());
  auto c32 = [&](uint32_t v) {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(wordType, b.getI32IntegerAttr(int32_t(v))));
  };
  Value w = vector::BitCastOp::create(b, wordType, high);
  Value mag = arith::AndIOp::create(b, arith::ShRUIOp::create(b, w, c32(1)),
                                    c32(0x3f803f80u));
  Value sign = arith::AndIOp::create(b, w, c32(0x80008000u));
  return vector::BitCastOp::create(b, f16s,
                                   arith::OrIOp::create(b, mag, sign));
}

SmallVector<Value> mlir::paged_attn::toF32Scalars(ImplicitLocOpBuilder &b,
                                                  Value vec, bool fp8Hardware) {
  auto type = cast<VectorType>(vec.getType());
  int64_t n = type.getNumElements();
  Type f32 = b.getF32Type();
  Value wide = vec;
  if (type.getElementType().isBF16()) {
    // bf16 is the top half of an f32: widen by a shift, no conversion unit
    // (sm_70 has no bf16 instructions).
    auto i16 = VectorType::get({n}, b.getI16Type());
    auto i32 = VectorType::get({n}, b.getI32Type());
    Value bits = arith::BitcastOp::create(b, i16, vec);
    Value ext = arith::ExtUIOp::create(b, i32, bits);
    Value sh = arith::ShLIOp::create(
        b, ext,
        arith::ConstantOp::create(b, DenseElementsAttr::get(
                                         i32, b.getI32IntegerAttr(16))));
    wide = arith::BitcastOp::create(b, VectorType::get({n}, f32), sh);
  } else if (isa<Float8E4M3FNType, Float8E5M2Type>(type.getElementType())) {
    Value bytes =
        arith::BitcastOp::create(b, VectorType::get({n}, b.getI8Type()), vec);
    if (fp8Hardware) {
      // Exact f16 pairs, then f16 to f32.
      SmallVector<Value> out;
      for (int64_t i = 0; i < n; i += 2) {
        Value h = fp8PairToF16(b, bytes, type.getElementType(), i);
        for (int64_t k = 0; k < 2; ++k)
          out.push_back(arith::ExtFOp::create(
              b, f32,
              vector::ExtractOp::create(b, h, ArrayRef<int64_t>{k}).getResult()));
      }
      return out;
    }
    // Software (every chip), then f16 to f32: exact, subnormals too.
    Value f16 = fp8BytesToF16(b, bytes, type.getElementType());
    wide = arith::ExtFOp::create(b, VectorType::get({n}, f32), f16);
  } else if (!type.getElementType().isF32()) {
    wide = arith::ExtFOp::create(b, VectorType::get({n}, f32), vec);
  }
  SmallVector<Value> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(vector::ExtractOp::create(b, wide, i));
  return out;
}

Value mlir::paged_attn::fromF32(ImplicitLocOpBuilder &b, Value f32,
                                Type type) {
  if (type.isF32())
    return f32;
  return arith::TruncFOp::create(b, type, f32);
}

TmpViews mlir::paged_attn::viewTmpOutput(ImplicitLocOpBuilder &b, Value bytes,
                                         Value tmpF32, Type queryType) {
  int64_t extent = cast<MemRefType>(bytes.getType()).getDimSize(0);
  auto view = [&](Type elem) -> Value {
    int64_t elems = extent / (elem.getIntOrFloatBitWidth() / 8);
    return memref::ViewOp::create(b, MemRefType::get({elems}, elem), bytes,
                                  cIdx(b, 0), ValueRange{});
  };
  TmpViews v;
  v.f32 = view(b.getF32Type());
  if (queryType.isF32())
    return v;
  v.half = view(queryType);
  v.isF32 = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, tmpF32,
                                  arith::ConstantIntOp::create(b, 0, 32));
  return v;
}

Value mlir::paged_attn::shuffleXor(ImplicitLocOpBuilder &b, Value v,
                                   int64_t offset) {
  return gpu::ShuffleOp::create(b, v, static_cast<int32_t>(offset),
                                /*width=*/32, gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

Value mlir::paged_attn::shuffleIdx(ImplicitLocOpBuilder &b, Value v,
                                   Value srcLane) {
  Value src = arith::IndexCastOp::create(b, b.getI32Type(), srcLane);
  return gpu::ShuffleOp::create(b, v, src,
                                arith::ConstantIntOp::create(b, 32, 32),
                                gpu::ShuffleMode::IDX)
      .getShuffleResult();
}

// The three math operations below avoid the math dialect on purpose:
// convert-gpu-to-nvvm maps math.exp2, math.fma and arith.maxnumf to
// libdevice calls (__nv_exp2f, __nv_fmaf, __nv_fmaxf), which leave the PTX
// unlinkable unless libdevice is found at compile time. These forms lower
// to single PTX instructions with nothing to link.

Value mlir::paged_attn::exp2(ImplicitLocOpBuilder &b, Value v) {
  return LLVM::CallIntrinsicOp::create(
             b, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx.f32"),
             ValueRange{v})
      .getResult(0);
}

Value mlir::paged_attn::fma(ImplicitLocOpBuilder &b, Value a, Value x,
                            Value c) {
  // contract lets the NVPTX backend fuse the pair into fma.rn.f32.
  auto contract = arith::FastMathFlags::contract;
  Value prod = arith::MulFOp::create(b, a, x, contract);
  return arith::AddFOp::create(b, prod, c, contract);
}

Value mlir::paged_attn::maxf(ImplicitLocOpBuilder &b, Value a, Value c) {
  Value gt = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, a, c);
  return arith::SelectOp::create(b, gt, a, c);
}

Value mlir::paged_attn::xorReduce(ImplicitLocOpBuilder &b, Value v,
                                  ArrayRef<int64_t> offsets,
                                  Value (*combine)(ImplicitLocOpBuilder &,
                                                   Value, Value)) {
  for (int64_t off : offsets)
    v = combine(b, v, shuffleXor(b, v, off));
  return v;
}

Value mlir::paged_attn::clusterSum(ImplicitLocOpBuilder &b, Value v,
                                   int64_t stride, int64_t size) {
  return gpu::SubgroupReduceOp::create(
      b, v, gpu::AllReduceOperation::ADD, /*uniform=*/true,
      static_cast<uint32_t>(size), static_cast<uint32_t>(stride));
}

SmallVector<int64_t> mlir::paged_attn::xorOffsets(int64_t first, int64_t end) {
  SmallVector<int64_t> out;
  for (int64_t off = first; off < end; off *= 2)
    out.push_back(off);
  return out;
}

Value mlir::paged_attn::addf(ImplicitLocOpBuilder &b, Value a, Value c) {
  return arith::AddFOp::create(b, a, c);
}

Value mlir::paged_attn::foldOnlineSoftmax(ImplicitLocOpBuilder &b, Value &m,
                                          Value &l, ArrayRef<Value> logits,
                                          ArrayRef<int64_t> offsets,
                                          SmallVectorImpl<Value> &p) {
  Value mx = logits.front();
  for (Value s : logits.drop_front())
    mx = maxf(b, mx, s);
  mx = xorReduce(b, mx, offsets, maxf);
  Value mNew = maxf(b, m, mx);
  Value alpha = exp2(b, arith::SubFOp::create(b, m, mNew));
  Value sum;
  for (Value s : logits) {
    p.push_back(exp2(b, arith::SubFOp::create(b, s, mNew)));
    if (sum)
      sum = arith::AddFOp::create(b, sum, p.back());
    else
      sum = p.back();
  }
  l = fma(b, l, alpha, sum);
  m = mNew;
  return alpha;
}

std::pair<Value, Value> mlir::paged_attn::sinkState(ImplicitLocOpBuilder &b,
                                                    Value sinks,
                                                    Value hasSinks, Value head,
                                                    double domain) {
  Type f32 = b.getF32Type();
  Value on = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, hasSinks,
                                   arith::ConstantIntOp::create(b, 0, 32));
  auto ifOp = scf::IfOp::create(b, TypeRange{f32, f32}, on,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value sink = memref::LoadOp::create(b, sinks, ValueRange{head});
  if (domain != 1.0)
    sink = arith::MulFOp::create(b, sink, cF32(b, float(domain)));
  scf::YieldOp::create(b, ValueRange{sink, cF32(b, 1.0f)});
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, ValueRange{cF32(b, -FLT_MAX), cF32(b, 0.0f)});
  return {ifOp.getResult(0), ifOp.getResult(1)};
}

static Value isZero(ImplicitLocOpBuilder &b, Value l) {
  return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, cF32(b, 0.0f));
}

Value mlir::paged_attn::normalize(ImplicitLocOpBuilder &b, Value acc, Value l) {
  Value quotient = arith::DivFOp::create(b, acc, l);
  return arith::SelectOp::create(b, isZero(b, l), acc, quotient);
}

Value mlir::paged_attn::normalizer(ImplicitLocOpBuilder &b, Value l) {
  Value inverse = arith::DivFOp::create(b, cF32(b, 1.0f), l);
  return arith::SelectOp::create(b, isZero(b, l), cF32(b, 1.0f), inverse);
}
