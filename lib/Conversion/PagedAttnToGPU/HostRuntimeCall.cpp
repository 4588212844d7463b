//===- HostRuntimeCall.cpp - decode_v2 to a pa_host_decode_v2 call --------===//
//
// With host=runtime the host side of a memref-form decode_v2 is one call of
// the runtime's flat entry, whose parameters are HostABI.def's rows (one per
// pa_decode_args field) after the context and stream, then the status. The
// function holding the op receives the context, stream and status as
// arguments (!llvm.ptr, marked paged_attn.host_arg):
//
//   func.func @step(%q: memref<?x32x128xf16>, ..., %ctx: !llvm.ptr
//                   {paged_attn.host_arg = "context"}, %stream: !llvm.ptr
//                   {paged_attn.host_arg = "stream"}, %status: !llvm.ptr
//                   {paged_attn.host_arg = "status"})
//       attributes {llvm.emit_c_interface} {
//     %qi = memref.extract_aligned_pointer_as_index %q : ... -> index
//     %qp = llvm.inttoptr (arith.index_cast %qi : index to i64) : i64 to !llvm.ptr
//     %n  = arith.index_cast (memref.dim %q, 0) : index to i32
//     ...
//     %code = func.call @pa_host_decode_v2(%ctx, %stream, %c0_i32 /*dtype*/,
//         ..., %qp, ..., %status) : (...) -> i32
//
// The tensor form's workspace, which bufferization allocates on the host
// (memref.alloc), is allocated on the device instead: pa_host_alloc on the
// stream before the call, pa_host_free on the stream after it.
//
// The runtime picks the variant and the partition split per call, as for
// any pa_decode_v2 caller; the kernels this pass builds are only exported.
//
//===----------------------------------------------------------------------===//

#include "HostRuntimeCall.h"

#include "PagedAttn/Conversion/PagedAttnToGPU/PagedAttnToGPU.h"
#include "PagedAttn/Dialect/PagedAttn/IR/Limits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

/// pa_runtime.h's enumerators, from the table the runtime checks them
/// against.
enum HostEnum : int32_t {
#define PA_HOST_ENUM(name, value) name = value,
#include "PagedAttn/Conversion/PagedAttnToRuntime/HostABI.def"
};
static_assert(PA_MAX_QUERY_LEN == kMaxQueryLen,
              "the runtime and the verifier bound max_query_len alike");

/// One Value per HostABI.def row, by the row's name.
struct HostCallOperands {
#define PA_HOST_PARAM(name, kind) Value name;
#include "PagedAttn/Conversion/PagedAttnToRuntime/HostABI.def"
};

enum class Kind { I32, F32, PTR };

Type typeOf(MLIRContext *ctx, Kind kind) {
  switch (kind) {
  case Kind::I32:
    return IntegerType::get(ctx, 32);
  case Kind::F32:
    return Float32Type::get(ctx);
  case Kind::PTR:
    return LLVM::LLVMPointerType::get(ctx);
  }
  llvm_unreachable("kind");
}

/// The entry's type: (ctx, stream, rows..., status) -> i32.
FunctionType entryType(MLIRContext *ctx) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> inputs{ptr, ptr};
#define PA_HOST_PARAM(name, kind) inputs.push_back(typeOf(ctx, Kind::kind));
#include "PagedAttn/Conversion/PagedAttnToRuntime/HostABI.def"
  inputs.push_back(ptr);
  return FunctionType::get(ctx, inputs, {IntegerType::get(ctx, 32)});
}

constexpr StringLiteral kHostArgs[] = {"context", "stream", "status"};

/// The argument of `func` marked `role`, or null.
Value hostArg(func::FuncOp func, StringRef role) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto attr = func.getArgAttrOfType<StringAttr>(i, kHostArgAttrName);
        attr && attr.getValue() == role)
      return func.getArgument(i);
  return nullptr;
}

/// pa_dtype of a query / output / tmp_output element type.
int32_t dtypeCode(Type type) {
  if (type.isF16())
    return PA_F16;
  if (type.isBF16())
    return PA_BF16;
  return PA_F32;
}

/// pa_kv_cache_dtype of a cache element type.
int32_t cacheCode(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return PA_KV_CACHE_FP8_E4M3;
  if (isa<Float8E5M2Type>(type))
    return PA_KV_CACHE_FP8_E5M2;
  return PA_KV_CACHE_AUTO;
}

