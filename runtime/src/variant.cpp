//===- variant.cpp - which loaded bundle serves a call --------------------===//
//
// A bundle is specialised on dtype, cache dtype (the dtype, or fp8), tmp
// dtype, head size, block size and a GQA tile (heads_per_program query heads
// per program). The call's key must match the first five exactly, and the
// bundle must take the parameters of the features the call uses (ALiBi and
// soft cap, sliding window, fp8 scales). Among those, bundles for the newest
// chip the device runs win (from sm_80 they hold the tensor-core kernel;
// sm_70 bundles run everywhere through the driver's JIT but on CUDA cores);
// within one chip the tile is the one whose programs read each K/V token
// fewest times (its partition grid for one KV head: a tile covering the
// group once per query token, or once per heads_per_program / group_size
// tokens where a tensor-core tile packs several, else the largest tile),
// the smaller of equals; then the lean kernel, then the fewest warps per
// program. A bundle may have a wide twin (the same kernel with
// more warps per program, or a bundle that declares itself its twin and is
// never chosen on its own): planDecode launches it for small grids
// (BundleDesc::wideTwin, linked when bundles load). Bundles for a chip newer
// than the device are refused when loaded.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

namespace pa {

bool parseChip(const std::string &text, int &version, bool &archSpecific) {
  if (text.size() < 5 || text.compare(0, 3, "sm_") != 0)
    return false;
  size_t i = 3;
  int value = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i < 6)
    value = value * 10 + (text[i++] - '0');
  if (i - 3 < 2 || value < 10)
    return false;
  bool specific = false;
  if (i < text.size() && text[i] == 'a') {
    specific = true;
    ++i;
  }
  if (i != text.size())
    return false;
  version = value;
  archSpecific = specific;
  return true;
}

/// Whether a bundle for desc.chip runs on `device` (checkChip's test,
/// without its message: selectVariant asks it of every candidate).
static bool runsOn(const BundleDesc &desc, const DeviceInfo &device) {
  return desc.chipArchSpecific ? desc.chipVersion == device.smVersion
                               : desc.chipVersion <= device.smVersion;
}

pa_status checkChip(const BundleDesc &desc, const DeviceInfo &device) {
  if (runsOn(desc, device))
    return okStatus();
  int major = device.smVersion / 10, minor = device.smVersion % 10;
  if (desc.chipArchSpecific && desc.chipVersion != device.smVersion)
    return makeStatus(PA_ERROR_BUNDLE,
                      "bundle '%s' (%s) is compiled for %s, which runs only "
                      "on sm_%d; device %d is sm_%d (compute capability %d.%d)",
                      desc.name.c_str(), desc.manifestPath.c_str(),
                      desc.chip.c_str(), desc.chipVersion, device.ordinal,
                      device.smVersion, major, minor);
  if (desc.chipVersion > device.smVersion)
    return makeStatus(PA_ERROR_BUNDLE,
                      "bundle '%s' (%s) is compiled for %s, newer than device "
                      "%d (sm_%d, compute capability %d.%d): use a bundle "
                      "compiled for sm_%d or older",
                      desc.name.c_str(), desc.manifestPath.c_str(),
                      desc.chip.c_str(), device.ordinal, device.smVersion,
                      major, minor, device.smVersion);
  return okStatus();
}

/// How many programs read each K/V token of one KV head for `key`: the
/// partition grid's x times y for one sequence, KV head and partition. A
/// tile covering the group is read by one program per query token, or by
/// fewer where the tile packs heads_per_program / group_size tokens into
/// a program (tensor cores: its grid says so). 0 if it cannot be evaluated.
static int64_t kvReaders(const BundleDesc &d, const VariantKey &key) {
  GridEnv env;
  env.set(GridSym::NumSeqs, 1);
  env.set(GridSym::NumKvHeads, 1);
  env.set(GridSym::NumHeads, key.groupSize);
  env.set(GridSym::GroupSize, key.groupSize);
  env.set(GridSym::HeadsPerProgram, d.headsPerProgram);
  env.set(GridSym::NumPartitions, 1);
  env.set(GridSym::MaxNumPartitions, 1);
  env.set(GridSym::PartitionTokens, d.tokenStep);
  env.set(GridSym::HeadSize, d.headSize);
  env.set(GridSym::BlockSize, key.blockSize);
  env.set(GridSym::Warps, d.warps);
  env.set(GridSym::TokenStep, d.tokenStep);
  env.set(GridSym::MaxBlocksPerSeq, 1);
  env.set(GridSym::QuerySlots, key.queryLen);
  const KernelDesc &k = d.kernel(Role::Partition);
  int64_t x = 0, y = 0;
  if (!evalGridExpr(k.grid[0], env, x) || !evalGridExpr(k.grid[1], env, y))
    return 0;
  return x * y;
}

