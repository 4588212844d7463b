//===- Passes.td - paged_attn conversions ------------------*- tablegen -*-===//
//
// Conversions out of the paged_attn dialect.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_CONVERSION_PASSES_TD
#define PAGED_ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertPagedAttnToGPU : Pass<"convert-paged-attn-to-gpu", "ModuleOp"> {
  let summary = "Lower memref-form decode_v2 to a partition and a reduce "
                "kernel in a gpu.module and their gpu.launch_func";
  let description = [{
    Each memref-form `paged_attn.decode_v2` becomes, on the host side, the
    launch of the PagedAttention V2 kernels with the geometry computed from
    the operand sizes, and, on the device side, one `gpu.module` per kernel
    variant (element types, head size, block size, GQA tile) holding:

    * `<variant>_partition`: one program per (partition, KV head ×
      head tile, sequence). It computes `heads_per_program` query heads of
      one KV head's group so each K/V byte is read once, gathers K and V
      through the block table in `scf.for` steps of `token_step` tokens per
      warp with 16-byte vector loads, keeps an fp32 online softmax per lane,
      reduces dot products with `gpu.shuffle xor`, merges warps through
      workgroup memory and writes the partition's max logit, exp sum and
      normalized partial output. Partitions past a sequence's end write
      sentinels (`-inf`, `0`) and exit.

      From sm_80 (`chip`), f16 and bf16 variants use tensor cores instead
      (`<variant>_mma_partition`): per 16-token step a warp computes the
      scores of 8 or 16 query heads with `nvvm.mma.sync` m16n8k16 (keys as
      the A operand, straight from their 16-byte loads), turns them into
      fp32 online-softmax weights, and multiplies them with the values by a
      second mma, the values loaded 8 bytes per lane as the A operand of
      the transposed product.
    * `<variant>_onepass`: the same kernel writing the output directly,
      used when one partition covers every context.
    * `<variant>_reduce`: the log-sum-exp merge of the partitions; a
      program of 4 warps serves `ceil(4 / ceil(num_partitions / 8))` query
      heads of one sequence (a head with up to 8 partitions has one warp,
      more get two or four), statistics folded per head, then the weighted
      partial outputs, lanes across head_size (docs/kernels.md).

    Host side: with `max_seq_len` the number of partitions is
    `ceil(max_seq_len / partition_size)` and an `scf.if` picks the one-pass
    kernel when it is 1; without it the grid covers every workspace
    partition (fixed-grid mode, for CUDA-graph capture).

    The kernels take bare pointers (flattened 1-D memrefs): lower them with
    `convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1}`.

    With `host=runtime` the kernels are built the same way (for export),
    but the host side is a call of the runtime's flat entry
    `pa_host_decode_v2` (pa_runtime.h; parameters in the order of
    `PagedAttn/Conversion/PagedAttnToRuntime/HostABI.def`), which picks the
    variant and launches on the caller's stream. Every function holding a
    decode_v2 gets three `!llvm.ptr` arguments appended, marked
    `paged_attn.host_arg` = "context" (a `pa_context *`), "stream" (a
    `CUstream`) and "status" (a `pa_status *`, or null), unless it has
    arguments so marked, and `llvm.emit_c_interface`:

    ```mlir
    func.func @step(%q: memref<?x32x128xf16>, ...,
                    %ctx: !llvm.ptr {paged_attn.host_arg = "context"},
                    %stream: !llvm.ptr {paged_attn.host_arg = "stream"},
                    %status: !llvm.ptr {paged_attn.host_arg = "status"})
        attributes {llvm.emit_c_interface} {
      %qp = llvm.inttoptr ... : i64 to !llvm.ptr  // aligned pointer of %q
      ...
      %code = func.call @pa_host_decode_v2(%ctx, %stream, %c0_i32, ...,
                                           %qp, ..., %status) : (...) -> i32
    ```
  }];
  let options = [
    Option<"headsPerProgram", "heads-per-program", "int64_t", /*default=*/"0",
           "Query heads one partition program computes (GQA tile); 0 picks "
           "the documented rule">,
    Option<"warps", "warps", "int64_t", /*default=*/"4",
           "Warps per partition program">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_70\"",
           "Chip the kernels are planned for: from sm_80, f16 and bf16 "
           "variants use tensor cores (mma.sync.m16n8k16); on sm_7x, f16 "
           "GQA variants use them through wmma">,
    Option<"kernel", "kernel", "std::string", /*default=*/"\"auto\"",
           "Partition kernel: auto (the rule), simt (fp32 FMAs), mma "
           "(tensor cores, sm_80+) or wmma (tensor cores, sm_70+, f16)">,
    Option<"simtPieceBytes", "simt-piece-bytes", "int64_t", /*default=*/"0",
           "Bytes of a token's key a SIMT lane loads at once (8 or 16; 8 "
           "puts twice the lanes on a token); 0 picks the rule (16). The "
           "variant keeps its name: build a library with one setting">,
    Option<"l2PrefetchBytes", "l2-prefetch-bytes", "int64_t",
           /*default=*/"-1",
           "L2 prefetch size hint (64, 128 or 256 bytes; 0: none; -1: the "
           "rule, 256 from sm_90) on the tensor-core kernel's key and value "
           "loads: the L2 fetches that many bytes around a missed sector. "
           "Other kernels ignore it; the variant keeps its name">,
    Option<"clusterSize", "cluster-size", "int64_t", /*default=*/"0",
           "Also build the cluster kernel (sm_90+ tensor-core variants): "
           "the one-pass kernel with each program's context split over a "
           "thread-block cluster of this many programs (2 to 8), merged "
           "over distributed shared memory; 0: none. The variant keeps its "
           "name">,
    Option<"host", "host", "std::string", /*default=*/"\"launch\"",
           "Host side: launch (gpu.launch_func of the kernels) or runtime "
           "(a call of the runtime's pa_host_decode_v2 on the function's "
           "context, stream and status arguments)">,
    Option<"printPlans", "print-plans", "bool", /*default=*/"false",
           "Plan every decode_v2 and report each plan as a remark (its "
           "variant name, kernel kind and warps) instead of lowering: the "
           "kernel library's list checks its names against the compiler's "
           "rule this way (kernels/check_variants.py)">,
  ];
  let dependentDialects = [
    "arith::ArithDialect", "func::FuncDialect", "gpu::GPUDialect",
    "LLVM::LLVMDialect",
    "NVVM::NVVMDialect",
    "memref::MemRefDialect", "scf::SCFDialect", "vector::VectorDialect"
  ];
}

def PagedAttnStripKernels : Pass<"paged-attn-strip-kernels", "ModuleOp"> {
  let summary = "Erase the kernels (gpu.module, gpu.binary) once exported, "
                "leaving host code that calls the runtime";
  let description = [{
    After `convert-paged-attn-to-gpu{host=runtime}` (and the export of the
    bundles, if wanted) the kernels live in the kernel library the runtime
    loads; the host code refers to none of them. This erases every
    `gpu.module` and `gpu.binary`, the `gpu.container_module` attribute and
    the variant keys, so that the module lowers to LLVM IR and an object
    like any host code. A `gpu.launch_func` left in the module (host=launch)
    is an error: its kernels would be gone.
  }];
}

#endif // PAGED_ATTN_CONVERSION_PASSES_TD
