//===- PagedAttnOps.td - paged_attn operations -------------*- tablegen -*-===//
//
// The decode_v2 operation in its two forms: with value semantics on tensors
// (what a graph importer emits) and on memrefs (what the lowering consumes).
// It is destination-passing like linalg's structured ops, so one op serves
// both and one-shot bufferization turns the first into the second.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_OPS_TD
#define PAGED_ATTN_OPS_TD

include "PagedAttn/Dialect/PagedAttn/IR/PagedAttnDialect.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

def PagedAttn_ShapedOperand : AnyTypeOf<[AnyRankedTensor, AnyMemRef]>;

def PagedAttn_DecodeV2Op : PagedAttn_Op<"decode_v2", [
    AttrSizedOperandSegments,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "PagedAttention V2 decode: each sequence's query tokens "
                "(one, or a few for speculative decoding) attending to a "
                "block-paged KV cache";
  let description = [{
    Computes, for every sequence `s` and query head `h`,

    ```
    out[s, h] = softmax(logit[s, h, t] over t) . V[s, kv(h)]
    logit[s, h, t] = cap(scale * q[s, h] . K[s, kv(h), t])
                     + alibi_slopes[h] * (t - seq_lens[s] + 1)
    cap(x) = logits_soft_cap * tanh(x / logits_soft_cap)   (x without it)
    ```

    over the first `seq_lens[s]` tokens of the sequence's context (the last
    `sliding_window` of them when the attribute is set), where
    `kv(h) = h / (num_heads / num_kv_heads)` (MHA, GQA and MQA) and the
    context's tokens are gathered from the paged caches through
    `block_tables`: token `t` of sequence `s` lives in physical block
    `block_tables[s, t / block_size]` at slot `t % block_size`. A row that
    attends to no token (`seq_lens[s]` = 0) is 0.

    With `sinks` (gpt-oss's attention sinks), each head's softmax
    denominator gains `exp(sinks[h] - m)`, a logit without a value row:

    ```
    out[s, h] = sum_t exp(logit[s, h, t] - m) V[t]
                / (exp(sinks[h] - m) + sum_t exp(logit[s, h, t] - m))
    ```

    (`m` the maximum of the logits and the sink; the result does not depend
    on it). The sink composes with every other feature.

    | operand | shape | element type |
    |---|---|---|
    | query | `[num_seqs, num_heads, head_size]` | f16, bf16, f32 |
    | key_cache | `[num_blocks, num_kv_heads, head_size / x, block_size, x]` | query's, or fp8 |
    | value_cache | `[num_blocks, num_kv_heads, head_size, block_size]` | key_cache's |
    | block_tables | `[num_seqs, max_blocks_per_seq]` | i32 |
    | seq_lens | `[num_seqs]` | i32 |
    | alibi_slopes (optional) | `[num_heads]` | f32 |
    | sinks (optional) | `[num_heads]` | f32 |
    | k_scale, v_scale (fp8 caches only) | scalars | f32 |
    | max_seq_len (optional) | scalar: the largest entry of seq_lens | index |
    | output (init) | `[num_seqs, num_heads, head_size]` | query's |
    | exp_sums, max_logits (workspace) | `[num_seqs, num_heads, max_num_partitions]` | f32 |
    | tmp_output (workspace) | `[num_seqs, num_heads, max_num_partitions, head_size]` | f32 or query's |

    With `query_start_loc(%qsl, %max_query_len : ...)` a sequence has
    several query tokens (speculative decoding: 1 + k draft tokens). The
    query, output and workspace rows are query tokens, not sequences:
    `query_start_loc` (i32 `[num_seqs + 1]`, `query_start_loc[0] = 0`,
    non-decreasing) gives sequence `s` the rows `query_start_loc[s]` to
    `query_start_loc[s + 1] - 1`, `q_len_s` of them, `0 <= q_len_s <=
    max_query_len <= 16`. The new tokens are already in the cache and
    counted in `seq_lens[s]`: query token `j` of sequence `s` stands at
    position `p = seq_lens[s] - q_len_s + j` and attends causally to the
    cache tokens `0..p`; everything above (ALiBi, the sliding window) reads
    `p + 1` where it reads `seq_lens[s]`. `max_query_len` (a host value,
    like `max_seq_len`) sizes the grid. Without `query_start_loc` every
    sequence has one query token, row `s`.

    | operand (several query tokens) | shape | element type |
    |---|---|---|
    | query, output | `[num_query_tokens, num_heads, head_size]` | as above |
    | query_start_loc | `[num_seqs + 1]` | i32 |
    | max_query_len | scalar, 1 to 16 | index |
    | workspace | first dim `num_query_tokens` | as above |

    `x = 16 / sizeof(cache element)`: 16 bytes of one token's key are
    contiguous. The context of a sequence is split into partitions of
    `partition_size` tokens; the workspace holds each partition's running
    max logit, exp sum and partial output for the log-sum-exp reduction.

    The op is destination-passing. On tensors it returns the new values of
    its inits (`output`, then the workspace if given) and has no side
    effects; the workspace may then be omitted and is allocated by
    bufferization. On memrefs it writes its inits and returns nothing.
    `sliding_window = W` restricts each sequence to its last W tokens
    (Mistral); `logits_soft_cap = c` bounds the logits to (-c, c) before
    ALiBi and the softmax (Gemma 2). ALiBi adds a per-head linear bias that
    is 0 at the newest token.

    `max_seq_len`, when given, bounds the partitions launched; without it
    the grid covers every workspace partition (the fixed-grid mode a CUDA
    graph capture needs).

    The head size and head counts are static (the kernels specialize on
    them); `num_seqs`, `num_blocks`, `max_blocks_per_seq`,
    `max_num_partitions` and the block size may be dynamic (the kernels
    take the block size at run time; a static one must be a power of two
    in [8, 128], a dynamic one is checked by the runtime).

    Example (memref form, Llama-3-8B-like GQA, 8 query heads per KV head):

    ```mlir
    paged_attn.decode_v2
        ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>,
            memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
            memref<?x?xi32>, memref<?xi32>)
        max_seq_len(%max_len)
        outs(%out : memref<?x32x128xf16>)
        workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>,
                  memref<?x32x?x128xf32>)
        {scale = 0.0883883 : f32, partition_size = 512 : i64}
    ```
  }];

  let arguments = (ins
    PagedAttn_ShapedOperand:$query,
    PagedAttn_ShapedOperand:$key_cache,
    PagedAttn_ShapedOperand:$value_cache,
    PagedAttn_ShapedOperand:$block_tables,
    PagedAttn_ShapedOperand:$seq_lens,
    Optional<PagedAttn_ShapedOperand>:$alibi_slopes,
    Optional<PagedAttn_ShapedOperand>:$sinks,
    Optional<PagedAttn_ShapedOperand>:$query_start_loc,
    Optional<Index>:$max_query_len,
    Optional<F32>:$k_scale,
    Optional<F32>:$v_scale,
    Optional<Index>:$max_seq_len,
    PagedAttn_ShapedOperand:$output,
    Optional<PagedAttn_ShapedOperand>:$exp_sums,
    Optional<PagedAttn_ShapedOperand>:$max_logits,
    Optional<PagedAttn_ShapedOperand>:$tmp_output,
    F32Attr:$scale,
    DefaultValuedAttr<I64Attr, "512">:$partition_size,
    OptionalAttr<I64Attr>:$sliding_window,
    OptionalAttr<F32Attr>:$logits_soft_cap
  );
  let results = (outs Variadic<AnyRankedTensor>:$results);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key_cache `,` $value_cache `,` $block_tables `,`
              $seq_lens `:` type($query) `,` type($key_cache) `,`
              type($value_cache) `,` type($block_tables) `,` type($seq_lens)
          `)`
    (`alibi_slopes` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`query_start_loc` `(` $query_start_loc^ `,` $max_query_len `:`
                           type($query_start_loc) `)`)?
    (`kv_scales` `(` $k_scale^ `,` $v_scale `)`)?
    (`max_seq_len` `(` $max_seq_len^ `)`)?
    `outs` `(` $output `:` type($output) `)`
    (`workspace` `(` $exp_sums^ `,` $max_logits `,` $tmp_output `:`
                     type($exp_sums) `,` type($max_logits) `,`
                     type($tmp_output) `)`)?
    attr-dict (`->` type($results)^)?
  }];

  let extraClassDeclaration = [{
    /// The inits: output, then the workspace when present.
    MutableOperandRange getDpsInitsMutable();

    /// True when the op carries exp_sums, max_logits and tmp_output.
    bool hasWorkspace() { return static_cast<bool>(getTmpOutput()); }

    /// Shape accessors the verifier, bufferization and lowering share.
    ShapedType getQueryType() { return ::mlir::cast<ShapedType>(getQuery().getType()); }
    ShapedType getKeyCacheType() { return ::mlir::cast<ShapedType>(getKeyCache().getType()); }
    ShapedType getValueCacheType() { return ::mlir::cast<ShapedType>(getValueCache().getType()); }
    int64_t getNumHeads() { return getQueryType().getDimSize(1); }
    int64_t getHeadSize() { return getQueryType().getDimSize(2); }
    int64_t getNumKvHeads() { return getKeyCacheType().getDimSize(1); }
    /// The key cache's block size, or ShapedType::kDynamic.
    int64_t getBlockSize() { return getKeyCacheType().getDimSize(3); }
  }];

  let hasVerifier = 1;
}

#endif // PAGED_ATTN_OPS_TD
