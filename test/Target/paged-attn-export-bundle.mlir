// The export writes one PTX + manifest bundle per variant and chip.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-opt %s -paged-attn-to-ptx="export-dir=%t" -o /dev/null
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90 export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/pa_bf16_d256_h2_sm70.manifest
// RUN: FileCheck %s --check-prefix=PTX90 < %t/pa_bf16_d256_h8_mma_sm90.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST90 < %t/pa_bf16_d256_h8_mma_sm90.manifest

// The reduce kernel: one program per (sequence, head), its workgroup
// memory 4 warps x (256 + 2) floats. Every variant takes attention sinks
// (sinks has_sinks) in the kernels that normalize the softmax: one-pass and
// reduce, not partition.
// MANIFEST: paged_attn-bundle 1
// MANIFEST-NEXT: name pa_bf16_d256_h2_sm70
// MANIFEST-NEXT: chip sm_70
// MANIFEST-NEXT: ptx pa_bf16_d256_h2_sm70.ptx
// MANIFEST-NEXT: dtype bf16
// MANIFEST-NEXT: cache_dtype bf16
// MANIFEST-NEXT: tmp_dtype any
// MANIFEST-NEXT: head_size 256
// MANIFEST-NEXT: block_size any
// MANIFEST-NEXT: heads_per_program 2
// MANIFEST-NEXT: warps 4
// MANIFEST-NEXT: token_step 8
// MANIFEST-NEXT: kernel partition pa_bf16_d256_h2_partition threads 128 smem 8576
// MANIFEST-NEXT: kernel onepass pa_bf16_d256_h2_onepass threads 128 smem 8576
// MANIFEST-NEXT: kernel reduce pa_bf16_d256_h2_reduce threads 128 smem 4128
// MANIFEST-NEXT: params partition query key_cache value_cache block_tables seq_lens output exp_sums max_logits tmp_output scale max_blocks_per_seq block_size max_num_partitions partition_tokens partition_split num_kv_heads group_size sliding_window query_start_loc max_query_len num_blocks tmp_f32{{$}}
// MANIFEST-NEXT: params onepass query key_cache value_cache block_tables seq_lens output exp_sums max_logits tmp_output scale max_blocks_per_seq block_size max_num_partitions partition_tokens num_kv_heads group_size sliding_window sinks has_sinks query_start_loc max_query_len num_blocks error_word{{$}}
// MANIFEST-NEXT: params reduce block_tables seq_lens output exp_sums max_logits tmp_output max_blocks_per_seq block_size num_heads max_num_partitions partition_tokens partition_split sliding_window num_partitions sinks has_sinks query_start_loc max_query_len num_blocks error_word tmp_f32{{$}}
// MANIFEST-NEXT: grid partition num_partitions*query_slots num_kv_heads*ceil(group_size/heads_per_program) num_seqs
// MANIFEST-NEXT: grid onepass query_slots num_kv_heads*ceil(group_size/heads_per_program) num_seqs
// MANIFEST-NEXT: grid reduce ceil(num_heads/ceil(4/ceil(num_partitions/8)))*query_slots num_seqs

// For sm_90 the bf16 variant is the tensor-core kernel, tile 8 (one n8
// block of the mma), a 16-token step and the weights' scratch in its
// workgroup memory: 4 warps x 8 heads x 258 + 4 warps x 2 x 8 x 20 floats,
// then the staged query: 8 heads x (32 chunks x 4 + 16) floats.
// PTX90: .target sm_90
// PTX90: .visible .entry pa_bf16_d256_h8_mma_partition(
// PTX90: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX90: .visible .entry pa_bf16_d256_h8_mma_onepass(
// PTX90: .visible .entry pa_bf16_d256_h8_mma_reduce(

// MANIFEST90: name pa_bf16_d256_h8_mma_sm90
// MANIFEST90: chip sm_90
// MANIFEST90: heads_per_program 8
// MANIFEST90: token_step 16
// MANIFEST90: kernel partition pa_bf16_d256_h8_mma_partition threads 128 smem 42752

// A 16/8 GQA layer of head size 256 (group 2), bf16, 32-token blocks.
func.func @decode(%q: memref<?x16x256xbf16>, %kc: memref<?x8x32x32x8xbf16>,
    %vc: memref<?x8x256x32xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x16x256xbf16>, %es: memref<?x16x?xf32>, %ml: memref<?x16x?xf32>,
    %tmp: memref<?x16x?x256xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x16x256xbf16>, memref<?x8x32x32x8xbf16>, memref<?x8x256x32xbf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x16x256xbf16>)
      workspace(%es, %ml, %tmp : memref<?x16x?xf32>, memref<?x16x?xf32>, memref<?x16x?x256xf32>)
      {scale = 0.0625 : f32}
  return
}
