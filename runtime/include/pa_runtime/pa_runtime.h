/*===- pa_runtime.h - paged_attn runtime C ABI ------------------*- C -*-===*\
|*                                                                          *|
|* Loads kernel bundles that pa-opt compiled (PTX + manifest) and launches   *|
|* PagedAttention V2 decode on the caller's CUDA stream. Includes only      *|
|* <cuda.h>; the library never links MLIR or LLVM. All state lives in a     *|
|* pa_context the caller creates, one per device. No call allocates device  *|
|* memory (but pa_context_create, 16 bytes, and pa_host_alloc, for compiled *|
|* host code), synchronises or reads device memory on the host (but         *|
|* pa_context_last_error), so a launch can be captured in a CUDA graph.     *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef PA_RUNTIME_PA_RUNTIME_H
#define PA_RUNTIME_PA_RUNTIME_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===-- Status -------------------------------------------------------------===*/

typedef enum pa_status_code {
  PA_OK = 0,
  PA_ERROR_INVALID_ARGUMENT = 1, /* null pointer, sizes that disagree, ... */
  PA_ERROR_UNSUPPORTED = 2,      /* no loaded variant serves the call */
  PA_ERROR_CUDA = 3,             /* a driver call failed; see driver_error */
  PA_ERROR_BUNDLE = 4,           /* a manifest or PTX that cannot be used */
  PA_ERROR_IO = 5,               /* a file that cannot be read */
  PA_ERROR_CAPTURE = 6, /* a module would load while the stream captures a
                           CUDA graph: preload it before capturing */
  PA_ERROR_BAD_INPUT = 7, /* a kernel found a block-table entry or seq_len
                             out of range (pa_context_last_error) */
} pa_status_code;

/// Every entry returns this by value. `driver_error` names the CUresult
/// (e.g. "CUDA_ERROR_INVALID_PTX") when code == PA_ERROR_CUDA, else "".
typedef struct pa_status {
  pa_status_code code;
  char driver_error[64];
  char message[1024];
} pa_status;

/*===-- Context ------------------------------------------------------------===*/

typedef struct pa_context pa_context;

/// Creates a context on CUDA device `device_ordinal` (its primary context).
/// The CUDA driver is loaded on first use; without one this fails with
/// PA_ERROR_CUDA and a message saying so.
pa_status pa_context_create(int device_ordinal, pa_context **out);
void pa_context_destroy(pa_context *ctx);

/// Adds one bundle to the context's index: reads and checks the manifest at
/// `manifest_path` and that the PTX (and SASS, if any) it names exist
/// (paths relative to the manifest). No module is loaded here: a bundle's
/// module loads on the first call that needs it, or on a preload below —
/// its SASS where the device is exactly the bundle's chip, else its PTX
/// through the driver's JIT (the JIT error log is then in the message). A
/// bundle compiled for a chip newer than the device is refused. Not
/// thread-safe with other calls on the same context.
pa_status pa_context_load_bundle(pa_context *ctx, const char *manifest_path);
/// Indexes every `*.manifest` in `dir` (bundles for chips newer than the
/// device are skipped); all or nothing.
pa_status pa_context_load_library(pa_context *ctx, const char *dir);
/// Number of indexed variants (bundles).
size_t pa_context_num_variants(const pa_context *ctx);

/*===-- Decode -------------------------------------------------------------===*/

typedef enum pa_dtype {
  PA_F16 = 0,
  PA_BF16 = 1,
  PA_F32 = 2,
} pa_dtype;

/// The element type of the KV caches (docs/runtime.md). AUTO: the caches
/// hold `dtype`. The fp8 types store one byte per element, value = stored *
/// scale (k_scale / v_scale below): E4M3 is OCP FP8 E4M3FN (finite, max 448;
/// vLLM's "fp8" / "fp8_e4m3"), E5M2 the IEEE-like E5M2 (max 57344).
/// The most query tokens a sequence may have in one call (max_query_len).
enum { PA_MAX_QUERY_LEN = 16 };

typedef enum pa_kv_cache_dtype {
  PA_KV_CACHE_AUTO = 0,
  PA_KV_CACHE_FP8_E4M3 = 1,
  PA_KV_CACHE_FP8_E5M2 = 2,
} pa_kv_cache_dtype;

