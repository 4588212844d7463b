//===- host_test_support.h - host-test harness and fixtures -----*- C++ -*-===//
//
// The tiny test harness (run, CHECK macros; one "PASS name" / "FAIL name:
// why" line per case) and the fixtures the host-only tests share: manifest
// text with one line per record, bundles written to a temporary folder,
// H200- and V100-like devices, a valid decode call and host-only contexts.
//
//===----------------------------------------------------------------------===//

#ifndef PA_RUNTIME_TESTS_HOST_TEST_SUPPORT_H
#define PA_RUNTIME_TESTS_HOST_TEST_SUPPORT_H

#include "internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace pa_test {

using namespace pa;

//===----------------------------------------------------------------------===//
// A tiny test harness
//===----------------------------------------------------------------------===//

struct Harness {
  int passed = 0, failed = 0;
  long checks = 0;     // assertions evaluated, over all cases
  std::string failure; // first failure of the current case
};

inline Harness harness;

inline void fail(const char *file, int line, const std::string &why) {
  if (!harness.failure.empty())
    return;
  const char *base = std::strrchr(file, '/');
  harness.failure = std::string(base ? base + 1 : file) + ":" +
                    std::to_string(line) + ": " + why;
}

/// Runs one case. A case that evaluates no assertion fails: it tests
/// nothing. The line names the assertions the case evaluated, so a
/// refactoring of the tests can show it kept every one.
inline void run(const char *name, const std::function<void()> &body) {
  harness.failure.clear();
  long before = harness.checks;
  body();
  long checks = harness.checks - before;
  if (checks == 0 && harness.failure.empty())
    harness.failure = "the case evaluates no assertion";
  if (harness.failure.empty()) {
    ++harness.passed;
    std::printf("PASS %s (%ld checks)\n", name, checks);
  } else {
    ++harness.failed;
    std::printf("FAIL %s: %s\n", name, harness.failure.c_str());
  }
  std::fflush(stdout);
}

