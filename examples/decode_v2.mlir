// A captured decode step of a Llama-3-8B-like model layer: 32 query heads
// sharing 8 KV heads (GQA group 4), head size 128, fp16, 16-token blocks.
// This is what a graph importer emits: value semantics, no workspace.
func.func @decode_step(%query: tensor<?x32x128xf16>,
                       %key_cache: tensor<?x8x16x16x8xf16>,
                       %value_cache: tensor<?x8x128x16xf16>,
                       %block_tables: tensor<?x?xi32>,
                       %seq_lens: tensor<?xi32>,
                       %max_seq_len: index,
                       %output: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %out = paged_attn.decode_v2
      ins(%query, %key_cache, %value_cache, %block_tables, %seq_lens
          : tensor<?x32x128xf16>, tensor<?x8x16x16x8xf16>,
            tensor<?x8x128x16xf16>, tensor<?x?xi32>, tensor<?xi32>)
      max_seq_len(%max_seq_len)
      outs(%output : tensor<?x32x128xf16>)
      {scale = 0.0883883461 : f32, partition_size = 512 : i64}
      -> tensor<?x32x128xf16>
  return %out : tensor<?x32x128xf16>
}