/// One decode_v2 call. Pointers are device pointers to contiguous row-major
/// tensors with the shapes of the contract (docs/runtime.md).
typedef struct pa_decode_args {
  pa_dtype dtype;      /* query, output (and caches unless kv_cache_dtype) */
  pa_dtype tmp_dtype;  /* tmp_output: PA_F32 or dtype */
  int32_t num_seqs, num_heads, num_kv_heads, head_size, block_size;
  int32_t num_blocks;          /* key/value cache dim 0 (for argument checks) */
  int32_t max_blocks_per_seq;  /* block_tables dim 1 */
  int32_t max_num_partitions;  /* workspace dim 2 */
  int32_t partition_size;      /* tokens per workspace partition (512) */
  /// Upper bound of seq_lens (host value). 0 selects fixed-grid mode: the
  /// grid covers every workspace partition and does not depend on the
  /// current lengths (for CUDA-graph capture).
  int32_t max_seq_len;
  float scale;
  CUdeviceptr query, key_cache, value_cache, block_tables, seq_lens;
  CUdeviceptr output, exp_sums, max_logits, tmp_output;
  /* Optional features; zero-initialised means off (docs/runtime.md). */
  /// ALiBi: [num_heads] f32 slopes, logit += slope * (token - seq_len + 1).
  CUdeviceptr alibi_slopes;
  /// Attend to each sequence's last sliding_window tokens only (0: all).
  int32_t sliding_window;
  /// logit = cap * tanh(logit / cap) before ALiBi (0: no cap).
  float logits_soft_cap;
  /// fp8 KV caches (docs/runtime.md): the cache element type; AUTO = dtype.
  pa_kv_cache_dtype kv_cache_dtype;
  /// fp8: value = stored * scale. Used when the pointer below is 0.
  float k_scale, v_scale;
  /// fp8: when nonzero, one f32 on the device that the kernel reads at run
  /// time instead of k_scale / v_scale (a CUDA graph can change it).
  CUdeviceptr k_scale_ptr, v_scale_ptr;
  /// Attention sinks (gpt-oss): [num_heads] f32 logits, one per query head,
  /// that join each head's softmax denominator with no value row (0: none;
  /// docs/features.md). Read on the device at run time.
  CUdeviceptr sinks;
  /// Several query tokens per sequence (speculative decoding;
  /// docs/features.md): i32 [num_seqs + 1], query_start_loc[0] = 0,
  /// non-decreasing; sequence s has the query (and output and workspace)
  /// rows query_start_loc[s] .. query_start_loc[s + 1] - 1, and its token j
  /// of q_len_s attends causally to the cache tokens 0 .. seq_lens[s] -
  /// q_len_s + j. 0: one token per sequence, row s.
  CUdeviceptr query_start_loc;
  /// With query_start_loc: the largest q_len_s, 1 to 16 (host value; it
  /// sizes the grid). Else 0 (or 1).
  int32_t max_query_len;
} pa_decode_args;

/// Checks the arguments, picks the variant, loads its module if this is its
/// first use (PA_ERROR_CAPTURE if `stream` is capturing a CUDA graph then),
/// computes the grid and launches the partition and reduce kernels (or the
/// one-pass kernel, or the cluster kernel in its place) on `stream`. Nothing
/// is launched when it returns an error.
pa_status pa_decode_v2(pa_context *ctx, const pa_decode_args *args,
                       CUstream stream);

/// What a call would do, without launching: the variant and grid chosen
/// (loads the variant's module if needed: the plan uses its occupancy).
typedef struct pa_plan {
  char variant[128];      /* the bundle's name */
  int one_pass;           /* 1: one kernel, no workspace round trip */
  int32_t partition_tokens; /* context tokens per partition program */
  int32_t num_partitions;   /* partitions launched per (seq, kv head) */
  unsigned grid[3], block[3]; /* partition, one-pass or cluster kernel */
  unsigned reduce_grid[3], reduce_block[3];
  /* partition programs one SM holds at once (the driver's occupancy of the
     JIT-compiled kernel), which the adaptive rule sizes waves by; 0 when
     unknown (a context without a driver) */
  int32_t resident_programs;
  /* 0: every partition holds partition_tokens. P > 0 (fixed-grid mode on
     bundles whose kernels take partition_split): num_partitions = P and a
     sequence of len tokens runs in partitions of roundup(ceil(len / P),
     partition_tokens) tokens (docs/runtime.md) */
  int32_t partition_split;
  /* 0: no cluster kernel runs. S > 0 (one_pass set, on a bundle with a
     cluster kernel): the cluster one-pass kernel runs instead of one pass
     or of at most S partitions and their reduce, in thread-block clusters
     of S programs along grid x (docs/runtime.md); grid and block are its */
  int32_t cluster_size;
} pa_plan;
pa_status pa_plan_decode_v2(const pa_context *ctx, const pa_decode_args *args,
                            pa_plan *plan);

/// Bytes of exp_sums + max_logits + tmp_output a call with these sizes needs
/// (tmp_output in tmp_dtype), for `max_seq_len` tokens at most.
size_t pa_workspace_bytes(int32_t num_seqs, int32_t num_heads,
                          int32_t head_size, int32_t max_seq_len,
                          int32_t partition_size, pa_dtype tmp_dtype);

/*===-- Bad inputs found by the kernels ------------------------------------===*/

/// What the kernels recorded about a block-table entry outside [0,
/// num_blocks) or a seq_len outside [0, max_blocks_per_seq * block_size]
/// (docs/runtime.md, "Bad block tables"). Such an entry is never
/// dereferenced (block 0 is read instead; a bad seq_len counts as 0 tokens)
/// and the output rows (query row, head) that read it are NaN.
typedef struct pa_kernel_error {
  int32_t count; /* programs that found one since the last read; 0: none */
  int32_t seq;   /* the sequence of the first one recorded */
  int32_t index; /* its logical block (block_tables[seq][index]); -1: the
                    bad value is seq_lens[seq] */
  int32_t value; /* the entry (or seq_len) as the kernel read it */
} pa_kernel_error;