/// The declaration of runtime entry `name` of `type`, created once at the
/// top of the module.
FailureOr<func::FuncOp> getOrDeclare(RewriterBase &rewriter, ModuleOp module,
                                     Location loc, StringRef name,
                                     FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name)) {
    if (existing.getFunctionType() != type)
      return existing.emitOpError()
             << "declares " << name << " as " << existing.getFunctionType()
             << "; the runtime's is " << type;
    return existing;
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto decl = func::FuncOp::create(rewriter, loc, name, type);
  decl.setPrivate();
  return decl;
}

/// A workspace buffer the tensor form's bufferization allocated on the host
/// (memref.alloc used by this op alone): the lowering allocates it on the
/// device through the runtime instead.
memref::AllocOp hostWorkspaceAlloc(DecodeV2Op op, Value memref) {
  auto alloc = memref.getDefiningOp<memref::AllocOp>();
  if (alloc && alloc->hasOneUse() && *alloc->user_begin() == op)
    return alloc;
  return nullptr;
}

/// Every buffer must be device memory: a host allocation other than a
/// workspace the lowering moves to the device would reach the kernels as a
/// host address.
LogicalResult checkHostBuffers(DecodeV2Op op,
                               llvm::function_ref<void(const Twine &)> fail) {
  if (op.getOutput().getDefiningOp<memref::AllocOp>()) {
    fail("with host=runtime writes its output into a buffer allocated on "
         "the host (bufferization could not write in place): pass the "
         "output as a function argument the result may alias");
    return failure();
  }
  for (Value w : {op.getExpSums(), op.getMaxLogits(), op.getTmpOutput()})
    if (w && w.getDefiningOp<memref::AllocOp>() &&
        !hostWorkspaceAlloc(op, w)) {
      fail("with host=runtime needs a workspace used by this op alone (it "
           "is allocated on the device around the call)");
      return failure();
    }
  return success();
}

} // namespace

LogicalResult mlir::paged_attn::prepareRuntimeHostFunctions(ModuleOp module) {
  SetVector<func::FuncOp> funcs;
  WalkResult walk = module.walk([&](DecodeV2Op op) {
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func) {
      op.emitOpError("with host=runtime must be inside a func.func (its "
                     "arguments carry the runtime context and stream)");
      return WalkResult::interrupt();
    }
    if (failed(checkHostBuffers(
            op, [&](const Twine &why) { op.emitOpError(why); })))
      return WalkResult::interrupt();
    funcs.insert(func);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  for (func::FuncOp func : funcs) {
    SmallVector<StringRef> missing;
    for (StringRef role : kHostArgs)
      if (!hostArg(func, role))
        missing.push_back(role);
    if (!missing.empty()) {
      if (std::optional<SymbolTable::UseRange> uses =
              SymbolTable::getSymbolUses(func, module);
          uses && !uses->empty())
        return func.emitOpError()
               << "is called inside the module; host=runtime appends the "
                  "runtime context, stream and status to its arguments, "
                  "which its callers do not pass (give it arguments marked "
               << kHostArgAttrName << " instead)";
      for (StringRef role : missing) {
        unsigned index = func.getNumArguments();
        NamedAttribute mark(StringAttr::get(ctx, kHostArgAttrName),
                            StringAttr::get(ctx, role));
        if (failed(func.insertArgument(index, ptr,
                                       DictionaryAttr::get(ctx, {mark}),
                                       func.getLoc())))
          return failure();
      }
    }
    for (StringRef role : kHostArgs)
      if (hostArg(func, role).getType() != ptr)
        return func.emitOpError() << "argument marked " << kHostArgAttrName
                                  << " = \"" << role << "\" must be " << ptr;
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  UnitAttr::get(ctx));
  }
  return success();
}