template <typename T> std::string show(const T &v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++harness.checks;                                                          \
    if (!(cond)) {                                                             \
      fail(__FILE__, __LINE__, "CHECK(" #cond ") failed");                     \
      return;                                                                  \
    }                                                                          \
  } while (0)

#define CHECK_EQ(a, b)                                                         \
  do {                                                                         \
    ++harness.checks;                                                          \
    auto va_ = (a);                                                            \
    auto vb_ = (b);                                                            \
    if (!(va_ == vb_)) {                                                       \
      fail(__FILE__, __LINE__,                                                 \
           std::string(#a " == " #b ": ") + show(va_) + " != " + show(vb_));   \
      return;                                                                  \
    }                                                                          \
  } while (0)

/// CHECK with a message built (only on failure) from the case's data.
#define CHECK_MSG(cond, why)                                                   \
  do {                                                                         \
    ++harness.checks;                                                          \
    if (!(cond)) {                                                             \
      fail(__FILE__, __LINE__, (why));                                         \
      return;                                                                  \
    }                                                                          \
  } while (0)

/// Checks a status's code and that its message contains `text`.
#define CHECK_STATUS(expr, expectedCode, text)                                 \
  do {                                                                         \
    ++harness.checks;                                                          \
    pa_status st_ = (expr);                                                    \
    std::string text_ = (text);                                                \
    if (st_.code != (expectedCode) ||                                          \
        std::strstr(st_.message, text_.c_str()) == nullptr) {                  \
      fail(__FILE__, __LINE__,                                                 \
           std::string(#expr ": got code ") + std::to_string(int(st_.code)) +  \
               " \"" + st_.message + "\", expected code " +                    \
               std::to_string(int(expectedCode)) + " containing \"" + text_ +  \
               "\"");                                                          \
      return;                                                                  \
    }                                                                          \
  } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, PA_OK, "")

//===----------------------------------------------------------------------===//
// Fixtures: manifests, bundles, devices, calls
//===----------------------------------------------------------------------===//

inline std::string tempRoot;
inline std::vector<std::string> createdFiles, createdDirs;

inline std::string makeDir(const std::string &name) {
  std::string path = tempRoot + "/" + name;
  if (mkdir(path.c_str(), 0755) == 0)
    createdDirs.push_back(path);
  return path;
}

inline void writeFile(const std::string &path, const std::string &text) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(2);
  }
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  createdFiles.push_back(path);
}

struct Spec {
  std::string name = "f16_d128_b16_h4_sm70";
  std::string chip = "sm_70";
  std::string dtype = "f16";
  /// tmp_dtype; "any" (tmp_output's type at run time) adds tmp_f32 to the
  /// partition and reduce kernels' params, as the compiler writes bundles
  /// now.
  std::string tmp = "f32";
  int head = 128, block = 16, tile = 4, warps = 4, step = 16;
  bool onePass = true;
  /// The feature parameters the kernels take after group_size: every
  /// variant the sliding window, _ext ones ALiBi and the soft cap too.
  std::string features = " sliding_window";
  /// cache_dtype; empty: the dtype. An fp8 one (f8E4M3FN, f8E5M2) adds the
  /// five scale parameters to the partition and one-pass kernels unless
  /// `fp8Scales` is false.
  std::string cache;
  bool fp8Scales = true;
  /// `wide_twin_of`: the bundle this one declares itself the twin of.
  std::string twinOf;
  /// The one-pass and reduce kernels take the attention sinks (`sinks
  /// has_sinks` at their end), as every bundle the compiler writes now does.
  bool sinks = false;
  /// Every kernel takes query_start_loc and max_query_len at its end and
  /// the grids' x carry the query slots, as the compiler writes bundles
  /// now (several query tokens per sequence).
  bool queryTokens = false;
  /// With queryTokens: the grids' x serve heads_per_program / group_size
  /// query tokens per program, as the compiler writes tensor-core bundles.
  bool packsTokens = false;
  /// Bounds checks (docs/runtime.md, "Bad block tables"): the partition
  /// kernel takes num_blocks at its end, the one-pass kernel num_blocks and
  /// error_word, the reducer block_tables first, max_blocks_per_seq and
  /// num_blocks error_word at its end, as the compiler writes bundles now.
  bool bounds = false;
  /// The partition and reduce kernels take partition_split after
  /// partition_tokens (the fixed grid's per-sequence split), as the
  /// compiler writes bundles now.
  bool split = false;
  /// > 0: `cluster_size` and the cluster kernel (the one-pass kernel's
  /// parameters, its grid with x times the cluster size), as the compiler
  /// writes the sm_90 `_w8` bundles. Written whether or not `onePass`.
  int cluster = 0;
  std::string cacheDtype() const { return cache.empty() ? dtype : cache; }
  bool fp8() const { return cache.compare(0, 2, "f8") == 0; }
};

inline const char kExtFeatures[] =
    " alibi_slopes has_alibi sliding_window logits_soft_cap";
inline const char kFp8Params[] =
    " k_scale v_scale k_scale_ptr v_scale_ptr scales_on_device";

inline std::vector<std::string> manifestLines(const Spec &s) {
  std::string h = std::to_string(s.tile);
  std::string mainParams =
      s.features + (s.fp8() && s.fp8Scales ? kFp8Params : "");
  std::string sinkParams = s.sinks ? " sinks has_sinks" : "";
  std::string qt = s.queryTokens ? " query_start_loc max_query_len" : "";
  std::string programSlots =
      s.packsTokens ? "ceil(query_slots/max(1,heads_per_program/group_size))"
                    : "query_slots";
  std::string slots = s.queryTokens ? "*" + programSlots : "";
  std::string bounds = s.bounds ? " num_blocks error_word" : "";
  std::string partitionBounds = s.bounds ? " num_blocks" : "";
  std::string split = s.split ? " partition_split" : "";
  std::string tmpFlag = s.tmp == "any" ? " tmp_f32" : "";
  std::vector<std::string> lines = {
      "paged_attn-bundle 1",
      "name " + s.name,
      "chip " + s.chip,
      "ptx " + s.name + ".ptx",
      "dtype " + s.dtype,
      "cache_dtype " + s.cacheDtype(),
      "tmp_dtype " + s.tmp,
      "head_size " + std::to_string(s.head),
      "block_size " + (s.block ? std::to_string(s.block) : "any"),
      "heads_per_program " + h,
      "warps " + std::to_string(s.warps),
      "token_step " + std::to_string(s.step),
      "kernel partition pa_" + s.name + "_partition threads " +
          std::to_string(32 * s.warps) + " smem 8448",
      "kernel reduce pa_" + s.name + "_reduce threads 128 smem 0",
      "params partition query key_cache value_cache block_tables seq_lens "
      "output exp_sums max_logits tmp_output scale max_blocks_per_seq "
      "max_num_partitions partition_tokens" + split +
          " num_kv_heads group_size" + mainParams + qt + partitionBounds +
          tmpFlag,
      std::string("params reduce ") + (s.bounds ? "block_tables " : "") +
          "output exp_sums max_logits tmp_output seq_lens " +
          (s.bounds ? "max_blocks_per_seq " : "") +
          "num_heads max_num_partitions partition_tokens" + split +
          std::string(s.features.find("sliding_window") != std::string::npos
                          ? " sliding_window"
                          : "") +
          " num_partitions" + sinkParams + qt + bounds + tmpFlag,
      "grid partition num_partitions" + slots +
          " num_kv_heads*ceil(group_size/heads_per_program) num_seqs",
      "grid reduce ceil(num_heads/ceil(4/ceil(num_partitions/8)))" +
          std::string(s.queryTokens ? "*query_slots" : "") +
          " num_seqs",
  };
  if (!s.twinOf.empty())
    lines.push_back("wide_twin_of " + s.twinOf);
  const std::string onePassParams =
      "query key_cache value_cache block_tables seq_lens output exp_sums "
      "max_logits tmp_output scale max_blocks_per_seq max_num_partitions "
      "partition_tokens num_kv_heads group_size" +
      mainParams + sinkParams + qt + bounds;
  if (s.onePass) {
    lines.push_back("kernel onepass pa_" + s.name +
                    "_onepass threads " + std::to_string(32 * s.warps) +
                    " smem 8448");
    lines.push_back("params onepass " + onePassParams);
    lines.push_back("grid onepass " +
                    (s.queryTokens ? programSlots : std::string("1")) +
                    " num_kv_heads*ceil(group_size/heads_per_program) "
                    "num_seqs");
  }
  if (s.cluster > 0) {
    std::string size = std::to_string(s.cluster);
    lines.push_back("cluster_size " + size);
    lines.push_back("kernel cluster pa_" + s.name + "_cluster threads " +
                    std::to_string(32 * s.warps) + " smem 37000");
    lines.push_back("params cluster " + onePassParams);
    lines.push_back("grid cluster " + size + "*" + programSlots +
                    " num_kv_heads*ceil(group_size/heads_per_program) "
                    "num_seqs");
  }
  return lines;
}

inline std::string join(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &l : lines)
    text += l + "\n";
  return text;
}

