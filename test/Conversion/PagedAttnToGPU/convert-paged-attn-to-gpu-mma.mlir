// The loads' structure, as plain vector.loads (l2-prefetch-bytes=0; the
// rule's L2-hinted form of the same loads: options.mlir).
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90 l2-prefetch-bytes=0" | FileCheck %s
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90 kernel=simt" | FileCheck %s --check-prefix=SIMT

// From sm_80 the 16-bit variants get the tensor-core partition kernel.
// GQA 32/8 (group 4), f16, head size 128, block size 16: one n8 block of
// heads (tile 8, slots 4..7 masked), a 16-token step per warp.

// CHECK-LABEL: func.func @gqa
// CHECK: gpu.launch_func @pa_f16_d128_h8_mma::@pa_f16_d128_h8_mma_onepass
// CHECK: gpu.launch_func @pa_f16_d128_h8_mma::@pa_f16_d128_h8_mma_partition
// CHECK: gpu.launch_func @pa_f16_d128_h8_mma::@pa_f16_d128_h8_mma_reduce
// SIMT: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition
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

// Workgroup memory: the epilogue's 4 warps x 8 heads x (128 + 2) floats,
// each warp's two 8 x 20 buffers for the weights, and the tile's query
// (8 heads x (64 + 16 padding) words).
// CHECK: gpu.module @pa_f16_d128_h8_mma attributes {paged_attn.variant = {{{.*}}ext_logits = false, {{.*}}heads_per_program = 8 : i64, query_packs = "ceil(query_slots/max(1,heads_per_program/group_size))", reduce_grid_x = "ceil(num_heads/ceil(4/ceil(num_partitions/8)))*query_slots", reduce_shared_bytes = 2080 : i64, reduce_threads = 128 : i64, shared_bytes = 24320 : i64, token_step = 16 : i64, warps = 4 : i64}}
// The lean variant takes the sliding window (last), not ALiBi or the cap.
// CHECK: gpu.func @pa_f16_d128_h8_mma_partition({{.*}}, %{{.*}}: i32, %{{.*}}: i32, %{{[^:]*}}: i32) workgroup(%[[SMEM:.*]] : memref<6080xf32, #gpu.address_space<workgroup>>) kernel
// The query, staged once: 16-byte loads to workgroup memory, one barrier.
// CHECK: vector.load %arg0[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// CHECK: vector.store %{{.*}}, %[[SMEM]][%{{.*}}] {alignment = 16 : i64} : memref<6080xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: gpu.barrier
// The whole steps first, unmasked: with several query tokens packed in
// the tile, those that every packed token attends to.
// The state: m and l of the lane's 2 heads, 4 accumulators x 8 m16 blocks.
// CHECK: scf.for %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// One block-table entry, then every load of the step: 8 key chunks of 16
// bytes (rows g and g + 8), 16 value pieces of 8 bytes (2 dims x 8 blocks).
// CHECK: memref.load %arg3
// CHECK-COUNT-8: vector.load %arg1[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// CHECK-COUNT-16: vector.load %arg2[%{{.*}}] {alignment = 8 : i64} : memref<1099511627776xf16>, vector<4xf16>
// Scores: per chunk quad, Q's B operand (chunk 4j + t of head g) from
// workgroup memory and 2 mma.
// CHECK: vector.load %[[SMEM]][%{{.*}}] {alignment = 16 : i64} : memref<6080xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-COUNT-2: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: vector.load %[[SMEM]]
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: vector.load %[[SMEM]]
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK: vector.load %[[SMEM]]
// CHECK-COUNT-2: nvvm.mma.sync
// A whole step masks nothing.
// CHECK-NOT: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// The step max of each of the lane's heads over the other rows.
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"
// The weights through the warp's scratch: 4 stores, one warp barrier, one
// 16-byte load of head g's 4 tokens, rounded to f16 pairs.
// CHECK-COUNT-4: memref.store %{{.*}}, %[[SMEM]]
// CHECK: nvvm.bar.warp.sync %c-1_i32 : i32
// CHECK: vector.load %[[SMEM]][%{{.*}}] {alignment = 16 : i64} : memref<6080xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xf16>
// P . V: one mma per m16 block of dims.
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK: scf.yield
// The partial steps (the window's first, the range's last and, with packed
// query tokens, those only some of them attend: at most two before the
// whole steps and two after) go on with the warps' turns in a second loop
// over k (i32), masked: each slot's scores outside its own range (step-
// relative i32 offsets, built before the loop) are -inf, values outside
// the program's range zeros.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c4_i32{{.*}} iter_args(
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// A masked step may use the buffer of the warp's previous step (a window's
// first step runs after the whole ones): a warp barrier before its weight
// stores, another before its loads.
// CHECK-NOT: memref.store %{{.*}}, %[[SMEM]]
// CHECK: nvvm.bar.warp.sync
// CHECK-COUNT-4: memref.store %{{.*}}, %[[SMEM]]
// CHECK: nvvm.bar.warp.sync
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<4xi1>, vector<4xf16>
// After the steps, each head's l summed over the 8 lanes that hold its
// tokens (gpu.subgroup_reduce add, cluster size 8 stride 4, lowered in the
// pass: xor 4, 8, 16, each an add); no subgroup_reduce is left for
// convert-gpu-to-nvvm.
// CHECK: %[[S4:.*]], %{{.*}} = gpu.shuffle  xor %[[L:[0-9]+#[0-9]+]], %c4_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK-NEXT: %[[L4:.*]] = arith.addf %[[L]], %[[S4]] : f32
// CHECK: %[[S8:.*]], %{{.*}} = gpu.shuffle  xor %[[L4]], %c8_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK-NEXT: %[[L8:.*]] = arith.addf %[[L4]], %[[S8]] : f32
// CHECK: %[[S16:.*]], %{{.*}} = gpu.shuffle  xor %[[L8]], %c16_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : f32
// CHECK-NEXT: arith.addf %[[L8]], %[[S16]] : f32
// CHECK-NOT: gpu.subgroup_reduce
// CHECK: gpu.barrier
// CHECK: gpu.func @pa_f16_d128_h8_mma_onepass
// CHECK: gpu.func @pa_f16_d128_h8_mma_reduce

