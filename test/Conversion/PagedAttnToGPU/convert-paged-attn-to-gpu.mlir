// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s

// GQA 32/8 (group 4), f16, head size 128, block size 16, with max_seq_len:
// adaptive grid with a one-pass branch.

// CHECK-LABEL: func.func @adaptive
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x32x128xf16>, %{{.*}}, %{{.*}}, %{{.*}}, %[[SL:[^:]*]]: memref<?xi32>, %[[MAX:[^:]*]]: index,
// CHECK: %[[SEQS:.*]] = memref.dim %[[SL]], %c0
// CHECK: %[[PARTS:.*]] = arith.ceildivui %[[MAX]], %c512
// CHECK: %[[QF:.*]] = memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [1099511627776], strides: [1] : memref<?x32x128xf16> to memref<1099511627776xf16>
// CHECK: %[[SCALE:.*]] = arith.constant 0.0883883461 : f32
// CHECK: %[[ONE:.*]] = arith.cmpi ule, %[[PARTS]], %{{.*}}
// CHECK: scf.if %[[ONE]] {
// CHECK:   gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_onepass blocks in (%{{.*}}, %[[KV:.*]], %[[SEQS]]) threads in (%[[T128:.*]], %{{.*}}, %{{.*}}) args(%[[QF]] : memref<1099511627776xf16>, {{.*}}, %[[SCALE]] : f32,
// CHECK: } else {
// CHECK:   gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition blocks in (%[[PARTS]], %{{.*}}, %[[SEQS]]) threads in
// Reduce: ceil(4 / ceil(parts / 8)) heads per program, over 32 heads (the
// launched partition count is an argument). tmp_output's type is a run-time
// argument (tmp_f32, the last: 1, f32), its flat view retyped to bytes.
// CHECK:   %[[P8:.*]] = arith.ceildivui %[[PARTS]], %c8
// CHECK:   %[[RH:.*]] = arith.ceildivui %c4, %[[P8]]
// CHECK:   %[[HEADS:.*]] = arith.constant 32 : index
// CHECK:   %[[RX:.*]] = arith.ceildivui %[[HEADS]], %[[RH]]
// CHECK:   gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_reduce blocks in (%[[RX]], %[[SEQS]], %{{.*}}) threads in (%{{.*}}) args({{.*}}, %[[TMPB:[^ ]*]] : memref<1099511627776xi8>, {{.*}}, %[[PI32:[^ ]*]] : i32, %{{[^ ]*}} : memref<1099511627776xf32>, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %{{[^ ]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %c1_i32{{[_0-9]*}} : i32)
// CHECK: }
func.func @adaptive(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
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

// The variant module: the key, three kernels, bare-pointer flat parameters.
// CHECK: gpu.module @pa_f16_d128_h4 attributes {paged_attn.variant = {cache_dtype = f16, dtype = f16, ext_logits = false, head_size = 128 : i64, heads_per_program = 4 : i64, query_packs = "query_slots", reduce_grid_x = "ceil(num_heads/ceil(4/ceil(num_partitions/8)))*query_slots", reduce_shared_bytes = 2080 : i64, reduce_threads = 128 : i64, shared_bytes = 9472 : i64, token_step = 16 : i64, warps = 4 : i64}}

// Partition kernel: one program per (partition, kv head x tile, sequence);
// sentinels for empty partitions; the token loop over warp steps carrying
// the online-softmax state: m and l of the one head whose scores a lane owns
// and 8 head dims of accumulators for each of the 4 heads (34 values).
// Workgroup memory: the epilogue (2080 words), then a score row of 36 words
// per lane group (8 groups).
// CHECK: gpu.func @pa_f16_d128_h4_partition(%{{.*}}: memref<1099511627776xf16>, {{.*}}, %{{.*}}: f32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{[^:]*}}: i32) workgroup(%[[SMEM:.*]] : memref<2368xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.minctasm = 1 : i32}
// CHECK-DAG: gpu.block_id x
// CHECK-DAG: gpu.block_id y
// CHECK-DAG: gpu.block_id z
// CHECK: scf.if
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: } else {
// The query: one 16-byte load per head and lane chunk.
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// CHECK: %{{.*}}:34 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// The block table, then 8 key chunks and 8 value chunks, 16 bytes each.
// CHECK: memref.load %{{.*}} : memref<1099511627776xi32>
// CHECK-COUNT-16: vector.load %{{.*}} {alignment = 16 : i64} : memref<1099511627776xf16>, vector<8xf16>
// The 32 partial dot products (4 heads x 8 tokens) reduce-scattered over the
// 16 lanes of a token: 16 + 8 + 4 + 2 shuffles leave 2 scores per lane, then
// 2 more give their head's step max.
// CHECK-COUNT-16: gpu.shuffle  xor %{{.*}}, %c8_i32{{.*}}, %{{.*}} : f32
// CHECK-NOT: gpu.shuffle
// CHECK-COUNT-8: gpu.shuffle  xor %{{.*}}, %c4_i32{{.*}}, %{{.*}} : f32
// CHECK-NOT: gpu.shuffle
// CHECK-COUNT-4: gpu.shuffle  xor %{{.*}}, %c2_i32{{.*}}, %{{.*}} : f32
// CHECK-NOT: gpu.shuffle
// CHECK-COUNT-2: gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.addf
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32{{.*}}, %{{.*}} : f32
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}}, %{{.*}} : f32
// CHECK-NOT: gpu.shuffle
// The lane's 2 weights and its head's rescale factor: 3 exp2.
// CHECK-COUNT-3: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"
// CHECK-NOT: llvm.call_intrinsic
// The group's score row: written once per weight, read whole (alpha of the
// 4 heads, then 4 rows of 8 weights).
// CHECK: nvvm.bar.warp.sync
// CHECK: scf.if
// CHECK-COUNT-2: memref.store %{{.*}}, %[[SMEM]]
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[SMEM]]
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.load %[[SMEM]][%{{.*}}] {alignment = 16 : i64} : memref<2368xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-COUNT-4: vector.load %[[SMEM]][%{{.*}}] {alignment = 16 : i64} : memref<2368xf32, #gpu.address_space<workgroup>>, vector<8xf32>
// CHECK-NOT: gpu.shuffle
// CHECK: scf.yield
// The masked tail step, then the lane-group and cross-warp merges.
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: gpu.shuffle xor
// CHECK: memref.store %{{.*}}, %[[SMEM]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[SMEM]]
// CHECK: gpu.return

