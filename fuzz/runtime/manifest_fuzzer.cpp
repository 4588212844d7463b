//===- manifest_fuzzer.cpp - libFuzzer target: loading a bundle -----------===//
//
// A kernel library is a folder a user points the runtime at, so every byte
// of a manifest and of its PTX is untrusted input. One input is a manifest,
// optionally followed by a NUL byte and the text of the PTX file `k.ptx`
// beside it (the seeds' manifests say `ptx k.ptx`). The target loads it
// through the public entry on a host-only context (manifest records, grid
// expressions, chip and PTX target checks, twin linking) and, when the load
// succeeds, plans calls that the bundle serves and marshals their kernel
// arguments, so the manifest's grid expressions and params run on real sizes.
//
// Any crash, sanitizer report or leak is a finding; a refusal is not.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace pa;

namespace {

/// A private folder for the two files, made once per process.
const std::string &workDir() {
  static const std::string dir = [] {
    char name[] = "/tmp/pa-manifest-fuzz-XXXXXX";
    if (!mkdtemp(name))
      std::abort();
    return std::string(name);
  }();
  return dir;
}

void writeFile(const std::string &path, const char *data, size_t size) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0)
    std::abort(); // the harness, not the runtime, failed
}

/// A call the bundle serves on paper: its key, its features, `group`
/// query heads per KV head and `maxSeqLen` tokens (0: fixed grid), blocks
/// of `blockSize` tokens; tmp_output in the dtype when `tmpInDtype` and the
/// bundle takes it at run time (`tmp_dtype any`), else in the bundle's tmp
/// dtype.
pa_decode_args callFor(const BundleDesc &d, int group, int maxSeqLen,
                       int blockSize, bool tmpInDtype) {
  pa_decode_args a;
  std::memset(&a, 0, sizeof(a));
  a.dtype = d.dtype;
  a.tmp_dtype = d.tmpAny ? (tmpInDtype ? d.dtype : PA_F32) : d.tmpDtype;
  a.kv_cache_dtype = d.cacheDtype == kElemF8E4M3FN ? PA_KV_CACHE_FP8_E4M3
                     : d.cacheDtype == kElemF8E5M2 ? PA_KV_CACHE_FP8_E5M2
                                                   : PA_KV_CACHE_AUTO;
  a.k_scale = a.v_scale = 0.5f;
  a.num_seqs = 3;
  a.num_kv_heads = 2;
  a.num_heads = 2 * group;
  a.head_size = d.headSize;
  a.block_size = blockSize;
  a.max_blocks_per_seq = 32768 / blockSize + 1;
  a.num_blocks = a.num_seqs * a.max_blocks_per_seq;
  a.partition_size = 512;
  a.max_num_partitions = (a.max_blocks_per_seq * blockSize + 511) / 512;
  a.max_seq_len = maxSeqLen;
  a.scale = 0.125f;
  if (d.takes(ParamId::AlibiSlopes))
    a.alibi_slopes = 0x1000;
  if (d.takes(ParamId::SlidingWindow))
    a.sliding_window = maxSeqLen / 3;
  if (d.takes(ParamId::LogitsSoftCap))
    a.logits_soft_cap = 30.0f;
  CUdeviceptr p = 0x10000;
  for (CUdeviceptr *ptr :
       {&a.query, &a.key_cache, &a.value_cache, &a.block_tables, &a.seq_lens,
        &a.output, &a.exp_sums, &a.max_logits, &a.tmp_output})
    *ptr = (p += 0x10000);
  return a;
}

/// Plans a few calls on the loaded bundle and marshals what they launch: its
/// block size, or blocks of 16 and 128 tokens for a bundle that takes the
/// block size at run time (`block_size any`: blockSize 0).
void exerciseLoaded(pa_context *ctx) {
  const BundleDesc &d = ctx->variants[0];
  for (int group : {1, d.headsPerProgram, 2 * d.headsPerProgram + 1}) {
    for (int maxSeqLen : {1, 700, 32768, 0}) {
      int blockSize = d.blockSize ? d.blockSize : maxSeqLen == 0 ? 128 : 16;
      pa_decode_args args = callFor(d, group, maxSeqLen, blockSize,
                                    /*tmpInDtype=*/maxSeqLen == 700);
      pa_plan plan;
      (void)pa_plan_decode_v2(ctx, &args, &plan);
      DecodePlan decided;
      if (!isOk(planDecode(ctx->info, ctx->variants, args, true, decided)))
        continue;
      const BundleDesc &v = ctx->variants[decided.variant];
      KernelArgs out;
      for (const KernelDesc &kernel : v.kernels)
        if (kernel.present)
          marshalParams(kernel, args, decided, out);
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = reinterpret_cast<const char *>(data);
  const void *nul = std::memchr(text, '\0', size);
  size_t manifestSize = nul ? size_t(static_cast<const char *>(nul) - text)
                            : size;
  std::string manifest = workDir() + "/b.manifest";
  std::string ptx = workDir() + "/k.ptx";
  writeFile(manifest, text, manifestSize);
  if (nul)
    writeFile(ptx, text + manifestSize + 1, size - manifestSize - 1);
  else
    unlink(ptx.c_str());

  pa_context *ctx = makeHostContext(DeviceInfo{0, 90, 132});
  pa_status status = pa_context_load_bundle(ctx, manifest.c_str());
  if (isOk(status))
    exerciseLoaded(ctx);
  pa_context_destroy(ctx);
  return 0;
}
