//===- HostLaunch.cpp - decode_v2 to gpu.launch_func ----------------------===//
//
// The host phase of the conversion: DecodeV2Lowering replaces a memref-form
// decode_v2 with the launches of its variant's kernels, creating the
// variant's gpu.module on first use. The launches take flattened (1-D)
// views of the operands, so the kernels see bare pointers and the runtime
// can launch the very same PTX.
//
//   %q = memref.collapse_shape %query [[0, 1, 2]] : ... into memref<?xf16>
//   ...
//   %parts = arith.ceildivui %max_seq_len, %c512     // or dim 2 of exp_sums
//   scf.if (%parts == 1) {
//     gpu.launch_func @pa_..::@pa_.._onepass blocks in (1*slots, kvh*tiles, seqs) ...
//   } else {
//     gpu.launch_func @pa_..::@pa_.._partition blocks in (%parts*slots, kvh*tiles, seqs) ...
//     gpu.launch_func @pa_..::@pa_.._reduce blocks in (ceil(heads/4)*slots, seqs) ...
//   }
//
// slots = max_query_len with query_start_loc (several query tokens per
// sequence), else 1; the tensor-core kernels, whose tile packs P =
// max(heads_per_program / group, 1) tokens' heads, launch ceil(slots / P)
// packs per partition instead.
//
//===----------------------------------------------------------------------===//

#include "HostRuntimeCall.h"
#include "KernelBuilders.h"
#include "KernelPlan.h"

#include "PagedAttn/Conversion/PagedAttnToGPU/PagedAttnToGPU.h"
#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

/// The gpu.module of `plan`'s variant, created with its kernels (partition,
/// one-pass, reduce, and with a cluster size the cluster kernel) on first
/// use. The module carries the variant key for the export step.
gpu::GPUModuleOp getOrCreateVariantModule(RewriterBase &rewriter,
                                          ModuleOp top,
                                          const KernelPlan &plan,
                                          Location loc) {
  std::string name = plan.name();
  if (auto existing = top.lookupSymbol<gpu::GPUModuleOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(top.getBody());
  auto mod = gpu::GPUModuleOp::create(rewriter, loc, name);
  Builder &b = rewriter;
  // The variant key travels on the top module too: gpu-module-to-binary
  // replaces the gpu.module and drops its attributes, and the export step
  // needs the key beside the PTX.
  DictionaryAttr key =
               b.getDictionaryAttr({
                   b.getNamedAttr("dtype", TypeAttr::get(plan.elemType)),
                   b.getNamedAttr("cache_dtype", TypeAttr::get(plan.cacheType)),
                   b.getNamedAttr("head_size",
                                  b.getI64IntegerAttr(plan.headSize)),
                   b.getNamedAttr("heads_per_program",
                                  b.getI64IntegerAttr(plan.headsPerProgram)),
                   b.getNamedAttr("warps", b.getI64IntegerAttr(plan.warps)),
                   b.getNamedAttr("ext_logits", b.getBoolAttr(plan.extLogits)),
                   b.getNamedAttr("token_step",
                                  b.getI64IntegerAttr(plan.tokenStep)),
                   b.getNamedAttr("shared_bytes",
                                  b.getI64IntegerAttr(4 * plan.sharedFloats())),
                   b.getNamedAttr("reduce_grid_x",
                                  b.getStringAttr(reduceGridX())),
                   b.getNamedAttr("query_packs",
                                  b.getStringAttr(queryPacks(plan.packsTokens()))),
                   b.getNamedAttr("reduce_threads",
                                  b.getI64IntegerAttr(kReduceWarps * 32)),
                   b.getNamedAttr("reduce_shared_bytes",
                                  b.getI64IntegerAttr(
                                      4 * reduceSharedFloats(plan.headSize))),
               });
  // A variant with a cluster kernel says its size (the manifest's
  // cluster_size).
  if (plan.clusterSize)
    key = DictionaryAttr::get(
        b.getContext(),
        llvm::to_vector(llvm::concat<const NamedAttribute>(
            key.getValue(),
            ArrayRef<NamedAttribute>{b.getNamedAttr(
                "cluster_size", b.getI64IntegerAttr(plan.clusterSize))})));
  mod->setAttr("paged_attn.variant", key);
  NamedAttrList variants;
  if (auto existing = top->getAttrOfType<DictionaryAttr>(kVariantAttrName))
    variants.append(existing.getValue());
  variants.set(name, key);
  top->setAttr(kVariantAttrName, variants.getDictionary(b.getContext()));
  rewriter.setInsertionPointToStart(mod.getBody());
  buildPartitionKernel(rewriter, loc, plan, KernelRole::Partition);
  buildPartitionKernel(rewriter, loc, plan, KernelRole::OnePass);
  if (plan.clusterSize)
    buildPartitionKernel(rewriter, loc, plan, KernelRole::Cluster);
  buildReduceKernel(rewriter, loc, plan);
  return mod;
}

/// The flat kernel-parameter view (flatMemRefType) of a contiguous memref:
/// the same base pointer, as the runtime passes it.
Value flatten(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  auto flatType = flatMemRefType(type.getElementType());
  return memref::ReinterpretCastOp::create(b, loc, flatType, memref,
                                           /*offset=*/0,
                                           /*sizes=*/{kFlatExtent},
                                           /*strides=*/{1});
}

/// tmp_output's flat view as the kernels take it: bytes (they view them as
/// the type `tmp_f32` names). memref has no op that changes the element
/// type of a memref that is not already i8, so the view is retyped by a
/// cast that the host's LLVM lowering folds (with opaque pointers both
/// types lower to the same descriptor, and the launch passes its pointer).
Value tmpBytes(OpBuilder &b, Location loc, Value flatTmp) {
  return UnrealizedConversionCastOp::create(
             b, loc, flatMemRefType(b.getI8Type()), flatTmp)
      .getResult(0);
}

/// The caches' block size as i32: the static dim, or memref.dim of the key
/// cache's (the kernels take it at run time).
Value blockSizeI32(OpBuilder &b, DecodeV2Op op) {
  Location loc = op.getLoc();
  auto type = cast<MemRefType>(op.getKeyCache().getType());
  if (!type.isDynamicDim(3))
    return arith::ConstantIntOp::create(b, loc, type.getDimSize(3), 32);
  Value dim = memref::DimOp::create(b, loc, op.getKeyCache(), 3);
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), dim);
}

