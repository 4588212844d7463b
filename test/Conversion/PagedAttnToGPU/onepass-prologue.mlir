// The one-pass kernel's prologue (batch 1 runs it): before anything waits
// for seq_lens, it asks for the block table's first line (prefetch.global.L1)
// and, in the tensor-core kernel, issues the tile's query loads as inline
// PTX with side effects, so that LLVM cannot sink them past the branch on
// seq_len; they are stored to workgroup memory after it. The partition
// kernel's prologue is unchanged: with either, ptxas spilled tiles at their
// register caps.
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 l2-prefetch-bytes=0" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 l2-prefetch-bytes=0 kernel=simt" | FileCheck %s --check-prefix=SIMT

// The partition kernel: neither.
// CHECK-LABEL: gpu.func @pa_f16_d128_h8_mma_partition
// CHECK-NOT: llvm.inline_asm has_side_effects
// CHECK-LABEL: gpu.func @pa_f16_d128_h8_mma_onepass
// The sequence's length, then the two asks, then the branch on a bad
// length (which records it: the atomic).
// CHECK: memref.load %arg4[%block_id_z]
// CHECK-NOT: memref.atomic_rmw
// CHECK: llvm.inline_asm has_side_effects "{{.*}}prefetch.global.L1 [pa_g];{{.*}}", "l"
// One 16-byte chunk per thread (8 heads x 16 chunks, 128 threads).
// CHECK: llvm.inline_asm has_side_effects "{{.*}}ld.global.v4.b32 {$0, $1, $2, $3}, [pa_g];{{.*}}"
// CHECK-NOT: llvm.inline_asm has_side_effects "{{.*}}ld.global
// CHECK: memref.atomic_rmw addi %{{.*}}, %arg22
// The chunk stored after the branch, then the barrier.
// CHECK: vector.store %{{.*}}, %arg23[%{{.*}}] {alignment = 16 : i64}
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK-LABEL: gpu.func @pa_f16_d128_h8_mma_reduce

// The SIMT kernel's one-pass prologue asks for the line too; its query is
// staged where it was.
// SIMT-LABEL: gpu.func @pa_f16_d128_h4_partition
// SIMT-NOT: llvm.inline_asm has_side_effects
// SIMT-LABEL: gpu.func @pa_f16_d128_h4_onepass
// SIMT: llvm.inline_asm has_side_effects "{{.*}}prefetch.global.L1 [pa_g];{{.*}}", "l"
// SIMT-NOT: llvm.inline_asm has_side_effects "{{.*}}ld.global
// SIMT-LABEL: gpu.func @pa_f16_d128_h4_reduce
func.func @gqa(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %max: index,
    %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}
