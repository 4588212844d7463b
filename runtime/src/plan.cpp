//===- plan.cpp - the partition rule and the launch grids -----------------===//
//
// The one place that decides how a decode call is split: pa_plan_decode_v2
// reports exactly what pa_decode_v2 launches because both call planDecode.
// The rule itself (planPartitions) is described in docs/runtime.md:
//
//   fixed-grid (max_seq_len == 0): partition_tokens T = max(partition_size,
//     roundup(ceil(capacity / max_num_partitions), token_step)); P = the
//     adaptive count at max_seq_len = capacity, at most ceil(capacity / T),
//     partitions are launched and the kernels split each sequence over them
//     (partition_split = P; bundles without it: every workspace partition)
//   adaptive: among the partition counts p whose partitions hold at least
//     64 tokens per warp and at most 2048 tokens (and at most
//     max_num_partitions of them), the one
//     with the least modelled time: waves(P * p / slots) * (tokens + 16 *
//     warps), where P is the partition programs per partition, slots the
//     programs the GPU holds at once (resident programs per SM, from the
//     driver, times the SM count), tokens = roundup(ceil(max_seq_len / p),
//     token_step * warps), and waves(n) = 1 below one wave, else
//     floor(n) plus max(frac(n), 0.6) for a partial last wave; among costs
//     within 5 % of the least, the fewest partitions.
//
// One partition runs the one-pass kernel. On a bundle with a cluster kernel
// (planCluster) that kernel runs instead of one pass or of at most
// cluster_size partitions (and their reduce) where the device has
// thread-block clusters (compute capability 9.0 or newer), its grid's x is
// a multiple of cluster_size and it has at most one program per SM.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace pa {

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t roundUp(int64_t a, int64_t m) { return ceilDiv(a, m) * m; }

/// Fewest tokens a partition gets per warp of its program in adaptive mode
/// (256 for 4 warps): below this the reduce and the per-program setup cost
/// more than the parallelism gains.
static constexpr int64_t kMinAdaptiveWarpTokens = 64;

/// The adaptive rule's cost model (docs/runtime.md), fit to the partition
/// study on an H200 (docs/history/performance-journal.md, 2026-12-06): a program costs its
/// tokens plus this many per warp (setup, the cross-warp epilogue, the
/// partials the reduce writes and reads), ...
static constexpr int64_t kProgramOverheadWarpTokens = 16;
/// ... and a partial last wave costs at least this fraction of a full one
/// (its programs run at the speed one program gets, not at the GPU's
/// bandwidth); less than one wave costs a whole one.
static constexpr double kPartialWave = 0.6;
/// Among costs within this fraction of the least, the fewest partitions win:
/// in the study one wave of programs beat two waves of programs half as long
/// by 3-5 % (no reduce, one ramp), which the wave count alone does not see.
static constexpr double kFewerPartitionsSlack = 0.05;
/// Partitions hold at most this many tokens (unless even the most
/// partitions the workspace allows are longer). The host sees max_seq_len,
/// not how ragged the batch is: in a ragged batch a long partition of the
/// longest sequences runs on while the GPU empties. Measured on the H200
/// (gqa-b64-ragged8192, every count forced): 1 partition of 8192 tokens
/// 9.5 % below the best count, 2 of 4096 7.4 %, 4 of 2048 2.8 %; on uniform
/// batches 2048-token partitions cost 3-5 % against one pass.
static constexpr int64_t kMaxAdaptiveTokens = 2048;

/// A declared wide twin (another kernel: the sm_70 library's SIMT twins of
/// the wmma kernel) runs grids of at most one program per this many SMs.
/// Measured on the H100 through the JIT (docs/history/performance-journal.md, 2026-12-06 E):
/// 8 programs +23 %, 32 +9.5 %, 64 -0.5 %, 128 -4 % to +5 %; near a wave
/// the wmma kernel's two programs per SM do as well or better.
static constexpr int64_t kDeclaredTwinSmsPerProgram = 2;

/// Thread-block clusters, which the cluster kernel needs: compute
/// capability 9.0 (sm_90) and newer.
static constexpr int kMinClusterSmVersion = 90;

static double waves(int64_t programs, int64_t slots) {
  double n = double(programs) / double(slots);
  if (n <= 1.0)
    return 1.0;
  double whole = std::floor(n), frac = n - whole;
  return whole + (frac > 0.0 ? std::max(frac, kPartialWave) : 0.0);
}

