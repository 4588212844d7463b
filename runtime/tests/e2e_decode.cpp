//===- e2e_decode.cpp - end-to-end GPU test of the decode kernels ---------===//
//
// Loads a kernel library (pa-opt's bundles) through the runtime and checks
// pa_decode_v2 against a float64 CPU reference over a randomized matrix:
// dtypes f16/bf16/f32, head sizes 64..256, block sizes 8..128, MHA, GQA
// groups 2..16 and MQA, ragged lengths (1, non-multiples of the block), long
// contexts (--long), shuffled block tables, adaptive and fixed-grid modes.
// A covering subset is sampled (every value of every dimension appears), plus
// every group size for each (dtype, cache dtype, head, block) the library
// serves, and six small group-4 grids per key (where wide twins and, on
// sm_90, their cluster kernels run): two of short contexts, four of one or
// two contexts of a few partitions (adaptive; a fixed grid over a workspace
// of one partition; four query tokens; two). fp8 caches (E4M3FN, E5M2) get
// random fp8 bytes, scales in the arguments, on the device or one of each,
// and a reference computed from the exactly decoded bytes times the scales.
//
// Links only the runtime and libdl: memory is managed through the driver,
// dlopen()ed here as the runtime does, so a successful link proves the
// runtime needs no libcuda at link time.
//
// Every case also checks that the kernels recorded no bad input
// (pa_context_last_error). With --poison the cases are instead bad block
// tables (docs/runtime.md, "Bad block tables"): entries of chosen sequences
// set to >= num_blocks or negative, a seq_len out of range, a bad entry
// before a sliding window (never read), or bad entries at the edges of the
// ranges of several query tokens (packed tiles): exactly the rows the
// contract of docs/features.md names must be NaN (computed here from the
// rows' ranges, not from the kernels), every other row correct against the
// reference, and pa_context_last_error must report one of the bad entries
// a NaN row attends (then nothing).
//
// Usage: e2e_decode --library DIR [--quick] [--seed N] [--long] [--case ID]
//                   [--poison] [--shard K/N]
// --shard K/N runs the cases whose position in the matrix is K modulo N, so
// that N processes share the matrix (the float64 reference is host work).
// Exit status: 0 all ran cases passed, 1 a case failed, 2 usage or setup
// error, 3 no case ran (the library serves none).
//
//===----------------------------------------------------------------------===//

#include "pa_runtime/pa_runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// The driver, for memory and streams (dlopen, like the runtime)
//===----------------------------------------------------------------------===//

#define E2E_DRIVER_FUNCTIONS(X)                                                \
  X(cuInit)                                                                    \
  X(cuGetErrorName)                                                            \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)

#define E2E_STR_EXPANDED(name) E2E_STR(name)
#define E2E_STR(name) #name

struct Driver {
  void *library = nullptr;
#define E2E_MEMBER(name) decltype(&::name) name = nullptr;
  E2E_DRIVER_FUNCTIONS(E2E_MEMBER)
#undef E2E_MEMBER

  bool load() {
    library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      std::fprintf(stderr, "error: CUDA driver (libcuda.so.1) not found: %s\n",
                   dlerror());
      return false;
    }
#define E2E_RESOLVE(name)                                                      \
  name = reinterpret_cast<decltype(name)>(                                     \
      dlsym(library, E2E_STR_EXPANDED(name)));                                 \
  if (!name) {                                                                 \
    std::fprintf(stderr, "error: the driver lacks %s\n",                       \
                 E2E_STR_EXPANDED(name));                                      \
    return false;                                                              \
  }
    E2E_DRIVER_FUNCTIONS(E2E_RESOLVE)
#undef E2E_RESOLVE
    return true;
  }

  std::string name(CUresult r) const {
    const char *n = nullptr;
    if (cuGetErrorName && cuGetErrorName(r, &n) == CUDA_SUCCESS && n)
      return n;
    return "CUresult " + std::to_string(int(r));
  }
};

Driver driver;

/// A device allocation freed at scope exit.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (ptr)
      driver.cuMemFree(ptr);
  }
  CUresult alloc(size_t n) {
    bytes = n;
    return driver.cuMemAlloc(&ptr, std::max<size_t>(n, 4));
  }
};

//===----------------------------------------------------------------------===//
// Numbers: RNG, f16 and bf16 rounding
//===----------------------------------------------------------------------===//

struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() { // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi].
  int range(int lo, int hi) { return lo + int(next() % uint64_t(hi - lo + 1)); }
  /// Uniform in [-1, 1).
  float symmetric() { return float((next() >> 40) * (1.0 / 8388608.0) - 1.0); }
};

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// float -> IEEE half, round to nearest even.
uint16_t toHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)
    return uint16_t(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) // rounds to >= 65520: infinity
    return uint16_t(sign | 0x7c00u);
  if (abs < 0x38800000u) { // below 2^-14: subnormal half, exact scaling
    float scaled = bitsFloat(abs) * 16777216.0f;
    return uint16_t(sign | uint32_t(std::nearbyint(scaled)));
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t h = ((((abs >> 23) - 127 + 15) << 10) | (mant >> 13));
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
    ++h;
  return uint16_t(sign | h);
}

