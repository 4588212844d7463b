// The decode step of ../decode_v2.mlir in memref form: the caller owns every
// buffer, workspace included (device memory). With host=runtime the function
// gets the runtime context, stream and status as three trailing arguments
// and a C interface (_mlir_ciface_decode_step); main.c calls it.
func.func @decode_step(%query: memref<?x32x128xf16>,
                       %key_cache: memref<?x8x16x16x8xf16>,
                       %value_cache: memref<?x8x128x16xf16>,
                       %block_tables: memref<?x?xi32>,
                       %seq_lens: memref<?xi32>,
                       %max_seq_len: index,
                       %output: memref<?x32x128xf16>,
                       %exp_sums: memref<?x32x?xf32>,
                       %max_logits: memref<?x32x?xf32>,
                       %tmp_output: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2
      ins(%query, %key_cache, %value_cache, %block_tables, %seq_lens
          : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>,
            memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>)
      max_seq_len(%max_seq_len)
      outs(%output : memref<?x32x128xf16>)
      workspace(%exp_sums, %max_logits, %tmp_output
                : memref<?x32x?xf32>, memref<?x32x?xf32>,
                  memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32, partition_size = 512 : i64}
  return
}