/// True when `a` is a better tile than `b` for `key`: fewer programs
/// reading each K/V token (a tile covering the group beats one that does
/// not, the largest of those that do not wins; with several query tokens a
/// tile that packs more of them), then the smaller tile (fewest masked
/// heads).
static bool betterTile(const BundleDesc &a, const BundleDesc &b,
                       const VariantKey &key) {
  int64_t ra = kvReaders(a, key), rb = kvReaders(b, key);
  if (ra > 0 && rb > 0 && ra != rb)
    return ra < rb;
  return a.headsPerProgram < b.headsPerProgram;
}

bool servesFeatures(const BundleDesc &d, const VariantKey &key) {
  return (!key.extLogits || (d.takes(ParamId::AlibiSlopes) &&
                             d.takes(ParamId::LogitsSoftCap))) &&
         // The reducer skips the partitions before the window (they leave
         // no tmp_output), so it must take the window too.
         (!key.slidingWindow ||
          (d.takes(ParamId::SlidingWindow) &&
           d.takes(ParamId::SlidingWindow, Role::Reduce))) &&
         // An fp8 cache is dequantized with the scales: a kernel that does
         // not take them cannot serve it.
         (!isFp8(key.cacheType()) || d.takesFp8Scales()) &&
         // Sinks join where the softmax is normalized: the reducer and the
         // one-pass kernel must both take them.
         (!key.sinks || d.takesSinks()) &&
         (!key.queryTokens || d.takesQueryTokens());
}

/// selectVariant's choice among descs[i] for each i of `candidates`, in
/// load order (every bundle, or the index's list for the key).
template <typename Candidates>
static int selectAmong(const std::vector<BundleDesc> &descs,
                       const Candidates &candidates, const DeviceInfo &device,
                       const VariantKey &key) {
  int best = -1;
  for (size_t i : candidates) {
    const BundleDesc &d = descs[i];
    if (d.dtype != key.dtype || d.cacheDtype != key.cacheType() ||
        !servesTmpDtype(d, key.tmpDtype) || d.headSize != key.headSize ||
        !servesBlockSize(d, key.blockSize) || !servesFeatures(d, key) ||
        !d.twinOf.empty())
      continue;
    if (!runsOn(d, device))
      continue;
    if (best < 0) {
      best = int(i);
      continue;
    }
    const BundleDesc &b = descs[best];
    if (d.chipVersion != b.chipVersion) {
      if (d.chipVersion > b.chipVersion)
        best = int(i);
    } else if (d.headsPerProgram != b.headsPerProgram) {
      if (betterTile(d, b, key))
        best = int(i);
    } else if (b.takes(ParamId::AlibiSlopes) &&
               !d.takes(ParamId::AlibiSlopes)) {
      // The lean kernel where the call needs no ALiBi or soft cap: fewer
      // registers, more programs per SM.
      best = int(i);
    } else if (b.takes(ParamId::AlibiSlopes) ==
                   d.takes(ParamId::AlibiSlopes) &&
               d.warps < b.warps) {
      // The default width; a wider twin is planDecode's choice.
      best = int(i);
    }
  }
  return best;
}

namespace {
/// 0, 1, ..., n - 1: every loaded bundle.
struct AllIndices {
  size_t n;
  struct It {
    size_t i;
    size_t operator*() const { return i; }
    It &operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const It &o) const { return i != o.i; }
  };
  It begin() const { return {0}; }
  It end() const { return {n}; }
};
} // namespace

int selectVariant(const std::vector<BundleDesc> &descs,
                  const DeviceInfo &device, const VariantKey &key) {
  return selectAmong(descs, AllIndices{descs.size()}, device, key);
}

int selectVariant(const std::vector<BundleDesc> &descs,
                  const VariantIndex &index, const DeviceInfo &device,
                  const VariantKey &key) {
  return selectAmong(descs, index.find(key), device, key);
}

//===----------------------------------------------------------------------===//
// The index
//===----------------------------------------------------------------------===//

/// The exact part of a key in 64 bits: the types in 8 bits each, the head
/// size (at most 65536, the manifest's bound) in 20. Not the block size: a
/// bundle may serve any (selectAmong checks it).
static uint64_t exactKey(int dtype, int cache, int tmp, int head) {
  return uint64_t(dtype & 0xff) << 56 | uint64_t(cache & 0xff) << 48 |
         uint64_t(tmp & 0xff) << 40 | uint64_t(head & 0xfffff) << 20;
}

/// A bundle's key; a run-time tmp_dtype ("any") is filed under f32, and
/// also under the dtype (VariantIndex::add).
static uint64_t exactKeyOf(const BundleDesc &d) {
  return exactKey(d.dtype, d.cacheDtype, d.tmpAny ? PA_F32 : d.tmpDtype,
                  d.headSize);
}

void VariantIndex::add(const std::vector<BundleDesc> &descs, size_t i) {
  const BundleDesc &d = descs[i];
  byKey[exactKeyOf(d)].push_back(int(i));
  if (d.tmpAny && d.dtype != PA_F32) // it serves both keys' calls
    byKey[exactKey(d.dtype, d.cacheDtype, d.dtype, d.headSize)].push_back(
        int(i));
  names.emplace(d.name, int(i));
  if (!d.twinOf.empty())
    declaredTwins[d.twinOf].push_back(int(i));
}