// -----

// bf16, block size 8: a step spans two blocks (two block-table entries),
// and the mma operands are i32 words.
// CHECK-LABEL: func.func @bf16_block8
// CHECK: gpu.func @pa_bf16_d64_h8_mma_partition
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
// CHECK: gpu.launch_func @pa_f16_d128_h16_mma::@pa_f16_d128_h16_mma_partition
// CHECK: gpu.func @pa_f16_d128_h16_mma_partition
// CHECK: scf.for
// CHECK-COUNT-8: vector.load %arg1
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK: nvvm.bar.warp.sync
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK: scf.yield
// kernel=simt keeps the CUDA-core kernel (tile 4, 3 programs per KV head).
// SIMT-LABEL: func.func @group12
// SIMT: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition
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
// CHECK: gpu.launch_func @pa_f32_d64_h8::@pa_f32_d64_h8_partition
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

// -----

// ALiBi and the logits soft cap select the _ext variant: the partition
// kernel takes alibi_slopes, has_alibi, sliding_window and logits_soft_cap
// after group_size; the slope is loaded only when has_alibi is set, the cap
// (a tanh built from ex2 and one division) applies only when it is > 0, and
// the ALiBi bias slope * (token - seq_len + 1) is added after the cap.
// CHECK-LABEL: func.func @alibi_window_softcap
// CHECK: gpu.launch_func @pa_f16_d128_h8_ext_mma::@pa_f16_d128_h8_ext_mma_partition
// CHECK-SAME: %[[SLOPES:[^ ]*]] : memref<1099511627776xf32>, %c1_i32{{[_0-9]*}} : i32, %c1024_i32 : i32, %{{.*}} : f32, %{{[^ ]*}} : memref<1099511627776xi32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : i32)
// CHECK: gpu.module @pa_f16_d128_h8_ext_mma attributes {paged_attn.variant = {{{.*}}ext_logits = true, {{.*}}heads_per_program = 8 : i64
// CHECK: gpu.func @pa_f16_d128_h8_ext_mma_partition({{.*}}, %[[GROUP:[^:]*]]: i32, %[[A:[^:]*]]: memref<1099511627776xf32>, %[[HAS:[^:]*]]: i32, %[[W:[^:]*]]: i32, %[[CAP:[^:]*]]: f32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32) workgroup
// CHECK: %[[CAPON:.*]] = arith.cmpf ogt, %[[CAP]], %{{.*}} : f32
// CHECK: arith.index_cast %[[W]] : i32 to index
// CHECK: %[[USE:.*]] = arith.cmpi ne, %[[HAS]], %{{.*}} : i32
// CHECK-NEXT: %[[SLOPE:.*]] = scf.if %[[USE]] -> (f32) {
// CHECK-NEXT: memref.load %[[A]][%{{.*}}] : memref<1099511627776xf32>
// Each of the lane's slots (two here) gets its position offset, slope x
// (seq_len - its context: 0 with one token per program, else that of its
// packed token), once before the steps; every step adds it after the bias.
// CHECK: %[[DELTA:.*]] = arith.sitofp %{{.*}} : i32 to f32
// CHECK-NEXT: %[[OFS:.*]] = arith.mulf %[[SLOPE]], %[[DELTA]] : f32
// CHECK: arith.sitofp
// CHECK-NEXT: arith.mulf
// CHECK: nvvm.mma.sync
// CHECK: %[[POS:.*]] = arith.sitofp %{{.*}} : i32 to f32
// CHECK: %[[CAPPED:.*]]:4 = scf.if %[[CAPON]] -> (f32, f32, f32, f32) {
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"
// CHECK: arith.divf
// CHECK: %[[BIAS:.*]] = arith.mulf %[[SLOPE]], %[[POS]]
// CHECK-NEXT: %[[LOGIT:.*]] = arith.addf %[[BIAS]], %[[CAPPED]]#0
// CHECK-NEXT: arith.addf %[[LOGIT]], %[[OFS]] : f32