/// Launch-time sizes kernelArgValues cannot read off the op's types.
struct LaunchSizes {
  Value maxBlocksPerSeq, maxNumPartitions, numPartitions; // i32
  Value maxQueryLen; // i32: 0 with one query token per sequence
  Value numBlocks;   // i32: key_cache dim 0
  Value errorWord;   // memref<?xi32>: 4 words on the device, zeroed
};

/// Every kernel parameter's value by name (KernelParams.h), created at the
/// rewriter's insertion point; each launch takes the ones its kernel's
/// signature lists. Absent optional buffers get exp_sums as a stand-in that
/// is never read (has_alibi, has_sinks and scales_on_device are 0).
llvm::StringMap<Value> kernelArgValues(RewriterBase &rewriter, DecodeV2Op op,
                                       const LaunchSizes &sizes) {
  Location loc = op.getLoc();
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(rewriter, loc, v, 32);
  };
  auto f32 = [&](float v) -> Value {
    return arith::ConstantOp::create(rewriter, loc,
                                     rewriter.getF32FloatAttr(v));
  };
  llvm::StringMap<Value> values;
  for (auto [name, v] :
       {std::pair<StringRef, Value>{"query", op.getQuery()},
        {"key_cache", op.getKeyCache()},
        {"value_cache", op.getValueCache()},
        {"block_tables", op.getBlockTables()},
        {"seq_lens", op.getSeqLens()},
        {"output", op.getOutput()},
        {"exp_sums", op.getExpSums()},
        {"max_logits", op.getMaxLogits()},
        {"tmp_output", op.getTmpOutput()}})
    values[name] = flatten(rewriter, loc, v);
  values["tmp_output"] = tmpBytes(rewriter, loc, values["tmp_output"]);
  values["tmp_f32"] = i32(
      cast<MemRefType>(op.getTmpOutput().getType()).getElementType().isF32());
  Value standIn = values["exp_sums"];
  auto optional = [&](Value v) {
    return v ? flatten(rewriter, loc, v) : standIn;
  };
  int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
  values["scale"] = arith::ConstantOp::create(rewriter, loc, op.getScaleAttr());
  values["max_blocks_per_seq"] = sizes.maxBlocksPerSeq;
  values["block_size"] = blockSizeI32(rewriter, op);
  values["num_heads"] = i32(heads);
  values["max_num_partitions"] = sizes.maxNumPartitions;
  values["partition_tokens"] = i32(op.getPartitionSize());
  values["partition_split"] = i32(0); // every partition holds partition_size
  values["num_kv_heads"] = i32(kvHeads);
  values["group_size"] = i32(heads / kvHeads);
  values["alibi_slopes"] = optional(op.getAlibiSlopes());
  values["has_alibi"] = i32(op.getAlibiSlopes() ? 1 : 0);
  values["sliding_window"] = i32(op.getSlidingWindow().value_or(0));
  std::optional<APFloat> cap = op.getLogitsSoftCap();
  values["logits_soft_cap"] = f32(cap ? cap->convertToFloat() : 0.0f);
  // fp8 caches: the op's scalar scales, none on the device.
  values["k_scale"] = op.getKScale();
  values["v_scale"] = op.getVScale();
  values["k_scale_ptr"] = standIn;
  values["v_scale_ptr"] = standIn;
  values["scales_on_device"] = i32(0);
  values["num_partitions"] = sizes.numPartitions;
  values["sinks"] = optional(op.getSinks());
  values["has_sinks"] = i32(op.getSinks() ? 1 : 0);
  values["query_start_loc"] =
      op.getQueryStartLoc() ? flatten(rewriter, loc, op.getQueryStartLoc())
                            : values["seq_lens"];
  values["max_query_len"] = sizes.maxQueryLen;
  values["num_blocks"] = sizes.numBlocks;
  values["error_word"] = sizes.errorWord;
  return values;
}

