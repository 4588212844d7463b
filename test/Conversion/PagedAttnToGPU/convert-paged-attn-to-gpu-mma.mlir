// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90" | FileCheck %s
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90 kernel=simt" | FileCheck %s --check-prefix=SIMT

// From sm_80 the 16-bit variants get the tensor-core partition kernel.
// GQA 32/8 (group 4), f16, head size 128, block size 16: one n8 block of
// heads (tile 8, slots 4..7 masked), a 16-token step per warp.

// CHECK-LABEL: func.func @gqa
// CHECK: gpu.launch_func @pa_f16_d128_b16_h8_mma::@pa_f16_d128_b16_h8_mma_onepass
// CHECK: gpu.launch_func @pa_f16_d128_b16_h8_mma::@pa_f16_d128_b16_h8_mma_partition
// CHECK: gpu.launch_func @pa_f16_d128_b16_h8_mma::@pa_f16_d128_b16_h8_mma_reduce
// SIMT: gpu.launch_func @pa_f16_d128_b16_h4::@pa_f16_d128_b16_h4_partition
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

// Workgroup memory: the epilogue's 4 warps x 8 heads x (128 + 2) floats and
// each warp's two 8 x 20 buffers for the weights.
// CHECK: gpu.module @pa_f16_d128_b16_h8_mma attributes {paged_attn.variant = {{{.*}}heads_per_program = 8 : i64, shared_bytes = 21760 : i64, tmp_dtype = f32, token_step = 16 : i64, warps = 4 : i64}}
// CHECK: gpu.func @pa_f16_d128_b16_h8_mma_partition({{.*}}) workgroup(%[[SMEM:.*]] : memref<5440xf32, #gpu.address_space<workgroup>>) kernel
// Q as the B operand: chunks t, t+4, t+8, t+12 of one head per lane.
// CHECK-COUNT-4: vector.load %arg0[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// The state: m and l of the lane's 2 heads, 4 accumulators x 8 m16 blocks.
// CHECK: scf.for %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// One block-table entry, then every load of the step: 8 key chunks of 16
// bytes (rows g and g + 8), 16 value pieces of 8 bytes (2 dims x 8 blocks).
// CHECK: memref.load %arg3
// CHECK-COUNT-8: vector.load %arg1[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// CHECK-COUNT-16: vector.load %arg2[%{{.*}}] {alignment = 8 : i64} : memref<1099511627776xf16>, vector<4xf16>
// Scores: 2 mma per chunk quad.
// CHECK-COUNT-8: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// The step max of each of the lane's heads over the other rows.
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"
// The weights through the warp's scratch: 4 stores, one warp barrier, one
// 16-byte load of head g's 4 tokens, rounded to f16 pairs.
// CHECK-COUNT-4: memref.store %{{.*}}, %[[SMEM]]
// CHECK: nvvm.bar.warp.sync %c-1_i32 : i32
// CHECK: vector.load %[[SMEM]][%{{.*}}] {alignment = 16 : i64} : memref<5440xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xf16>
// P . V: one mma per m16 block of dims.
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK: scf.yield
// The tail step masks scores past the partition (-inf) and values (zeros).
// CHECK: scf.if
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<4xi1>, vector<4xf16>
// CHECK: gpu.barrier
// CHECK: gpu.func @pa_f16_d128_b16_h8_mma_onepass
// CHECK: gpu.func @pa_f16_d128_b16_h8_mma_reduce

// -----

// bf16, block size 8: a step spans two blocks (two block-table entries),
// and the mma operands are i32 words.
// CHECK-LABEL: func.func @bf16_block8
// CHECK: gpu.func @pa_bf16_d64_b8_h8_mma_partition
// CHECK: scf.for
// CHECK: memref.load %arg3
// CHECK: memref.load %arg3
// CHECK-COUNT-4: vector.load %arg1
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
func.func @bf16_block8(%q: memref<?x8x64xbf16>, %kc: memref<?x2x8x8x8xbf16>,
    %vc: memref<?x2x64x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x8x64xbf16>, %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>,
    %tmp: memref<?x8x?x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x64xbf16>, memref<?x2x8x8x8xbf16>, memref<?x2x64x8xbf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x64xbf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x64xf32>)
      {scale = 0.125 : f32}
  return
}

// -----

// A group of 12 (head size 128): tile 16, two n8 blocks of heads, so twice
// the score and P . V products per step on the same loads.
// CHECK-LABEL: func.func @group12
// CHECK: gpu.launch_func @pa_f16_d128_b16_h16_mma::@pa_f16_d128_b16_h16_mma_partition
// CHECK: gpu.func @pa_f16_d128_b16_h16_mma_partition
// CHECK: scf.for
// CHECK-COUNT-8: vector.load %arg1
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK: nvvm.bar.warp.sync
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK: scf.yield
// kernel=simt keeps the CUDA-core kernel (tile 4, 3 programs per KV head).
// SIMT-LABEL: func.func @group12
// SIMT: gpu.launch_func @pa_f16_d128_b16_h4::@pa_f16_d128_b16_h4_partition
func.func @group12(%q: memref<?x24x128xf16>, %kc: memref<?x2x16x16x8xf16>,
    %vc: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x24x128xf16>, %es: memref<?x24x?xf32>, %ml: memref<?x24x?xf32>,
    %tmp: memref<?x24x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x24x128xf16>, memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x24x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x24x?xf32>, memref<?x24x?xf32>, memref<?x24x?x128xf32>)
      {scale = 0.125 : f32}
  return
}

// -----

// f32 caches stay on CUDA cores on every chip.
// CHECK-LABEL: func.func @f32_cache
// CHECK: gpu.launch_func @pa_f32_d64_b16_h8::@pa_f32_d64_b16_h8_partition
// CHECK-NOT: nvvm.mma.sync
func.func @f32_cache(%q: memref<?x8x64xf32>, %kc: memref<?x1x16x16x4xf32>,
    %vc: memref<?x1x64x16xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x8x64xf32>, %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>,
    %tmp: memref<?x8x?x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x64xf32>, memref<?x1x16x16x4xf32>, memref<?x1x64x16xf32>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x64xf32>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x64xf32>)
      {scale = 0.125 : f32}
  return
}