/// The adaptive rule's partitions for contexts of at most `maxSeqLen`
/// tokens, at most `maxParts` of them (file comment).
static pa_status adaptivePartitions(const DeviceInfo &device,
                                    const BundleDesc &variant,
                                    int64_t maxSeqLen, int64_t maxParts,
                                    int64_t programsPerPartition,
                                    int64_t &tokens, int64_t &parts) {
  const int64_t unit = variant.tokenStep * variant.warps;
  const int64_t minTokens = roundUp(
      std::max(ceilDiv(maxSeqLen, maxParts), kMinAdaptiveWarpTokens * variant.warps),
      unit);
  const int64_t most = ceilDiv(maxSeqLen, minTokens);
  const int64_t slots = adaptiveSlots(device, variant);
  const int64_t overhead = kProgramOverheadWarpTokens * variant.warps;
  auto cost = [&](int64_t p, int64_t &t) {
    t = roundUp(ceilDiv(maxSeqLen, p), unit);
    if (ceilDiv(maxSeqLen, t) != p)
      return -1.0; // another count's partitions
    if (t > kMaxAdaptiveTokens && p < most)
      return -1.0; // too long for a ragged batch
    return waves(programsPerPartition * p, slots) * double(t + overhead);
  };
  double least = -1.0;
  for (int64_t p = 1, t; p <= most; ++p) {
    double c = cost(p, t);
    if (c >= 0.0 && (least < 0.0 || c < least))
      least = c;
  }
  tokens = parts = 0;
  for (int64_t p = 1, t; p <= most && parts == 0; ++p) {
    double c = cost(p, t);
    if (c >= 0.0 && c <= least * (1.0 + kFewerPartitionsSlack)) {
      tokens = t;
      parts = p;
    }
  }
  if (parts > maxParts)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "max_seq_len (%lld) needs %lld partitions of %lld "
                      "tokens, more than max_num_partitions (%lld)",
                      static_cast<long long>(maxSeqLen),
                      static_cast<long long>(parts),
                      static_cast<long long>(tokens),
                      static_cast<long long>(maxParts));
  return okStatus();
}

/// The fixed grid (max_seq_len == 0): independent of the current lengths,
/// so a captured graph stays valid; partitions past a sequence's end exit
/// at once. partition_tokens T = max(partition_size, roundup(ceil(capacity
/// / max_num_partitions), token_step)). On a bundle whose kernels take
/// partition_split, the grid has the adaptive rule's partition count at
/// the capacity (at most ceil(capacity / T)), and each sequence is split
/// over it on the device (PartitionPlan); else every workspace partition
/// is launched, T tokens each.
static pa_status fixedPartitions(const DeviceInfo &device,
                                 const BundleDesc &variant,
                                 const pa_decode_args &args,
                                 int64_t programsPerPartition, int64_t &tokens,
                                 int64_t &parts, int64_t &split) {
  const int64_t step = variant.tokenStep;
  const int64_t capacity = int64_t(args.max_blocks_per_seq) * args.block_size;
  tokens = std::max<int64_t>(
      args.partition_size,
      roundUp(ceilDiv(capacity, args.max_num_partitions), step));
  parts = args.max_num_partitions;
  split = 0;
  if (tokens % step != 0)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "partition_size (%d) must be a multiple of the token "
                      "step (%lld) of variant '%s' in fixed-grid mode",
                      int(args.partition_size), static_cast<long long>(step),
                      variant.name.c_str());
  if (parts * tokens < capacity)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "max_num_partitions (%d) partitions of %lld tokens "
                      "cover %lld tokens, fewer than max_blocks_per_seq * "
                      "block_size = %lld",
                      int(args.max_num_partitions),
                      static_cast<long long>(tokens),
                      static_cast<long long>(parts * tokens),
                      static_cast<long long>(capacity));
  if (!variant.takes(ParamId::PartitionSplit, Role::Partition) ||
      !variant.takes(ParamId::PartitionSplit, Role::Reduce))
    return okStatus();
  int64_t adaptiveTokens = 0, adaptiveParts = 0;
  if (!isOk(adaptivePartitions(device, variant, capacity, parts,
                               programsPerPartition, adaptiveTokens,
                               adaptiveParts)) ||
      adaptiveParts < 1)
    return okStatus();
  parts = split = std::min(adaptiveParts, ceilDiv(capacity, tokens));
  return okStatus();
}

