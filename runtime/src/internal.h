//===- internal.h - the runtime's internal C++ interface --------*- C++ -*-===//
//
// What the C entries are built from, and the seam the host-only tests use:
// the parsed manifest (BundleDesc), grid expressions, variant selection, the
// partition planning rule and the argument checks all work on plain data and
// a DeviceInfo (SM version and count), so they run without a GPU. A context
// made with makeHostContext() has no driver: it plans and checks, loads
// manifests without their PTX, and refuses to launch.
//
//===----------------------------------------------------------------------===//

#ifndef PA_RUNTIME_SRC_INTERNAL_H
#define PA_RUNTIME_SRC_INTERNAL_H

#include "driver.h"
#include "status.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

/// Marks the definitions of the C ABI: the library is built with hidden
/// visibility and exports only these.
#define PA_EXPORT extern "C" __attribute__((visibility("default")))

namespace pa {

//===----------------------------------------------------------------------===//
// Vocabulary
//===----------------------------------------------------------------------===//

/// The int a C or Python caller stored in an enum field of the C ABI. It
/// may be no enumerator, and loading such a value as the C++ enum is
/// undefined (UBSan: "not a valid value for type"): checks read it as this.
template <typename Enum> int rawEnum(const Enum &field) {
  static_assert(sizeof(Enum) == sizeof(int), "a C enum is an int");
  int value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

/// "f16", "bf16", "f32"; nullptr for a value that is no pa_dtype. Names
/// the query/output and tmp types, which are never fp8.
const char *dtypeName(int dtype);
/// Parses a dtype name ("f16", "bf16", "f32"); false when unknown.
bool parseDtype(const std::string &text, pa_dtype &out);

/// The element type of a tensor, the KV caches included: the pa_dtype
/// values and two internal ones for the fp8 caches (never a pa_dtype).
enum ElemType : int {
  kElemF16 = PA_F16,
  kElemBF16 = PA_BF16,
  kElemF32 = PA_F32,
  kElemF8E4M3FN = 16, // OCP FP8 E4M3FN (PA_KV_CACHE_FP8_E4M3)
  kElemF8E5M2 = 17,   // FP8 E5M2 (PA_KV_CACHE_FP8_E5M2)
};
/// "f16", "bf16", "f32", "f8E4M3FN", "f8E5M2" (the MLIR type names a
/// manifest's cache_dtype uses); nullptr for anything else.
const char *elemTypeName(int type);
/// Parses a cache_dtype name (any elemTypeName); false when unknown.
bool parseElemType(const std::string &text, ElemType &out);
inline bool isFp8(int type) {
  return type == kElemF8E4M3FN || type == kElemF8E5M2;
}
/// Bytes of one element: 4 (f32), 2 (f16, bf16), 1 (fp8).
int dtypeBytes(int type);
/// The cache element type of a call: its dtype for PA_KV_CACHE_AUTO, else
/// the fp8 type (the kv_cache_dtype must be valid: checkDecodeArgs).
ElemType callCacheType(const pa_decode_args &args);

/// The kernels of a bundle. Cluster (optional, sm_90 and newer) computes
/// what OnePass computes, with the same parameters, in thread-block
/// clusters of BundleDesc::clusterSize programs.
enum class Role : int { Partition = 0, OnePass = 1, Reduce = 2, Cluster = 3 };
inline constexpr int kNumRoles = 4;
const char *roleName(Role role);

/// Names that may appear in a `params` record, in the kernels' order.
enum class ParamId : uint8_t {
  // 64-bit device pointers.
  Query,
  KeyCache,
  ValueCache,
  BlockTables,
  SeqLens,
  Output,
  ExpSums,
  MaxLogits,
  TmpOutput,
  // f32.
  Scale,
  // i32.
  NumSeqs,
  NumHeads,
  NumKvHeads,
  GroupSize,
  HeadSize,
  BlockSize,
  NumBlocks,
  MaxBlocksPerSeq,
  MaxNumPartitions,
  PartitionTokens,
  PartitionSplit, // i32: 0, or the fixed grid's split (partitionTokensOf)
  NumPartitions,
  MaxSeqLen,
  // Features (docs/bundle-format.md): a bundle that takes them supports them.
  AlibiSlopes,   // pointer
  HasAlibi,      // i32: alibi_slopes != 0
  SlidingWindow, // i32
  LogitsSoftCap, // f32
  // fp8 caches: the scales, their device copies and which of those to read.
  KScale,         // f32
  VScale,         // f32
  KScalePtr,      // pointer (0 when unused)
  VScalePtr,      // pointer (0 when unused)
  ScalesOnDevice, // i32 mask: bit 0 k_scale_ptr, bit 1 v_scale_ptr
  // Attention sinks, taken by the kernels that normalize (one-pass, reduce).
  Sinks,    // pointer (a stand-in when the call has none)
  HasSinks, // i32: sinks != 0
  // Several query tokens per sequence (every kernel).
  QueryStartLoc, // pointer (a stand-in when the call has one token each)
  MaxQueryLen,   // i32: max_query_len, 0 without query_start_loc
  // Bounds: the context's error word (4 x i32 on the device) the kernels
  // record a bad block-table entry or seq_len in (num_blocks above).
  ErrorWord, // pointer
  // tmp_output's element type at run time (partition, reduce): i32, 1 when
  // tmp_dtype is f32, 0 for the dtype (a `tmp_dtype any` bundle).
  TmpF32,
};
inline constexpr int kNumParamIds = int(ParamId::TmpF32) + 1;
/// At most this many parameters per kernel.
inline constexpr int kMaxParams = 32;
const char *paramName(ParamId id);
bool isPointerParam(ParamId id);

/// Names that may appear in a `grid` expression.
enum class GridSym : uint8_t {
  NumSeqs,
  NumHeads,
  NumKvHeads,
  GroupSize,
  HeadsPerProgram,
  NumPartitions,
  MaxNumPartitions,
  PartitionTokens,
  HeadSize,
  BlockSize,
  Warps,
  TokenStep,
  MaxBlocksPerSeq,
  QuerySlots, // max_query_len with query_start_loc, else 1
};
inline constexpr int kNumGridSyms = int(GridSym::QuerySlots) + 1;
const char *gridSymName(GridSym sym);

//===----------------------------------------------------------------------===//
// Grid expressions
//===----------------------------------------------------------------------===//

/// One launch-grid dimension, e.g.
/// `num_kv_heads*ceil(group_size/heads_per_program)`: integers, the GridSym
/// names, + - * / (floor), ceil(a/b) and parentheses, no spaces. Stored in
/// postfix order.
struct GridExpr {
  enum class Op : uint8_t { Const, Sym, Add, Sub, Mul, Div, CeilDiv, Max };
  struct Node {
    Op op;
    int64_t value; // Const: the number; Sym: the GridSym.
  };
  std::vector<Node> nodes;
  std::string text;
};

/// Parses `text`; on error returns false with `error` saying why.
bool parseGridExpr(const std::string &text, GridExpr &out, std::string &error);

/// Values of the GridSym names for one call.
struct GridEnv {
  int64_t values[kNumGridSyms] = {};
  void set(GridSym sym, int64_t v) { values[int(sym)] = v; }
};

/// Evaluates `expr`; false on division by zero or overflow.
bool evalGridExpr(const GridExpr &expr, const GridEnv &env, int64_t &out);

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

struct KernelDesc {
  bool present = false; // a `kernel` record was seen
  bool hasParams = false;
  bool hasGrid = false;
  std::string symbol;
  int threads = 0;
  int smem = 0;
  std::vector<ParamId> params;
  GridExpr grid[3];
};

/// One bundle's manifest, checked: every required record present and
/// consistent. The onepass kernel is optional, and so is the cluster kernel
/// (which needs the onepass kernel, takes exactly its parameters and comes
/// with `cluster_size`).
struct BundleDesc {
  std::string manifestPath;
  std::string name;
  std::string chip;              // "sm_70"
  int chipVersion = 0;           // 70
  bool chipArchSpecific = false; // "sm_90a": runs on exactly that chip
  std::string ptx;               // as written in the manifest
  std::string ptxPath;           // resolved against the manifest's folder
  std::string sassChip;          // `sass CHIP FILE`: the chip, or empty
  std::string sass;              // the FILE as written, or empty
  std::string sassPath;          // resolved like ptxPath, or empty
  pa_dtype dtype = PA_F16;
  ElemType cacheDtype = kElemF16; // dtype, or an fp8 type
  pa_dtype tmpDtype = PA_F32;
  /// "tmp_dtype any": the kernels take tmp_output's type at run time
  /// (tmp_f32) and serve f32 and the dtype; tmpDtype is then unused.
  bool tmpAny = false;
  int headSize = 0;
  /// kAnyBlockSize ("block_size any"): the kernels take block_size at run
  /// time and serve every supported block size; else the one they serve.
  int blockSize = 0;
  int headsPerProgram = 0;
  int warps = 0;
  int tokenStep = 0;
  KernelDesc kernels[kNumRoles];
  /// `cluster_size`: the programs of one thread-block cluster of the cluster
  /// kernel (2..8; its grid's x is a multiple of it), or 0 without one.
  int clusterSize = 0;
  /// Partition programs one SM holds at once on the context's device: the
  /// driver's occupancy of the partition kernel, set when the bundle's
  /// module loads (on first use). 0 where unknown (not loaded yet, or a host
  /// context, which loads nothing).
  /// Written once by loadModuleOnce, under the context's load mutex and
  /// before the module is published, hence mutable.
  mutable int residentPrograms = 0;
  /// The bundle this one is the declared wide twin of (`wide_twin_of`), or
  /// empty. A declared twin serves the same calls as that bundle, possibly
  /// with another kernel and tile; selectVariant never picks it itself.
  std::string twinOf;
  /// The loaded bundle with the most warps per program, more than its own,
  /// that is this kernel with more warps or declares itself this bundle's
  /// twin, or -1 (linkWideTwin): planDecode runs it for small grids (one
  /// wave of it; a declared twin at most one program per two SMs).
  int wideTwin = -1;

  const KernelDesc &kernel(Role role) const { return kernels[int(role)]; }
  bool hasOnePass() const { return kernel(Role::OnePass).present; }
  /// Whether the bundle has the cluster one-pass kernel (then it has the
  /// one-pass kernel too, with the same parameters).
  bool hasCluster() const { return kernel(Role::Cluster).present; }
  /// Whether the partition kernel takes `param`: how a bundle says which
  /// features (ALiBi, sliding window, soft cap) it supports.
  bool takes(ParamId param, Role role = Role::Partition) const {
    const std::vector<ParamId> &p = kernel(role).params;
    return std::find(p.begin(), p.end(), param) != p.end();
  }
  /// Whether the partition and (if present) one-pass kernels take all five
  /// fp8 scale parameters (k_scale ... scales_on_device). The cluster
  /// kernel's parameters are the one-pass kernel's (checked at load), so the
  /// three feature tests below cover it too.
  bool takesFp8Scales() const;
  /// Whether the kernels that normalize the softmax (reduce and, if
  /// present, one-pass) take the attention sinks (sinks, has_sinks).
  bool takesSinks() const;
  /// Whether every kernel takes query_start_loc and max_query_len (several
  /// query tokens per sequence).
  bool takesQueryTokens() const;
};

/// Parses manifest text; `path` names it in messages ("path:line: what").
/// Errors are PA_ERROR_BUNDLE. ptxPath is resolved against path's folder.
pa_status parseManifest(const std::string &text, const std::string &path,
                        BundleDesc &out);
/// Reads and parses the manifest file at `path` (PA_ERROR_IO if unreadable).
pa_status readManifest(const std::string &path, BundleDesc &out);
/// Reads a whole file into `out` (PA_ERROR_IO naming `what` on failure).
pa_status readFile(const std::string &path, const char *what, std::string &out);

//===----------------------------------------------------------------------===//
// Device and variants
//===----------------------------------------------------------------------===//

/// What planning needs to know of the device.
struct DeviceInfo {
  int ordinal = 0;
  int smVersion = 0; // compute capability major*10 + minor: 90 for sm_90
  int smCount = 0;   // streaming multiprocessors
};

/// Parses "sm_70" / "sm_90a"; false when malformed.
bool parseChip(const std::string &text, int &version, bool &archSpecific);

/// OK when a bundle built for `desc.chip` runs on `device`; else
/// PA_ERROR_BUNDLE saying which chip the bundle needs.
pa_status checkChip(const BundleDesc &desc, const DeviceInfo &device);

/// Block sizes a call may use: powers of two in this range (checks.cpp;
/// mirrors include/PagedAttn/Dialect/PagedAttn/IR/Limits.h).
inline constexpr int kMinBlockSize = 8;
inline constexpr int kMaxBlockSize = 128;

/// BundleDesc::blockSize of a bundle serving any block size.
inline constexpr int kAnyBlockSize = 0;

/// Whether `d` serves calls of block size `blockSize`.
inline bool servesBlockSize(const BundleDesc &d, int blockSize) {
  return d.blockSize == kAnyBlockSize || d.blockSize == blockSize;
}

/// Whether `d` serves calls whose tmp_output is `tmp`: its own tmp_dtype,
/// or, run-time ("any"), f32 and the dtype (checks.cpp allows no other).
inline bool servesTmpDtype(const BundleDesc &d, pa_dtype tmp) {
  return d.tmpAny ? (tmp == PA_F32 || tmp == d.dtype) : d.tmpDtype == tmp;
}

/// What a call asks of a variant.
struct VariantKey {
  pa_dtype dtype;
  pa_dtype tmpDtype;
  int headSize;
  int blockSize;
  int groupSize; // num_heads / num_kv_heads
  bool extLogits = false;     // ALiBi or a logits soft cap requested
  bool slidingWindow = false; // a sliding window requested
  /// The caches' element type; -1 (the default) means dtype.
  int cacheDtype = -1;
  bool sinks = false; // attention sinks requested
  bool queryTokens = false; // query_start_loc given
  /// Query tokens per sequence at most: max_query_len with query_start_loc,
  /// else 1. Picks the tile (a tensor-core tile packs several per program).
  int queryLen = 1;
  ElemType cacheType() const {
    return cacheDtype < 0 ? ElemType(dtype) : ElemType(cacheDtype);
  }
};

/// Whether `d` takes the parameters of the features `key` requests (and,
/// for an fp8 cache, the five scale parameters).
bool servesFeatures(const BundleDesc &d, const VariantKey &key);

/// The loaded bundles by the part of the key a call must match exactly
/// (dtype, cache dtype, tmp dtype, head size, block size), each list in load
/// order: selectVariant then looks at a few bundles, not the whole library
/// (2676 of them: 4-7 us per call on the host); and by name, and by the name
/// they declare themselves the wide twin of, so that indexing a bundle costs
/// the same with 10 or 3000 loaded. Changed only where bundles load or
/// unload, like the bundles themselves.
class VariantIndex {
public:
  /// Indexes descs[i], the newest bundle.
  void add(const std::vector<BundleDesc> &descs, size_t i);
  /// Indexes `descs` anew (after bundles were unloaded).
  void rebuild(const std::vector<BundleDesc> &descs);
  /// The bundles matching `key`'s types and head size, in load order
  /// (empty: none); the caller checks the block size (servesBlockSize).
  const std::vector<int> &find(const VariantKey &key) const;
  /// The bundles of `d`'s types and head size, in load order.
  const std::vector<int> &sameKey(const BundleDesc &d) const;
  /// The bundle named `name`, or -1.
  int byName(const std::string &name) const;
  /// The bundles declaring themselves `name`'s wide twin.
  const std::vector<int> &twinsOf(const std::string &name) const;
  /// How many bundles it holds (the loaded ones, when up to date).
  size_t size() const;

private:
  std::unordered_map<uint64_t, std::vector<int>> byKey;
  std::unordered_map<std::string, int> names;
  std::unordered_map<std::string, std::vector<int>> declaredTwins;
};
/// The index in `descs` of the variant serving `key`, or -1. Among variants
/// matching dtype, cache_dtype, tmp_dtype, head_size and block_size that
/// serve the features and run on `device`: the newest chip, then the
/// smallest heads_per_program that covers the group, else the largest one,
/// then the lean (non-_ext) kernel, then the fewest warps per program;
/// remaining ties go to the first loaded.
int selectVariant(const std::vector<BundleDesc> &descs,
                  const DeviceInfo &device, const VariantKey &key);
/// The same choice among the bundles `index` holds for the key (the index
/// of `descs`).
int selectVariant(const std::vector<BundleDesc> &descs,
                  const VariantIndex &index, const DeviceInfo &device,
                  const VariantKey &key);
/// Links descs[added] with its wide twins. Two bundles are twins when one
/// has more warps per program and either it declares itself the other's
/// twin (`wide_twin_of`: the same chip, keys and kernel parameters, any
/// kernel and tile) or neither declares anything and they are the same
/// kernel (keys, chip, tile, every kernel's parameters). The narrower one
/// gets the index of its widest twin. A declared twin whose bundle is loaded
/// but serves other calls is an error (nothing is linked). `index` holds
/// descs[added] already; only the bundles of its key and its declared
/// relations are looked at.
pa_status linkWideTwin(std::vector<BundleDesc> &descs, size_t added,
                       const VariantIndex &index);
/// Every bundle's wideTwin anew (after bundles were unloaded; the links that
/// loaded before cannot fail), with `index` up to date.
void linkWideTwins(std::vector<BundleDesc> &descs, const VariantIndex &index);
/// The same, indexing `descs` on the way (tests).
void linkWideTwins(std::vector<BundleDesc> &descs);

/// Programs per KV head for a group: ceil(group_size / heads_per_program).
inline int64_t tilesPerKvHead(int64_t groupSize, int64_t headsPerProgram) {
  return (groupSize + headsPerProgram - 1) / headsPerProgram;
}

//===----------------------------------------------------------------------===//
// Argument checks and planning
//===----------------------------------------------------------------------===//

/// The checks that need neither a variant nor a device: enums, positive
/// sizes, head-count divisibility, scale, the features, the fp8 cache type
/// and its scales, the key layout's x (of the cache element), and
/// max_seq_len against the block table. PA_ERROR_INVALID_ARGUMENT naming the
/// rule.
pa_status checkDecodeArgs(const pa_decode_args &args);
/// Null device pointers; the workspace only when `needWorkspace`.
pa_status checkDecodePointers(const pa_decode_args &args, bool needWorkspace);

/// Partition programs the GPU holds at once, which the adaptive rule counts
/// waves in: the driver's resident programs per SM for the bundle's
/// partition kernel times the SM count; where the occupancy is unknown
/// (host contexts), 16 warps per SM.
inline int64_t adaptiveSlots(const DeviceInfo &device,
                             const BundleDesc &variant) {
  int64_t perSM = variant.residentPrograms > 0
                      ? variant.residentPrograms
                      : std::max<int64_t>(1, 16 / variant.warps);
  return std::max<int64_t>(1, perSM * device.smCount);
}

/// How a call's contexts are split into partitions: partition_tokens,
/// num_partitions and partition_split (0, or in fixed-grid mode on a bundle
/// that takes it, the P of the kernels' per-sequence rule: a sequence of len
/// tokens runs in at most P partitions of roundup(ceil(len / P),
/// partition_tokens) tokens).
struct PartitionPlan {
  int32_t tokens = 0, parts = 0, split = 0;
};

/// The partition rule (docs/runtime.md) for `args` on `variant`, given the
/// number of partition programs one partition per (sequence, KV head, tile)
/// needs. Refuses with PA_ERROR_INVALID_ARGUMENT when the workspace cannot
/// hold the partitions.
pa_status planPartitions(const DeviceInfo &device, const BundleDesc &variant,
                         const pa_decode_args &args,
                         int64_t programsPerPartition, PartitionPlan &out);

/// Loads bundles' modules on first use (the context's lazy loading).
/// planDecode asks it for each bundle it plans on before reading the
/// bundle's residentPrograms, which the module's occupancy sets.
class ModuleLoader {
public:
  virtual ~ModuleLoader() = default;
  /// OK once descs[variant]'s module is loaded (at once if it already is).
  virtual pa_status ensure(int variant) const = 0;
};

/// PA_ERROR_UNSUPPORTED naming `key` and the loaded bundles.
pa_status unsupported(const std::vector<BundleDesc> &variants,
                      const VariantKey &key);

/// The key a call asks for (its dtype, cache type, tmp dtype, sizes and
/// features); reads only those fields of `args`.
VariantKey variantKeyOf(const pa_decode_args &args);

/// Everything a launch needs, decided on the host.
struct DecodePlan {
  int variant = -1; // index into the context's variants
  bool onePass = false;
  /// With onePass: 0, the one-pass kernel runs; else the cluster kernel
  /// runs instead (grid and block are its), clusters of this many programs.
  int32_t clusterSize = 0;
  int32_t partitionTokens = 0;
  int32_t numPartitions = 0;
  int32_t partitionSplit = 0; // PartitionPlan::split
  int32_t groupSize = 0;
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  unsigned reduceGrid[3] = {0, 0, 0}, reduceBlock[3] = {0, 0, 0};
};

/// The one function both pa_plan_decode_v2 and pa_decode_v2 call: argument
/// checks, variant selection, the partition rule, the grids (from the
/// manifest's expressions, checked against CUDA's limits) and, when
/// `checkPointers`, the device pointers. With `index` (the variants' index)
/// the variant is chosen among the bundles it holds for the call's key.
/// With `loader`, every bundle planned on is loaded first (its errors
/// returned).
pa_status planDecode(const DeviceInfo &device,
                     const std::vector<BundleDesc> &variants,
                     const pa_decode_args &args, bool checkPointers,
                     DecodePlan &plan, const VariantIndex *index = nullptr,
                     const ModuleLoader *loader = nullptr);

/// Copies `plan` into the public struct.
void exportPlan(const DecodePlan &plan, const BundleDesc &variant,
                pa_plan &out);

//===----------------------------------------------------------------------===//
// Kernel parameters
//===----------------------------------------------------------------------===//

/// A kernel's argument block in the manifest's params order, as
/// cuLaunchKernel takes it. No allocation.
struct KernelArgs {
  union Value {
    CUdeviceptr ptr;
    float f32;
    int32_t i32;
  };
  Value values[kMaxParams];
  void *pointers[kMaxParams];
  int count = 0;
};

/// Fills `out` for `kernel` from the call and its plan; `errorWord` is the
/// context's error word (error_word).
void marshalParams(const KernelDesc &kernel, const pa_decode_args &args,
                   const DecodePlan &plan, KernelArgs &out,
                   CUdeviceptr errorWord = 0);

//===----------------------------------------------------------------------===//
// Contexts
//===----------------------------------------------------------------------===//

/// A loaded bundle's module and kernels (all null in a host-only context).
struct LoadedModule {
  CUmodule module = nullptr;
  CUfunction functions[kNumRoles] = {}; // null where the bundle has none
};

/// Where a bundle's module came from.
enum class ModuleSource { NotLoaded, Sass, Ptx, PtxAfterSass };

/// One indexed bundle's module, loaded on first use (loadModuleOnce): the
/// first caller loads it under the context's load mutex, later callers see
/// `ready` and read `module` without locking.
struct ModuleSlot {
  std::atomic<bool> ready{false};
  LoadedModule module;
  ModuleSource source = ModuleSource::NotLoaded;
};

/// A context with no driver, for the host-only tests: plans and checks like
/// a real one on `device`; pa_context_load_bundle parses manifests and checks
/// chips but loads no PTX; pa_decode_v2 fails with PA_ERROR_CUDA after its
/// checks. Free with pa_context_destroy.
pa_context *makeHostContext(const DeviceInfo &device);

/// Words of the kernels' error word: {count, seq, index, value}.
inline constexpr int kErrorWords = 4;
/// The message pa_context_last_error returns for `e` (e.count > 0).
std::string describeKernelError(const pa_kernel_error &e);

} // namespace pa

/// One per device; all state of the runtime lives here.
struct pa_context {
  pa::DriverApi api; // empty in a host-only context
  CUdevice device = 0;
  CUcontext primary = nullptr;
  pa::DeviceInfo info;
  /// The indexed bundles (manifests). Changed only by pa_context_load_*,
  /// which must not run concurrently with calls on the context.
  std::vector<pa::BundleDesc> variants;
  /// Parallel to variants: each bundle's module, loaded on first use. Calls
  /// on any thread may load them (under loadMutex).
  std::vector<std::unique_ptr<pa::ModuleSlot>> modules;
  pa::VariantIndex index; // of variants
  mutable std::mutex loadMutex;
  /// The kernels' error word: 4 x i32 {count, seq, index, value} on the
  /// device, zeroed, allocated with the context (0 in a host-only context);
  /// pa_context_last_error reads and clears it.
  CUdeviceptr errorWord = 0;
};

namespace pa {
/// Loads `ctx.variants[variant]`'s module unless it is loaded: the SASS
/// where the device is exactly the bundle's chip (the PTX if the SASS will
/// not load), else the PTX through the driver's JIT. Thread-safe; a failure
/// leaves the slot unloaded and is returned. With `stream` capturing a CUDA
/// graph, a module that is not loaded yet is refused with PA_ERROR_CAPTURE.
/// A host-only context loads nothing.
pa_status loadModuleOnce(const pa_context &ctx, int variant, CUstream stream,
                         bool checkCapture);
} // namespace pa

#endif // PA_RUNTIME_SRC_INTERNAL_H
