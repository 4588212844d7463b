/*===- main.c - run a compiled decode step (host code to an object) -------===*\
|*                                                                          *|
|* Calls decode_step, compiled by pa-opt (host=runtime), mlir-translate and  *|
|* llc into an object, on random inputs in device memory, and checks its     *|
|* output against a float64 CPU reference. The function's host code calls    *|
|* libpa_runtime's pa_host_decode_v2; this file owns the context, the        *|
|* stream, the buffers and the status. The CUDA driver is dlopen()ed, as the *|
|* runtime does: the program links libpa_runtime and libdl only.             *|
|*                                                                          *|
|* Built twice (CMake, examples/hostcode/CMakeLists.txt):                    *|
|*   memref form  decode_v2_memref.mlir; the caller passes the workspace     *|
|*   tensor form  ../decode_v2.mlir (-DPA_HOSTCODE_TENSOR): the compiled     *|
|*                code allocates the workspace through pa_host_alloc        *|
|*                                                                          *|
|* Usage: hostcode-decode-{memref,tensor} --library DIR [--seed N]            *|
|* Prints "PASS ..." and exits 0, or "FAIL ..." and exits 1; 2: setup error. *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#include "pa_runtime/pa_runtime.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*===-- The compiled function's C interface (llvm.emit_c_interface) -------===*/

/* MLIR's ranked memref descriptor of rank N. */
#define MEMREF(N)                                                              \
  struct {                                                                     \
    void *allocated, *aligned;                                                 \
    int64_t offset, sizes[N], strides[N];                                      \
  }
typedef MEMREF(1) MemRef1;
typedef MEMREF(2) MemRef2;
typedef MEMREF(3) MemRef3;
typedef MEMREF(4) MemRef4;
typedef MEMREF(5) MemRef5;

#ifdef PA_HOSTCODE_TENSOR
/* The tensor form returns the output (bufferized in place of `output`). */
void _mlir_ciface_decode_step(MemRef3 *result, MemRef3 *query,
                              MemRef5 *key_cache, MemRef4 *value_cache,
                              MemRef2 *block_tables, MemRef1 *seq_lens,
                              int64_t max_seq_len, MemRef3 *output, void *ctx,
                              void *stream, pa_status *status);
#else
void _mlir_ciface_decode_step(MemRef3 *query, MemRef5 *key_cache,
                              MemRef4 *value_cache, MemRef2 *block_tables,
                              MemRef1 *seq_lens, int64_t max_seq_len,
                              MemRef3 *output, MemRef3 *exp_sums,
                              MemRef3 *max_logits, MemRef4 *tmp_output,
                              void *ctx, void *stream, pa_status *status);
#endif

/*===-- The driver (dlopen, like the runtime) -----------------------------===*/

static struct {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
} cu;

static int loadDriver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "error: CUDA driver (libcuda.so.1) not found: %s\n",
            dlerror());
    return 0;
  }
#define RESOLVE(name, symbol)                                                  \
  if (!(*(void **)&cu.name = dlsym(lib, symbol))) {                            \
    fprintf(stderr, "error: the driver lacks %s\n", symbol);                   \
    return 0;                                                                  \
  }
  RESOLVE(cuInit, "cuInit")
  RESOLVE(cuDeviceGet, "cuDeviceGet")
  RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
  RESOLVE(cuCtxPushCurrent, "cuCtxPushCurrent_v2")
  RESOLVE(cuMemAlloc, "cuMemAlloc_v2")
  RESOLVE(cuMemFree, "cuMemFree_v2")
  RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD_v2")
  RESOLVE(cuMemcpyDtoH, "cuMemcpyDtoH_v2")
  RESOLVE(cuStreamCreate, "cuStreamCreate")
  RESOLVE(cuStreamSynchronize, "cuStreamSynchronize")
#undef RESOLVE
  return 1;
}