/// `v` programs per query row times the row's packs of `perProgram` query
/// tokens: ceil(max_query_len / perProgram); `v` itself without
/// max_query_len (one token per sequence).
Value timesQueryPacks(OpBuilder &b, Location loc, Value v, Value maxQueryLen,
                      int64_t perProgram) {
  if (!maxQueryLen)
    return v;
  Value packs = maxQueryLen;
  if (perProgram != 1)
    packs = arith::CeilDivUIOp::create(
        b, loc, maxQueryLen, arith::ConstantIndexOp::create(b, loc, perProgram));
  return arith::MulIOp::create(b, loc, v, packs);
}

/// Why `op` cannot be lowered, or success. Shared by the pattern and the
/// pass's pre-check, which reports it as an error.
LogicalResult checkLowerable(DecodeV2Op op,
                             llvm::function_ref<void(const Twine &)> fail) {
  if (!op.hasPureBufferSemantics()) {
    fail("expects the memref form: bufferize first (paged-attn-to-ptx runs "
         "paged-attn-materialize-workspace and one-shot-bufferize)");
    return failure();
  }
  if (!op.hasWorkspace()) {
    fail("needs a workspace (exp_sums, max_logits, tmp_output); "
         "paged-attn-materialize-workspace adds one to the tensor form");
    return failure();
  }
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (type && !type.getLayout().isIdentity()) {
      fail("operands must be contiguous (identity layout), got " +
           llvm::Twine(llvm::formatv("{0}", type).str()));
      return failure();
    }
  }
  return success();
}

/// The launches of one decode_v2 op's kernels, replacing the op: its sizes
/// (constants where the types know them, memref.dim otherwise), the
/// kernels' arguments from the parameter table, and the launch sequence of
/// the file header.
class DecodeLaunch {
public:
  DecodeLaunch(PatternRewriter &rewriter, DecodeV2Op op,
               const KernelPlan &plan, gpu::GPUModuleOp mod)
      : rewriter(rewriter), op(op), plan(plan), mod(mod), loc(op.getLoc()) {}