float fromHalf(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = std::ldexp(float(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(float(1024 + mant), exp - 25);
  return bitsFloat(floatBits(v) | sign);
}

/// float -> bfloat16, round to nearest even (inputs are finite).
uint16_t toBf16(float f) {
  uint32_t u = floatBits(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float fromBf16(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

const char *dtypeName(pa_dtype d) {
  return d == PA_F16 ? "f16" : d == PA_BF16 ? "bf16" : "f32";
}
int dtypeBytes(pa_dtype d) { return d == PA_F32 ? 4 : 2; }

//===----------------------------------------------------------------------===//
// fp8 caches: exact decoders and random finite encodings
//===----------------------------------------------------------------------===//

/// OCP FP8 E4M3FN: sign, 4-bit exponent (bias 7), 3-bit mantissa,
/// subnormals at exponent 0, no infinities, NaN only at S.1111.111.
double decodeE4M3(uint8_t b) {
  int e = (b >> 3) & 15, m = b & 7;
  // e == 0: m/8 * 2^-6; else (1+m/8) * 2^(e-7).
  double v = e == 0 ? std::ldexp(double(m), -9)
                    : std::ldexp(double(8 + m), e - 10);
  if (e == 15 && m == 7)
    v = NAN;
  return b & 0x80 ? -v : v;
}

/// FP8 E5M2: sign, 5-bit exponent (bias 15), 2-bit mantissa, subnormals at
/// exponent 0, infinities and NaNs at exponent 31.
double decodeE5M2(uint8_t b) {
  int e = (b >> 2) & 31, m = b & 3;
  // e == 0: m/4 * 2^-14; else (1+m/4) * 2^(e-15).
  double v = e == 0    ? std::ldexp(double(m), -16)
             : e == 31 ? (m ? NAN : INFINITY)
                       : std::ldexp(double(4 + m), e - 17);
  return b & 0x80 ? -v : v;
}

double decodeFp8(pa_kv_cache_dtype kind, uint8_t b) {
  return kind == PA_KV_CACHE_FP8_E4M3 ? decodeE4M3(b) : decodeE5M2(b);
}

const char *cacheName(pa_kv_cache_dtype kind) {
  return kind == PA_KV_CACHE_FP8_E4M3   ? "fp8e4m3"
         : kind == PA_KV_CACHE_FP8_E5M2 ? "fp8e5m2"
                                        : "auto";
}

/// The scales of an fp8 case: values = stored * scale. With randomFp8's
/// bytes they give logits (scale 1/sqrt(head_size)) with a standard
/// deviation of about 1.4 (E4M3) and 0.8 (E5M2) and extremes near 10: a
/// softmax neither flat nor one-hot. K and V scales differ so that a swap
/// shows.
float fp8KScale(pa_kv_cache_dtype kind) {
  return kind == PA_KV_CACHE_FP8_E4M3 ? 0.13f : 0.09f;
}
float fp8VScale(pa_kv_cache_dtype kind) {
  return kind == PA_KV_CACHE_FP8_E4M3 ? 0.043f : 0.021f;
}

/// ||out - ref|| / ||ref|| bound per dtype (inputs rounded to the dtype, so
/// this measures the kernel's arithmetic and output rounding only).
double errorBound(pa_dtype d) {
  return d == PA_BF16 ? 1e-2 : d == PA_F16 ? 5e-3 : 1e-4;
}

/// Host tensor in the device's element type, with the exact values the
/// device sees available as floats.
struct HostTensor {
  pa_dtype dtype = PA_F32;
  pa_kv_cache_dtype fp8 = PA_KV_CACHE_AUTO; // not AUTO: one byte an element
  double scale = 1;           // fp8: value = decoded byte * scale
  std::vector<uint16_t> half; // f16 / bf16 storage
  std::vector<float> full;    // f32 storage
  std::vector<uint8_t> byte;  // fp8 storage
  size_t size() const {
    return fp8 ? byte.size() : dtype == PA_F32 ? full.size() : half.size();
  }
  /// An fp8 tensor of `n` elements (zero bytes) dequantized with `s`.
  void resizeFp8(pa_kv_cache_dtype kind, size_t n, float s) {
    fp8 = kind;
    scale = double(s);
    byte.assign(n, 0);
  }
  void resize(pa_dtype d, size_t n) {
    dtype = d;
    fp8 = PA_KV_CACHE_AUTO;
    if (d == PA_F32)
      full.assign(n, 0.0f);
    else
      half.assign(n, 0);
  }
  void set(size_t i, float v) {
    if (dtype == PA_F32)
      full[i] = v;
    else
      half[i] = dtype == PA_F16 ? toHalf(v) : toBf16(v);
  }
  void setNaN() {
    if (dtype == PA_F32)
      std::fill(full.begin(), full.end(), NAN);
    else
      std::fill(half.begin(), half.end(),
                uint16_t(dtype == PA_F16 ? 0x7e00u : 0x7fc0u));
  }
  float get(size_t i) const {
    if (dtype == PA_F32)
      return full[i];
    return dtype == PA_F16 ? fromHalf(half[i]) : fromBf16(half[i]);
  }
  /// The exact value the kernel should see: fp8 bytes decoded and scaled.
  double value(size_t i) const {
    return fp8 ? decodeFp8(fp8, byte[i]) * scale : double(get(i));
  }
  const void *data() const {
    return fp8              ? static_cast<const void *>(byte.data())
           : dtype == PA_F32 ? static_cast<const void *>(full.data())
                             : static_cast<const void *>(half.data());
  }
  void *data() {
    return fp8              ? static_cast<void *>(byte.data())
           : dtype == PA_F32 ? static_cast<void *>(full.data())
                             : static_cast<void *>(half.data());
  }
  size_t bytes() const { return size() * (fp8 ? 1 : dtypeBytes(dtype)); }
};

//===----------------------------------------------------------------------===//
// The case matrix
//===----------------------------------------------------------------------===//

const pa_dtype kDtypes[] = {PA_F16, PA_BF16, PA_F32};
const int kHeadSizes[] = {64, 80, 96, 112, 128, 192, 256};
/// Every block size a call may use: each bundle serves them all (the
/// kernels take block_size at run time).
const int kBlockSizes[] = {8, 16, 32, 64, 128};
constexpr int kNumBlockSizes = sizeof(kBlockSizes) / sizeof(kBlockSizes[0]);
struct HeadShape {
  const char *label;
  int numHeads, numKvHeads;
};
const HeadShape kHeadShapes[] = {
    {"MHA", 4, 4},    {"GQA2", 8, 4},   {"GQA4", 16, 4},
    {"GQA6", 12, 2},  {"GQA7", 14, 2},  {"GQA8", 16, 2},
    {"GQA16", 32, 2}, {"MQA32", 32, 1}, {"MQA64", 64, 1}};
constexpr int kNumShapes = sizeof(kHeadShapes) / sizeof(kHeadShapes[0]);

int shapeIndex(const char *label) {
  for (int i = 0; i < kNumShapes; ++i)
    if (std::strcmp(kHeadShapes[i].label, label) == 0)
      return i;
  std::fprintf(stderr, "no head shape '%s'\n", label);
  std::exit(2);
}
/// Context lengths: short (one partition), ragged (up to 6 partitions of
/// 512), medium (9 to 16: the reduce's two-heads-per-program mapping), long.
/// kFew: one or two sequences of 520-2600 tokens, a small grid of a few
/// partitions' contexts (the cluster kernel's ranks then take several warp
/// steps each).
enum Profile { kShort, kRagged, kMedium, kLong, kFew };
const char *const kProfileNames[] = {"short", "ragged", "medium", "long",
                                     "few"};

/// Optional features a case turns on (a bit mask).
enum Feature {
  kAlibi = 1,
  kWindow = 2,
  kSoftCap = 4,
  kSinks = 8,
  kAllFeatures = 15
};

std::string featureLabel(int f) {
  if (!f)
    return "-";
  std::string s;
  if (f & kAlibi)
    s += "alibi,";
  if (f & kWindow)
    s += "window,";
  if (f & kSoftCap)
    s += "softcap,";
  if (f & kSinks)
    s += "sinks,";
  s.pop_back();
  return s;
}

/// Where an fp8 case's scales come from: both in the arguments, both read
/// from the device (the float fields then 0), or K on the device and V in
/// the arguments.
enum ScaleMode { kScalesArgs, kScalesDevice, kScalesMixed, kNumScaleModes };
const char *const kScaleModeNames[] = {"args", "device", "mixed"};

struct Case {
  int id = 0;
  pa_dtype dtype = PA_F16;
  pa_kv_cache_dtype cache = PA_KV_CACHE_AUTO;
  ScaleMode scales = kScalesArgs; // fp8 only
  int headSize = 128, blockSize = 16, shape = 0;
  int features = 0;
  bool fixedGrid = false;
  /// With fixedGrid: a workspace of one partition (max_num_partitions 1),
  /// so the grid is one pass over the whole capacity.
  bool onePartition = false;
  Profile profile = kRagged;
  /// Several query tokens per sequence (query_start_loc): max_query_len,
  /// with ragged per-sequence counts from 0 to it (uniform in every third
  /// case); 0: one token per sequence, no query_start_loc.
  int queryLen = 0;
  /// --poison: what is wrong with the inputs (Poison below).
  int poison = 0;
  /// tmp_output in the query's 16-bit type instead of f32 (the bundles
  /// take its type at run time: the same kernels serve both).
  bool tmpHalf = false;
  uint64_t seed = 0;
  pa_dtype tmpDtype() const { return tmpHalf ? dtype : PA_F32; }
};

/// The tmp_output type of a case that cycles by `salt`: every other value
/// in the query's type (16-bit queries; f32 ones have an f32 workspace).
bool halfTmp(pa_dtype dtype, int salt) {
  return dtype != PA_F32 && salt % 2 == 1;
}

/// Poisoned cases: bad block-table entries (>= num_blocks and negative) in
/// chosen sequences; a seq_len out of range; a bad entry wholly before a
/// sliding window (no program reads it: no NaN, nothing reported).
enum Poison {
  kPoisonNone,
  kPoisonEntries,
  kPoisonSeqLen,
  kPoisonBeforeWindow,
  kPoisonEdges
};
const char *const kPoisonNames[] = {"", " poison-entries", " poison-seq_len",
                                    " poison-before-window", " poison-edges"};

/// Every value of every dimension appears: dtype x head size (x block size
/// in the full run) is a full product, the other dimensions cycle with
/// strides coprime to their lengths.
std::vector<Case> coveringCases(bool quick, bool withLong, uint64_t seed) {
  std::vector<Case> cases;
  int n = quick ? 21 : 21 * kNumBlockSizes;
  for (int i = 0; i < n; ++i) {
    Case c;
    c.dtype = kDtypes[i % 3];
    c.headSize = kHeadSizes[(i / 3) % 7];
    c.blockSize = kBlockSizes[quick ? (i + i / 3) % kNumBlockSizes
                                    : (i / 21) % kNumBlockSizes];
    c.shape = (i * 5 + 1) % kNumShapes;
    c.fixedGrid = (i + i / 7) % 2 == 1;
    c.profile = i % 4 == 0 ? kShort : i % 4 == 2 ? kMedium : kRagged;
    // Every combination of the features, none in half the cases.
    c.features = i % 2 ? 0 : (i / 2) % 16;
    c.tmpHalf = halfTmp(c.dtype, i / 3);
    cases.push_back(c);
  }
  if (withLong) {
    for (int i = 0; i < 6; ++i) {
      Case c;
      c.dtype = kDtypes[i % 3];
      c.headSize = kHeadSizes[(2 * i + 4) % 7];
      c.blockSize = kBlockSizes[i % kNumBlockSizes];
      c.shape = (3 * i + 5) % kNumShapes;
      c.fixedGrid = i >= 3;
      c.profile = kLong;
      c.features = i % 2 ? kWindow : 0; // windows skip whole partitions
      c.tmpHalf = halfTmp(c.dtype, i / 3);
      cases.push_back(c);
    }
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].id = int(i);
    cases[i].seed = seed * 1000003ull + i;
  }
  return cases;
}

//===----------------------------------------------------------------------===//
// One case
//===----------------------------------------------------------------------===//

struct Result {
  enum Kind { Pass, Fail, Skip } kind = Skip;
  double relErr = 0;
};

struct Inputs {
  int numSeqs = 0, numHeads = 0, numKvHeads = 0, headSize = 0, blockSize = 0;
  int numBlocks = 0, maxBlocksPerSeq = 0, maxNumPartitions = 0;
  int x = 0;
  std::vector<int32_t> seqLens, blockTables;
  HostTensor query, keyCache, valueCache;
  float scale = 0;
  pa_kv_cache_dtype cache = PA_KV_CACHE_AUTO;
  float kScale = 0, vScale = 0; // fp8 only
  std::vector<float> alibiSlopes; // [num_heads], empty without ALiBi
  int slidingWindow = 0;          // 0: none
  float softCap = 0;              // 0: none
  std::vector<float> sinks;       // [num_heads], empty without sinks
  /// Several query tokens: [num_seqs + 1] row offsets (empty: one row per
  /// sequence) and their largest count.
  std::vector<int32_t> queryStartLoc;
  int maxQueryLen = 0;
  int numRows() const {
    return queryStartLoc.empty() ? numSeqs : queryStartLoc.back();
  }
  int queryLenOf(int s) const {
    return queryStartLoc.empty() ? 1 : queryStartLoc[s + 1] - queryStartLoc[s];
  }
};

/// Query tokens per sequence for a multi-token case: uniform, or ragged
/// from 0 to the maximum with a 0, a 1 and the maximum present when there
/// are enough sequences. Each sequence's context holds its new tokens.
void makeQueryTokens(const Case &c, Rng &rng, Inputs &in) {
  if (!c.queryLen)
    return;
  int seqs = int(in.seqLens.size());
  in.queryStartLoc.assign(1, 0);
  for (int s = 0; s < seqs; ++s) {
    int q = c.id % 3 == 0 ? c.queryLen : rng.range(0, c.queryLen);
    if (c.id % 3 != 0 && s < 3 && seqs > 3)
      q = s == 0 ? 0 : s == 1 ? 1 : c.queryLen;
    in.seqLens[s] = std::max(in.seqLens[s], q);
    in.queryStartLoc.push_back(in.queryStartLoc.back() + q);
  }
  in.maxQueryLen = c.queryLen;
}

std::vector<int> makeLengths(const Case &c, Rng &rng) {
  std::vector<int> lens;
  int maxLen = c.profile == kShort    ? 300
               : c.profile == kRagged ? 3000
               : c.profile == kFew    ? 2600
               : c.profile == kMedium ? 8192
                                      : 40000;
  int minLen = c.profile == kLong     ? 32768
               : c.profile == kMedium ? 4097
               : c.profile == kFew    ? 520
                                      : 1;
  int seqs = c.profile == kShort    ? rng.range(1, 4)
             : c.profile == kRagged ? rng.range(2, 6)
             : c.profile == kFew    ? rng.range(1, 2)
                                    : 2;
  for (int s = 0; s < seqs; ++s)
    lens.push_back(rng.range(minLen, maxLen));
  if (c.profile != kLong && c.id % 2 == 0 && (c.profile != kFew || seqs > 1))
    lens[0] = 1; // the shortest context
  // A context of no tokens, as an engine pads a batch (its rows are 0), in
  // every fourth case of the others; --poison keeps its lengths nonzero.
  else if (c.profile != kLong && c.id % 4 == 1 && seqs > 1 && !c.poison)
    lens[0] = 0;
  // At least one length that is not a multiple of the block size.
  int &last = lens.back();
  if (last % c.blockSize == 0)
    last = last > 1 ? last - 1 : last + 1;
  if (c.profile == kLong)
    last = std::max(last, 32768 + 2 * c.blockSize + 3);
  return lens;
}

/// A random finite fp8 byte, never a NaN or infinity encoding. Most have
/// magnitudes below 16 (E4M3: exponent field <= 10) or 32 (E5M2: <= 19),
/// subnormals and zeros included; one in 32 reaches up to 448 (E4M3's
/// largest finite value; E5M2 exponent field <= 23).
uint8_t randomFp8(pa_kv_cache_dtype kind, Rng &rng) {
  uint8_t sign = (rng.next() >> 7) & 1 ? 0x80 : 0;
  bool wide = rng.range(0, 31) == 0;
  int magnitude = kind == PA_KV_CACHE_FP8_E4M3
                      ? rng.range(0, wide ? 0x7e : (10 << 3) | 7)
                      : rng.range(0, wide ? (23 << 2) | 3 : (19 << 2) | 3);
  return uint8_t(sign | magnitude);
}

Inputs makeInputs(const Case &c, Rng &rng) {
  Inputs in;
  const HeadShape &shape = kHeadShapes[c.shape];
  in.numHeads = shape.numHeads;
  in.numKvHeads = shape.numKvHeads;
  in.headSize = c.headSize;
  in.blockSize = c.blockSize;
  in.cache = c.cache;
  in.x = c.cache ? 16 : 16 / dtypeBytes(c.dtype);
  in.seqLens = makeLengths(c, rng);
  makeQueryTokens(c, rng, in);
  in.numSeqs = int(in.seqLens.size());
  int maxLen = *std::max_element(in.seqLens.begin(), in.seqLens.end());
  // Some slack in the table, as a serving engine allocates ahead.
  in.maxBlocksPerSeq =
      (maxLen + c.blockSize - 1) / c.blockSize + rng.range(0, 3);
  in.maxNumPartitions =
      c.onePartition ? 1 : (in.maxBlocksPerSeq * c.blockSize + 511) / 512;
  int used = 0;
  for (int len : in.seqLens)
    used += (len + c.blockSize - 1) / c.blockSize;
  in.numBlocks = used + rng.range(1, used / 4 + 2);

  // Physical blocks: a random permutation, so neighbours in a sequence are
  // scattered through the cache.
  std::vector<int32_t> physical(in.numBlocks);
  for (int i = 0; i < in.numBlocks; ++i)
    physical[i] = i;
  for (int i = in.numBlocks - 1; i > 0; --i)
    std::swap(physical[i], physical[rng.range(0, i)]);
  in.blockTables.assign(size_t(in.numSeqs) * in.maxBlocksPerSeq, 0);
  int next = 0;
  for (int s = 0; s < in.numSeqs; ++s) {
    int blocks = (in.seqLens[s] + c.blockSize - 1) / c.blockSize;
    for (int b = 0; b < in.maxBlocksPerSeq; ++b)
      in.blockTables[size_t(s) * in.maxBlocksPerSeq + b] =
          b < blocks ? physical[next++] : rng.range(0, in.numBlocks - 1);
  }

  size_t q = size_t(in.numRows()) * in.numHeads * in.headSize;
  size_t kv = size_t(in.numBlocks) * in.numKvHeads * in.headSize * in.blockSize;
  in.query.resize(c.dtype, q);
  for (size_t i = 0; i < q; ++i)
    in.query.set(i, rng.symmetric());
  if (c.cache) {
    in.kScale = fp8KScale(c.cache);
    in.vScale = fp8VScale(c.cache);
    in.keyCache.resizeFp8(c.cache, kv, in.kScale);
    in.valueCache.resizeFp8(c.cache, kv, in.vScale);
    for (size_t i = 0; i < kv; ++i)
      in.keyCache.byte[i] = randomFp8(c.cache, rng);
    for (size_t i = 0; i < kv; ++i)
      in.valueCache.byte[i] = randomFp8(c.cache, rng);
  } else {
    in.keyCache.resize(c.dtype, kv);
    in.valueCache.resize(c.dtype, kv);
    for (size_t i = 0; i < kv; ++i)
      in.keyCache.set(i, rng.symmetric());
    for (size_t i = 0; i < kv; ++i)
      in.valueCache.set(i, rng.symmetric());
  }
  in.scale = float(1.0 / std::sqrt(double(in.headSize)));
  // Features at strengths that change the result: slopes that decay the
  // oldest tokens' logits by up to a few units, windows shorter than most
  // contexts, caps near the logits' spread.
  if (c.features & kAlibi)
    for (int h = 0; h < in.numHeads; ++h)
      in.alibiSlopes.push_back(float(std::ldexp(1.0, -rng.range(2, 10))));
  if (c.features & kWindow)
    in.slidingWindow = rng.range(1, maxLen);
  if (c.features & kSoftCap)
    in.softCap = 0.25f + 0.25f * float(rng.range(0, 8));
  // Sinks from -2 to 4 per head: from a small share of the denominator to
  // most of it for short contexts, different per head.
  if (c.features & kSinks)
    for (int h = 0; h < in.numHeads; ++h)
      in.sinks.push_back(0.5f * float(rng.range(-4, 8)));
  return in;
}

/// float64 attention of query row `row` of sequence `s` over the first
/// `len` tokens of its context (rounded inputs) into out[row][head][dim].
/// A row of no tokens (len <= 0) is 0, with or without a sink
/// (docs/features.md).
void referenceRow(const Inputs &in, int s, int row, int len,
                  std::vector<double> &out) {
  const int D = in.headSize, B = in.blockSize, x = in.x;
  const int group = in.numHeads / in.numKvHeads;
  if (len <= 0) {
    std::fill_n(out.begin() + size_t(row) * in.numHeads * D,
                size_t(in.numHeads) * D, 0.0);
    return;
  }
  std::vector<double> qd(size_t(group) * D), krow(D), logits, acc(D);
  for (int kvh = 0; kvh < in.numKvHeads; ++kvh) {
    for (int g = 0; g < group; ++g)
      for (int d = 0; d < D; ++d)
        qd[size_t(g) * D + d] = in.query.get(
            (size_t(row) * in.numHeads + kvh * group + g) * D + d);
    logits.assign(size_t(group) * len, 0.0);
    // The sliding window: only the last slidingWindow tokens count.
    int first = in.slidingWindow > 0 ? std::max(0, len - in.slidingWindow) : 0;
    for (int t = first; t < len; ++t) {
      size_t block =
          size_t(in.blockTables[size_t(s) * in.maxBlocksPerSeq + t / B]);
      size_t base = (block * in.numKvHeads + kvh) * size_t(D / x);
      for (int d = 0; d < D; ++d)
        krow[d] =
            in.keyCache.value(((base + d / x) * B + t % B) * x + d % x);
      for (int g = 0; g < group; ++g) {
        double dot = 0;
        for (int d = 0; d < D; ++d)
          dot += qd[size_t(g) * D + d] * krow[d];
        double logit = dot * double(in.scale);
        if (in.softCap > 0)
          logit = in.softCap * std::tanh(logit / in.softCap);
        if (!in.alibiSlopes.empty())
          logit += double(in.alibiSlopes[kvh * group + g]) * (t - len + 1);
        logits[size_t(g) * len + t] = logit;
      }
    }
    for (int g = 0; g < group; ++g) {
      double *l = &logits[size_t(g) * len];
      double m = *std::max_element(l + first, l + len), sum = 0;
      // A sink is one more logit in the denominator, with no value row.
      if (!in.sinks.empty()) {
        double sink = in.sinks[kvh * group + g];
        m = std::max(m, sink);
        sum = std::exp(sink - m);
      }
      for (int t = first; t < len; ++t)
        sum += (l[t] = std::exp(l[t] - m));
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int t = first; t < len; ++t) {
        size_t block =
            size_t(in.blockTables[size_t(s) * in.maxBlocksPerSeq + t / B]);
        size_t base = (block * in.numKvHeads + kvh) * size_t(D);
        for (int d = 0; d < D; ++d)
          acc[d] += l[t] * in.valueCache.value((base + d) * B + t % B);
      }
      double *o = &out[(size_t(row) * in.numHeads + kvh * group + g) * D];
      for (int d = 0; d < D; ++d)
        o[d] = acc[d] / sum;
    }
  }
}

/// float64 attention over the rounded inputs, [row][head][dim]: query
/// token j of q_len at sequence s attends to seq_lens[s] - q_len + j + 1
/// tokens (docs/features.md). (stress_decode's; runCase skips poisoned rows.)
[[maybe_unused]] std::vector<double> reference(const Inputs &in) {
  std::vector<double> out(size_t(in.numRows()) * in.numHeads * in.headSize,
                          0.0);
  for (int s = 0; s < in.numSeqs; ++s) {
    int q = in.queryLenOf(s);
    int first = in.queryStartLoc.empty() ? s : in.queryStartLoc[s];
    for (int j = 0; j < q; ++j)
      referenceRow(in, s, first + j, in.seqLens[s] - q + j + 1, out);
  }
  return out;
}

/// In a function that returns bool and fills `why`: a failed driver call
/// names itself in `why` and returns false.
#define E2E_CHECK_CU(expr, what)                                               \
  do {                                                                         \
    CUresult r_ = (expr);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      why = std::string(what) + ": " + driver.name(r_);                        \
      return false;                                                            \
    }                                                                          \
  } while (0)

pa_decode_args baseArgs(const Case &c, const Inputs &in) {
  pa_decode_args a;
  std::memset(&a, 0, sizeof(a));
  a.dtype = c.dtype;
  a.tmp_dtype = c.tmpDtype();
  a.num_seqs = in.numSeqs;
  a.num_heads = in.numHeads;
  a.num_kv_heads = in.numKvHeads;
  a.head_size = in.headSize;
  a.block_size = in.blockSize;
  a.num_blocks = in.numBlocks;
  a.max_blocks_per_seq = in.maxBlocksPerSeq;
  a.max_num_partitions = in.maxNumPartitions;
  a.partition_size = 512;
  a.max_seq_len =
      c.fixedGrid ? 0 : *std::max_element(in.seqLens.begin(), in.seqLens.end());
  a.scale = in.scale;
  a.sliding_window = in.slidingWindow;
  a.logits_soft_cap = in.softCap;
  a.alibi_slopes = in.alibiSlopes.empty() ? 0 : 0x100; // planning only: set below
  a.sinks = in.sinks.empty() ? 0 : 0x200;               // the same
  a.query_start_loc = in.queryStartLoc.empty() ? 0 : 0x300; // the same
  a.max_query_len = in.maxQueryLen;
  if (c.cache) {
    a.kv_cache_dtype = c.cache;
    // Device scales: the floats are 0, so only the device copy can give the
    // right answer. The pointers are stand-ins for planning: set below.
    bool kOnDevice = c.scales != kScalesArgs;
    bool vOnDevice = c.scales == kScalesDevice;
    a.k_scale = kOnDevice ? 0.0f : in.kScale;
    a.v_scale = vOnDevice ? 0.0f : in.vScale;
    a.k_scale_ptr = kOnDevice ? 0x100 : 0;
    a.v_scale_ptr = vOnDevice ? 0x104 : 0;
  }
  return a;
}

/// One bad value the device sees: block_tables[seq][index] (index -1:
/// seq_lens[seq]).
struct BadValue {
  int seq, index, value;
};

/// Poisons the device copies of the table and lengths (`in` keeps the good
/// ones, for planning and the reference). Returns the bad values.
std::vector<BadValue> poisonInputs(const Case &c, Rng &rng, Inputs &in,
                                   std::vector<int32_t> &tables,
                                   std::vector<int32_t> &lens) {
  std::vector<BadValue> bad;
  const int B = in.blockSize;
  auto blocksOf = [&](int s) { return (in.seqLens[s] + B - 1) / B; };
  auto set = [&](int s, int index, int value) {
    tables[size_t(s) * in.maxBlocksPerSeq + index] = value;
    bad.push_back({s, index, value});
  };
  const int kBadValues[] = {in.numBlocks, in.numBlocks + 12345, -1,
                            INT32_MIN};
  if (c.poison == kPoisonEntries) {
    // Sequence 0: one entry past the end; the last one (when there are
    // more than two): two, one of them negative. The others stay clean.
    set(0, rng.range(0, blocksOf(0) - 1), kBadValues[rng.range(0, 1)]);
    int last = in.numSeqs - 1;
    if (last >= 2) {
      int i = rng.range(0, blocksOf(last) - 1);
      set(last, i, kBadValues[2 + rng.range(0, 1)]);
      int j = rng.range(0, blocksOf(last) - 1);
      if (j != i)
        set(last, j, kBadValues[rng.range(0, 3)]);
    }
  } else if (c.poison == kPoisonSeqLen) {
    int s = in.numSeqs > 1 ? 1 : 0;
    int value = rng.range(0, 1) ? -3 : in.maxBlocksPerSeq * B + 1;
    lens[s] = value;
    bad.push_back({s, -1, value});
  } else if (c.poison == kPoisonEdges) {
    // Several query tokens per sequence (packed in one tensor-core program
    // where the tile holds more than a GQA group): the block of a
    // sequence's last context token, which its earlier query tokens may not
    // reach, or (with a window) the block of its first query token's window
    // start, which the later ones may have left. Only some rows of a pack
    // are then NaN.
    for (int s = 0; s < in.numSeqs; ++s) {
      int q = in.queryLenOf(s), len = in.seqLens[s];
      if (q < 2 || len < 1)
        continue;
      int first = std::max(0, len - q + 1 - std::max(in.slidingWindow, 0));
      int index = s % 2 == 0 || in.slidingWindow <= 0 ? (len - 1) / B
                                                       : first / B;
      set(s, index, kBadValues[rng.range(0, 3)]);
    }
  } else if (c.poison == kPoisonBeforeWindow) {
    // The longest sequence; a window that starts 1024 tokens or more after
    // its start, and a bad block at least 512 tokens before the window's
    // first token (more than a step of any kernel: never read).
    int s = int(std::max_element(in.seqLens.begin(), in.seqLens.end()) -
                in.seqLens.begin());
    int len = in.seqLens[s];
    in.slidingWindow = rng.range(1, len - 1024);
    int first = len - in.slidingWindow;
    set(s, rng.range(0, (first - 512) / B - 1), kBadValues[rng.range(0, 3)]);
  }
  return bad;
}

/// Whether row `row` (of sequence s, attending to `len` tokens) must be NaN
/// (docs/features.md, "Bad block tables"): its sequence's seq_len is bad, or
/// a bad entry covers a token of its range [window start, len).
bool rowPoisoned(const Inputs &in, const std::vector<BadValue> &bad, int s,
                 int len) {
  int first = in.slidingWindow > 0 ? std::max(0, len - in.slidingWindow) : 0;
  for (const BadValue &b : bad) {
    if (b.seq != s)
      continue;
    if (b.index < 0)
      return true;
    if (int64_t(b.index) * in.blockSize < len &&
        int64_t(b.index + 1) * in.blockSize > first)
      return true;
  }
  return false;
}

/// The plan of a case, for its report line.
std::string describePlan(const Case &c, const Inputs &in, const pa_plan &plan) {
  int maxLen = *std::max_element(in.seqLens.begin(), in.seqLens.end());
  // The cluster kernel runs in the one-pass kernel's place.
  std::string cluster = plan.cluster_size > 0
                            ? " cluster " + std::to_string(plan.cluster_size)
                            : "";
  char buf[512];
  std::snprintf(
      buf, sizeof(buf),
      "seqs %d max_len %d len[0] %d | %s parts %dx%d%s%s | %s | window %d "
      "cap %g alibi %s sinks %s q_len %d rows %d",
      in.numSeqs, maxLen, in.seqLens[0], c.fixedGrid ? "fixed" : "adaptive",
      plan.num_partitions, plan.partition_tokens,
      plan.one_pass ? " one-pass" : "", cluster.c_str(), plan.variant,
      in.slidingWindow, double(in.softCap),
      in.alibiSlopes.empty() ? "no" : "yes", in.sinks.empty() ? "no" : "yes",
      in.maxQueryLen, in.numRows());
  std::string detail = buf;
  if (c.cache) {
    std::snprintf(buf, sizeof(buf),
                  " | kv %s k_scale %g v_scale %g (%s; on the device: %s)",
                  cacheName(c.cache), double(in.kScale), double(in.vScale),
                  kScaleModeNames[c.scales],
                  c.scales == kScalesDevice  ? "k, v"
                  : c.scales == kScalesMixed ? "k"
                                             : "none");
    detail += buf;
  }
  return detail;
}

/// A case's device buffers, freed when the case ends.
struct DeviceInputs {
  DeviceBuffer dq, dk, dv, dbt, dlens, dout, des, dml, dtmp, dalibi, dscales,
      dsinks, dqsl;
};

/// Allocates and fills the buffers of the optional inputs the call uses:
/// query_start_loc, the fp8 scales on the device, ALiBi slopes, sinks.
bool uploadOptionalInputs(const Inputs &in, const pa_decode_args &args,
                          DeviceInputs &d, std::string &why) {
  if (!in.queryStartLoc.empty()) {
    E2E_CHECK_CU(d.dqsl.alloc(in.queryStartLoc.size() * 4),
                 "cuMemAlloc(query_start_loc)");
    E2E_CHECK_CU(
        driver.cuMemcpyHtoD(d.dqsl.ptr, in.queryStartLoc.data(), d.dqsl.bytes),
        "copy");
  }
  if (args.k_scale_ptr || args.v_scale_ptr) {
    // [k_scale, v_scale] as f32 on the device.
    float scales[2] = {in.kScale, in.vScale};
    E2E_CHECK_CU(d.dscales.alloc(sizeof(scales)), "cuMemAlloc(scales)");
    E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dscales.ptr, scales, sizeof(scales)),
                 "copy");
  }
  if (!in.alibiSlopes.empty()) {
    E2E_CHECK_CU(d.dalibi.alloc(in.alibiSlopes.size() * 4),
                 "cuMemAlloc(alibi_slopes)");
    E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dalibi.ptr, in.alibiSlopes.data(),
                                     d.dalibi.bytes),
                 "copy");
  }
  if (!in.sinks.empty()) {
    E2E_CHECK_CU(d.dsinks.alloc(in.sinks.size() * 4), "cuMemAlloc(sinks)");
    E2E_CHECK_CU(
        driver.cuMemcpyHtoD(d.dsinks.ptr, in.sinks.data(), d.dsinks.bytes),
        "copy");
  }
  return true;
}