pa_status planPartitions(const DeviceInfo &device, const BundleDesc &variant,
                         const pa_decode_args &args,
                         int64_t programsPerPartition, PartitionPlan &out) {
  const int64_t step = variant.tokenStep;
  int64_t tokens = 0, parts = 0, split = 0;
  if (args.max_seq_len == 0) {
    PA_RETURN_IF_ERROR(fixedPartitions(device, variant, args,
                                       programsPerPartition, tokens, parts,
                                       split));
  } else {
    PA_RETURN_IF_ERROR(adaptivePartitions(device, variant, args.max_seq_len,
                                          args.max_num_partitions,
                                          programsPerPartition, tokens, parts));
    if (tokens % step != 0)
      return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                        "partition_tokens (%lld) must be a multiple of the "
                        "token step (%lld) of variant '%s'",
                        static_cast<long long>(tokens),
                        static_cast<long long>(step), variant.name.c_str());
  }
  if (tokens > INT32_MAX)
    return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                      "partition_tokens (%lld) does not fit in 32 bits",
                      static_cast<long long>(tokens));
  out.tokens = int32_t(tokens);
  out.parts = int32_t(parts);
  out.split = int32_t(split);
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Grids
//===----------------------------------------------------------------------===//

/// CUDA's grid limits (every architecture since sm_30).
static constexpr int64_t kMaxGrid[3] = {INT32_MAX, 65535, 65535};

static pa_status evalGrid(const BundleDesc &variant, Role role,
                          const GridEnv &env, unsigned grid[3]) {
  static const char *const kDims[3] = {"x", "y", "z"};
  const KernelDesc &kernel = variant.kernel(role);
  for (int d = 0; d < 3; ++d) {
    int64_t value = 0;
    if (!evalGridExpr(kernel.grid[d], env, value))
      return makeStatus(PA_ERROR_BUNDLE,
                        "%s grid %s '%s' of variant '%s' cannot be evaluated "
                        "(division by zero or overflow)",
                        roleName(role), kDims[d], kernel.grid[d].text.c_str(),
                        variant.name.c_str());
    if (value < 1 || value > kMaxGrid[d])
      return makeStatus(PA_ERROR_INVALID_ARGUMENT,
                        "%s grid %s = %s = %lld is outside CUDA's range "
                        "1..%lld (variant '%s')",
                        roleName(role), kDims[d], kernel.grid[d].text.c_str(),
                        static_cast<long long>(value),
                        static_cast<long long>(kMaxGrid[d]),
                        variant.name.c_str());
    grid[d] = unsigned(value);
  }
  return okStatus();
}

pa_status unsupported(const std::vector<BundleDesc> &variants,
                      const VariantKey &key) {
  pa_status status = makeStatus(
      PA_ERROR_UNSUPPORTED,
      "no loaded variant serves dtype %s, cache_dtype %s, tmp_dtype %s, "
      "head_size %d, block_size %d (group size %d)%s%s%s%s; %zu loaded",
      dtypeName(key.dtype), elemTypeName(key.cacheType()),
      dtypeName(key.tmpDtype),
      key.headSize, key.blockSize, key.groupSize,
      key.extLogits ? " with ALiBi / logits soft cap (an _ext variant)" : "",
      key.slidingWindow ? " with a sliding window" : "",
      key.sinks ? " with attention sinks" : "",
      key.queryTokens ? " with several query tokens per sequence" : "",
      variants.size());
  for (size_t i = 0; i < variants.size(); ++i)
    appendMessage(status, "%s%s", i ? ", " : ": ", variants[i].name.c_str());
  return status;
}