namespace {

/// What the rewrite of one decode_v2 builds its IR from.
struct RuntimeCallBuilder {
  RewriterBase &rewriter;
  DecodeV2Op op;
  Location loc;
  Value context, stream, status;
  Type ptrType, i32Type, i64Type;
  DenseMap<Value, Value> devicePointers{}; // host workspace alloc -> device

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(rewriter, loc, v, 32);
  }
  Value f32(float v) {
    return arith::ConstantOp::create(rewriter, loc,
                                     rewriter.getF32FloatAttr(v));
  }
  /// A size as index: static, the size a host workspace allocation was given
  /// (the allocation goes), or memref.dim.
  Value dimIndex(Value memref, int64_t i) {
    auto type = cast<MemRefType>(memref.getType());
    if (!type.isDynamicDim(i))
      return arith::ConstantIndexOp::create(rewriter, loc, type.getDimSize(i));
    if (auto alloc = memref.getDefiningOp<memref::AllocOp>())
      return alloc.getDynamicSizes()[type.getDynamicDimIndex(i)];
    return memref::DimOp::create(rewriter, loc, memref, i);
  }
  Value dimI32(Value memref, int64_t i) {
    auto type = cast<MemRefType>(memref.getType());
    if (!type.isDynamicDim(i))
      return i32(type.getDimSize(i));
    return arith::IndexCastOp::create(rewriter, loc, i32Type,
                                      dimIndex(memref, i));
  }
  /// The device address a memref holds (identity layout: offset 0); null
  /// for an absent operand.
  Value pointer(Value memref) {
    if (!memref)
      return LLVM::ZeroOp::create(rewriter, loc, ptrType);
    if (Value device = devicePointers.lookup(memref))
      return device;
    Value index =
        memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, memref);
    Value i64 = arith::IndexCastOp::create(rewriter, loc, i64Type, index);
    return LLVM::IntToPtrOp::create(rewriter, loc, ptrType, i64);
  }

  /// Host workspace allocations become device memory on the stream:
  ///   %p = func.call @pa_host_alloc(%ctx, %stream, %bytes, %status)
  void allocateOnDevice(ArrayRef<memref::AllocOp> allocs, func::FuncOp entry) {
    for (memref::AllocOp alloc : allocs) {
      MemRefType type = alloc.getType();
      Value bytes = arith::ConstantIndexOp::create(
          rewriter, loc, type.getElementTypeBitWidth() / 8);
      for (int64_t i = 0; i < type.getRank(); ++i)
        bytes = arith::MulIOp::create(rewriter, loc, bytes, dimIndex(alloc, i));
      Value bytes64 = arith::IndexCastOp::create(rewriter, loc, i64Type, bytes);
      devicePointers[alloc] =
          func::CallOp::create(rewriter, loc, entry,
                               ValueRange{context, stream, bytes64, status})
              .getResult(0);
    }
  }

  /// Every HostABI.def row's value for this op.
  HostCallOperands operands();
};

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

HostCallOperands RuntimeCallBuilder::operands() {
  HostCallOperands in;
  in.dtype = i32(dtypeCode(elementTypeOf(op.getQuery())));
  in.tmp_dtype = i32(dtypeCode(elementTypeOf(op.getTmpOutput())));
  in.num_seqs = dimI32(op.getSeqLens(), 0);
  in.num_heads = i32(op.getNumHeads());
  in.num_kv_heads = i32(op.getNumKvHeads());
  in.head_size = i32(op.getHeadSize());
  in.block_size = dimI32(op.getKeyCache(), 3);
  in.num_blocks = dimI32(op.getKeyCache(), 0);
  in.max_blocks_per_seq = dimI32(op.getBlockTables(), 1);
  in.max_num_partitions = dimI32(op.getExpSums(), 2);
  in.partition_size = i32(op.getPartitionSize());
  // Without max_seq_len: 0, the runtime's fixed-grid mode.
  in.max_seq_len = op.getMaxSeqLen()
                       ? Value(arith::IndexCastOp::create(
                             rewriter, loc, i32Type, op.getMaxSeqLen()))
                       : i32(0);
  in.scale = arith::ConstantOp::create(rewriter, loc, op.getScaleAttr());
  in.query = pointer(op.getQuery());
  in.key_cache = pointer(op.getKeyCache());
  in.value_cache = pointer(op.getValueCache());
  in.block_tables = pointer(op.getBlockTables());
  in.seq_lens = pointer(op.getSeqLens());
  in.output = pointer(op.getOutput());
  in.exp_sums = pointer(op.getExpSums());
  in.max_logits = pointer(op.getMaxLogits());
  in.tmp_output = pointer(op.getTmpOutput());
  in.alibi_slopes = pointer(op.getAlibiSlopes());
  in.sliding_window = i32(op.getSlidingWindow().value_or(0));
  in.logits_soft_cap = f32(
      op.getLogitsSoftCap() ? op.getLogitsSoftCap()->convertToFloat() : 0.0f);
  in.kv_cache_dtype = i32(cacheCode(elementTypeOf(op.getKeyCache())));
  // The op's scales are host values; the device-pointer form is for
  // callers that change them under a captured graph.
  in.k_scale = op.getKScale() ? op.getKScale() : f32(0.0f);
  in.v_scale = op.getVScale() ? op.getVScale() : f32(0.0f);
  in.k_scale_ptr = pointer(nullptr);
  in.v_scale_ptr = pointer(nullptr);
  in.sinks = pointer(op.getSinks());
  in.query_start_loc = pointer(op.getQueryStartLoc());
  in.max_query_len = op.getMaxQueryLen()
                         ? Value(arith::IndexCastOp::create(
                               rewriter, loc, i32Type, op.getMaxQueryLen()))
                         : i32(0);
  return in;
}