/// Allocates and fills the buffers every call uses: the inputs (the table
/// and lengths as the device sees them), and the output and workspace
/// poisoned with NaN so that an element the kernels fail to write fails
/// the check. `output` is the host copy of the output.
bool uploadInputs(const Case &c, const Inputs &in,
                  const std::vector<int32_t> &deviceTables,
                  const std::vector<int32_t> &deviceLens, HostTensor &output,
                  DeviceInputs &d, std::string &why) {
  size_t rows = size_t(in.numRows()) * in.numHeads;
  size_t partRows = rows * in.maxNumPartitions;
  HostTensor tmp;
  output.resize(c.dtype, rows * in.headSize);
  output.setNaN();
  tmp.resize(c.tmpDtype(), partRows * in.headSize);
  tmp.setNaN();
  std::vector<float> stats(partRows, NAN);

  E2E_CHECK_CU(d.dq.alloc(in.query.bytes()), "cuMemAlloc(query)");
  E2E_CHECK_CU(d.dk.alloc(in.keyCache.bytes()), "cuMemAlloc(key_cache)");
  E2E_CHECK_CU(d.dv.alloc(in.valueCache.bytes()), "cuMemAlloc(value_cache)");
  E2E_CHECK_CU(d.dbt.alloc(in.blockTables.size() * 4),
               "cuMemAlloc(block_tables)");
  E2E_CHECK_CU(d.dlens.alloc(in.seqLens.size() * 4), "cuMemAlloc(seq_lens)");
  E2E_CHECK_CU(d.dout.alloc(output.bytes()), "cuMemAlloc(output)");
  E2E_CHECK_CU(d.des.alloc(partRows * 4), "cuMemAlloc(exp_sums)");
  E2E_CHECK_CU(d.dml.alloc(partRows * 4), "cuMemAlloc(max_logits)");
  E2E_CHECK_CU(d.dtmp.alloc(tmp.bytes()), "cuMemAlloc(tmp_output)");
  E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dq.ptr, in.query.data(), d.dq.bytes),
               "copy");
  E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dk.ptr, in.keyCache.data(), d.dk.bytes),
               "copy");
  E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dv.ptr, in.valueCache.data(), d.dv.bytes),
               "copy");
  E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dbt.ptr, deviceTables.data(), d.dbt.bytes),
               "copy");
  E2E_CHECK_CU(
      driver.cuMemcpyHtoD(d.dlens.ptr, deviceLens.data(), d.dlens.bytes),
      "copy");
  E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dout.ptr, output.data(), d.dout.bytes),
               "copy");
  E2E_CHECK_CU(driver.cuMemcpyHtoD(d.des.ptr, stats.data(), d.des.bytes),
               "copy");
  E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dml.ptr, stats.data(), d.dml.bytes),
               "copy");
  E2E_CHECK_CU(driver.cuMemcpyHtoD(d.dtmp.ptr, tmp.data(), d.dtmp.bytes),
               "copy");
  // A copy from pageable memory may return before its DMA lands; it runs on
  // the legacy stream, which the call's non-blocking stream does not wait
  // for. Without this, the NaN poison could land after the kernels' writes
  // (seen under 16 processes sharing a GPU: tmp_output rows NaN).
  E2E_CHECK_CU(driver.cuStreamSynchronize(nullptr), "copies landing");
  return true;
}

