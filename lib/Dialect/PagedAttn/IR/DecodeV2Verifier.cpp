//===- DecodeV2Verifier.cpp - the contract of decode_v2 -------------------===//
//
// Every relation the PagedAttention V2 contract implies between decode_v2's
// operands, checked one rule at a time. Each diagnostic names the rule and
// the numbers that break it, so that a graph compiler's user can tell which
// of their tensors is wrong. Dimensions that are dynamic are compared only
// where they must be static (the kernels specialize on them); everything the
// verifier accepts is something the lowering supports.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PagedAttn/IR/Limits.h"
#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

/// A named operand with its shaped type, for diagnostics.
struct Operand {
  StringRef name;
  ShapedType type;
};

std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

bool isFp8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

/// Checks that `a.type` has rank `rank`; `layout` spells the expected shape.
LogicalResult checkRank(Operation *op, Operand a, int64_t rank,
                        StringRef layout) {
  if (a.type.getRank() == rank)
    return success();
  return op->emitOpError() << a.name << " must have rank " << rank << " ("
                           << layout << "), got rank " << a.type.getRank();
}

/// Checks that dim `i` of `a` is static: the kernels specialize on it.
LogicalResult checkStatic(Operation *op, Operand a, unsigned i,
                          StringRef what) {
  if (!a.type.isDynamicDim(i))
    return success();
  return op->emitOpError() << a.name << " dim " << i << " (" << what
                           << ") must be static: the kernels specialize on it";
}

/// Checks that two dims agree where both are known.
LogicalResult checkSameDim(Operation *op, Operand a, unsigned ia, Operand b,
                           unsigned ib, StringRef what) {
  int64_t da = a.type.getDimSize(ia), db = b.type.getDimSize(ib);
  if (ShapedType::isDynamic(da) || ShapedType::isDynamic(db) || da == db)
    return success();
  return op->emitOpError() << a.name << " dim " << ia << " (" << da
                           << ") must equal " << b.name << " dim " << ib << " ("
                           << db << "): both are " << what;
}

//===----------------------------------------------------------------------===//
// Rule groups
//===----------------------------------------------------------------------===//

LogicalResult verifyForms(DecodeV2Op op) {
  // All shaped operands must be tensors, or all memrefs: one form at a time.
  bool anyTensor = false, anyMemRef = false;
  for (Value v : op->getOperands()) {
    anyTensor |= isa<TensorType>(v.getType());
    anyMemRef |= isa<MemRefType>(v.getType());
  }
  if (anyTensor && anyMemRef)
    return op.emitOpError("operands must be all tensors (value form) or all "
                          "memrefs (buffer form), not a mix");
  // Results (tensors only, one per tensor init) are checked by ODS and the
  // destination-style interface before this verifier runs.
  if (static_cast<bool>(op.getExpSums()) !=
          static_cast<bool>(op.getMaxLogits()) ||
      static_cast<bool>(op.getExpSums()) !=
          static_cast<bool>(op.getTmpOutput()))
    return op.emitOpError("workspace must hold exp_sums, max_logits and "
                          "tmp_output together");
  return success();
}

LogicalResult verifyRanks(DecodeV2Op op, Operand q, Operand k, Operand v,
                          Operand bt, Operand sl, Operand out) {
  if (failed(checkRank(op, q, 3, "[num_seqs, num_heads, head_size]")) ||
      failed(checkRank(op, k, 5,
                       "[num_blocks, num_kv_heads, head_size / x, "
                       "block_size, x]")) ||
      failed(checkRank(op, v, 4,
                       "[num_blocks, num_kv_heads, head_size, block_size]")) ||
      failed(checkRank(op, bt, 2, "[num_seqs, max_blocks_per_seq]")) ||
      failed(checkRank(op, sl, 1, "[num_seqs]")) ||
      failed(checkRank(op, out, 3, "[num_seqs, num_heads, head_size]")))
    return failure();
  return success();
}

