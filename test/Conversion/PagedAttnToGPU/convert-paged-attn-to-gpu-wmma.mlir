// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_70" | FileCheck %s
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_70 kernel=simt" | FileCheck %s --check-prefix=SIMT
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90 kernel=wmma" | FileCheck %s --check-prefix=SM90
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_70 warps=2" | FileCheck %s --check-prefix=W2

// On sm_7x, f16 GQA variants of head sizes 64, 96 and 128 get the wmma kernel:
// GQA 32/8 (group 4), head size 128, block size 16: a tile of 8 heads (slots 4..7 masked), 16-token
// steps, K and V staged through each warp's workgroup memory.

// CHECK-LABEL: func.func @gqa
// CHECK: gpu.launch_func @pa_f16_d128_h8_wmma::@pa_f16_d128_h8_wmma_partition
// SIMT: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition
// kernel=wmma also builds it for newer chips (wmma is portable).
// SM90: gpu.launch_func @pa_f16_d128_h8_wmma::@pa_f16_d128_h8_wmma_partition
func.func @gqa(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}

// One byte buffer of workgroup memory, 32-byte aligned: 4 warps' step areas
// (K 16 x 144 f16, V 128 x 16 f16, S 16 x 24 f32 with the 8 x 32 alpha
// matrix over it at stride 40, P 8 x 16 f16 after that: 10240 bytes each),
// then the query (16 x 144 f16). Every row pitch is 32 or 96 bytes modulo
// 128 (288, 32, 96, 160).
// CHECK: gpu.module @pa_f16_d128_h8_wmma attributes {paged_attn.variant = {{{.*}}heads_per_program = 8 : i64, {{.*}}shared_bytes = 45568 : i64, token_step = 16 : i64, warps = 4 : i64}}
// Two warps a program: two step areas, and twice the programs per SM for
// the same warps per SM (the register cap of the 4-warp plan).
// W2: gpu.func @pa_f16_d128_h8_w2_wmma_partition({{.*}}) workgroup(%{{.*}} : memref<25088xi8, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}) kernel attributes {known_block_size = array<i32: 64, 1, 1>, nvvm.minctasm = 4 : i32}
// CHECK: gpu.func @pa_f16_d128_h8_wmma_partition({{.*}}) workgroup(%[[BUF:.*]] : memref<45568xi8, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.minctasm = 2 : i32}
// CHECK: %[[F32:.*]] = memref.view %[[BUF]][%{{.*}}][] : memref<45568xi8, #gpu.address_space<workgroup>> to memref<11392xf32, #gpu.address_space<workgroup>>
// CHECK: %[[F16:.*]] = memref.view %[[BUF]][%{{.*}}][] : memref<45568xi8, #gpu.address_space<workgroup>> to memref<22784xf16, #gpu.address_space<workgroup>>
// The first step's loads are issued before the query is staged (one
// barrier); they are the loop's last iter_args.
// CHECK: memref.load %arg3
// CHECK-COUNT-8: vector.load %arg1[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// CHECK-COUNT-8: vector.load %arg2[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// CHECK: vector.load %arg0
// CHECK: vector.store %{{.*}}, %[[F16]]
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} -> (f32, f32, !gpu.mma_matrix<8x32xf32, "COp">, !gpu.mma_matrix<8x32xf32, "COp">, !gpu.mma_matrix<8x32xf32, "COp">, !gpu.mma_matrix<8x32xf32, "COp">, vector<8xf16>,
// A whole step stages the loads it was handed (8 key, 8 value pieces),
// then loads the next step, then computes.
// CHECK: nvvm.bar.warp.sync
// CHECK-COUNT-16: vector.store %{{.*}}, %[[F16]][%{{.*}}] {alignment = 16 : i64} : memref<22784xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: nvvm.bar.warp.sync
// CHECK: scf.if %{{.*}} -> (vector<8xf16>,
// CHECK: memref.load %arg3
// CHECK-COUNT-8: vector.load %arg1
// CHECK-COUNT-8: vector.load %arg2
// Scores: 8 m16n16k16 products over the head dims (Q row-major, K^T
// column-major from the [token][dim] staging rows, stride 144).
// CHECK: gpu.subgroup_mma_load_matrix %[[F16]][%{{.*}}] {leadDimension = 144 : index} : memref<22784xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %[[F16]][%{{.*}}] {leadDimension = 144 : index, transpose} : memref<22784xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: gpu.subgroup_mma_compute {{.*}} {b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK-COUNT-7: gpu.subgroup_mma_compute
// CHECK: gpu.subgroup_mma_store_matrix %{{.*}}, %[[F32]][%{{.*}}] {leadDimension = 24 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<11392xf32, #gpu.address_space<workgroup>>
// A whole step masks nothing.
// CHECK-NOT: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// The lane's 4 scores of its head, the head's max over the 4 lanes.
// CHECK: vector.load %[[F32]][%{{.*}}] {alignment = 16 : i64} : memref<11392xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"
// Weights as f16, the rescale factor along the head's row; O . alpha and
// P . V, one m8n32k16 product per 32 head dims.
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xf16>
// CHECK: gpu.subgroup_mma_load_matrix %[[F16]][%{{.*}}] {leadDimension = 16 : index} : memref<22784xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<8x16xf16, "AOp">
// CHECK: %[[ALPHA:.*]] = gpu.subgroup_mma_load_matrix %[[F32]][%{{.*}}] {leadDimension = 40 : index} : memref<11392xf32, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<8x32xf32, "COp">
// CHECK: gpu.subgroup_mma_elementwise  mulf %{{.*}}, %[[ALPHA]]
// CHECK: gpu.subgroup_mma_load_matrix %[[F16]][%{{.*}}] {leadDimension = 16 : index, transpose} : memref<22784xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x32xf16, "BOp">
// CHECK: gpu.subgroup_mma_compute {{.*}} {b_transpose} : !gpu.mma_matrix<8x16xf16, "AOp">, !gpu.mma_matrix<16x32xf16, "BOp"> -> !gpu.mma_matrix<8x32xf32, "COp">
// CHECK-COUNT-3: gpu.subgroup_mma_compute
// CHECK: scf.yield
// The edge steps load their own step, mask scores and zero values.
// CHECK: scf.for
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf16>
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// The lane's l summed over the 4 lanes of its row (gpu.subgroup_reduce add,
// cluster size 4 stride 1, lowered in the pass: xor 1, 2, each an add);
// no subgroup_reduce is left for convert-gpu-to-nvvm.
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle  xor %[[L:[0-9]+#[0-9]+]], %c1_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK-NEXT: %[[L1:.*]] = arith.addf %[[L]], %[[S1]] : f32
// CHECK: %[[S2:.*]], %{{.*}} = gpu.shuffle  xor %[[L1]], %c2_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK-NEXT: arith.addf %[[L1]], %[[S2]] : f32
// CHECK-NOT: gpu.subgroup_reduce
// The warps' state to the epilogue layout, which overlays the step areas.
// CHECK: gpu.barrier
// CHECK-COUNT-4: gpu.subgroup_mma_store_matrix %{{.*}}, %[[F32]][%{{.*}}] {leadDimension = 128 : index} : !gpu.mma_matrix<8x32xf32, "COp">
// CHECK: gpu.func @pa_f16_d128_h8_wmma_onepass
// CHECK: gpu.func @pa_f16_d128_h8_wmma_reduce

// -----

// MHA keeps the SIMT kernel (a tile of 1); so do bf16 (no bf16 tensor
// cores before sm_80) and head sizes that are not a multiple of 32.
// CHECK-LABEL: func.func @mha
// CHECK: gpu.launch_func @pa_f16_d128_h1::@pa_f16_d128_h1_partition
// CHECK-NOT: subgroup_mma
func.func @mha(%q: memref<?x8x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x8x128xf16>, %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>,
    %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x128xf32>)
      {scale = 0.125 : f32}
  return
}

// -----

// Head size 64 (group 8), block size 8: planned for 3 programs per SM; a
// 16-token step spans two blocks. kernel=wmma builds the same on sm_90.
// CHECK-LABEL: func.func @d64_block8
// CHECK: gpu.launch_func @pa_f16_d64_h8_wmma::@pa_f16_d64_h8_wmma_partition
// SM90-LABEL: func.func @d64_block8
// SM90: gpu.func @pa_f16_d64_h8_wmma_partition({{.*}}) workgroup(%{{.*}} : memref<27136xi8, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.minctasm = 3 : i32}
// SM90-COUNT-2: memref.load %arg3
// SM90-COUNT-4: vector.load %arg1
// SM90-COUNT-4: vector.load %arg2
// SM90: scf.for
// SM90-COUNT-4: gpu.subgroup_mma_compute {{.*}} -> !gpu.mma_matrix<16x16xf32, "COp">
// SM90-COUNT-2: gpu.subgroup_mma_compute {{.*}} -> !gpu.mma_matrix<8x32xf32, "COp">
func.func @d64_block8(%q: memref<?x16x64xf16>, %kc: memref<?x2x8x8x8xf16>,
    %vc: memref<?x2x64x8xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x16x64xf16>, %es: memref<?x16x?xf32>, %ml: memref<?x16x?xf32>,
    %tmp: memref<?x16x?x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x16x64xf16>, memref<?x2x8x8x8xf16>, memref<?x2x64x8xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x16x64xf16>)
      workspace(%es, %ml, %tmp : memref<?x16x?xf32>, memref<?x16x?xf32>, memref<?x16x?x64xf32>)
      {scale = 0.125 : f32}
  return
}