inline std::string ptxFor(const std::string &chip) {
  return "//\n// Generated by a test\n//\n.version 7.0\n.target " + chip +
         "\n.address_size 64\n";
}

/// Writes NAME.manifest and NAME.ptx into `dir`; returns the manifest path.
inline std::string writeBundle(const std::string &dir, const Spec &s) {
  std::string manifest = dir + "/" + s.name + ".manifest";
  writeFile(manifest, join(manifestLines(s)));
  writeFile(dir + "/" + s.name + ".ptx", ptxFor(s.chip));
  return manifest;
}

/// A parsed bundle description, without files.
inline BundleDesc descFor(const Spec &s) {
  BundleDesc d;
  pa_status st =
      parseManifest(join(manifestLines(s)), "mem/" + s.name + ".manifest", d);
  if (st.code != PA_OK) {
    std::fprintf(stderr, "fixture manifest does not parse: %s\n", st.message);
    std::exit(2);
  }
  return d;
}

inline Spec tileSpec(int tile) {
  Spec s;
  s.tile = tile;
  s.name = "f16_d128_b16_h" + std::to_string(tile) + "_sm70";
  return s;
}

/// An fp8-cache bundle: `cache` is f8E4M3FN or f8E5M2.
inline Spec fp8Spec(const std::string &cache,
                    const std::string &dtype = "f16") {
  Spec s;
  s.dtype = dtype;
  s.cache = cache;
  s.name = dtype + "_" + cache + "_d128_b16_h4_sm70";
  return s;
}

inline const DeviceInfo kH200{0, 90, 132};
inline const DeviceInfo kH100{0, 90, 132};
inline const DeviceInfo kA100{0, 80, 108};
inline const DeviceInfo kV100{0, 70, 80};