LogicalResult verifyElementTypes(DecodeV2Op op, Operand q, Operand k,
                                 Operand v, Operand bt, Operand sl,
                                 Operand out) {
  Type qt = q.type.getElementType();
  if (!isa<Float16Type, BFloat16Type, Float32Type>(qt))
    return op.emitOpError("query element type must be f16, bf16 or f32, got ")
           << qt;
  if (out.type.getElementType() != qt)
    return op.emitOpError("output element type (")
           << out.type.getElementType() << ") must equal query's (" << qt
           << ")";
  Type kt = k.type.getElementType();
  if (v.type.getElementType() != kt)
    return op.emitOpError("value_cache element type (")
           << v.type.getElementType() << ") must equal key_cache's (" << kt
           << ")";
  if (kt != qt && !isFp8(kt))
    return op.emitOpError("key_cache element type (")
           << kt << ") must equal query's (" << qt
           << ") or be fp8 (f8E4M3FN, f8E5M2) with kv_scales";
  bool hasScales = static_cast<bool>(op.getKScale());
  if (isFp8(kt) && !hasScales)
    return op.emitOpError("fp8 caches (")
           << kt << ") need kv_scales(k_scale, v_scale) to dequantize";
  if (!isFp8(kt) && hasScales)
    return op.emitOpError("kv_scales apply only to fp8 caches, got ") << kt;
  if (!bt.type.getElementType().isSignlessInteger(32))
    return op.emitOpError("block_tables element type must be i32, got ")
           << bt.type.getElementType();
  if (!sl.type.getElementType().isSignlessInteger(32))
    return op.emitOpError("seq_lens element type must be i32, got ")
           << sl.type.getElementType();
  return success();
}

LogicalResult verifyStaticDims(DecodeV2Op op, Operand q, Operand k,
                               Operand v) {
  if (failed(checkStatic(op, q, 1, "num_heads")) ||
      failed(checkStatic(op, q, 2, "head_size")) ||
      failed(checkStatic(op, k, 1, "num_kv_heads")) ||
      failed(checkStatic(op, k, 2, "head_size / x")) ||
      failed(checkStatic(op, k, 4, "x")) ||
      failed(checkStatic(op, v, 1, "num_kv_heads")) ||
      failed(checkStatic(op, v, 2, "head_size")))
    return failure();
  return success();
}

LogicalResult verifyShapes(DecodeV2Op op, Operand q, Operand k, Operand v,
                           Operand bt, Operand sl, Operand out) {
  // x packs 16 bytes of one token's key.
  unsigned elemBytes = k.type.getElementTypeBitWidth() / 8;
  int64_t x = k.type.getDimSize(4);
  if (x * elemBytes != kKeyPackBytes)
    return op.emitOpError("key_cache dim 4 (x = ")
           << x << ") must equal 16 bytes / element size ("
           << kKeyPackBytes / elemBytes << " for " << k.type.getElementType()
           << ")";
  int64_t headSize = q.type.getDimSize(2);
  if (k.type.getDimSize(2) * x != headSize)
    return op.emitOpError("key_cache head_size / x (")
           << k.type.getDimSize(2) << ") * x (" << x << ") = "
           << k.type.getDimSize(2) * x << " must equal head_size ("
           << headSize << ", query dim 2)";
  if (failed(checkSameDim(op, v, 2, q, 2, "head_size")) ||
      failed(checkSameDim(op, k, 1, v, 1, "num_kv_heads")) ||
      failed(checkSameDim(op, k, 3, v, 3, "block_size")) ||
      failed(checkSameDim(op, k, 0, v, 0, "num_blocks")) ||
      failed(checkSameDim(op, sl, 0, bt, 0, "num_seqs")))
    return failure();
  // One query token per sequence unless query_start_loc splits the rows
  // (verifyQueryStartLoc).
  if (!op.getQueryStartLoc() &&
      (failed(checkSameDim(op, bt, 0, q, 0, "num_seqs")) ||
       failed(checkSameDim(op, sl, 0, q, 0, "num_seqs"))))
    return failure();
  for (unsigned i = 0; i < 3; ++i)
    if (!out.type.isDynamicDim(i) && !q.type.isDynamicDim(i) &&
        out.type.getDimSize(i) != q.type.getDimSize(i))
      return op.emitOpError("output shape [")
             << llvm::join(llvm::map_range(out.type.getShape(), dimStr), ", ")
             << "] must equal query shape ["
             << llvm::join(llvm::map_range(q.type.getShape(), dimStr), ", ")
             << "]";
  int64_t heads = q.type.getDimSize(1), kvHeads = k.type.getDimSize(1);
  if (heads % kvHeads != 0)
    return op.emitOpError("num_heads (")
           << heads << ") must be a multiple of num_kv_heads (" << kvHeads
           << ")";
  return success();
}