// CHECK: gpu.func @pa_f16_d128_h4_onepass
// CHECK: gpu.barrier
// CHECK: arith.truncf %{{.*}} : f32 to f16

// Reduce kernel: ceil(4 / ceil(num_partitions / 8)) heads per program
// (%[[NP]]), 4 / that many warps per head. A head's threads fold the
// statistics, merge by xor shuffles, then across the head's warps in
// workgroup memory. Each warp sums its partitions' outputs (every warps-th,
// 8 per step, each a 16-byte f32x4 load); the warps' sums meet in workgroup
// memory (a head of one warp skips both workgroup merges) and only a slot
// with a real head stores. Both walks start at the
// sliding window's first partition (%[[RW]]).
// CHECK: gpu.func @pa_f16_d128_h4_reduce(%{{.*}}: memref<1099511627776xi32>, %{{.*}}: memref<1099511627776xi32>, %{{.*}}: memref<1099511627776xf16>, %{{.*}}: memref<1099511627776xf32>, %{{.*}}: memref<1099511627776xf32>, %[[RT:[^:]*]]: memref<1099511627776xi8>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %[[RW:[^:]*]]: i32, %[[NP:[^:]*]]: i32, %{{[^:]*}}: memref<1099511627776xf32>, %{{[^:]*}}: i32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: memref<1099511627776xi32>, %[[RTF:[^:]*]]: i32) workgroup(%[[RS:.*]] : memref<520xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK: %[[NPI:.*]] = arith.index_cast %[[NP]] : i32 to index
// CHECK: %[[NP8:.*]] = arith.ceildivui %[[NPI]], %c8
// CHECK: %[[PER:.*]] = arith.ceildivui %c4, %[[NP8]]
// CHECK: %[[WARPS:.*]] = arith.divui %c4{{.*}}, %[[PER]]
// CHECK: %[[SLOT:.*]] = arith.divui %[[WARP]], %[[WARPS]]
// CHECK: %[[RANK:.*]] = arith.remui %[[WARP]], %[[WARPS]]
// CHECK: %[[HT:.*]] = arith.muli %[[WARPS]], %c32
// CHECK: %[[HTID:.*]] = arith.addi %{{.*}}, %[[LANE]]
// CHECK: %[[BX:.*]] = gpu.block_id x
// The grid's x is head blocks times query slots (one here): the block's
// head block.
// CHECK: %[[HB:.*]] = arith.divui %[[BX]], %{{.*}} : index
// CHECK: %[[H0:.*]] = arith.muli %[[HB]], %[[PER]]
// CHECK: %[[HEAD:.*]] = arith.addi %[[H0]], %[[SLOT]]
// A real head of a live row (one token per sequence: every row is live).
// CHECK: %[[INHEADS:.*]] = arith.cmpi ult, %[[HEAD]]
// CHECK-NEXT: %[[VALID:.*]] = arith.andi %{{.*}}, %[[INHEADS]] : i1
// CHECK: arith.minui %[[HEAD]]
// CHECK: %[[W:.*]] = arith.index_cast %[[RW]] : i32 to index
// CHECK: %[[START:.*]] = arith.select %{{.*}}, %{{.*}}, %c0{{.*}} : index
// CHECK: %[[FIRST:.*]] = arith.divui %[[START]], %{{.*}} : index
// CHECK: %[[LB:.*]] = arith.addi %[[FIRST]], %[[HTID]] : index
// CHECK: scf.for %{{.*}} = %[[LB]] to %{{.*}} step %[[HT]] iter_args({{.*}}) -> (f32, f32)
// CHECK-COUNT-10: gpu.shuffle xor
// CHECK: %[[MULTI:.*]] = arith.cmpi ugt, %[[WARPS]], %c1
// CHECK: scf.if %[[MULTI]] -> (f32, f32)
// CHECK: memref.store %{{.*}}, %[[RS]]
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} -> (f32, f32)
// CHECK: memref.load %[[RS]]
// CHECK: } else {
// tmp_output's bytes as f32 and as f16; the loop of the call's type (its
// 16-byte f32 loads, or 8-byte f16 loads of the same 4-element slices).
// CHECK: %[[TF32:.*]] = memref.view %[[RT]][%{{.*}}][] : memref<1099511627776xi8> to memref<274877906944xf32>
// CHECK: %[[TF16:.*]] = memref.view %[[RT]][%{{.*}}][] : memref<1099511627776xi8> to memref<549755813888xf16>
// CHECK: %[[ISF32:.*]] = arith.cmpi ne, %[[RTF]], %c0_i32
// CHECK: scf.if %[[ISF32]] -> (f32, f32, f32, f32) {
// CHECK: %[[WSTEP:.*]] = arith.muli %[[WARPS]], %c8
// CHECK: %[[WLB:.*]] = arith.addi %[[FIRST]], %[[RANK]] : index
// CHECK: scf.for %{{.*}} = %[[WLB]] to %{{.*}} step %[[WSTEP]] iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK-COUNT-8: vector.load %[[TF32]][%{{.*}}] {alignment = 16 : i64} : memref<274877906944xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: scf.for %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK-COUNT-8: vector.load %[[TF16]][%{{.*}}] {alignment = 8 : i64} : memref<549755813888xf16>, vector<4xf16>
// Several warps per head: their sums meet in workgroup memory.
// CHECK: scf.if %[[MULTI]] {
// CHECK: vector.store %{{.*}}, %[[RS]][%{{.*}}] {alignment = 16 : i64} : memref<520xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: gpu.barrier
// CHECK: scf.if %[[VALID]]
// CHECK: scf.for %{{.*}} = %[[HTID]] to %c32{{.*}} step %[[HT]]
// CHECK: scf.for %{{.*}} to %[[WARPS]]
// CHECK: vector.load %[[RS]]
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<1099511627776xf16>, vector<4xf16>
// One warp per head: its lanes store their registers, no barrier.
// CHECK: } else {
// CHECK-NEXT: scf.if %[[VALID]]
// CHECK-NOT: gpu.barrier
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<1099511627776xf16>, vector<4xf16>
// CHECK: gpu.return