  void emit() {
    rewriter.setInsertionPoint(op);
    planSizes();
    Value errorWord = allocErrorWord();
    values = kernelArgValues(
        rewriter, op,
        {toI32(maxBlocks), toI32(maxParts), toI32(parts),
         maxQueryLen
             ? toI32(maxQueryLen)
             : arith::ConstantIntOp::create(rewriter, loc, 0, 32).getResult(),
         toI32(dim(op.getKeyCache(), 0)), flatten(rewriter, loc, errorWord)});
    // One partition covers every context: one kernel, no workspace trip.
    if (auto staticParts = getConstantIntValue(parts);
        staticParts && *staticParts == 1) {
      launchPartition(rewriter, KernelRole::OnePass, idx(1));
      freeErrorWord(errorWord);
      rewriter.eraseOp(op);
      return;
    }
    Value single = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ule, parts, idx(1));
    auto ifOp = scf::IfOp::create(rewriter, loc, single,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifOp.thenBlock());
      launchPartition(rewriter, KernelRole::OnePass, idx(1));
      rewriter.setInsertionPointToStart(ifOp.elseBlock());
      launchPartition(rewriter, KernelRole::Partition, parts);
      launchReduce(rewriter);
    }
    freeErrorWord(errorWord);
    rewriter.eraseOp(op);
  }

private:
  /// The kernels' error word (docs/runtime.md, "Bad block tables"): this
  /// path has no runtime to own one, so each call allocates four zeroed
  /// words and frees them after its launches (nothing reads them back).
  Value allocErrorWord() {
    auto type = MemRefType::get({4}, rewriter.getI32Type());
    Value word = gpu::AllocOp::create(rewriter, loc, type,
                                      /*asyncToken=*/Type(), ValueRange{},
                                      ValueRange{}, ValueRange{},
                                      /*hostShared=*/false)
                     .getMemref();
    gpu::MemsetOp::create(rewriter, loc, /*asyncToken=*/Type(), ValueRange{},
                          word,
                          arith::ConstantIntOp::create(rewriter, loc, 0, 32));
    return word;
  }
  void freeErrorWord(Value word) {
    gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(), ValueRange{},
                           word);
  }

  Value idx(int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(rewriter, loc, rewriter.getI32Type(),
                                      index)
        .getResult();
  }
  Value dim(Value memref, int64_t i) {
    auto type = cast<MemRefType>(memref.getType());
    if (!type.isDynamicDim(i))
      return idx(type.getDimSize(i));
    return memref::DimOp::create(rewriter, loc, memref, i);
  }

  void planSizes() {
    heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
    int64_t group = heads / kvHeads;
    tiles = llvm::divideCeil(group, plan.headsPerProgram);
    seqs = dim(op.getSeqLens(), 0);
    // Query slots per sequence (the grid's x is partitions x slots):
    // max_query_len, or 1 with one token per sequence (KernelIdioms.h,
    // QueryRow). The partition kernels' packs of query tokens (queryPacks):
    // the tensor-core tile serves max(heads_per_program / group, 1) tokens.
    maxQueryLen = op.getMaxQueryLen();
    tokensPerProgram =
        plan.packsTokens() ? std::max<int64_t>(1, plan.headsPerProgram / group)
                           : 1;
    maxBlocks = dim(op.getBlockTables(), 1);
    maxParts = dim(op.getExpSums(), 2);
    // Adaptive: partitions for max_seq_len. Fixed grid: every workspace
    // partition, independent of the current lengths.
    parts = op.getMaxSeqLen()
                ? arith::CeilDivUIOp::create(rewriter, loc, op.getMaxSeqLen(),
                                             idx(op.getPartitionSize()))
                      .getResult()
                : maxParts;
  }

  SmallVector<Value> argsOf(KernelRole role) {
    SmallVector<Value> args;
    for (const KernelParam &p :
         kernelParams(role, plan.extLogits, plan.fp8Cache())) {
      assert(values.lookup(p.name) && "every kernel parameter has a value");
      args.push_back(values.lookup(p.name));
    }
    return args;
  }

  void launchPartition(OpBuilder &b, KernelRole role, Value gridX) {
    std::string name = plan.name() + "_" + roleName(role);
    gpu::LaunchFuncOp::create(
        b, loc, mod.lookupSymbol<gpu::GPUFuncOp>(name),
        gpu::KernelDim3{
            timesQueryPacks(b, loc, gridX, maxQueryLen, tokensPerProgram),
            idx(kvHeads * tiles), seqs},
        gpu::KernelDim3{idx(plan.threads()), idx(1), idx(1)},
        /*dynamicSharedMemorySize=*/Value(), argsOf(role));
  }

  void launchReduce(OpBuilder &b) {
    // Heads per reduce program: ceil(4 / ceil(parts / 8)), as the kernel
    // derives it from the same count (KernelBuilders.h).
    Value perProgram = arith::CeilDivUIOp::create(
        b, loc, idx(kReduceWarps),
        arith::CeilDivUIOp::create(b, loc, parts,
                                   idx(kReducePartitionsPerWarp)));
    Value gridX = arith::CeilDivUIOp::create(b, loc, idx(heads), perProgram);
    gpu::LaunchFuncOp::create(
        b, loc, mod.lookupSymbol<gpu::GPUFuncOp>(plan.name() + "_reduce"),
        gpu::KernelDim3{timesQueryPacks(b, loc, gridX, maxQueryLen, 1), seqs,
                        idx(1)},
        gpu::KernelDim3{idx(kReduceWarps * 32), idx(1), idx(1)},
        /*dynamicSharedMemorySize=*/Value(), argsOf(KernelRole::Reduce));
  }

  PatternRewriter &rewriter;
  DecodeV2Op op;
  const KernelPlan &plan;
  gpu::GPUModuleOp mod;
  Location loc;
  int64_t heads = 0, kvHeads = 0, tiles = 0, tokensPerProgram = 1;
  Value seqs, maxQueryLen, maxBlocks, maxParts, parts;
  llvm::StringMap<Value> values;
};