// The SIMT kernel (tile 4) takes the same parameters and applies the same
// terms.
// SIMT-LABEL: func.func @alibi_window_softcap
// SIMT: gpu.func @pa_f16_d128_h4_ext_partition({{.*}}, %[[A:[^:]*]]: memref<1099511627776xf32>, %[[HAS:[^:]*]]: i32, %[[W:[^:]*]]: i32, %[[CAP:[^:]*]]: f32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32) workgroup
// SIMT: %[[CAPON:.*]] = arith.cmpf ogt, %[[CAP]], %{{.*}} : f32
// SIMT: %[[USE:.*]] = arith.cmpi ne, %[[HAS]], %{{.*}} : i32
// SIMT-NEXT: scf.if %[[USE]] -> (f32) {
// SIMT-NEXT: memref.load %[[A]][%{{.*}}] : memref<1099511627776xf32>
// SIMT: scf.for
// SIMT: arith.sitofp %{{.*}} : i32 to f32
// SIMT: scf.if %[[CAPON]] -> (f32,
// SIMT: arith.divf
func.func @alibi_window_softcap(%q: memref<?x8x128xf16>, %kc: memref<?x2x16x16x8xf16>,
    %vc: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %slopes: memref<8xf32>, %out: memref<?x8x128xf16>, %es: memref<?x8x?xf32>,
    %ml: memref<?x8x?xf32>, %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x128xf16>, memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>) alibi_slopes(%slopes : memref<8xf32>)
      outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x128xf32>)
      {scale = 0.0883883461 : f32, sliding_window = 1024 : i64, logits_soft_cap = 30.0 : f32}
  return
}