// -----

// Fixed grid (no max_seq_len): partitions from the workspace, still with
// the one-pass branch when the workspace has a single partition.

// CHECK-LABEL: func.func @fixed_grid
// CHECK: %[[P:.*]] = memref.dim %{{.*}}, %c2 : memref<?x32x?xf32>
// CHECK-NOT: ceildivui
// CHECK: gpu.launch_func @pa_bf16_d64_h1::@pa_bf16_d64_h1_partition blocks in (%[[P]],
func.func @fixed_grid(%q: memref<?x32x64xbf16>, %kc: memref<?x32x8x32x8xbf16>,
    %vc: memref<?x32x64x32xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x32x64xbf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x64xbf16>, memref<?x32x8x32x8xbf16>, memref<?x32x64x32xbf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x32x64xbf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x64xf32>)
      {scale = 0.125 : f32}
  return
}
// bf16 is widened by a shift, not a conversion.
// CHECK: gpu.func @pa_bf16_d64_h1_partition
// CHECK: arith.bitcast %{{.*}} : vector<8xbf16> to vector<8xi16>
// CHECK: arith.shli

// -----

// A static single-partition workspace: only the one-pass kernel is launched.
// MQA-like group 6 is served by a tile of 8 f32 heads, two slots masked.

// CHECK-LABEL: func.func @one_pass_only
// CHECK-NOT: scf.if
// CHECK: gpu.launch_func @pa_f32_d128_h8::@pa_f32_d128_h8_onepass blocks in (%{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: _partition blocks
// CHECK: return
func.func @one_pass_only(%q: memref<4x12x128xf32>, %kc: memref<64x2x32x8x4xf32>,
    %vc: memref<64x2x128x8xf32>, %bt: memref<4x16xi32>, %sl: memref<4xi32>,
    %out: memref<4x12x128xf32>, %es: memref<4x12x1xf32>, %ml: memref<4x12x1xf32>,
    %tmp: memref<4x12x1x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<4x12x128xf32>, memref<64x2x32x8x4xf32>, memref<64x2x128x8xf32>,
        memref<4x16xi32>, memref<4xi32>)
      outs(%out : memref<4x12x128xf32>)
      workspace(%es, %ml, %tmp : memref<4x12x1xf32>, memref<4x12x1xf32>, memref<4x12x1x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}

