// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90" | FileCheck %s --check-prefix=MMA
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s --check-prefix=SIMT

// Blocks of 64 and 128 tokens use the layouts and code paths of 16 and 32:
// a warp's token step (16 tokens on tensor cores, at most 32 on CUDA cores)
// lies in one block, so a step reads one block-table entry and addresses
// token t at slot t % block_size of block t / block_size; a (block, KV
// head) slab is head_size x block_size elements.

// bf16, head size 128, blocks of 64: slab 128 x 64 = 8192 elements.
// MMA: gpu.module @pa_bf16_d128_b64_h8_mma attributes {paged_attn.variant = {block_size = 64 : i64
// MMA: gpu.func @pa_bf16_d128_b64_h8_mma_partition(
// MMA: %[[SLAB:.*]] = arith.constant 8192 : index
// MMA: arith.muli %{{.*}}, %[[SLAB]] : index
// MMA: scf.for
// MMA: %[[TOK:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// MMA: %[[C64:.*]] = arith.constant 64 : index
// MMA-NEXT: %[[SLOT:.*]] = arith.remui %[[TOK]], %[[C64]] : index
// MMA: %[[LOGICAL:.*]] = arith.divui %[[TOK]], %{{.*}} : index
// MMA: %[[ENTRY:.*]] = arith.addi %{{.*}}, %[[LOGICAL]] : index
// MMA-NEXT: memref.load %{{.*}}[%[[ENTRY]]] : memref<1099511627776xi32>
// Key chunk c of the step's tokens: (c * 64 + slot) * 8.
// MMA-NOT: memref.load %{{.*}} : memref<1099511627776xi32>
// MMA: arith.addi %[[SLOT]], %{{.*}} : index
// MMA: arith.muli %{{.*}}, %{{.*}} : index
func.func @b64(%q: memref<?x32x128xbf16>, %kc: memref<?x8x16x64x8xbf16>,
    %vc: memref<?x8x128x64xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %max: index,
    %out: memref<?x32x128xbf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xbf16>, memref<?x8x16x64x8xbf16>, memref<?x8x128x64xbf16>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x32x128xbf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}

// -----

// f16, head size 64, blocks of 128 on CUDA cores (a 32-token step): slab
// 64 x 128 = 8192 elements, block t / 128, slot t % 128.
// SIMT: gpu.module @pa_f16_d64_b128_h4 attributes {paged_attn.variant = {block_size = 128 : i64
// SIMT: gpu.func @pa_f16_d64_b128_h4_partition(
// SIMT: %[[SLAB:.*]] = arith.constant 8192 : index
// SIMT: arith.muli %{{.*}}, %[[SLAB]] : index
// SIMT: scf.for
// SIMT: %[[C128:.*]] = arith.constant 128 : index
// SIMT-NEXT: %[[LOGICAL:.*]] = arith.divui %[[TOK:.*]], %[[C128]] : index
// SIMT: %[[C128B:.*]] = arith.constant 128 : index
// SIMT-NEXT: arith.remui %[[TOK]], %[[C128B]] : index
func.func @b128(%q: memref<?x16x64xf16>, %kc: memref<?x4x8x128x8xf16>,
    %vc: memref<?x4x64x128xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %max: index,
    %out: memref<?x16x64xf16>, %es: memref<?x16x?xf32>, %ml: memref<?x16x?xf32>,
    %tmp: memref<?x16x?x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x16x64xf16>, memref<?x4x8x128x8xf16>, memref<?x4x64x128xf16>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x16x64xf16>)
      workspace(%es, %ml, %tmp : memref<?x16x?xf32>, memref<?x16x?xf32>, memref<?x16x?x64xf32>)
      {scale = 0.125 : f32}
  return
}
