// Floor probes for a one-sequence decode call (scripts/floor/b1_floor.py,
// docs/performance.md section F). Each probe reads the K and V bytes of one
// sequence through its block table, exactly as the paged layouts store them,
// and does no attention arithmetic: what it takes is a lower bound on any
// kernel of the same shape. Shapes: `kv_heads` KV heads, `blocks` blocks of a
// K and a V tile of 4 KB each (head size 128, block size 16, 16-bit cache).
//
//   gather         S programs per KV head, 16-byte loads into registers, each
//                  program writing a partial (4 heads x 130 floats); with
//                  `fuse`, the last program of a KV head (global atomic
//                  counter) reads the S partials and writes the output.
//   gather_cluster the S programs of a KV head in one thread-block cluster
//                  (sm_90): partials in shared memory, combined by rank 0
//                  over distributed shared memory after a cluster barrier.
//   gather_staged  one program per KV head, the bytes in flight held in
//                  shared memory: cp.async copies into a ring of R stages of
//                  4 blocks (32 KB a stage), consumed as they land.
#include <cooperative_groups.h>
#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 256;       // one uint4 of a 4 KB tile per thread
constexpr int kPartial = 520;       // 4 heads x (128 accumulators) + 4 max + 4 sum
constexpr int kStageBlocks = 4;     // blocks per cp.async stage

__device__ size_t tileIndex(int block, int kvHeads, int kvHead) {
  return ((size_t)block * kvHeads + kvHead) * kThreads + threadIdx.x;
}

__device__ float fold(uint4 k, uint4 v) {
  return __int_as_float(k.x ^ v.y) + __int_as_float(k.z ^ v.w);
}

// The program's sum over its threads, in every thread.
__device__ float programSum(float acc) {
  __shared__ float warpSums[kThreads / 32];
  for (int o = 16; o; o >>= 1)
    acc += __shfl_xor_sync(~0u, acc, o);
  if ((threadIdx.x & 31) == 0)
    warpSums[threadIdx.x >> 5] = acc;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kThreads / 32; ++w)
    total += warpSums[w];
  return total;
}

// Reads the K and V tiles of blocks [b0, b1) of the sequence (the block table
// first, into shared memory) and returns their fold summed over the program.
__device__ __forceinline__ float gatherRange(const uint4* kc, const uint4* vc, const int* bt,
                                             int b0, int b1, int kvHeads, int kvHead) {
  __shared__ int blk[256];
  for (int i = threadIdx.x; i < b1 - b0; i += kThreads)
    blk[i] = bt[b0 + i];
  __syncthreads();
  float acc = 0.f;
  for (int i = 0; i < b1 - b0; ++i) {
    size_t t = tileIndex(blk[i], kvHeads, kvHead);
    acc += fold(kc[t], vc[t]);
  }
  return programSum(acc);
}

// out[j] from S partials: the log-sum-exp combine of the reduce kernel.
// `load(t, i)` reads element i of partial t.
template <typename Load>
__device__ void combine(Load load, int S, float* out) {
  for (int j = threadIdx.x; j < 512; j += kThreads) {
    float m = -1e30f, l = 0.f, a = 0.f;
    for (int t = 0; t < S; ++t)
      m = fmaxf(m, load(t, 512 + (j >> 7)));
    for (int t = 0; t < S; ++t) {
      float w = __expf(load(t, 512 + (j >> 7)) - m) * load(t, 516 + (j >> 7));
      l += w;
      a += w * load(t, j);
    }
    out[j] = a / l;
  }
}

__global__ void __launch_bounds__(kThreads)
gather(const uint4* kc, const uint4* vc, const int* bt, int blocks, float* part, float* out,
       unsigned* counters, int fuse) {
  const int kvHead = blockIdx.x, kvHeads = gridDim.x, s = blockIdx.y, S = gridDim.y;
  __shared__ bool last;
  float total = gatherRange(kc, vc, bt, s * blocks / S, (s + 1) * blocks / S, kvHeads, kvHead);
  float* mine = part + ((size_t)kvHead * S + s) * kPartial;
  for (int j = threadIdx.x; j < kPartial; j += kThreads)
    mine[j] = total + j;
  if (!fuse) {
    if (threadIdx.x == 0)
      out[kvHead * 512 + s] = total;
    return;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    last = atomicAdd(&counters[kvHead], 1u) == (unsigned)S - 1;
  __syncthreads();
  if (!last)
    return;
  __threadfence();
  // The other programs' partials, read through volatile loads (measured
  // faster here than __ldcg with an unrolled loop: 9.9 against 11.6 us at S = 4).
  const volatile float* first = part + (size_t)kvHead * S * kPartial;
  combine([&](int t, int i) { return first[t * kPartial + i]; }, S, out + kvHead * 512);
  if (threadIdx.x == 0)
    counters[kvHead] = 0;
}

__global__ void __launch_bounds__(kThreads)
gather_cluster(const uint4* kc, const uint4* vc, const int* bt, int blocks, float* out) {
  cg::cluster_group cluster = cg::this_cluster();
  const int S = cluster.num_blocks(), s = cluster.block_rank();
  const int kvHead = blockIdx.y, kvHeads = gridDim.y;
  __shared__ float partial[kPartial];
  float total = gatherRange(kc, vc, bt, s * blocks / S, (s + 1) * blocks / S, kvHeads, kvHead);
  for (int j = threadIdx.x; j < kPartial; j += kThreads)
    partial[j] = total + j;
  cluster.sync();
  if (s == 0)
    combine([&](int t, int i) { return cluster.map_shared_rank(partial, t)[i]; }, S,
            out + kvHead * 512);
  cluster.sync();  // the other programs' shared memory lives until rank 0 has read it
}

__device__ void copyAsync16(void* shared, const void* global) {
  unsigned a = (unsigned)__cvta_generic_to_shared(shared);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(global));
}