/// Points the call at the device buffers (the planning stand-ins go).
void pointArgsAt(const DeviceInputs &d, pa_decode_args &args) {
  args.query = d.dq.ptr;
  args.key_cache = d.dk.ptr;
  args.value_cache = d.dv.ptr;
  args.block_tables = d.dbt.ptr;
  args.seq_lens = d.dlens.ptr;
  args.output = d.dout.ptr;
  args.exp_sums = d.des.ptr;
  args.max_logits = d.dml.ptr;
  args.tmp_output = d.dtmp.ptr;
  args.alibi_slopes = d.dalibi.ptr;
  args.sinks = d.dsinks.ptr;
  args.query_start_loc = d.dqsl.ptr;
  if (args.k_scale_ptr)
    args.k_scale_ptr = d.dscales.ptr;
  if (args.v_scale_ptr)
    args.v_scale_ptr = d.dscales.ptr + sizeof(float);
}

/// Runs the call on `stream`, waits for it and copies the output back.
bool decodeAndCopyBack(pa_context *ctx, CUstream stream,
                       const pa_decode_args &args, const DeviceBuffer &dout,
                       HostTensor &output, std::string &why) {
  pa_status st = pa_decode_v2(ctx, &args, stream);
  if (st.code != PA_OK) {
    why = std::string("pa_decode_v2: ") + st.message;
    return false;
  }
  E2E_CHECK_CU(driver.cuStreamSynchronize(stream), "kernel execution");
  E2E_CHECK_CU(driver.cuMemcpyDtoH(output.data(), dout.ptr, dout.bytes),
               "copy back");
  return true;
}