LogicalResult verifySupported(DecodeV2Op op, Operand q, Operand k) {
  int64_t headSize = q.type.getDimSize(2);
  if (!contains(kSupportedHeadSizes, headSize))
    return op.emitOpError("head_size ")
           << headSize << " is not supported; supported: "
           << llvm::join(llvm::map_range(kSupportedHeadSizes, dimStr), ", ");
  // A dynamic block size is the runtime's to check (a power of two in
  // [8, 128]); the kernels take it at run time either way.
  int64_t blockSize = k.type.getDimSize(3);
  if (!ShapedType::isDynamic(blockSize) &&
      !contains(kSupportedBlockSizes, blockSize))
    return op.emitOpError("block_size ")
           << blockSize << " is not supported; supported: "
           << llvm::join(llvm::map_range(kSupportedBlockSizes, dimStr), ", ");
  int64_t part = op.getPartitionSize();
  if (part < kMinPartitionSize || part > kMaxPartitionSize ||
      !llvm::isPowerOf2_64(part))
    return op.emitOpError("partition_size ")
           << part << " must be a power of two in [" << kMinPartitionSize
           << ", " << kMaxPartitionSize << "]";
  float scale = op.getScale().convertToFloat();
  if (!std::isfinite(scale) || !(scale > 0.0f))
    return op.emitOpError("scale (") << scale << ") must be finite and positive";
  if (std::optional<uint64_t> w = op.getSlidingWindow();
      w && (int64_t(*w) < 1 || int64_t(*w) > INT32_MAX))
    return op.emitOpError("sliding_window (")
           << int64_t(*w) << ") must be in [1, 2^31 - 1] tokens";
  if (std::optional<APFloat> cap = op.getLogitsSoftCap()) {
    float c = cap->convertToFloat();
    if (!std::isfinite(c) || !(c > 0.0f))
      return op.emitOpError("logits_soft_cap (")
             << c << ") must be finite and positive";
  }
  return success();
}

/// A per-head f32 vector operand (alibi_slopes, sinks): rank 1, f32,
/// [num_heads].
LogicalResult verifyPerHead(DecodeV2Op op, Operand q, StringRef name,
                            Value value) {
  if (!value)
    return success();
  Operand a{name, cast<ShapedType>(value.getType())};
  if (failed(checkRank(op, a, 1, "[num_heads]")))
    return failure();
  if (!a.type.getElementType().isF32())
    return op.emitOpError() << name << " element type must be f32, got "
                            << a.type.getElementType();
  return checkSameDim(op, a, 0, q, 1, "num_heads");
}