/// Makes a `plan` of at most clusterSize partitions on `v` run the cluster
/// kernel instead where it may (file comment): one kernel, no workspace and
/// no reduce, each one-pass program's work spread over clusterSize
/// programs, for grids that leave most SMs idle. The kernel splits each
/// sequence over its cluster on the device, so it serves both modes and
/// has at least the parallelism of the partitions it replaces. At most one
/// program per SM: on the H100 (docs/history/performance-journal.md, P)
/// 8 x 512 at group 4, 256 cluster programs (two per SM), took 21.5 us
/// against 17.4 for the 64 one-pass programs, while 32 and 128 cluster
/// programs gained (1 x 512: 14.2 -> 11.1 us at group 4; 8 x 512 at
/// group 8 15.2 -> 13.9). Else leaves it unchanged.
static void planCluster(const DeviceInfo &device, const BundleDesc &v,
                        const pa_decode_args &args, GridEnv env,
                        DecodePlan &plan) {
  if (!v.hasCluster() || v.clusterSize < 2 ||
      plan.numPartitions > v.clusterSize ||
      device.smVersion < kMinClusterSmVersion)
    return;
  env.set(GridSym::NumPartitions, 1);
  unsigned grid[3];
  if (!isOk(evalGrid(v, Role::Cluster, env, grid)))
    return; // beyond CUDA's limits: the one-pass grid is smaller
  const int64_t programs = int64_t(grid[0]) * grid[1] * grid[2];
  // cuLaunchKernel launches a kernel of compiled-in cluster dimensions
  // only on a grid of whole clusters.
  if (grid[0] % unsigned(v.clusterSize) != 0 || programs > device.smCount)
    return;
  if (!plan.onePass) {
    // One pass over the whole context: the rule's plan of one partition.
    pa_decode_args whole = args;
    whole.max_num_partitions = 1;
    PartitionPlan one;
    if (!isOk(planPartitions(device, v, whole, programs, one)))
      return;
    plan.partitionTokens = one.tokens;
    plan.numPartitions = 1;
    plan.partitionSplit = 0;
    plan.onePass = true;
  }
  plan.clusterSize = v.clusterSize;
  for (int d = 0; d < 3; ++d)
    plan.grid[d] = grid[d];
  plan.block[0] = unsigned(v.kernel(Role::Cluster).threads);
  plan.block[1] = plan.block[2] = 1;
}

/// The plan of `args` on variants[index], from scratch: the partition rule
/// and the grids. `programs` gets the partition kernel's programs (all
/// partitions).
static pa_status planOn(const DeviceInfo &device,
                        const std::vector<BundleDesc> &variants, int index,
                        const pa_decode_args &args, int groupSize,
                        DecodePlan &plan, int64_t &programs) {
  plan = DecodePlan();
  const BundleDesc &v = variants[index];
  GridEnv env;
  env.set(GridSym::NumSeqs, args.num_seqs);
  env.set(GridSym::NumHeads, args.num_heads);
  env.set(GridSym::NumKvHeads, args.num_kv_heads);
  env.set(GridSym::GroupSize, groupSize);
  env.set(GridSym::HeadsPerProgram, v.headsPerProgram);
  env.set(GridSym::MaxNumPartitions, args.max_num_partitions);
  env.set(GridSym::HeadSize, args.head_size);
  env.set(GridSym::BlockSize, args.block_size);
  env.set(GridSym::Warps, v.warps);
  env.set(GridSym::TokenStep, v.tokenStep);
  env.set(GridSym::MaxBlocksPerSeq, args.max_blocks_per_seq);
  env.set(GridSym::QuerySlots, args.query_start_loc ? args.max_query_len : 1);

  // Programs of the partition kernel for one partition: what the adaptive
  // rule multiplies by the partition count to size the grid.
  env.set(GridSym::NumPartitions, 1);
  env.set(GridSym::PartitionTokens,
          int64_t(args.max_blocks_per_seq) * args.block_size);
  unsigned base[3];
  PA_RETURN_IF_ERROR(evalGrid(v, Role::Partition, env, base));
  int64_t programsPerPartition = int64_t(base[0]) * base[1] * base[2];

  PartitionPlan split;
  PA_RETURN_IF_ERROR(
      planPartitions(device, v, args, programsPerPartition, split));
  plan.partitionTokens = split.tokens;
  plan.numPartitions = split.parts;
  plan.partitionSplit = split.split;
  programs = programsPerPartition * plan.numPartitions;
  plan.variant = index;
  plan.groupSize = groupSize;
  plan.onePass = plan.numPartitions == 1 && v.hasOnePass();
  env.set(GridSym::NumPartitions, plan.numPartitions);
  env.set(GridSym::PartitionTokens, plan.partitionTokens);

  Role main = plan.onePass ? Role::OnePass : Role::Partition;
  PA_RETURN_IF_ERROR(evalGrid(v, main, env, plan.grid));
  plan.block[0] = unsigned(v.kernel(main).threads);
  plan.block[1] = plan.block[2] = 1;
  planCluster(device, v, args, env, plan);
  if (!plan.onePass) {
    PA_RETURN_IF_ERROR(evalGrid(v, Role::Reduce, env, plan.reduceGrid));
    plan.reduceBlock[0] = unsigned(v.kernel(Role::Reduce).threads);
    plan.reduceBlock[1] = plan.reduceBlock[2] = 1;
  }
  return okStatus();
}

