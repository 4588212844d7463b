//===- PagedAttnToGPU.h - decode_v2 to GPU kernels --------------*- C++ -*-===//
//
// The conversion of memref-form paged_attn.decode_v2 into the PagedAttention
// V2 kernels (gpu.module) and their launches.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_CONVERSION_PAGEDATTNTOGPU_PAGEDATTNTOGPU_H
#define PAGED_ATTN_CONVERSION_PAGEDATTNTOGPU_PAGEDATTNTOGPU_H

#include <cstdint>
#include <string>

namespace mlir {
class ConversionTarget;
class RewritePatternSet;
} // namespace mlir

namespace mlir::paged_attn {

/// Top-module attribute holding each kernel variant's key (dtypes, head size,
/// block size, heads per program, warps, token step, shared bytes) keyed by
/// variant name; each variant's gpu.module carries its own as "paged_attn.variant".
inline constexpr char kVariantAttrName[] = "paged_attn.variants";

/// With host=runtime: the argument attribute naming a host function's
/// runtime arguments ("context", "stream", "status"), and the runtime entry
/// the lowered host code calls (pa_runtime.h; its parameters:
/// PagedAttnToRuntime/HostABI.def).
inline constexpr char kHostArgAttrName[] = "paged_attn.host_arg";
inline constexpr char kHostEntryName[] = "pa_host_decode_v2";
/// The runtime entries that allocate and free the tensor form's workspace
/// on the stream.
inline constexpr char kHostAllocName[] = "pa_host_alloc";
inline constexpr char kHostFreeName[] = "pa_host_free";

/// Overrides of the kernel planning rule (KernelPlan.cpp); 0 means "rule".
struct PagedAttnToGPUOptions {
  int64_t headsPerProgram = 0;
  int64_t warps = 4;
  /// The chip the kernels are for: it decides which partition kernel the
  /// rule picks (tensor cores from sm_80).
  std::string chip = "sm_70";
  /// "auto" (the rule), "simt", "mma" or "wmma".
  std::string kernel = "auto";
  /// Bytes of a key piece of the SIMT kernel (8 or 16); 0: the rule.
  int64_t simtPieceBytes = 0;
  /// The L2 prefetch size hint (.L2::64B/128B/256B, PTX 7.4) on the
  /// tensor-core kernel's cache loads; 0: none; -1: the rule.
  int64_t l2PrefetchBytes = -1;
  /// Programs per thread-block cluster of the cluster kernel (2 to 8, sm_90+
  /// tensor-core variants), built beside the others; 0: none.
  int64_t clusterSize = 0;
  /// The host side: "launch" (gpu.launch_func) or "runtime" (a call of
  /// pa_host_decode_v2 on the function's context, stream and status).
  std::string host = "launch";
};

/// Adds the pattern that lowers decode_v2 (memref form) to gpu.launch_func
/// ops and creates or reuses the gpu.module of its kernel variant.
void populatePagedAttnToGPUPatterns(RewritePatternSet &patterns,
                                    const PagedAttnToGPUOptions &options);

/// Marks paged_attn illegal and the dialects the kernels use legal.
void configurePagedAttnToGPULegality(ConversionTarget &target);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_CONVERSION_PAGEDATTNTOGPU_PAGEDATTNTOGPU_H