/// DecodeV2Lowering: memref-form decode_v2 -> launches of its variant (or,
/// with host=runtime, its kernels and a runtime call: HostRuntimeCall.cpp).
struct DecodeV2Lowering : public OpRewritePattern<DecodeV2Op> {
  DecodeV2Lowering(MLIRContext *ctx, const PagedAttnToGPUOptions &options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(DecodeV2Op op,
                                PatternRewriter &rewriter) const override {
    std::string why;
    if (failed(checkLowerable(op, [&](const Twine &t) { why = t.str(); })))
      return rewriter.notifyMatchFailure(op, why);
    FailureOr<KernelPlan> plan = planKernel(op, options);
    if (failed(plan))
      return failure();
    auto top = op->getParentOfType<ModuleOp>();
    gpu::GPUModuleOp mod =
        getOrCreateVariantModule(rewriter, top, *plan, op.getLoc());
    // host=runtime: the kernels are built (for export), the host side calls
    // the runtime, which plans the launch itself.
    if (options.host == "runtime")
      return lowerDecodeV2ToRuntimeCall(rewriter, op);
    DecodeLaunch(rewriter, op, *plan, mod).emit();
    return success();
  }

  PagedAttnToGPUOptions options;
};

} // namespace

LogicalResult mlir::paged_attn::checkDecodeV2Lowerable(DecodeV2Op op) {
  return checkLowerable(op, [&](const Twine &why) { op.emitOpError(why); });
}

void mlir::paged_attn::populatePagedAttnToGPUPatterns(
    RewritePatternSet &patterns, const PagedAttnToGPUOptions &options) {
  patterns.add<DecodeV2Lowering>(patterns.getContext(), options);
}

void mlir::paged_attn::configurePagedAttnToGPULegality(
    ConversionTarget &target) {
  target.addIllegalDialect<PagedAttnDialect>();
  target.addLegalDialect<arith::ArithDialect, gpu::GPUDialect,
                         memref::MemRefDialect, scf::SCFDialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
}