/// Per query row: whether it must be NaN (it reads a bad value).
std::vector<char> poisonedRows(const Inputs &in,
                               const std::vector<BadValue> &bad) {
  std::vector<char> rowBad(size_t(in.numRows()), 0);
  for (int s = 0; s < in.numSeqs; ++s) {
    int q = in.queryLenOf(s);
    int first = in.queryStartLoc.empty() ? s : in.queryStartLoc[s];
    for (int j = 0; j < q; ++j)
      rowBad[size_t(first + j)] =
          rowPoisoned(in, bad, s, in.seqLens[s] - q + j + 1);
  }
  return rowBad;
}

/// The bad values some query row reads (a bad entry before a window is
/// never read).
std::vector<BadValue> badValuesRead(const Inputs &in,
                                    const std::vector<BadValue> &bad) {
  std::vector<BadValue> read;
  for (const BadValue &b : bad) {
    int q = in.queryLenOf(b.seq);
    for (int j = 0; j < q; ++j)
      if (rowPoisoned(in, {b}, b.seq, in.seqLens[b.seq] - q + j + 1)) {
        read.push_back(b);
        break;
      }
  }
  return read;
}

/// What the kernels recorded (pa_context_last_error): nothing for clean
/// inputs (and for a bad entry no program reads); else one of the bad
/// values `read`, once: the word is cleared after the report.
bool checkRecordedError(pa_context *ctx, CUstream stream,
                        const std::vector<BadValue> &read, std::string &why,
                        std::string &detail) {
  pa_kernel_error recorded;
  pa_status errSt = pa_context_last_error(ctx, stream, &recorded);
  if (read.empty()) {
    if (errSt.code != PA_OK) {
      why = std::string("pa_context_last_error after clean inputs: ") +
            errSt.message;
      return false;
    }
    return true;
  }
  bool known = false;
  for (const BadValue &b : read)
    known = known || (b.seq == recorded.seq && b.index == recorded.index &&
                      b.value == recorded.value);
  if (errSt.code != PA_ERROR_BAD_INPUT || recorded.count < 1 || !known) {
    char msg[1536];
    std::snprintf(msg, sizeof(msg),
                  "pa_context_last_error: code %d count %d (seq %d index %d "
                  "value %d) is not one of the %zu bad values read: %s",
                  int(errSt.code), recorded.count, recorded.seq, recorded.index,
                  recorded.value, read.size(), errSt.message);
    why = msg;
    return false;
  }
  detail += std::string(" | reported: ") + errSt.message;
  pa_status again = pa_context_last_error(ctx, stream, nullptr);
  if (again.code != PA_OK) {
    why = std::string("the error word was not cleared: ") + again.message;
    return false;
  }
  return true;
}

