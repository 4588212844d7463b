//===- launch.cpp - the decode entries: plan, marshal, launch -------------===//
//
// pa_decode_v2 plans on the host (planDecode: every check before any launch),
// packs each kernel's parameters in the order its manifest states, and
// launches the partition and reduce kernels (or the one-pass kernel, or the
// cluster kernel in its place) on the caller's stream. It allocates no
// device memory, never synchronises and never reads device memory, so it can
// be captured in a CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

namespace pa {

/// The value of kernel parameter `id` for this call. One case per ParamId,
/// a table kept as one switch so that -Wswitch names a parameter the table
/// misses.
static KernelArgs::Value paramValue(ParamId id, const pa_decode_args &args,
                                    const DecodePlan &plan,
                                    CUdeviceptr errorWord) {
  KernelArgs::Value v;
  v.ptr = 0;
  switch (id) {
  case ParamId::Query:
    v.ptr = args.query;
    break;
  case ParamId::KeyCache:
    v.ptr = args.key_cache;
    break;
  case ParamId::ValueCache:
    v.ptr = args.value_cache;
    break;
  case ParamId::BlockTables:
    v.ptr = args.block_tables;
    break;
  case ParamId::SeqLens:
    v.ptr = args.seq_lens;
    break;
  case ParamId::Output:
    v.ptr = args.output;
    break;
  case ParamId::ExpSums:
    v.ptr = args.exp_sums;
    break;
  case ParamId::MaxLogits:
    v.ptr = args.max_logits;
    break;
  case ParamId::TmpOutput:
    v.ptr = args.tmp_output;
    break;
  case ParamId::Scale:
    v.f32 = args.scale;
    break;
  case ParamId::NumSeqs:
    v.i32 = args.num_seqs;
    break;
  case ParamId::NumHeads:
    v.i32 = args.num_heads;
    break;
  case ParamId::NumKvHeads:
    v.i32 = args.num_kv_heads;
    break;
  case ParamId::GroupSize:
    v.i32 = plan.groupSize;
    break;
  case ParamId::HeadSize:
    v.i32 = args.head_size;
    break;
  case ParamId::BlockSize:
    v.i32 = args.block_size;
    break;
  case ParamId::NumBlocks:
    v.i32 = args.num_blocks;
    break;
  case ParamId::MaxBlocksPerSeq:
    v.i32 = args.max_blocks_per_seq;
    break;
  case ParamId::MaxNumPartitions:
    v.i32 = args.max_num_partitions;
    break;
  case ParamId::PartitionTokens:
    v.i32 = plan.partitionTokens;
    break;
  case ParamId::PartitionSplit:
    v.i32 = plan.partitionSplit;
    break;
  case ParamId::NumPartitions:
    v.i32 = plan.numPartitions;
    break;
  case ParamId::MaxSeqLen:
    v.i32 = args.max_seq_len;
    break;
  case ParamId::AlibiSlopes:
    // Never read without ALiBi; a valid address keeps the kernel's view
    // well-defined either way.
    v.ptr = args.alibi_slopes ? args.alibi_slopes : args.exp_sums;
    break;
  case ParamId::HasAlibi:
    v.i32 = args.alibi_slopes != 0;
    break;
  case ParamId::SlidingWindow:
    v.i32 = args.sliding_window;
    break;
  case ParamId::LogitsSoftCap:
    v.f32 = args.logits_soft_cap;
    break;
  // fp8 scales. A cache of the dtype (AUTO) is not scaled: 1, whatever
  // the unset (0) fields hold. A scale read from the device is passed
  // as given (the kernel ignores it).
  case ParamId::KScale:
    v.f32 = args.kv_cache_dtype == PA_KV_CACHE_AUTO ? 1.0f : args.k_scale;
    break;
  case ParamId::VScale:
    v.f32 = args.kv_cache_dtype == PA_KV_CACHE_AUTO ? 1.0f : args.v_scale;
    break;
  case ParamId::KScalePtr:
    v.ptr = args.k_scale_ptr; // 0 when unused: never read
    break;
  case ParamId::VScalePtr:
    v.ptr = args.v_scale_ptr;
    break;
  case ParamId::ScalesOnDevice:
    v.i32 = (args.k_scale_ptr != 0 ? 1 : 0) | (args.v_scale_ptr != 0 ? 2 : 0);
    break;
  case ParamId::Sinks:
    // Never read without sinks (has_sinks 0), as alibi_slopes above.
    v.ptr = args.sinks ? args.sinks : args.exp_sums;
    break;
  case ParamId::HasSinks:
    v.i32 = args.sinks != 0;
    break;
  case ParamId::QueryStartLoc:
    // Never read with one token per sequence (max_query_len 0).
    v.ptr = args.query_start_loc ? args.query_start_loc : args.seq_lens;
    break;
  case ParamId::MaxQueryLen:
    v.i32 = args.query_start_loc ? args.max_query_len : 0;
    break;
  case ParamId::ErrorWord:
    v.ptr = errorWord; // the context's (docs/runtime.md, "Bad block tables")
    break;
  case ParamId::TmpF32:
    v.i32 = args.tmp_dtype == PA_F32;
    break;
  }
  return v;
}

void marshalParams(const KernelDesc &kernel, const pa_decode_args &args,
                   const DecodePlan &plan, KernelArgs &out,
                   CUdeviceptr errorWord) {
  out.count = int(kernel.params.size());
  for (int i = 0; i < out.count; ++i) {
    out.values[i] = paramValue(kernel.params[i], args, plan, errorWord);
    // cuLaunchKernel reads each parameter's size from the kernel: point at
    // the union, whose first bytes hold the value for every kind.
    out.pointers[i] = &out.values[i];
  }
}

/// Launches one kernel of `variant` with the plan's geometry.
static pa_status launchKernel(const pa_context &ctx, int variantIndex,
                              Role role, const unsigned grid[3],
                              const unsigned block[3],
                              const pa_decode_args &args,
                              const DecodePlan &plan, CUstream stream) {
  const BundleDesc &variant = ctx.variants[variantIndex];
  const KernelDesc &kernel = variant.kernel(role);
  KernelArgs params;
  marshalParams(kernel, args, plan, params, ctx.errorWord);
  PA_CUDA_RETURN_IF_ERROR(
      ctx.api,
      ctx.api.cuLaunchKernel(ctx.modules[variantIndex]->module.functions[int(role)],
                             grid[0], grid[1], grid[2], block[0], block[1],
                             block[2], /*sharedMemBytes=*/0, stream,
                             params.pointers, /*extra=*/nullptr),
      "cuLaunchKernel of %s kernel '%s' (variant '%s', grid [%u, %u, %u], "
      "block [%u, %u, %u])",
      roleName(role), kernel.symbol.c_str(), variant.name.c_str(), grid[0],
      grid[1], grid[2], block[0], block[1], block[2]);
  return okStatus();
}

static pa_status launchPlan(const pa_context &ctx, const pa_decode_args &args,
                            const DecodePlan &plan, CUstream stream) {
  // The cluster kernel takes the one-pass kernel's parameters (checked at
  // load) and is marshalled alike, from its own params record; its cluster
  // dimensions are compiled in, so a plain launch of whole clusters runs it.
  if (plan.onePass)
    return launchKernel(ctx, plan.variant,
                        plan.clusterSize > 0 ? Role::Cluster : Role::OnePass,
                        plan.grid, plan.block, args, plan, stream);
  PA_RETURN_IF_ERROR(launchKernel(ctx, plan.variant, Role::Partition, plan.grid,
                                  plan.block, args, plan, stream));
  return launchKernel(ctx, plan.variant, Role::Reduce, plan.reduceGrid,
                      plan.reduceBlock, args, plan, stream);
}

/// The context's lazy loading as planDecode sees it: loads on the calling
/// thread, refusing (with `checkCapture`) while `stream` captures a graph.
class ContextLoader final : public ModuleLoader {
public:
  ContextLoader(const pa_context &ctx, CUstream stream, bool checkCapture)
      : ctx(ctx), stream(stream), checkCapture(checkCapture) {}
  pa_status ensure(int variant) const override {
    return loadModuleOnce(ctx, variant, stream, checkCapture);
  }

private:
  const pa_context &ctx;
  CUstream stream;
  bool checkCapture;
};

} // namespace pa