void VariantIndex::rebuild(const std::vector<BundleDesc> &descs) {
  byKey.clear();
  names.clear();
  declaredTwins.clear();
  for (size_t i = 0; i < descs.size(); ++i)
    add(descs, i);
}

size_t VariantIndex::size() const { return names.size(); }

static const std::vector<int> kNoBundles;

const std::vector<int> &VariantIndex::find(const VariantKey &key) const {
  auto it = byKey.find(
      exactKey(key.dtype, key.cacheType(), key.tmpDtype, key.headSize));
  return it == byKey.end() ? kNoBundles : it->second;
}

const std::vector<int> &VariantIndex::sameKey(const BundleDesc &d) const {
  auto it = byKey.find(exactKeyOf(d));
  return it == byKey.end() ? kNoBundles : it->second;
}

int VariantIndex::byName(const std::string &name) const {
  auto it = names.find(name);
  return it == names.end() ? -1 : it->second;
}

const std::vector<int> &VariantIndex::twinsOf(const std::string &name) const {
  auto it = declaredTwins.find(name);
  return it == declaredTwins.end() ? kNoBundles : it->second;
}

/// Whether `a` and `b` serve the same calls: the keys, the chip and the
/// partition, one-pass and reduce kernels' parameters (the features). Not
/// the cluster kernel: it takes the one-pass kernel's parameters (checked at
/// load) and only one of the two may have it (the sm_90 `_w8` twins do,
/// their 4-warp bundles do not).
static bool sameCalls(const BundleDesc &a, const BundleDesc &b) {
  if (a.dtype != b.dtype || a.cacheDtype != b.cacheDtype ||
      a.tmpAny != b.tmpAny || (!a.tmpAny && a.tmpDtype != b.tmpDtype) ||
      a.headSize != b.headSize || a.blockSize != b.blockSize ||
      a.chip != b.chip)
    return false;
  for (Role role : {Role::Partition, Role::OnePass, Role::Reduce})
    if (a.kernel(role).present != b.kernel(role).present ||
        a.kernel(role).params != b.kernel(role).params)
      return false;
  return true;
}

/// Checks a declared pair: `twin` says it is `base`'s wide twin.
static pa_status checkDeclared(const BundleDesc &twin, const BundleDesc &base) {
  if (sameCalls(twin, base) && twin.warps > base.warps)
    return okStatus();
  return makeStatus(PA_ERROR_BUNDLE,
                    "bundle '%s' (%s) declares itself the wide twin of '%s' "
                    "(%s), but %s",
                    twin.name.c_str(), twin.manifestPath.c_str(),
                    base.name.c_str(), base.manifestPath.c_str(),
                    twin.warps <= base.warps
                        ? "has no more warps per program"
                        : "they serve different calls (keys, chip or kernel "
                          "parameters)");
}

/// Makes descs[wide] descs[narrow]'s wide twin unless it has a wider one.
static void link(std::vector<BundleDesc> &descs, int narrow, int wide) {
  int &current = descs[narrow].wideTwin;
  if (current < 0 || descs[wide].warps > descs[current].warps)
    current = wide;
}

/// Whether neither declares anything and they are the same kernel with
/// different widths.
static bool sameKernelTwins(const BundleDesc &a, const BundleDesc &d) {
  return a.twinOf.empty() && d.twinOf.empty() && d.warps != a.warps &&
         d.headsPerProgram == a.headsPerProgram && sameCalls(d, a);
}

pa_status linkWideTwin(std::vector<BundleDesc> &descs, size_t added,
                       const VariantIndex &index) {
  const int self = int(added);
  descs[added].wideTwin = -1;
  // Declared pairs, in either load order; checked before anything links.
  int base = descs[added].twinOf.empty() ? -1
                                         : index.byName(descs[added].twinOf);
  if (base >= 0)
    PA_RETURN_IF_ERROR(checkDeclared(descs[added], descs[base]));
  const std::vector<int> &declared = index.twinsOf(descs[added].name);
  for (int twin : declared)
    if (twin != self)
      PA_RETURN_IF_ERROR(checkDeclared(descs[twin], descs[added]));
  if (base >= 0)
    link(descs, base, self);
  for (int twin : declared)
    if (twin != self)
      link(descs, self, twin);
  // Same-kernel pairs: only among the bundles of the same exact key.
  for (int i : index.sameKey(descs[added])) {
    if (i == self || !sameKernelTwins(descs[added], descs[i]))
      continue;
    if (descs[i].warps < descs[added].warps)
      link(descs, i, self);
    else
      link(descs, self, i);
  }
  return okStatus();
}

void linkWideTwins(std::vector<BundleDesc> &descs, const VariantIndex &index) {
  for (BundleDesc &d : descs)
    d.wideTwin = -1;
  for (size_t i = 0; i < descs.size(); ++i)
    (void)linkWideTwin(descs, i, index); // these loaded: links were checked
}

void linkWideTwins(std::vector<BundleDesc> &descs) {
  VariantIndex index;
  index.rebuild(descs);
  linkWideTwins(descs, index);
}

} // namespace pa
