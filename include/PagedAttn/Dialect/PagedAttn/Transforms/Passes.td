//===- Passes.td - paged_attn transforms -------------------*- tablegen -*-===//
//
// Passes on the paged_attn dialect itself, before the conversion to GPU.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_TRANSFORMS_PASSES_TD
#define PAGED_ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PagedAttnMaterializeWorkspace
    : Pass<"paged-attn-materialize-workspace"> {
  let summary = "Give tensor-form decode_v2 ops without a workspace one "
                "built from tensor.empty";
  let description = [{
    A graph importer need not allocate the partition workspace. This pass
    adds `exp_sums`, `max_logits` (f32 `[num_seqs, num_heads, P]`) and
    `tmp_output` (f32 `[num_seqs, num_heads, P, head_size]`) made with
    `tensor.empty`, where `P = ceil(max_seq_len / partition_size)` when the
    op has `max_seq_len`, else `ceil(max_blocks_per_seq * block_size /
    partition_size)`. One-shot bufferization then turns the empties into
    allocations.

    Before:
    ```mlir
    %o = paged_attn.decode_v2 ins(...) max_seq_len(%m) outs(%out : tensor<?x32x128xf16>)
           {scale = 0.088 : f32} -> tensor<?x32x128xf16>
    ```
    After:
    ```mlir
    %p = arith.ceildivui %m, %c512 : index
    %es = tensor.empty(%s, %p) : tensor<?x32x?xf32>
    ...
    %o:4 = paged_attn.decode_v2 ins(...) max_seq_len(%m) outs(%out : ...)
           workspace(%es, %ml, %tmp : ...) {...} -> ...
    ```
  }];
  let dependentDialects = ["arith::ArithDialect", "tensor::TensorDialect"];
}

#endif // PAGED_ATTN_TRANSFORMS_PASSES_TD