using namespace pa;

PA_EXPORT pa_status pa_decode_v2(pa_context *ctx, const pa_decode_args *args,
                                 CUstream stream) {
  if (!ctx)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  if (!args)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "args is null");
  DecodePlan plan;
  ContextLoader loader(*ctx, stream, /*checkCapture=*/true);
  PA_RETURN_IF_ERROR(planDecode(ctx->info, ctx->variants, *args,
                                /*checkPointers=*/true, plan, &ctx->index,
                                &loader));
  if (!ctx->api.library)
    return makeStatus(PA_ERROR_CUDA,
                      "this context has no CUDA driver (a host-only context "
                      "plans and checks but cannot launch)");
  // The kernels belong to this context's primary context; make it current
  // for the launches whatever the calling thread has current.
  PA_CUDA_RETURN_IF_ERROR(ctx->api, ctx->api.cuCtxPushCurrent(ctx->primary),
                          "cuCtxPushCurrent (device %d)", ctx->info.ordinal);
  pa_status status = launchPlan(*ctx, *args, plan, stream);
  CUcontext popped = nullptr;
  CUresult pop = ctx->api.cuCtxPopCurrent(&popped);
  if (isOk(status) && pop != CUDA_SUCCESS)
    return cudaStatus(ctx->api, pop, "cuCtxPopCurrent (device %d)",
                      ctx->info.ordinal);
  return status;
}

PA_EXPORT pa_status pa_plan_decode_v2(const pa_context *ctx,
                                      const pa_decode_args *args,
                                      pa_plan *plan) {
  if (!ctx)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "ctx is null");
  if (!args)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "args is null");
  if (!plan)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT, "plan is null");
  DecodePlan decided;
  ContextLoader loader(*ctx, nullptr, /*checkCapture=*/false);
  PA_RETURN_IF_ERROR(planDecode(ctx->info, ctx->variants, *args,
                                /*checkPointers=*/false, decided, &ctx->index,
                                &loader));
  exportPlan(decided, ctx->variants[decided.variant], *plan);
  return okStatus();
}

PA_EXPORT size_t pa_workspace_bytes(int32_t num_seqs, int32_t num_heads,
                                    int32_t head_size, int32_t max_seq_len,
                                    int32_t partition_size,
                                    pa_dtype tmp_dtype) {
  if (num_seqs <= 0 || num_heads <= 0 || head_size <= 0 || max_seq_len <= 0 ||
      partition_size <= 0 || !dtypeName(rawEnum(tmp_dtype)))
    return 0;
  size_t partitions = (size_t(max_seq_len) + size_t(partition_size) - 1) /
                      size_t(partition_size);
  size_t rows = 0, stats = 0, tmp = 0, total = 0;
  if (__builtin_mul_overflow(size_t(num_seqs) * size_t(num_heads), partitions,
                             &rows) ||
      __builtin_mul_overflow(rows, 2 * sizeof(float), &stats) ||
      __builtin_mul_overflow(rows, size_t(head_size) * dtypeBytes(tmp_dtype),
                             &tmp) ||
      __builtin_add_overflow(stats, tmp, &total))
    return 0;
  return total;
}