/// Reads the context's error word after the work queued on `stream` (it
/// synchronises `stream`) and, if a kernel recorded an error, clears it in
/// stream order. Returns PA_OK with a zeroed `*out` when nothing was
/// recorded, PA_ERROR_BAD_INPUT with `*out` filled and a message naming the
/// entry when something was (the first one recorded since the last read, by
/// the program that recorded first). `out` may be null. A host-only context
/// has launched nothing: PA_OK. Not capturable (it synchronises); records
/// from kernels on other streams show once those kernels have finished.
pa_status pa_context_last_error(pa_context *ctx, CUstream stream,
                                pa_kernel_error *out);

/*===-- Module loading -----------------------------------------------------===*/

/// Loads now the modules that calls like each of `args[0..count)` would
/// use (the variant chosen for its key and that variant's wide twin), so that
/// such calls load nothing later, e.g. while a CUDA graph is captured. Only
/// the key fields are read: dtype, tmp_dtype, kv_cache_dtype, head_size,
/// block_size, num_heads, num_kv_heads, and whether alibi_slopes,
/// logits_soft_cap and sliding_window are set. Thread-safe.
pa_status pa_context_preload(pa_context *ctx, const pa_decode_args *args,
                             size_t count);
/// Loads every indexed bundle's module (the old eager behaviour). With SASS
/// this is quick; with PTX only it JIT-compiles every bundle.
pa_status pa_context_preload_all(pa_context *ctx);

/// What the context has indexed and loaded.
typedef struct pa_library_stats {
  size_t bundles;          /* indexed */
  size_t modules_loaded;   /* of those, loaded */
  size_t loaded_sass;      /* loaded from their SASS */
  size_t loaded_ptx;       /* JIT-compiled from their PTX */
  size_t sass_fallbacks;   /* had SASS for this device that would not load:
                              their PTX was JIT-compiled instead */
} pa_library_stats;
pa_status pa_context_library_stats(const pa_context *ctx,
                                   pa_library_stats *out);

/*===-- Compiled host code -------------------------------------------------===*/

/// pa_decode_v2 flattened for host code a compiler generates
/// (convert-paged-attn-to-runtime; docs/design.md, "Host code to an object"):
/// one scalar or device pointer per pa_decode_args field, so that generated
/// code needs no copy of the struct's layout. The order is the table
/// include/PagedAttn/Conversion/PagedAttnToRuntime/HostABI.def, which the
/// compiler reads and the runtime checks this prototype against at compile
/// time. Fields of pa_decode_args not listed here are zero.
///
/// `status` may be null. When it is not and already holds an error
/// (status->code != PA_OK), nothing is launched and that code is returned,
/// so the first error of a sequence of calls stays for the caller to read;
/// a new error is written there; a success leaves it as it is. Returns the
/// call's pa_status_code. Allocates nothing, like pa_decode_v2.
int32_t pa_host_decode_v2(
    pa_context *ctx, CUstream stream, int32_t dtype, int32_t tmp_dtype,
    int32_t num_seqs, int32_t num_heads, int32_t num_kv_heads,
    int32_t head_size, int32_t block_size, int32_t num_blocks,
    int32_t max_blocks_per_seq, int32_t max_num_partitions,
    int32_t partition_size, int32_t max_seq_len, float scale, void *query,
    void *key_cache, void *value_cache, void *block_tables, void *seq_lens,
    void *output, void *exp_sums, void *max_logits, void *tmp_output,
    void *alibi_slopes, int32_t sliding_window, float logits_soft_cap,
    int32_t kv_cache_dtype, float k_scale, float v_scale, void *k_scale_ptr,
    void *v_scale_ptr, void *sinks, void *query_start_loc,
    int32_t max_query_len, pa_status *status);

/// Stream-ordered device memory for compiled host code: the workspace the
/// tensor form of decode_v2 leaves to the compiler (docs/design.md). `bytes`
/// on `stream` (cuMemAllocAsync, in the context's device; usable by work
/// queued on `stream` after it, and capturable in a CUDA graph). Returns
/// null on an error, written to `status` (may be null) like
/// pa_host_decode_v2, or when `status` already holds one. pa_decode_v2 and
/// pa_host_decode_v2 themselves never allocate.
void *pa_host_alloc(pa_context *ctx, CUstream stream, int64_t bytes,
                    pa_status *status);
/// Frees `ptr` (from pa_host_alloc) on `stream` once the work queued before
/// it is done (cuMemFreeAsync). Frees even when `status` holds an error (the
/// error stays); null is a no-op. Returns the code.
int32_t pa_host_free(pa_context *ctx, CUstream stream, void *ptr,
                     pa_status *status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PA_RUNTIME_PA_RUNTIME_H */