VariantKey variantKeyOf(const pa_decode_args &args) {
  VariantKey key{args.dtype, args.tmp_dtype, args.head_size,
                 args.block_size, args.num_heads / args.num_kv_heads,
                 args.alibi_slopes != 0 || args.logits_soft_cap > 0.0f,
                 args.sliding_window > 0, callCacheType(args),
                 args.sinks != 0, args.query_start_loc != 0};
  if (args.query_start_loc != 0 && args.max_query_len > 1)
    key.queryLen = args.max_query_len;
  return key;
}

/// The wide twin planDecode may run for `chosen`, or -1, and how many
/// partition programs it may run with at most (`most`). Loads the twin
/// (its occupancy sizes a same-kernel twin's wave).
static pa_status wideTwinFor(const DeviceInfo &device,
                             const std::vector<BundleDesc> &variants,
                             int chosen, int groupSize,
                             const ModuleLoader *loader, int &wide,
                             int64_t &most) {
  wide = variants[chosen].wideTwin;
  most = 0;
  if (wide < 0)
    return okStatus();
  const BundleDesc &twin = variants[wide];
  bool declared = !twin.twinOf.empty();
  if (declared && tilesPerKvHead(groupSize, twin.headsPerProgram) >
                      tilesPerKvHead(groupSize,
                                     variants[chosen].headsPerProgram)) {
    wide = -1;
    return okStatus();
  }
  if (loader)
    PA_RETURN_IF_ERROR(loader->ensure(wide));
  most = declared ? device.smCount / kDeclaredTwinSmsPerProgram
                  : adaptiveSlots(device, twin);
  return okStatus();
}

pa_status planDecode(const DeviceInfo &device,
                     const std::vector<BundleDesc> &variants,
                     const pa_decode_args &args, bool checkPointers,
                     DecodePlan &plan, const VariantIndex *index,
                     const ModuleLoader *loader) {
  plan = DecodePlan();
  PA_RETURN_IF_ERROR(checkDecodeArgs(args));
  if (checkPointers)
    PA_RETURN_IF_ERROR(checkDecodePointers(args, /*needWorkspace=*/false));

  VariantKey key = variantKeyOf(args);
  int chosen = index ? selectVariant(variants, *index, device, key)
                     : selectVariant(variants, device, key);
  if (chosen < 0)
    return unsupported(variants, key);

  // A small grid runs the wide twin (more warps per program): it leaves SMs
  // idle, and more warps per program keep more bytes in flight on the SMs
  // it has. The same kernel with more warps runs grids it holds in one
  // wave; a declared twin (another kernel) grids of at most half as many
  // programs as the GPU has SMs, and no group its tile would read K and V
  // more often for than the bundle's own. Larger grids keep the default
  // width (docs/runtime.md).
  int wide = -1;
  int64_t most = 0;
  PA_RETURN_IF_ERROR(wideTwinFor(device, variants, chosen, key.groupSize,
                                 loader, wide, most));
  int64_t programs = 0;
  if (wide < 0 ||
      !isOk(planOn(device, variants, wide, args, key.groupSize, plan,
                   programs)) ||
      programs > most) {
    if (loader)
      PA_RETURN_IF_ERROR(loader->ensure(chosen));
    PA_RETURN_IF_ERROR(
        planOn(device, variants, chosen, args, key.groupSize, plan, programs));
  }
  if (checkPointers)
    PA_RETURN_IF_ERROR(checkDecodePointers(args, !plan.onePass));
  return okStatus();
}

void exportPlan(const DecodePlan &plan, const BundleDesc &variant,
                pa_plan &out) {
  std::memset(&out, 0, sizeof(out));
  std::snprintf(out.variant, sizeof(out.variant), "%s", variant.name.c_str());
  out.one_pass = plan.onePass ? 1 : 0;
  out.partition_tokens = plan.partitionTokens;
  out.num_partitions = plan.numPartitions;
  out.partition_split = plan.partitionSplit;
  out.cluster_size = plan.clusterSize;
  out.resident_programs = variant.residentPrograms;
  for (int d = 0; d < 3; ++d) {
    out.grid[d] = plan.grid[d];
    out.block[d] = plan.block[d];
    out.reduce_grid[d] = plan.reduceGrid[d];
    out.reduce_block[d] = plan.reduceBlock[d];
  }
}

} // namespace pa