#define CHECK_CU(expr)                                                         \
  do {                                                                         \
    CUresult r_ = (expr);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      fprintf(stderr, "error: %s: CUresult %d\n", #expr, (int)r_);             \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

/* A device copy of `bytes` host bytes (or `bytes` uninitialised if null). */
static void *toDevice(const void *host, size_t bytes) {
  CUdeviceptr p;
  CHECK_CU(cu.cuMemAlloc(&p, bytes));
  if (host)
    CHECK_CU(cu.cuMemcpyHtoD(p, host, bytes));
  return (void *)(uintptr_t)p;
}

/*===-- Numbers -------------------------------------------------------------===*/

static uint64_t rngState;
static uint64_t rngNext(void) { /* splitmix64 */
  uint64_t z = (rngState += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Uniform in [-1, 1). */
static float rngSymmetric(void) {
  return (float)((double)(rngNext() >> 40) / 8388608.0 - 1.0);
}

/* float in [-2, 2] -> IEEE half, round to nearest even (normal or zero). */
static uint16_t toHalf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, abs = x & 0x7fffffffu;
  if (abs < 0x38800000u) /* below 2^-14: flush (inputs never get there) */
    return (uint16_t)sign;
  uint32_t mant = abs & 0x7fffffu;
  uint32_t h = (((abs >> 23) - 127 + 15) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
    ++h;
  return (uint16_t)(sign | h);
}
static double fromHalf(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  double mant = h & 0x3ff;
  double v = exp == 0    ? ldexp(mant, -24)
             : exp == 31 ? (mant ? NAN : INFINITY)
                         : ldexp(1024 + mant, exp - 25);
  return (h & 0x8000u) ? -v : v;
}

/*===-- The decode step ----------------------------------------------------===*/

enum { kHeads = 32, kKvHeads = 8, kHead = 128, kBlock = 16, kX = 8,
       kPartition = 512 };
static const float kScale = 0.0883883461f; /* the function's scale */

int main(int argc, char **argv) {
  const char *library = NULL;
  uint64_t seed = 29;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--library") && i + 1 < argc)
      library = argv[++i];
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = strtoull(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: %s --library DIR [--seed N]\n", argv[0]);
      return 2;
    }
  }
  if (!library) {
    fprintf(stderr, "usage: %s --library DIR [--seed N]\n", argv[0]);
    return 2;
  }
  rngState = seed;

  /* Ragged lengths: one token, within a block, one partition, several. */
  enum { kSeqs = 5 };
  const int32_t lens[kSeqs] = {1, 37, 512, 1300, 2049};
  int32_t maxLen = 0;
  for (int s = 0; s < kSeqs; ++s)
    maxLen = lens[s] > maxLen ? lens[s] : maxLen;
  const int32_t maxBlocks = (maxLen + kBlock - 1) / kBlock;
  const int32_t numBlocks = kSeqs * maxBlocks + 7; /* a few never used */

  /* Host inputs in f16, with a shuffled block table over the pool. */
  size_t nq = (size_t)kSeqs * kHeads * kHead;
  size_t nkv = (size_t)numBlocks * kKvHeads * kHead * kBlock;
  uint16_t *q = malloc(nq * 2), *k = malloc(nkv * 2), *v = malloc(nkv * 2);
  uint16_t *out = malloc(nq * 2);
  int32_t *tables = malloc(sizeof(int32_t) * kSeqs * maxBlocks);
  int32_t *pool = malloc(sizeof(int32_t) * numBlocks);
  for (size_t i = 0; i < nq; ++i)
    q[i] = toHalf(rngSymmetric());
  for (size_t i = 0; i < nkv; ++i) {
    k[i] = toHalf(rngSymmetric());
    v[i] = toHalf(rngSymmetric());
  }
  for (int32_t i = 0; i < numBlocks; ++i)
    pool[i] = i;
  for (int32_t i = numBlocks - 1; i > 0; --i) { /* Fisher-Yates */
    int32_t j = (int32_t)(rngNext() % (uint64_t)(i + 1)), t = pool[i];
    pool[i] = pool[j];
    pool[j] = t;
  }
  for (int i = 0; i < kSeqs * maxBlocks; ++i)
    tables[i] = pool[i];

  /* The device, the runtime, the stream. */
  if (!loadDriver())
    return 2;
  CUdevice dev;
  CUcontext primary;
  CHECK_CU(cu.cuInit(0));
  CHECK_CU(cu.cuDeviceGet(&dev, 0));
  CHECK_CU(cu.cuDevicePrimaryCtxRetain(&primary, dev));
  CHECK_CU(cu.cuCtxPushCurrent(primary));
  pa_context *ctx;
  pa_status st = pa_context_create(0, &ctx);
  if (st.code == PA_OK)
    st = pa_context_load_library(ctx, library);
  if (st.code != PA_OK) {
    fprintf(stderr, "error: %s %s\n", st.driver_error, st.message);
    return 2;
  }
  CUstream stream;
  CHECK_CU(cu.cuStreamCreate(&stream, 0));

  /* Device buffers; the output poisoned (f16 NaN) so an unwritten element
     fails. */
  for (size_t i = 0; i < nq; ++i)
    out[i] = 0x7e00;
  void *dq = toDevice(q, nq * 2), *dk = toDevice(k, nkv * 2);
  void *dv = toDevice(v, nkv * 2), *dout = toDevice(out, nq * 2);
  void *dtables = toDevice(tables, sizeof(int32_t) * kSeqs * maxBlocks);
  void *dlens = toDevice(lens, sizeof(lens));

  /* Descriptors: contiguous row-major, allocated == aligned, offset 0. */
  MemRef3 mq = {dq, dq, 0, {kSeqs, kHeads, kHead},
                {kHeads * kHead, kHead, 1}};
  MemRef5 mk = {dk, dk, 0, {numBlocks, kKvHeads, kHead / kX, kBlock, kX},
                {kKvHeads * kHead * kBlock, kHead * kBlock, kBlock * kX, kX,
                 1}};
  MemRef4 mv = {dv, dv, 0, {numBlocks, kKvHeads, kHead, kBlock},
                {kKvHeads * kHead * kBlock, kHead * kBlock, kBlock, 1}};
  MemRef2 mt = {dtables, dtables, 0, {kSeqs, maxBlocks}, {maxBlocks, 1}};
  MemRef1 ml = {dlens, dlens, 0, {kSeqs}, {1}};
  MemRef3 mo = {dout, dout, 0, {kSeqs, kHeads, kHead},
                {kHeads * kHead, kHead, 1}};

  memset(&st, 0, sizeof(st)); /* PA_OK: the compiled calls keep the first error */
#ifdef PA_HOSTCODE_TENSOR
  MemRef3 result;
  _mlir_ciface_decode_step(&result, &mq, &mk, &mv, &mt, &ml, maxLen, &mo, ctx,
                           stream, &st);
  void *resultData = result.aligned;
  const char *form = "tensor";
#else
  /* The workspace: partitions of the whole block table. */
  const int32_t parts = (maxBlocks * kBlock + kPartition - 1) / kPartition;
  void *des = toDevice(NULL, sizeof(float) * kSeqs * kHeads * parts);
  void *dml = toDevice(NULL, sizeof(float) * kSeqs * kHeads * parts);
  void *dtmp = toDevice(NULL, sizeof(float) * kSeqs * kHeads * parts * kHead);
  MemRef3 mes = {des, des, 0, {kSeqs, kHeads, parts},
                 {kHeads * parts, parts, 1}};
  MemRef3 mml = {dml, dml, 0, {kSeqs, kHeads, parts},
                 {kHeads * parts, parts, 1}};
  MemRef4 mtmp = {dtmp, dtmp, 0, {kSeqs, kHeads, parts, kHead},
                  {kHeads * parts * kHead, parts * kHead, kHead, 1}};
  _mlir_ciface_decode_step(&mq, &mk, &mv, &mt, &ml, maxLen, &mo, &mes, &mml,
                           &mtmp, ctx, stream, &st);
  void *resultData = dout;
  const char *form = "memref";
#endif
  if (st.code != PA_OK) {
    printf("FAIL %s form: the runtime said %d %s %s\n", form, (int)st.code,
           st.driver_error, st.message);
    return 1;
  }
  CHECK_CU(cu.cuStreamSynchronize(stream));
  CHECK_CU(cu.cuMemcpyDtoH(out, (CUdeviceptr)(uintptr_t)resultData, nq * 2));

  /* The float64 reference and ||out - ref|| / ||ref||. */
  double num = 0, den = 0;
  size_t nans = 0;
  double *logits = malloc(sizeof(double) * maxLen);
  for (int s = 0; s < kSeqs; ++s)
    for (int h = 0; h < kHeads; ++h) {
      int kvh = h / (kHeads / kKvHeads);
      const uint16_t *qh = q + ((size_t)s * kHeads + h) * kHead;
      double top = -INFINITY, sum = 0;
      for (int t = 0; t < lens[s]; ++t) {
        size_t b = (size_t)tables[s * maxBlocks + t / kBlock];
        double dot = 0;
        for (int d = 0; d < kHead; ++d)
          dot += fromHalf(qh[d]) *
                 fromHalf(k[(((b * kKvHeads + kvh) * (kHead / kX) + d / kX) *
                                 kBlock +
                             t % kBlock) *
                                kX +
                            d % kX]);
        logits[t] = kScale * dot;
        top = logits[t] > top ? logits[t] : top;
      }
      for (int t = 0; t < lens[s]; ++t)
        sum += (logits[t] = exp(logits[t] - top));
      for (int d = 0; d < kHead; ++d) {
        double ref = 0;
        for (int t = 0; t < lens[s]; ++t) {
          size_t b = (size_t)tables[s * maxBlocks + t / kBlock];
          ref += logits[t] / sum *
                 fromHalf(v[((b * kKvHeads + kvh) * kHead + d) * kBlock +
                            t % kBlock]);
        }
        double o = fromHalf(out[((size_t)s * kHeads + h) * kHead + d]);
        if (isnan(o)) {
          ++nans;
          continue;
        }
        num += (o - ref) * (o - ref);
        den += ref * ref;
      }
    }
  double rel = sqrt(num / den);
  const double bound = 5e-3; /* f16 output rounding and kernel arithmetic */
  if (nans || !(rel <= bound)) {
    printf("FAIL %s form: %zu NaN outputs, rel err %.3e (bound %.0e)\n", form,
           nans, rel, bound);
    return 1;
  }
  printf("PASS %s form: %d sequences (lengths 1..%d), rel err %.3e (bound "
         "%.0e)\n",
         form, kSeqs, maxLen, rel, bound);
  pa_context_destroy(ctx);
  return 0;
}