/// Declares pa_host_alloc and pa_host_free where the op has host workspace
/// allocations to move to the device.
LogicalResult declareWorkspaceEntries(RewriterBase &rewriter, ModuleOp module,
                                      Location loc, func::FuncOp &allocEntry,
                                      func::FuncOp &freeEntry) {
  MLIRContext *mctx = rewriter.getContext();
  Type ptr = LLVM::LLVMPointerType::get(mctx);
  FailureOr<func::FuncOp> a = getOrDeclare(
      rewriter, module, loc, kHostAllocName,
      FunctionType::get(mctx, {ptr, ptr, rewriter.getI64Type(), ptr}, {ptr}));
  FailureOr<func::FuncOp> f = getOrDeclare(
      rewriter, module, loc, kHostFreeName,
      FunctionType::get(mctx, {ptr, ptr, ptr, ptr}, {rewriter.getI32Type()}));
  if (failed(a) || failed(f))
    return failure();
  allocEntry = *a;
  freeEntry = *f;
  return success();
}

} // namespace

LogicalResult
mlir::paged_attn::lowerDecodeV2ToRuntimeCall(RewriterBase &rewriter,
                                              DecodeV2Op op) {
  auto func = op->getParentOfType<func::FuncOp>();
  Value context = func ? hostArg(func, "context") : nullptr;
  Value stream = func ? hostArg(func, "stream") : nullptr;
  Value status = func ? hostArg(func, "status") : nullptr;
  if (!context || !stream || !status)
    return rewriter.notifyMatchFailure(
        op, "its function has no runtime context, stream and status "
            "arguments (prepareRuntimeHostFunctions)");
  auto module = op->getParentOfType<ModuleOp>();
  MLIRContext *mctx = rewriter.getContext();
  FailureOr<func::FuncOp> entry = getOrDeclare(
      rewriter, module, op.getLoc(), kHostEntryName, entryType(mctx));
  if (failed(entry))
    return failure();
  if (failed(checkHostBuffers(op, [](const Twine &) {})))
    return rewriter.notifyMatchFailure(op, "host-allocated buffers");
  SmallVector<memref::AllocOp> hostAllocs;
  for (Value w : {op.getExpSums(), op.getMaxLogits(), op.getTmpOutput()})
    if (memref::AllocOp alloc = hostWorkspaceAlloc(op, w))
      hostAllocs.push_back(alloc);
  func::FuncOp allocEntry, freeEntry;
  if (!hostAllocs.empty() &&
      failed(declareWorkspaceEntries(rewriter, module, op.getLoc(), allocEntry,
                                     freeEntry)))
    return failure();

  rewriter.setInsertionPoint(op);
  RuntimeCallBuilder b{rewriter, op, op.getLoc(), context, stream, status,
                       LLVM::LLVMPointerType::get(mctx), rewriter.getI32Type(),
                       rewriter.getI64Type()};
  b.allocateOnDevice(hostAllocs, allocEntry);
  HostCallOperands in = b.operands();
  SmallVector<Value> operands{context, stream};
#define PA_HOST_PARAM(name, kind) operands.push_back(in.name);
#include "PagedAttn/Conversion/PagedAttnToRuntime/HostABI.def"
  operands.push_back(status);
  // Every row has a value of its kind: a row added to the table without
  // its value here stops the lowering.
  TypeRange expected = entry->getFunctionType().getInputs();
  for (auto [i, v] : llvm::enumerate(operands))
    if (!v || v.getType() != expected[i])
      return op.emitOpError() << "internal: no " << expected[i]
                              << " for parameter " << i << " of "
                              << kHostEntryName;
  func::CallOp::create(rewriter, b.loc, *entry, operands);
  for (memref::AllocOp alloc : hostAllocs)
    func::CallOp::create(
        rewriter, b.loc, freeEntry,
        ValueRange{context, stream, b.devicePointers.lookup(alloc), status});
  rewriter.eraseOp(op);
  for (memref::AllocOp alloc : hostAllocs)
    rewriter.eraseOp(alloc);
  return success();
}