/// The output against the reference: the relative error over the rows
/// that must be correct, the NaNs among them, and the poisoned rows'
/// elements that are not NaN.
struct Comparison {
  double rel = 0;
  size_t elements = 0, nans = 0, missingNans = 0, badRows = 0;
};

/// Compares the output with the float64 reference. Poisoned rows (every
/// head) must be NaN, every other row correct.
Comparison compareOutput(const Inputs &in, const std::vector<char> &rowBad,
                         const HostTensor &output) {
  // float64 attention over the rounded inputs, [row][head][dim]: query
  // token j of q_len at sequence s attends to seq_lens[s] - q_len + j + 1
  // tokens (docs/features.md).
  std::vector<double> ref(size_t(in.numRows()) * in.numHeads * in.headSize,
                          0.0);
  for (int s = 0; s < in.numSeqs; ++s) {
    int q = in.queryLenOf(s);
    int first = in.queryStartLoc.empty() ? s : in.queryStartLoc[s];
    for (int j = 0; j < q; ++j)
      if (!rowBad[size_t(first + j)])
        referenceRow(in, s, first + j, in.seqLens[s] - q + j + 1, ref);
  }
  const size_t perRow = size_t(in.numHeads) * in.headSize;
  Comparison cmp;
  cmp.elements = ref.size();
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double o = output.get(i);
    if (rowBad[i / perRow]) {
      cmp.missingNans += !std::isnan(o);
      continue;
    }
    if (std::isnan(o)) {
      ++cmp.nans;
      continue;
    }
    num += (o - ref[i]) * (o - ref[i]);
    den += ref[i] * ref[i];
  }
  for (char r : rowBad)
    cmp.badRows += r != 0;
  cmp.rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return cmp;
}

/// The verdict on a compared output.
Result judge(const Case &c, const Comparison &cmp, std::string &why) {
  if (cmp.missingNans) {
    why = std::to_string(cmp.missingNans) +
          " output elements of rows that read a bad block-table entry (or "
          "seq_len) are not NaN";
    return Result{Result::Fail, cmp.rel};
  }
  if (cmp.nans) {
    why = std::to_string(cmp.nans) + " of " + std::to_string(cmp.elements) +
          " output elements are NaN";
    return Result{Result::Fail, cmp.rel};
  }
  if (!(cmp.rel <= errorBound(c.dtype))) {
    char msg[128];
    std::snprintf(msg, sizeof(msg), "rel err %.3e exceeds %.0e", cmp.rel,
                  errorBound(c.dtype));
    why = msg;
    return Result{Result::Fail, cmp.rel};
  }
  return Result{Result::Pass, cmp.rel};
}

/// Runs case `c`: its inputs (poisoned with --poison), the plan, the call,
/// the error word, and the output against the reference. `why` says why it
/// failed or was skipped; `detail` describes the call.
Result runCase(pa_context *ctx, CUstream stream, const Case &c,
               std::string &why, std::string &detail) {
  Rng rng(c.seed);
  Inputs in = makeInputs(c, rng);
  std::vector<int32_t> deviceTables = in.blockTables, deviceLens = in.seqLens;
  std::vector<BadValue> bad =
      poisonInputs(c, rng, in, deviceTables, deviceLens);
  pa_decode_args args = baseArgs(c, in);

  pa_plan plan;
  pa_status st = pa_plan_decode_v2(ctx, &args, &plan);
  if (st.code == PA_ERROR_UNSUPPORTED) {
    why = "no variant loaded";
    return Result{Result::Skip, 0};
  }
  if (st.code != PA_OK) {
    why = std::string("pa_plan_decode_v2: ") + st.message;
    return Result{Result::Fail, 0};
  }
  detail = describePlan(c, in, plan);

  HostTensor output;
  DeviceInputs d;
  if (!uploadOptionalInputs(in, args, d, why) ||
      !uploadInputs(c, in, deviceTables, deviceLens, output, d, why))
    return Result{Result::Fail, 0};
  pointArgsAt(d, args);
  if (!decodeAndCopyBack(ctx, stream, args, d.dout, output, why))
    return Result{Result::Fail, 0};

  std::vector<char> rowBad = poisonedRows(in, bad);
  std::vector<BadValue> read = badValuesRead(in, bad);
  if (!checkRecordedError(ctx, stream, read, why, detail))
    return Result{Result::Fail, 0};

  Comparison cmp = compareOutput(in, rowBad, output);
  if (c.poison) {
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  " | %zu bad values, %zu read, %zu of %d rows NaN", bad.size(),
                  read.size(), cmp.badRows, in.numRows());
    detail += buf;
  }
  return judge(c, cmp, why);
}

//===----------------------------------------------------------------------===//
// Driver program
//===----------------------------------------------------------------------===//

/// (dtype, cache dtype, head size, block size) keys the library serves
/// (tmp f32; the bundles of this build serve tmp_output in the dtype too):
/// caches of the dtype first, then the fp8 ones.
std::vector<Case> servedKeys(pa_context *ctx) {
  std::vector<Case> keys;
  for (pa_kv_cache_dtype cache :
       {PA_KV_CACHE_AUTO, PA_KV_CACHE_FP8_E4M3, PA_KV_CACHE_FP8_E5M2})
  for (pa_dtype d : kDtypes)
    for (int h : kHeadSizes)
      for (int b : kBlockSizes) {
        pa_decode_args a;
        std::memset(&a, 0, sizeof(a));
        a.dtype = d;
        a.kv_cache_dtype = cache;
        if (cache)
          a.k_scale = a.v_scale = 1;
        a.tmp_dtype = PA_F32;
        a.num_seqs = a.num_heads = a.num_kv_heads = 1;
        a.head_size = h;
        a.block_size = b;
        a.num_blocks = a.max_blocks_per_seq = a.max_num_partitions = 1;
        a.partition_size = 512;
        a.max_seq_len = 1;
        a.scale = 1;
        pa_plan plan;
        if (pa_plan_decode_v2(ctx, &a, &plan).code == PA_OK) {
          Case c;
          c.dtype = d;
          c.cache = cache;
          c.headSize = h;
          c.blockSize = b;
          keys.push_back(c);
        }
      }
  return keys;
}