/// An sm_90 8-warp `_w8` bundle of the 8-head tile with a cluster kernel of
/// clusters of 4, as the compiler writes them.
inline Spec clusterSpec() {
  Spec s;
  s.chip = "sm_90";
  s.tile = 8;
  s.warps = 8;
  s.name = "f16_d128_b16_h8_w8_mma_sm90";
  s.cluster = 4;
  return s;
}

/// clusterSpec() and the 4-warp bundle it is the wide twin of (the same
/// kernel, no cluster kernel), the wide one first.
inline std::vector<Spec> clusterTwins() {
  Spec narrow = clusterSpec();
  narrow.name = "f16_d128_b16_h8_mma_sm90";
  narrow.warps = 4;
  narrow.cluster = 0;
  return {clusterSpec(), narrow};
}

/// A valid call: f16, 32 query heads on 8 KV heads, head 128, block 16,
/// room for 32768 tokens (2048 blocks per sequence, 64 partitions of 512).
inline pa_decode_args validArgs() {
  pa_decode_args a;
  std::memset(&a, 0, sizeof(a));
  a.dtype = PA_F16;
  a.tmp_dtype = PA_F32;
  a.num_seqs = 4;
  a.num_heads = 32;
  a.num_kv_heads = 8;
  a.head_size = 128;
  a.block_size = 16;
  a.num_blocks = 4 * 2048;
  a.max_blocks_per_seq = 2048;
  a.max_num_partitions = 64;
  a.partition_size = 512;
  a.max_seq_len = 4096;
  a.scale = 0.088f;
  CUdeviceptr p = 0x10000;
  for (CUdeviceptr *ptr :
       {&a.query, &a.key_cache, &a.value_cache, &a.block_tables, &a.seq_lens,
        &a.output, &a.exp_sums, &a.max_logits, &a.tmp_output}) {
    *ptr = p;
    p += 0x10000;
  }
  return a;
}

/// validArgs() with an fp8 E4M3 cache and its scales in the arguments.
inline pa_decode_args validFp8Args() {
  pa_decode_args a = validArgs();
  a.kv_cache_dtype = PA_KV_CACHE_FP8_E4M3;
  a.k_scale = 0.043f;
  a.v_scale = 0.021f;
  return a;
}

/// A host-only context on `device` holding the given variants.
struct HostContext {
  pa_context *ctx;
  explicit HostContext(const DeviceInfo &device,
                       const std::vector<Spec> &specs = {Spec()}) {
    ctx = makeHostContext(device);
    for (const Spec &s : specs)
      ctx->variants.push_back(descFor(s));
    for (size_t i = 0; i < ctx->variants.size(); ++i)
      ctx->modules.push_back(std::make_unique<ModuleSlot>());
    ctx->index.rebuild(ctx->variants);
    linkWideTwins(ctx->variants, ctx->index);
  }
  ~HostContext() { pa_context_destroy(ctx); }
};

/// The line number (1-based) of the first line starting with `prefix`.
inline int lineOf(const std::vector<std::string> &lines,
                  const std::string &prefix) {
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].compare(0, prefix.size(), prefix) == 0)
      return int(i) + 1;
  return -1;
}

/// Replaces the first line starting with `prefix` (erases it when `with` is
/// empty).
inline std::vector<std::string> replaced(std::vector<std::string> lines,
                                         const std::string &prefix,
                                         const std::string &with) {
  int at = lineOf(lines, prefix);
  if (at < 0) {
    std::fprintf(stderr, "fixture has no line '%s'\n", prefix.c_str());
    std::exit(2);
  }
  if (with.empty())
    lines.erase(lines.begin() + (at - 1));
  else
    lines[at - 1] = with;
  return lines;
}

inline std::string at(const std::string &path, int line) {
  return path + ":" + std::to_string(line) + ": ";
}

//===----------------------------------------------------------------------===//
// Test groups
//===----------------------------------------------------------------------===//

void manifestTests();
void gridExprTests();
void variantTests();
void argumentTests();
void planTests();
void marshalTests();
void lazyLoadingTests();
void hostEntryTests();
void queryTokenTests();
void boundsTests();
void tmpDtypeTests();

} // namespace pa_test

#endif // PA_RUNTIME_TESTS_HOST_TEST_SUPPORT_H