// -----

// A sliding window alone keeps the lean variant: sliding_window is its last
// parameter. The window starts at max(seq_len - W, 0) (W = 0: no window);
// a partition that ends at or before it leaves the sentinels like one past
// the sequence's end, and the step loop starts at the window's step.
// CHECK-LABEL: func.func @sliding_window
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition
// CHECK-SAME: %c1024_i32 : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : i32)
// CHECK: gpu.module @pa_f16_d128_h4 attributes {paged_attn.variant = {{{.*}}ext_logits = false,
// CHECK: gpu.func @pa_f16_d128_h4_partition({{.*}}, %[[W:[^:]*]]: i32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32) workgroup
// CHECK: %[[SL:.*]] = memref.load %{{.*}}[%block_id_z] : memref<1099511627776xi32>
// CHECK-NEXT: arith.index_cast %[[SL]] : i32 to index
// The row's context (one query token per sequence: seq_lens[s]), at least 0.
// CHECK: %[[LEN:.*]] = arith.maxsi
// CHECK: %[[WI:.*]] = arith.index_cast %[[W]] : i32 to index
// CHECK-NEXT: %[[LONG:.*]] = arith.cmpi ugt, %[[LEN]], %[[WI]] : index
// CHECK: %[[ON:.*]] = arith.cmpi sgt, %[[WI]], %{{.*}} : index
// CHECK-NEXT: %[[BOTH:.*]] = arith.andi %[[ON]], %[[LONG]] : i1
// CHECK: %[[FROM:.*]] = arith.subi %[[LEN]], %[[WI]] : index
// CHECK-NEXT: %[[START:.*]] = arith.select %[[BOTH]], %[[FROM]], %{{.*}} : index
// The partition's tokens: partition_tokens, or with partition_split P > 0
// roundup(ceil(len / P), partition_tokens) (the runtime's fixed grid).
// CHECK: %[[SPLIT:.*]] = arith.cmpi ne, %{{.*}}, %c0_i32{{[_0-9]*}} : i32
// CHECK-NEXT: %[[SPLITSIZE:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[SIZE:.*]] = arith.select %[[SPLIT]], %[[SPLITSIZE]], %{{.*}} : index
// CHECK-NEXT: %[[BEGIN:.*]] = arith.muli %{{.*}}, %[[SIZE]] : index
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[BEGIN]], %[[SIZE]] : index
// CHECK-NEXT: %[[END:.*]] = arith.minui %[[SUM]], %[[LEN]] : index
// CHECK: %[[BEFORE:.*]] = arith.cmpi ule, %[[END]], %[[START]] : index
// CHECK-NEXT: %[[PAST:.*]] = arith.cmpi uge, %[[BEGIN]], %[[LEN]] : index
// CHECK-NEXT: %[[EMPTY:.*]] = arith.ori %[[PAST]], %[[BEFORE]] : i1
// CHECK-NEXT: scf.if %[[EMPTY]] {
// CHECK: arith.constant 0xFF800000 : f32
func.func @sliding_window(%q: memref<?x8x128xf16>, %kc: memref<?x2x16x16x8xf16>,
    %vc: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x8x128xf16>, %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>,
    %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x128xf16>, memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x128xf32>)
      {scale = 0.0883883461 : f32, sliding_window = 1024 : i64}
  return
}
