//===- manifest.cpp - strict parser of the bundle manifest ----------------===//
//
// Reads the text manifest pa-opt's export writes (docs/bundle-format.md).
// Strict on purpose: an unknown record, a missing or repeated one, a bad
// number or an unknown name is PA_ERROR_BUNDLE with "file:line: what", so a
// compiler/runtime mismatch fails at load, never as a wrong launch.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unordered_map>

namespace pa {

//===----------------------------------------------------------------------===//
// Vocabulary
//===----------------------------------------------------------------------===//

const char *dtypeName(int dtype) {
  switch (dtype) {
  case PA_F16:
    return "f16";
  case PA_BF16:
    return "bf16";
  case PA_F32:
    return "f32";
  }
  return nullptr;
}

bool parseDtype(const std::string &text, pa_dtype &out) {
  for (int d : {PA_F16, PA_BF16, PA_F32}) {
    if (text == dtypeName(d)) {
      out = pa_dtype(d);
      return true;
    }
  }
  return false;
}

const char *elemTypeName(int type) {
  switch (type) {
  case kElemF8E4M3FN:
    return "f8E4M3FN";
  case kElemF8E5M2:
    return "f8E5M2";
  }
  return dtypeName(type);
}

bool parseElemType(const std::string &text, ElemType &out) {
  for (int t : {kElemF16, kElemBF16, kElemF32, kElemF8E4M3FN, kElemF8E5M2}) {
    if (text == elemTypeName(t)) {
      out = ElemType(t);
      return true;
    }
  }
  return false;
}

int dtypeBytes(int type) {
  return type == PA_F32 ? 4 : isFp8(type) ? 1 : 2;
}

ElemType callCacheType(const pa_decode_args &args) {
  switch (args.kv_cache_dtype) {
  case PA_KV_CACHE_FP8_E4M3:
    return kElemF8E4M3FN;
  case PA_KV_CACHE_FP8_E5M2:
    return kElemF8E5M2;
  case PA_KV_CACHE_AUTO:
    break;
  }
  return ElemType(args.dtype);
}

bool BundleDesc::takesFp8Scales() const {
  for (Role role : {Role::Partition, Role::OnePass}) {
    if (role == Role::OnePass && !hasOnePass())
      continue;
    for (ParamId p : {ParamId::KScale, ParamId::VScale, ParamId::KScalePtr,
                      ParamId::VScalePtr, ParamId::ScalesOnDevice})
      if (!takes(p, role))
        return false;
  }
  return true;
}

bool BundleDesc::takesSinks() const {
  for (Role role : {Role::OnePass, Role::Reduce}) {
    if (role == Role::OnePass && !hasOnePass())
      continue;
    if (!takes(ParamId::Sinks, role) || !takes(ParamId::HasSinks, role))
      return false;
  }
  return true;
}

bool BundleDesc::takesQueryTokens() const {
  for (Role role : {Role::Partition, Role::OnePass, Role::Reduce}) {
    if (role == Role::OnePass && !hasOnePass())
      continue;
    if (!takes(ParamId::QueryStartLoc, role) ||
        !takes(ParamId::MaxQueryLen, role))
      return false;
  }
  return true;
}

const char *roleName(Role role) {
  switch (role) {
  case Role::Partition:
    return "partition";
  case Role::OnePass:
    return "onepass";
  case Role::Reduce:
    return "reduce";
  case Role::Cluster:
    return "cluster";
  }
  return "?";
}

static const char *const kParamNames[kNumParamIds] = {"query",
                                                      "key_cache",
                                                      "value_cache",
                                                      "block_tables",
                                                      "seq_lens",
                                                      "output",
                                                      "exp_sums",
                                                      "max_logits",
                                                      "tmp_output",
                                                      "scale",
                                                      "num_seqs",
                                                      "num_heads",
                                                      "num_kv_heads",
                                                      "group_size",
                                                      "head_size",
                                                      "block_size",
                                                      "num_blocks",
                                                      "max_blocks_per_seq",
                                                      "max_num_partitions",
                                                      "partition_tokens",
                                                      "partition_split",
                                                      "num_partitions",
                                                      "max_seq_len",
                                                      "alibi_slopes",
                                                      "has_alibi",
                                                      "sliding_window",
                                                      "logits_soft_cap",
                                                      "k_scale",
                                                      "v_scale",
                                                      "k_scale_ptr",
                                                      "v_scale_ptr",
                                                      "scales_on_device",
                                                      "sinks",
                                                      "has_sinks",
                                                      "query_start_loc",
                                                      "max_query_len",
                                                      "error_word",
                                                      "tmp_f32"};

const char *paramName(ParamId id) { return kParamNames[int(id)]; }

/// The ParamId named `name`, or -1 (a hash lookup: a library holds
/// thousands of manifests of some 50 parameter names each).
static int paramIdOf(const std::string &name) {
  static const std::unordered_map<std::string, int> ids = [] {
    std::unordered_map<std::string, int> m;
    for (int p = 0; p < kNumParamIds; ++p)
      m.emplace(kParamNames[p], p);
    return m;
  }();
  auto it = ids.find(name);
  return it == ids.end() ? -1 : it->second;
}

bool isPointerParam(ParamId id) {
  return id <= ParamId::TmpOutput || id == ParamId::AlibiSlopes ||
         id == ParamId::KScalePtr || id == ParamId::VScalePtr ||
         id == ParamId::Sinks || id == ParamId::QueryStartLoc ||
         id == ParamId::ErrorWord;
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

/// The largest manifest, PTX or SASS file read (the library's largest PTX
/// is about 0.2 MB).
constexpr uint64_t kMaxFileBytes = uint64_t(256) << 20;

pa_status readFile(const std::string &path, const char *what,
                   std::string &out) {
  out.clear();
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return makeStatus(PA_ERROR_IO, "cannot open %s '%s': %s", what,
                      path.c_str(), std::strerror(errno));
  // Only regular files, and not past kMaxFileBytes: a path that names a
  // device or a pipe (/dev/zero) would otherwise be read forever.
  struct stat info;
  if (fstat(fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
    std::fclose(file);
    return makeStatus(PA_ERROR_IO, "%s '%s' is not a regular file", what,
                      path.c_str());
  }
  if (uint64_t(info.st_size) > kMaxFileBytes) {
    std::fclose(file);
    return makeStatus(PA_ERROR_IO, "%s '%s' has %lld bytes, more than the %llu "
                      "a bundle file may have",
                      what, path.c_str(), static_cast<long long>(info.st_size),
                      static_cast<unsigned long long>(kMaxFileBytes));
  }
  char chunk[65536];
  size_t n;
  while (out.size() <= kMaxFileBytes &&
         (n = std::fread(chunk, 1, sizeof(chunk), file)) > 0)
    out.append(chunk, n);
  bool failed = std::ferror(file);
  int err = errno;
  std::fclose(file);
  if (failed)
    return makeStatus(PA_ERROR_IO, "cannot read %s '%s': %s", what,
                      path.c_str(), std::strerror(err));
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

std::vector<std::string> splitWords(const std::string &line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    if (i > start)
      words.push_back(line.substr(start, i - start));
  }
  return words;
}

/// Strict decimal integer in [lo, hi]: no sign, no spaces, no suffix.
bool parseInt(const std::string &text, int64_t lo, int64_t hi, int &out) {
  if (text.empty() || text.size() > 10)
    return false;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  if (value < lo || value > hi)
    return false;
  out = int(value);
  return true;
}

bool parseRole(const std::string &text, Role &out) {
  for (int r = 0; r < kNumRoles; ++r) {
    if (text == roleName(Role(r))) {
      out = Role(r);
      return true;
    }
  }
  return false;
}

/// The single-valued records, in the order a missing one is reported.
enum Scalar {
  kName,
  kChip,
  kPtx,
  kDtype,
  kCacheDtype,
  kTmpDtype,
  kHeadSize,
  kBlockSize,
  kHeadsPerProgram,
  kWarps,
  kTokenStep,
  kNumScalars
};
const char *const kScalarNames[kNumScalars] = {
    "name",      "chip",        "ptx",
    "dtype",     "cache_dtype", "tmp_dtype",
    "head_size", "block_size",  "heads_per_program",
    "warps",     "token_step"};

/// The Scalar record named `key`, or -1.
int scalarOf(const std::string &key) {
  static const std::unordered_map<std::string, int> scalars = [] {
    std::unordered_map<std::string, int> m;
    for (int s = 0; s < kNumScalars; ++s)
      m.emplace(kScalarNames[s], s);
    return m;
  }();
  auto it = scalars.find(key);
  return it == scalars.end() ? -1 : it->second;
}

class ManifestParser {
public:
  ManifestParser(const std::string &path, BundleDesc &out)
      : path(path), out(out) {}

  pa_status parse(const std::string &text);

private:
  pa_status error(int line, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));
  pa_status parseLine(int line, const std::vector<std::string> &words);
  pa_status parseScalar(int line, Scalar which,
                        const std::vector<std::string> &words);
  pa_status parseKernel(int line, const std::vector<std::string> &words);
  pa_status parseParams(int line, const std::vector<std::string> &words);
  pa_status parseGrid(int line, const std::vector<std::string> &words);
  pa_status parseTwinOf(int line, const std::vector<std::string> &words);
  pa_status parseSass(int line, const std::vector<std::string> &words);
  pa_status parseClusterSize(int line, const std::vector<std::string> &words);
  pa_status parseMagic(const std::vector<std::string> &words);
  pa_status checkComplete();
  pa_status checkCluster();

  const std::string &path;
  BundleDesc &out;
  int scalarLine[kNumScalars] = {};
  int kernelLine[kNumRoles] = {};
  int paramsLine[kNumRoles] = {};
  int gridLine[kNumRoles] = {};
  int twinOfLine = 0;
  int sassLine = 0;
  int clusterSizeLine = 0;
};

pa_status ManifestParser::error(int line, const char *fmt, ...) {
  char what[768];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(what, sizeof(what), fmt, args);
  va_end(args);
  if (line > 0)
    return makeStatus(PA_ERROR_BUNDLE, "%s:%d: %s", path.c_str(), line, what);
  return makeStatus(PA_ERROR_BUNDLE, "%s: %s", path.c_str(), what);
}

pa_status ManifestParser::parse(const std::string &text) {
  out = BundleDesc();
  out.manifestPath = path;
  if (text.empty())
    return error(1, "empty manifest: expected 'paged_attn-bundle 1'");
  int line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    size_t hash = raw.find('#');
    if (hash != std::string::npos)
      raw.resize(hash);
    if (!raw.empty() && raw.back() == '\r')
      raw.pop_back();
    std::vector<std::string> words = splitWords(raw);
    if (line == 1) {
      PA_RETURN_IF_ERROR(parseMagic(words));
      continue;
    }
    if (!words.empty())
      PA_RETURN_IF_ERROR(parseLine(line, words));
  }
  return checkComplete();
}

pa_status ManifestParser::parseMagic(const std::vector<std::string> &words) {
  if (words.empty() || words[0] != "paged_attn-bundle")
    return error(1, "not a paged_attn bundle manifest: the first line must "
                    "be 'paged_attn-bundle 1'");
  if (words.size() != 2)
    return error(1, "the first line must be 'paged_attn-bundle 1'");
  int version = 0;
  if (!parseInt(words[1], 0, INT32_MAX, version))
    return error(1, "bad format version '%s'", words[1].c_str());
  if (version != 1)
    return error(1,
                 "bundle format version %d is not supported (this runtime "
                 "reads version 1)",
                 version);
  return okStatus();
}

pa_status ManifestParser::parseLine(int line,
                                    const std::vector<std::string> &words) {
  const std::string &key = words[0];
  int scalar = scalarOf(key);
  if (scalar >= 0)
    return parseScalar(line, Scalar(scalar), words);
  if (key == "kernel")
    return parseKernel(line, words);
  if (key == "params")
    return parseParams(line, words);
  if (key == "grid")
    return parseGrid(line, words);
  if (key == "wide_twin_of")
    return parseTwinOf(line, words);
  if (key == "sass")
    return parseSass(line, words);
  if (key == "cluster_size")
    return parseClusterSize(line, words);
  if (key == "paged_attn-bundle")
    return error(line, "the magic 'paged_attn-bundle' may only be the first "
                       "line");
  return error(line, "unknown record '%s'", key.c_str());
}

pa_status ManifestParser::parseScalar(int line, Scalar which,
                                      const std::vector<std::string> &words) {
  const char *key = kScalarNames[which];
  if (scalarLine[which])
    return error(line, "duplicate record '%s' (first at line %d)", key,
                 scalarLine[which]);
  if (words.size() != 2)
    return error(line, "record '%s' takes exactly one value, got %zu", key,
                 words.size() - 1);
  scalarLine[which] = line;
  const std::string &value = words[1];
  switch (which) {
  case kName:
    if (value.size() >= sizeof(pa_plan::variant))
      return error(line, "name '%s' is longer than %zu characters",
                   value.c_str(), sizeof(pa_plan::variant) - 1);
    out.name = value;
    return okStatus();
  case kChip:
    if (!parseChip(value, out.chipVersion, out.chipArchSpecific))
      return error(line, "bad chip '%s' (expected sm_XY, e.g. sm_70)",
                   value.c_str());
    out.chip = value;
    return okStatus();
  case kPtx:
    out.ptx = value;
    return okStatus();
  case kTmpDtype:
    if (value == "any") { // a run-time kernel parameter (tmp_f32)
      out.tmpAny = true;
      return okStatus();
    }
    [[fallthrough]];
  case kDtype: {
    pa_dtype *field = which == kDtype ? &out.dtype : &out.tmpDtype;
    if (!parseDtype(value, *field))
      return error(line, "unknown %s '%s' (expected f16, bf16 or f32)", key,
                   value.c_str());
    return okStatus();
  }
  case kCacheDtype:
    if (!parseElemType(value, out.cacheDtype))
      return error(line,
                   "unknown cache_dtype '%s' (expected f16, bf16, f32, "
                   "f8E4M3FN or f8E5M2)",
                   value.c_str());
    return okStatus();
  default:
    break;
  }
  if (which == kBlockSize && value == "any") {
    out.blockSize = kAnyBlockSize; // a run-time kernel parameter
    return okStatus();
  }
  int *field = which == kHeadSize          ? &out.headSize
               : which == kBlockSize       ? &out.blockSize
               : which == kHeadsPerProgram ? &out.headsPerProgram
               : which == kWarps           ? &out.warps
                                           : &out.tokenStep;
  int64_t hi = which == kWarps ? 32 : 65536;
  if (!parseInt(value, 1, hi, *field))
    return error(line,
                 "bad number '%s' for %s (expected an integer in "
                 "1..%lld%s)",
                 value.c_str(), key, static_cast<long long>(hi),
                 which == kBlockSize ? " or 'any'" : "");
  return okStatus();
}

pa_status ManifestParser::parseKernel(int line,
                                      const std::vector<std::string> &words) {
  // kernel ROLE SYMBOL threads N smem BYTES
  if (words.size() != 7 || words[3] != "threads" || words[5] != "smem")
    return error(line, "expected 'kernel ROLE SYMBOL threads N smem BYTES'");
  Role role;
  if (!parseRole(words[1], role))
    return error(line,
                 "unknown kernel role '%s' (expected partition, onepass, "
                 "reduce or cluster)",
                 words[1].c_str());
  KernelDesc &kernel = out.kernels[int(role)];
  if (kernelLine[int(role)])
    return error(line, "duplicate record 'kernel %s' (first at line %d)",
                 words[1].c_str(), kernelLine[int(role)]);
  kernelLine[int(role)] = line;
  kernel.present = true;
  kernel.symbol = words[2];
  if (!parseInt(words[4], 1, 1024, kernel.threads))
    return error(line, "bad number '%s' for threads (expected 1..1024)",
                 words[4].c_str());
  if (!parseInt(words[6], 0, 1 << 20, kernel.smem))
    return error(line, "bad number '%s' for smem (expected bytes, 0..%d)",
                 words[6].c_str(), 1 << 20);
  return okStatus();
}

pa_status ManifestParser::parseParams(int line,
                                      const std::vector<std::string> &words) {
  if (words.size() < 2)
    return error(line, "expected 'params ROLE NAME...'");
  Role role;
  if (!parseRole(words[1], role))
    return error(line,
                 "unknown params role '%s' (expected partition, "
                 "onepass, reduce or cluster)",
                 words[1].c_str());
  KernelDesc &kernel = out.kernels[int(role)];
  if (paramsLine[int(role)])
    return error(line, "duplicate record 'params %s' (first at line %d)",
                 words[1].c_str(), paramsLine[int(role)]);
  paramsLine[int(role)] = line;
  if (words.size() - 2 > size_t(kMaxParams))
    return error(line, "%zu parameters; at most %d are supported",
                 words.size() - 2, kMaxParams);
  kernel.hasParams = true;
  bool seen[kNumParamIds] = {};
  for (size_t i = 2; i < words.size(); ++i) {
    int id = paramIdOf(words[i]);
    if (id < 0)
      return error(line, "unknown param '%s' of kernel %s", words[i].c_str(),
                   words[1].c_str());
    if (seen[id])
      return error(line, "param '%s' appears twice", words[i].c_str());
    seen[id] = true;
    kernel.params.push_back(ParamId(id));
  }
  return okStatus();
}

pa_status ManifestParser::parseGrid(int line,
                                    const std::vector<std::string> &words) {
  // grid ROLE X [Y [Z]]: omitted dimensions are 1.
  if (words.size() < 3 || words.size() > 5)
    return error(line, "expected 'grid ROLE X [Y [Z]]' (one to three "
                       "expressions without spaces)");
  Role role;
  if (!parseRole(words[1], role))
    return error(line,
                 "unknown grid role '%s' (expected partition, onepass, "
                 "reduce or cluster)",
                 words[1].c_str());
  KernelDesc &kernel = out.kernels[int(role)];
  if (gridLine[int(role)])
    return error(line, "duplicate record 'grid %s' (first at line %d)",
                 words[1].c_str(), gridLine[int(role)]);
  gridLine[int(role)] = line;
  kernel.hasGrid = true;
  static const char *const kDims[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; ++d) {
    std::string text = 2 + size_t(d) < words.size() ? words[2 + d] : "1";
    std::string why;
    if (!parseGridExpr(text, kernel.grid[d], why))
      return error(line, "bad grid %s expression '%s': %s", kDims[d],
                   text.c_str(), why.c_str());
  }
  return okStatus();
}

pa_status ManifestParser::parseTwinOf(int line,
                                      const std::vector<std::string> &words) {
  // wide_twin_of BUNDLE (optional): this bundle runs only as BUNDLE's wide
  // twin, never chosen on its own (docs/bundle-format.md).
  if (twinOfLine)
    return error(line, "duplicate record 'wide_twin_of' (first at line %d)",
                 twinOfLine);
  if (words.size() != 2)
    return error(line, "record 'wide_twin_of' takes exactly one value, got "
                       "%zu",
                 words.size() - 1);
  twinOfLine = line;
  out.twinOf = words[1];
  return okStatus();
}

pa_status ManifestParser::parseSass(int line,
                                    const std::vector<std::string> &words) {
  // sass CHIP FILE (optional): the PTX assembled for CHIP, which must be the
  // bundle's chip; loaded instead of the PTX on a device of exactly it.
  if (sassLine)
    return error(line, "duplicate record 'sass' (first at line %d)", sassLine);
  if (words.size() != 3)
    return error(line, "expected 'sass CHIP FILE'");
  sassLine = line;
  int version = 0;
  bool specific = false;
  if (!parseChip(words[1], version, specific))
    return error(line, "bad chip '%s' in 'sass' (expected sm_XY)",
                 words[1].c_str());
  out.sassChip = words[1];
  out.sass = words[2];
  return okStatus();
}

pa_status
ManifestParser::parseClusterSize(int line,
                                 const std::vector<std::string> &words) {
  // cluster_size S (with the cluster kernel only): its programs per
  // thread-block cluster, as compiled into its PTX (.reqnctapercluster).
  if (clusterSizeLine)
    return error(line, "duplicate record 'cluster_size' (first at line %d)",
                 clusterSizeLine);
  if (words.size() != 2)
    return error(line, "record 'cluster_size' takes exactly one value, got %zu",
                 words.size() - 1);
  clusterSizeLine = line;
  if (!parseInt(words[1], 2, 8, out.clusterSize))
    return error(line,
                 "bad number '%s' for cluster_size (expected an integer in "
                 "2..8, the programs of one thread-block cluster)",
                 words[1].c_str());
  return okStatus();
}

/// `file` resolved against the folder of the manifest at `manifest`.
static std::string besideManifest(const std::string &manifest,
                                  const std::string &file) {
  if (!file.empty() && file[0] == '/')
    return file;
  size_t slash = manifest.rfind('/');
  return slash == std::string::npos ? file
                                    : manifest.substr(0, slash + 1) + file;
}

pa_status ManifestParser::checkComplete() {
  for (int s = 0; s < kNumScalars; ++s)
    if (!scalarLine[s])
      return error(0, "missing record '%s'", kScalarNames[s]);
  for (Role role : {Role::Partition, Role::Reduce})
    if (!kernelLine[int(role)])
      return error(0, "missing record 'kernel %s'", roleName(role));
  for (int r = 0; r < kNumRoles; ++r) {
    const char *name = roleName(Role(r));
    if (kernelLine[r]) {
      if (!paramsLine[r])
        return error(0, "missing record 'params %s'", name);
      if (!gridLine[r])
        return error(0, "missing record 'grid %s'", name);
    } else {
      if (paramsLine[r])
        return error(paramsLine[r], "'params %s' without a 'kernel %s' record",
                     name, name);
      if (gridLine[r])
        return error(gridLine[r], "'grid %s' without a 'kernel %s' record",
                     name, name);
    }
  }
  PA_RETURN_IF_ERROR(checkCluster());
  if (out.twinOf == out.name)
    return error(twinOfLine, "bundle '%s' cannot be its own wide twin",
                 out.name.c_str());
  if (out.cacheDtype != ElemType(out.dtype) && !isFp8(out.cacheDtype))
    return error(scalarLine[kCacheDtype],
                 "cache_dtype %s differs from dtype %s: only caches of the "
                 "query's type or fp8 caches (f8E4M3FN, f8E5M2) are supported",
                 elemTypeName(out.cacheDtype), dtypeName(out.dtype));
  if (out.tmpAny) {
    // The kernels that touch tmp_output must be told its type.
    for (Role role : {Role::Partition, Role::Reduce})
      if (!out.takes(ParamId::TmpF32, role))
        return error(scalarLine[kTmpDtype],
                     "tmp_dtype any, but the %s kernel does not take "
                     "tmp_f32 (tmp_output's type at run time)",
                     roleName(role));
  } else if (out.tmpDtype != PA_F32 && out.tmpDtype != out.dtype)
    return error(scalarLine[kTmpDtype],
                 "tmp_dtype %s must be f32 or the dtype (%s)",
                 dtypeName(out.tmpDtype), dtypeName(out.dtype));
  // The key cache's x-packing is in cache elements: 16 for fp8.
  int x = 16 / dtypeBytes(out.cacheDtype);
  if (out.headSize % x != 0)
    return error(scalarLine[kHeadSize],
                 "head_size %d is not a multiple of x = %d (16 bytes of %s)",
                 out.headSize, x, elemTypeName(out.cacheDtype));
  if (sassLine && out.sassChip != out.chip)
    return error(sassLine,
                 "the SASS is for %s but the bundle's chip is %s: a bundle "
                 "carries machine code for its own chip only",
                 out.sassChip.c_str(), out.chip.c_str());
  // The PTX and SASS sit beside the manifest unless their paths are absolute.
  out.ptxPath = besideManifest(path, out.ptx);
  if (sassLine)
    out.sassPath = besideManifest(path, out.sass);
  return okStatus();
}

/// The cluster kernel's records (every kernel already has its params and
/// grid): it runs instead of the one-pass kernel, so it needs one, takes
/// exactly its parameters, and comes with cluster_size; clusters need sm_90.
pa_status ManifestParser::checkCluster() {
  const int kernel = kernelLine[int(Role::Cluster)];
  if (!kernel) {
    if (clusterSizeLine)
      return error(clusterSizeLine,
                   "'cluster_size' without a 'kernel cluster' record");
    return okStatus();
  }
  if (!kernelLine[int(Role::OnePass)])
    return error(kernel,
                 "'kernel cluster' without a 'kernel onepass' record: the "
                 "cluster kernel computes the one-pass kernel's output and "
                 "runs only where that kernel would");
  if (!clusterSizeLine)
    return error(kernel, "'kernel cluster' without a 'cluster_size' record");
  const std::vector<ParamId> &cluster = out.kernel(Role::Cluster).params,
                             &onePass = out.kernel(Role::OnePass).params;
  if (cluster != onePass) {
    size_t i = 0;
    while (i < cluster.size() && i < onePass.size() && cluster[i] == onePass[i])
      ++i;
    return error(paramsLine[int(Role::Cluster)],
                 "'params cluster' differs from 'params onepass' (line %d) at "
                 "parameter %zu (%s, expected %s): the cluster kernel takes "
                 "exactly the one-pass kernel's parameters",
                 paramsLine[int(Role::OnePass)], i + 1,
                 i < cluster.size() ? paramName(cluster[i]) : "none",
                 i < onePass.size() ? paramName(onePass[i]) : "none");
  }
  if (out.chipVersion < 90)
    return error(kernel,
                 "a cluster kernel needs chip sm_90 or newer (thread-block "
                 "clusters), but the bundle's chip is %s",
                 out.chip.c_str());
  return okStatus();
}

} // namespace

pa_status parseManifest(const std::string &text, const std::string &path,
                        BundleDesc &out) {
  return ManifestParser(path, out).parse(text);
}

pa_status readManifest(const std::string &path, BundleDesc &out) {
  std::string text;
  PA_RETURN_IF_ERROR(readFile(path, "manifest", text));
  return parseManifest(text, path, out);
}

} // namespace pa