template <int R>
__global__ void __launch_bounds__(kThreads)
gather_staged(const uint4* kc, const uint4* vc, const int* bt, int blocks, float* out) {
  extern __shared__ uint4 ring[];  // R stages x kStageBlocks x (K, V) x kThreads
  constexpr int kStage = kStageBlocks * 2 * kThreads;
  __shared__ int blk[256];
  const int kvHead = blockIdx.x, kvHeads = gridDim.x, stages = blocks / kStageBlocks;
  for (int i = threadIdx.x; i < blocks; i += kThreads)
    blk[i] = bt[i];
  __syncthreads();
  auto issue = [&](int stage) {
    if (stage < stages) {
      uint4* slot = ring + (stage % R) * kStage;
      for (int b = 0; b < kStageBlocks; ++b) {
        size_t t = tileIndex(blk[stage * kStageBlocks + b], kvHeads, kvHead);
        copyAsync16(slot + (2 * b) * kThreads + threadIdx.x, kc + t);
        copyAsync16(slot + (2 * b + 1) * kThreads + threadIdx.x, vc + t);
      }
    }
    asm volatile("cp.async.commit_group;");  // empty groups keep the wait count constant
  };
  for (int stage = 0; stage < R; ++stage)
    issue(stage);
  float acc = 0.f;
  for (int stage = 0; stage < stages; ++stage) {
    asm volatile("cp.async.wait_group %0;" ::"n"(R - 1));
    __syncthreads();
    const uint4* slot = ring + (stage % R) * kStage;
    for (int b = 0; b < kStageBlocks; ++b)  // other threads' bytes, as a kernel would read them
      acc += fold(slot[(2 * b) * kThreads + (threadIdx.x ^ 7)],
                  slot[(2 * b + 1) * kThreads + (threadIdx.x ^ 5)]);
    __syncthreads();
    issue(stage + R);
  }
  float total = programSum(acc);
  for (int j = threadIdx.x; j < 512; j += kThreads)
    out[kvHead * 512 + j] = total + j;
}

template <int R>
int launchStaged(const void* kc, const void* vc, const void* bt, int kvHeads, int blocks, void* out,
                 cudaStream_t stream) {
  int smem = R * kStageBlocks * 2 * kThreads * (int)sizeof(uint4);
  cudaFuncSetAttribute(gather_staged<R>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  gather_staged<R><<<kvHeads, kThreads, smem, stream>>>((const uint4*)kc, (const uint4*)vc,
                                                        (const int*)bt, blocks, (float*)out);
  return (int)cudaGetLastError();
}

} // namespace

// C entry points for ctypes. part: kv_heads x S x 520 floats; out: kv_heads x 512
// floats; counters: kv_heads zeroed words (left zeroed).
extern "C" int probe_gather(const void* kc, const void* vc, const void* bt, int kvHeads, int blocks,
                            int S, int fuse, void* part, void* out, void* counters, void* stream) {
  if (blocks > 256 || blocks % S)
    return -1;
  gather<<<dim3(kvHeads, S), kThreads, 0, (cudaStream_t)stream>>>(
      (const uint4*)kc, (const uint4*)vc, (const int*)bt, blocks, (float*)part, (float*)out,
      (unsigned*)counters, fuse);
  return (int)cudaGetLastError();
}

extern "C" int probe_cluster(const void* kc, const void* vc, const void* bt, int kvHeads,
                             int blocks, int S, void* out, void* stream) {
  if (blocks > 256 || blocks % S || S > 8)
    return -1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(S, kvHeads);
  config.blockDim = dim3(kThreads);
  config.stream = (cudaStream_t)stream;
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = S;
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = 1;
  return (int)cudaLaunchKernelEx(&config, gather_cluster, (const uint4*)kc, (const uint4*)vc,
                                 (const int*)bt, blocks, (float*)out);
}

extern "C" int probe_staged(const void* kc, const void* vc, const void* bt, int kvHeads, int blocks,
                            int R, void* out, void* stream) {
  if (blocks > 256 || blocks % kStageBlocks)
    return -1;
  switch (R) {
  case 1: return launchStaged<1>(kc, vc, bt, kvHeads, blocks, out, (cudaStream_t)stream);
  case 2: return launchStaged<2>(kc, vc, bt, kvHeads, blocks, out, (cudaStream_t)stream);
  case 4: return launchStaged<4>(kc, vc, bt, kvHeads, blocks, out, (cudaStream_t)stream);
  case 6: return launchStaged<6>(kc, vc, bt, kvHeads, blocks, out, (cudaStream_t)stream);
  default: return -1;
  }
}