void usage() {
  std::fprintf(stderr, "usage: e2e_decode --library DIR [--quick] [--seed N] "
                       "[--long] [--case ID] [--poison] [--shard K/N]\n");
}

struct Tally {
  int pass = 0, fail = 0, skip = 0;
  double maxErr = 0;
};

/// The command line.
struct HarnessOptions {
  std::string library;
  bool quick = false, withLong = false, poison = false;
  uint64_t seed = 1;
  int only = -1; // --case: the one case to run; -1: every case
  int shard = 0, shards = 1; // --shard K/N: the cases at K modulo N
};

/// Reads the command line into `o`; false (with the usage printed) when it
/// is not one.
bool parseArgs(int argc, char **argv, HarnessOptions &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--library" && i + 1 < argc)
      o.library = argv[++i];
    else if (a == "--quick")
      o.quick = true;
    else if (a == "--long")
      o.withLong = true;
    else if (a == "--poison")
      o.poison = true;
    else if (a == "--seed" && i + 1 < argc)
      o.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--case" && i + 1 < argc)
      o.only = std::atoi(argv[++i]);
    else if (a == "--shard" && i + 1 < argc &&
             std::sscanf(argv[i + 1], "%d/%d", &o.shard, &o.shards) == 2 &&
             o.shards > 0 && o.shard >= 0 && o.shard < o.shards)
      ++i;
    else {
      usage();
      return false;
    }
  }
  if (o.library.empty()) {
    usage();
    return false;
  }
  return true;
}

/// Loads the driver and makes device 0's primary context current, its name
/// in `name`; false (with the error printed) when that fails.
bool openDevice(CUdevice &device, char *name, int nameBytes) {
  if (!driver.load())
    return false;
  CUresult r = driver.cuInit(0);
  CUcontext primary = nullptr;
  if (r == CUDA_SUCCESS)
    r = driver.cuDeviceGet(&device, 0);
  if (r == CUDA_SUCCESS)
    r = driver.cuDevicePrimaryCtxRetain(&primary, device);
  if (r == CUDA_SUCCESS)
    r = driver.cuCtxPushCurrent(primary);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "error: no usable CUDA device 0: %s\n",
                 driver.name(r).c_str());
    return false;
  }
  driver.cuDeviceGetName(name, nameBytes, device);
  return true;
}

/// A context on device 0 with the library loaded, the run's header
/// printed; null (with the error printed) when that fails.
pa_context *openLibrary(const HarnessOptions &o, const char *deviceName) {
  pa_context *ctx = nullptr;
  pa_status st = pa_context_create(0, &ctx);
  if (st.code != PA_OK) {
    std::fprintf(stderr, "error: pa_context_create: %s\n", st.message);
    return nullptr;
  }
  st = pa_context_load_library(ctx, o.library.c_str());
  if (st.code != PA_OK) {
    std::fprintf(stderr, "error: pa_context_load_library: %s\n", st.message);
    pa_context_destroy(ctx);
    return nullptr;
  }
  std::printf("device 0: %s\n%s; %zu variants\n", deviceName, st.message,
              pa_context_num_variants(ctx));
  std::printf(
      "error bound ||out-ref||/||ref|| (float64 reference on the "
      "rounded inputs): f16 5e-3, bf16 1e-2, f32 1e-4; any NaN fails\n"
      "fp8 caches: the reference decodes the bytes exactly and applies "
      "k_scale/v_scale; bound of the query dtype\n");
  std::printf("seed %llu%s%s\n", static_cast<unsigned long long>(o.seed),
              o.quick ? " quick" : "", o.withLong ? " long" : "");
  return ctx;
}

/// Appends `c` as the next case; its id and seed follow from its place.
void appendCase(std::vector<Case> &cases, Case c, uint64_t seed) {
  c.id = int(cases.size());
  c.seed = seed * 1000003ull + uint64_t(c.id);
  cases.push_back(c);
}

/// Bad tables for served key `key`, the k-th (--poison): entries in the
/// adaptive grid (several partitions), in one-pass short contexts with GQA
/// 4, with several query tokens; a bad seq_len in both modes; a bad entry
/// before a window; bad blocks at the edges of query tokens' ranges.
void addPoisonCases(std::vector<Case> &cases, const Case &key, int k,
                    uint64_t seed) {
  struct P {
    int poison, shape;
    Profile profile;
    bool fixed;
    int features, queryLen;
  };
  const P kPoisonCases[] = {
      {kPoisonEntries, k % kNumShapes, kMedium, false, 0, 0},
      {kPoisonEntries, shapeIndex("GQA4"), kShort, true, kAlibi | kSinks, 0},
      {kPoisonEntries, (k + 3) % kNumShapes, kRagged, false, kSoftCap, 4},
      {kPoisonSeqLen, (k + 1) % kNumShapes, kRagged, false, kSinks, 0},
      {kPoisonSeqLen, shapeIndex("GQA4"), kShort, true, 0, 0},
      {kPoisonBeforeWindow, (k + 2) % kNumShapes, kMedium, false, 0, 0},
      // Packed tiles (GQA 4: two query tokens per 8-head tile): bad
      // blocks at the edges of the tokens' ranges.
      {kPoisonEdges, shapeIndex("GQA4"), kRagged, false, kWindow, 4},
      {kPoisonEdges, shapeIndex("GQA4"), kShort, true, 0, 4},
  };
  for (const P &p : kPoisonCases) {
    Case c = key;
    c.tmpHalf = halfTmp(c.dtype, k + int(&p - kPoisonCases));
    c.poison = p.poison;
    c.shape = p.shape;
    c.profile = p.profile;
    c.fixedGrid = p.fixed;
    c.features = p.features;
    c.queryLen = p.queryLen;
    c.scales = ScaleMode(k % kNumScaleModes);
    appendCase(cases, c, seed);
  }
}

/// Every group size (3 of them with --quick) for the k-th served key, both
/// modes: per key a plain case, a windowed one and one with every feature;
/// fp8 scales in the arguments, on the device (with the window, which
/// every bundle takes) and one of each, cycling.
void addShapeCases(std::vector<Case> &cases, const Case &key, int k, bool quick,
                   uint64_t seed) {
  int shapes = quick ? 3 : kNumShapes;
  for (int j = 0; j < shapes; ++j) {
    Case c = key;
    c.shape = quick ? (k + 4 * j) % kNumShapes : j;
    c.fixedGrid = (j + k) % 2 == 1;
    c.profile = j % 3 == 0 ? kShort : kRagged;
    c.features = j == 0 ? 0 : j == 1 ? kWindow : kAllFeatures;
    c.scales = ScaleMode(j % kNumScaleModes);
    c.tmpHalf = halfTmp(c.dtype, k + j / 2);
    appendCase(cases, c, seed);
  }
}

/// Several query tokens per sequence (speculative decoding: 1 + 1, 3, 7 or
/// 15 drafts, and 1) for the k-th served key, cycling the features, the
/// grid mode and the profile.
void addQueryTokenCases(std::vector<Case> &cases, const Case &key, int k,
                        bool quick, uint64_t seed) {
  for (int j = 0; j < (quick ? 1 : 2); ++j) {
    static const int kQueryLens[] = {2, 4, 8, 16, 1};
    Case c = key;
    c.queryLen = kQueryLens[(k + 2 * j) % 5];
    c.shape = (k * 3 + j * 5 + 2) % kNumShapes;
    c.fixedGrid = (k + j) % 2 == 0;
    c.profile = j == 0 ? kRagged : kMedium;
    c.features = (k + j) % 2 ? kAllFeatures : (k * 3 + j) % 16;
    c.scales = ScaleMode((k + j) % kNumScaleModes);
    c.tmpHalf = halfTmp(c.dtype, k / 2 + j);
    appendCase(cases, c, seed);
  }
}

/// Small grids of group 4 for the k-th served key, which run its wide twin
/// where the library has one, and on sm_90 its cluster kernel
/// (docs/runtime.md): 1-4 short sequences (4-16 programs), a plain call and
/// one with every feature in the fixed grid; then 1-2 sequences of a few
/// partitions' contexts (kFew): adaptive with cycling features, the fixed
/// grid with a workspace of one partition (one pass over the capacity),
/// and several query tokens: 4 (16 rows a KV head: the 16-head bundle) and
/// 2 (8 rows: the 8-head bundle's wide twin, whose cluster kernel on sm_90
/// stands in for up to 4 partitions with several tokens too).
void addSmallGridCases(std::vector<Case> &cases, const Case &key, int k,
                       uint64_t seed) {
  for (int j = 0; j < 6; ++j) {
    Case c = key;
    c.shape = shapeIndex("GQA4");
    c.profile = j < 2 ? kShort : kFew;
    c.fixedGrid = j == 1 || j == 3;
    c.onePartition = j == 3;
    c.features = j == 0   ? 0
                 : j == 2 ? (k * 5 + 3) % 16
                 : j == 4 ? (k % 2 ? kWindow | kSinks : kAllFeatures)
                 : j == 5 ? (k * 3 + 1) % 16
                          : kAllFeatures;
    c.queryLen = j == 4 ? 4 : j == 5 ? 2 : 0;
    c.scales = ScaleMode((k + j) % kNumScaleModes);
    c.tmpHalf = halfTmp(c.dtype, k + 1 + j / 2);
    appendCase(cases, c, seed);
  }
}