/// Several query tokens per sequence: query_start_loc is i32
/// [num_seqs + 1] and comes with max_query_len, in [1, kMaxQueryLen] when
/// it is a constant.
LogicalResult verifyQueryStartLoc(DecodeV2Op op, Operand bt) {
  Value qsl = op.getQueryStartLoc();
  if (static_cast<bool>(qsl) != static_cast<bool>(op.getMaxQueryLen()))
    return op.emitOpError("query_start_loc and max_query_len come together");
  if (!qsl)
    return success();
  Operand a{"query_start_loc", cast<ShapedType>(qsl.getType())};
  if (failed(checkRank(op, a, 1, "[num_seqs + 1]")))
    return failure();
  if (!a.type.getElementType().isSignlessInteger(32))
    return op.emitOpError("query_start_loc element type must be i32, got ")
           << a.type.getElementType();
  int64_t n = a.type.getDimSize(0), seqs = bt.type.getDimSize(0);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(seqs) &&
      n != seqs + 1)
    return op.emitOpError("query_start_loc dim 0 (")
           << n << ") must be num_seqs + 1 (block_tables dim 0 + 1 = "
           << seqs + 1 << ")";
  if (std::optional<int64_t> len = getConstantIntValue(op.getMaxQueryLen());
      len && (*len < 1 || *len > kMaxQueryLen))
    return op.emitOpError("max_query_len (")
           << *len << ") must be in [1, " << kMaxQueryLen << "]";
  return success();
}

LogicalResult verifyWorkspace(DecodeV2Op op, Operand q) {
  if (!op.hasWorkspace())
    return success();
  Operand es{"exp_sums", cast<ShapedType>(op.getExpSums().getType())};
  Operand ml{"max_logits", cast<ShapedType>(op.getMaxLogits().getType())};
  Operand tmp{"tmp_output", cast<ShapedType>(op.getTmpOutput().getType())};
  StringRef statsLayout = "[num_seqs, num_heads, max_num_partitions]";
  if (failed(checkRank(op, es, 3, statsLayout)) ||
      failed(checkRank(op, ml, 3, statsLayout)) ||
      failed(checkRank(op, tmp, 4,
                       "[num_seqs, num_heads, max_num_partitions, "
                       "head_size]")))
    return failure();
  for (Operand w : {es, ml})
    if (!w.type.getElementType().isF32())
      return op.emitOpError() << w.name << " element type must be f32, got "
                              << w.type.getElementType();
  Type tt = tmp.type.getElementType();
  if (!tt.isF32() && tt != q.type.getElementType())
    return op.emitOpError("tmp_output element type must be f32 or query's (")
           << q.type.getElementType() << "), got " << tt;
  for (Operand w : {es, ml, tmp})
    if (failed(checkSameDim(op, w, 0, q, 0, "query rows")) ||
        failed(checkSameDim(op, w, 1, q, 1, "num_heads")))
      return failure();
  if (failed(checkSameDim(op, ml, 2, es, 2, "max_num_partitions")) ||
      failed(checkSameDim(op, tmp, 2, es, 2, "max_num_partitions")) ||
      failed(checkSameDim(op, tmp, 3, q, 2, "head_size")))
    return failure();
  return success();
}

} // namespace

LogicalResult DecodeV2Op::verify() {
  Operand q{"query", getQueryType()};
  Operand k{"key_cache", getKeyCacheType()};
  Operand v{"value_cache", getValueCacheType()};
  Operand bt{"block_tables", cast<ShapedType>(getBlockTables().getType())};
  Operand sl{"seq_lens", cast<ShapedType>(getSeqLens().getType())};
  Operand out{"output", cast<ShapedType>(getOutput().getType())};
  if (failed(verifyForms(*this)) ||
      failed(verifyRanks(*this, q, k, v, bt, sl, out)) ||
      failed(verifyElementTypes(*this, q, k, v, bt, sl, out)) ||
      failed(verifyStaticDims(*this, q, k, v)) ||
      failed(verifyShapes(*this, q, k, v, bt, sl, out)) ||
      failed(verifySupported(*this, q, k)) ||
      failed(verifyPerHead(*this, q, "alibi_slopes", getAlibiSlopes())) ||
      failed(verifyPerHead(*this, q, "sinks", getSinks())) ||
      failed(verifyQueryStartLoc(*this, bt)) ||
      failed(verifyWorkspace(*this, q)))
    return failure();
  return success();
}
