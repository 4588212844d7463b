//===- Pipelines.h - paged_attn pipelines -----------------------*- C++ -*-===//
//
// paged-attn-to-ptx: from a function holding decode_v2 (either form) to PTX
// in gpu.binary ops, and optionally to bundles on disk; with host=runtime,
// to host code in the LLVM dialect that calls the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_PIPELINES_PIPELINES_H
#define PAGED_ATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::paged_attn {

/// Options of paged-attn-to-ptx.
struct PagedAttnToPTXOptions
    : public PassPipelineOptions<PagedAttnToPTXOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target chip (sm_70, sm_80, sm_90, ...)"),
      llvm::cl::init("sm_70")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features, e.g. +ptx80; empty: the lowest PTX "
                     "version the kernels need on the chip"),
      llvm::cl::init("")};
  PassOptions::Option<int> optLevel{
      *this, "opt-level", llvm::cl::desc("LLVM optimization level"),
      llvm::cl::init(3)};
  PassOptions::Option<int64_t> headsPerProgram{
      *this, "heads-per-program",
      llvm::cl::desc("GQA tile (query heads per program); 0: the rule"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> warps{
      *this, "warps", llvm::cl::desc("Warps per partition program"),
      llvm::cl::init(4)};
  PassOptions::Option<std::string> kernel{
      *this, "kernel",
      llvm::cl::desc("Partition kernel: auto (tensor cores from sm_80 for "
                     "f16/bf16; wmma for f16 GQA on sm_7x), simt, mma or wmma"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> simtPieceBytes{
      *this, "simt-piece-bytes",
      llvm::cl::desc("Key bytes a SIMT lane loads at once (8 or 16); 0: "
                     "the rule"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> l2PrefetchBytes{
      *this, "l2-prefetch-bytes",
      llvm::cl::desc("L2 prefetch size hint on the tensor-core kernel's "
                     "cache loads (64, 128 or 256; 0: none; -1: the rule, "
                     "256 from sm_90)"),
      llvm::cl::init(-1)};
  PassOptions::Option<int64_t> clusterSize{
      *this, "cluster-size",
      llvm::cl::desc("Also build the cluster kernel with this many programs "
                     "per thread-block cluster (2 to 8; sm_90+ tensor-core "
                     "variants); 0: none"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> host{
      *this, "host",
      llvm::cl::desc("Host side: launch (gpu.launch_func, the default) or "
                     "runtime (calls of the runtime's pa_host_decode_v2; the "
                     "kernels are exported, then erased, and the host code "
                     "is lowered to the LLVM dialect for mlir-translate)"),
      llvm::cl::init("launch")};
  PassOptions::Option<std::string> exportDir{
      *this, "export-dir",
      llvm::cl::desc("If set, write each variant's PTX + manifest here"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> wideTwinOf{
      *this, "wide-twin-of",
      llvm::cl::desc("With export-dir: declare the bundles the wide twins of "
                     "this variant (its name without the chip)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> ptxas{
      *this, "ptxas",
      llvm::cl::desc("With export-dir: assemble each bundle's PTX for its "
                     "chip with this ptxas (SASS beside the PTX)"),
      llvm::cl::init("")};
};

/// The lowest PTX ISA feature the kernels need on a chip ("+ptx61" for sm_70:
/// the wmma kernel's m8n32k16; "+ptx78" for sm_90, ...), or ""
/// for a chip this table does not know.
std::string minimumPtxFeature(llvm::StringRef chip);

/// Builds paged-attn-to-ptx into `pm` (on builtin.module).
void buildPagedAttnToPTXPipeline(OpPassManager &pm,
                                 const PagedAttnToPTXOptions &options);

/// Registers paged-attn-to-ptx with the pass registry.
void registerPagedAttnPipelines();

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_PIPELINES_PIPELINES_H