/// The cases of each served key, after `cases`: with --poison bad tables,
/// else every group size and both modes (so a sparse library is still
/// exercised across GQA shapes), several query tokens and small grids.
void addKeyCases(std::vector<Case> &cases, const std::vector<Case> &keys,
                 const HarnessOptions &o) {
  for (size_t k = 0; k < keys.size(); ++k) {
    if (o.poison) {
      addPoisonCases(cases, keys[k], int(k), o.seed);
      continue;
    }
    addShapeCases(cases, keys[k], int(k), o.quick, o.seed);
    addQueryTokenCases(cases, keys[k], int(k), o.quick, o.seed);
    addSmallGridCases(cases, keys[k], int(k), o.seed);
  }
}

/// What ran: the tallies in all and per variant key, and the values of
/// each dimension among the cases that passed.
struct Summary {
  Tally total;
  std::map<std::string, Tally> table;
  std::set<std::string> ranDtype, ranHead, ranBlock, ranShape, ranMode,
      ranProfile, ranFeature, ranCache, ranScales, ranTmp;
};

/// The dtype, and for an fp8 cache its type: "f16+fp8e4m3".
std::string typesOf(const Case &c) {
  std::string types = dtypeName(c.dtype);
  if (c.cache)
    types += std::string("+") + cacheName(c.cache);
  return types;
}

/// A case's report label: its id, seed and every dimension.
std::string caseLabel(const Case &c) {
  const HeadShape &shape = kHeadShapes[c.shape];
  std::string types = typesOf(c);
  char label[192];
  std::snprintf(
      label, sizeof(label),
      "case %3d seed %llu: %-4s d%-3d b%-2d %-5s %2d/%-2d %-6s %-8s %s%s%s%s%s",
      c.id, static_cast<unsigned long long>(c.seed), types.c_str(), c.headSize,
      c.blockSize, shape.label, shape.numHeads, shape.numKvHeads,
      kProfileNames[c.profile], c.fixedGrid ? "fixed" : "adaptive",
      featureLabel(c.features).c_str(), c.cache ? " scales " : "",
      c.cache ? kScaleModeNames[c.scales] : "", kPoisonNames[c.poison],
      c.tmpHalf ? " tmp=dtype" : "");
  return label;
}

/// A case's row in the summary table: its variant key.
std::string keyLabel(const Case &c) {
  char key[64];
  std::snprintf(key, sizeof(key), "%-4s d%-3d b%-2d", typesOf(c).c_str(),
                c.headSize, c.blockSize);
  return key;
}

/// Notes the values of a case that passed.
void notePassed(Summary &sum, const Case &c) {
  sum.ranDtype.insert(dtypeName(c.dtype));
  sum.ranTmp.insert(c.tmpHalf ? "dtype" : "f32");
  sum.ranCache.insert(cacheName(c.cache));
  if (c.cache)
    sum.ranScales.insert(kScaleModeNames[c.scales]);
  sum.ranHead.insert(std::to_string(c.headSize));
  sum.ranBlock.insert(std::to_string(c.blockSize));
  sum.ranShape.insert(kHeadShapes[c.shape].label);
  sum.ranMode.insert(c.fixedGrid ? "fixed" : "adaptive");
  sum.ranProfile.insert(kProfileNames[c.profile]);
  for (int f : {int(kAlibi), int(kWindow), int(kSoftCap), int(kSinks)})
    if (c.features & f)
      sum.ranFeature.insert(featureLabel(f));
}

/// Prints a case's line and counts it; false after a fault, which leaves
/// the CUDA context unusable: later cases cannot run.
bool reportCase(Summary &sum, const Case &c, const Result &res,
                const std::string &why, const std::string &detail) {
  std::string label = caseLabel(c);
  Tally &row = sum.table[keyLabel(c)];
  if (res.kind == Result::Skip) {
    ++sum.total.skip;
    ++row.skip;
    std::printf("SKIP %s: %s\n", label.c_str(), why.c_str());
  } else if (res.kind == Result::Pass) {
    ++sum.total.pass;
    ++row.pass;
    row.maxErr = std::max(row.maxErr, res.relErr);
    sum.total.maxErr = std::max(sum.total.maxErr, res.relErr);
    std::printf("PASS %s rel_err %.2e | %s\n", label.c_str(), res.relErr,
                detail.c_str());
    notePassed(sum, c);
  } else {
    ++sum.total.fail;
    ++row.fail;
    row.maxErr = std::max(row.maxErr, res.relErr);
    std::printf("FAIL %s: %s | %s\n", label.c_str(), why.c_str(),
                detail.c_str());
    if (why.rfind("kernel execution", 0) == 0) {
      // A fault poisons the CUDA context: later cases cannot run.
      std::printf("stopping: the CUDA context is unusable after a fault\n");
      return false;
    }
  }
  return true;
}

/// The table per variant key, the values that ran, the totals and the time
/// since `start`.
void printSummary(const Summary &sum,
                  std::chrono::steady_clock::time_point start) {
  std::printf("\n%-24s %5s %5s %5s %10s\n", "variant key", "pass", "fail",
              "skip", "max err");
  for (const auto &[key, row] : sum.table)
    std::printf("%-24s %5d %5d %5d %10.2e\n", key.c_str(), row.pass, row.fail,
                row.skip, row.maxErr);
  auto list = [](const std::set<std::string> &s) {
    std::string out;
    for (const std::string &v : s)
      out += (out.empty() ? "" : " ") + v;
    return out.empty() ? std::string("-") : out;
  };
  std::printf("\nran: dtypes [%s] head sizes [%s] block sizes [%s]\n"
              "     heads [%s] modes [%s] lengths [%s] features [%s]\n"
              "     caches [%s] fp8 scales [%s] tmp_output [%s]\n",
              list(sum.ranDtype).c_str(), list(sum.ranHead).c_str(),
              list(sum.ranBlock).c_str(), list(sum.ranShape).c_str(),
              list(sum.ranMode).c_str(), list(sum.ranProfile).c_str(),
              list(sum.ranFeature).c_str(), list(sum.ranCache).c_str(),
              list(sum.ranScales).c_str(), list(sum.ranTmp).c_str());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("%d passed, %d failed, %d skipped (max rel err %.2e, %.1f s)\n",
              sum.total.pass, sum.total.fail, sum.total.skip, sum.total.maxErr,
              seconds);
}

} // namespace

int main(int argc, char **argv) {
  // Line-buffered, so a log cut short by a timeout keeps the cases run.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  HarnessOptions o;
  if (!parseArgs(argc, argv, o))
    return 2;
  auto start = std::chrono::steady_clock::now();

  CUdevice device;
  char deviceName[256] = "";
  if (!openDevice(device, deviceName, int(sizeof(deviceName))))
    return 2;
  pa_context *ctx = openLibrary(o, deviceName);
  if (!ctx)
    return 2;

  std::vector<Case> cases = o.poison
                                ? std::vector<Case>()
                                : coveringCases(o.quick, o.withLong, o.seed);
  std::vector<Case> keys = servedKeys(ctx);
  addKeyCases(cases, keys, o);
  size_t fp8Keys = size_t(std::count_if(keys.begin(), keys.end(),
                                        [](const Case &k) { return k.cache; }));
  std::printf("%zu cases (%zu keys served, %zu of them with fp8 caches)\n",
              cases.size(), keys.size(), fp8Keys);

  CUstream stream = nullptr;
  CUresult r = driver.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "error: cuStreamCreate: %s\n", driver.name(r).c_str());
    return 2;
  }

  Summary sum;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    if ((o.only >= 0 && c.id != o.only) || int(i % o.shards) != o.shard)
      continue;
    std::string why, detail;
    Result res = runCase(ctx, stream, c, why, detail);
    if (!reportCase(sum, c, res, why, detail))
      break;
    std::fflush(stdout);
  }
  printSummary(sum, start);

  driver.cuStreamDestroy(stream);
  pa_context_destroy(ctx);
  CUcontext popped;
  driver.cuCtxPopCurrent(&popped);
  driver.cuDevicePrimaryCtxRelease(device);
  if (sum.total.fail)
    return 1;
  return sum.total.pass ? 0 : 3;
}
