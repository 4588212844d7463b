// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="kernel=mma chip=sm_90" | FileCheck %s --check-prefix=MMA

// Several query tokens per sequence: the same variant (no new kernels), a
// grid whose x is partitions (or reduce head blocks) times max_query_len,
// one program per (query token, partition, KV tile, sequence); num_seqs is
// seq_lens' size, not the query's rows.

// CHECK-LABEL: func.func @spec
// CHECK-SAME: %[[SL:[^:]*]]: memref<?xi32>, %[[QSL:[^:]*]]: memref<?xi32>, %[[QLEN:[^:]*]]: index, %[[MAX:[^:]*]]: index,
// CHECK: %[[SEQS:.*]] = memref.dim %[[SL]], %c0
// CHECK: %[[PARTS:.*]] = arith.ceildivui %[[MAX]], %c512
// CHECK: %[[QLEN32:.*]] = arith.index_cast %[[QLEN]] : index to i32
// CHECK: %[[QSLF:.*]] = memref.reinterpret_cast %[[QSL]]
// CHECK: scf.if
// CHECK: %[[X1:.*]] = arith.muli %{{.*}}, %[[QLEN]] : index
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_onepass blocks in (%[[X1]], %{{.*}}, %[[SEQS]])
// CHECK-SAME: %[[QSLF]] : memref<1099511627776xi32>, %[[QLEN32]] : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>)
// CHECK: } else {
// CHECK: %[[X:.*]] = arith.muli %[[PARTS]], %[[QLEN]] : index
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition blocks in (%[[X]], %{{.*}}, %[[SEQS]])
// CHECK-SAME: %[[QSLF]] : memref<1099511627776xi32>, %[[QLEN32]] : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : i32)
// CHECK: %[[RX:.*]] = arith.ceildivui %c32, %{{.*}}
// CHECK: %[[RXQ:.*]] = arith.muli %[[RX]], %[[QLEN]] : index
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_reduce blocks in (%[[RXQ]], %[[SEQS]],
// CHECK-SAME: %[[QSLF]] : memref<1099511627776xi32>, %[[QLEN32]] : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %{{[^ ]*}} : i32)

// The partition kernel: grid x = partition * slots + j; the sequence's rows
// from query_start_loc (read only when max_query_len is nonzero); token j
// attends to seq_lens[s] - q_len + j + 1 tokens; programs with j >= q_len
// do nothing.
// CHECK: gpu.func @pa_f16_d128_h4_partition({{.*}}, %[[SLK:arg4]]: memref<1099511627776xi32>, {{.*}}, %[[QSLK:[^:]*]]: memref<1099511627776xi32>, %[[MQL:[^:]*]]: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32) workgroup
// CHECK: %[[SEQ:.*]] = gpu.block_id z
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[LEN:.*]] = memref.load %[[SLK]][%[[SEQ]]]
// A seq_len outside [0, max_blocks_per_seq * block_size] counts as 0 tokens
// (negative ones are huge unsigned: one compare).
// CHECK-NEXT: %[[LENI:.*]] = arith.index_cast %[[LEN]] : i32 to index
// CHECK: %[[LBAD:.*]] = arith.cmpi ugt, %[[LENI]], %{{.*}} : index
// CHECK: %[[LSAFE:.*]] = arith.select %[[LBAD]], %c0{{.*}}, %[[LENI]] : index
// CHECK: %[[SLOTS:.*]] = arith.maxui %{{.*}}, %c1{{.*}} : index
// CHECK: %[[MULTI:.*]] = arith.cmpi ne, %[[MQL]], %c0_i32 : i32
// CHECK: %[[R:.*]]:2 = scf.if %[[MULTI]] -> (index, index) {
// CHECK: memref.load %[[QSLK]][%[[SEQ]]]
// CHECK: memref.load %[[QSLK]]
// CHECK: } else {
// CHECK: scf.yield %[[SEQ]], %c1{{.*}} : index, index
// The SIMT kernel serves one token per program: j = x mod slots.
// CHECK: %[[J:.*]] = arith.remui %[[BX]], %[[SLOTS]] : index
// CHECK: %[[PART:.*]] = arith.divui %[[BX]], %[[SLOTS]] : index
// CHECK: %[[ROW:.*]] = arith.addi %[[R]]#0, %[[J]] : index
// CHECK: %[[LIVE:.*]] = arith.cmpi slt, %[[J]], %[[R]]#1 : index
// The program's last token min(j + 1, q_len) - 1 attends to seq_lens[s] -
// q_len + that + 1 tokens.
// CHECK: %[[END:.*]] = arith.minsi %{{.*}}, %[[R]]#1 : index
// CHECK: %[[LAST:.*]] = arith.subi %[[END]], %c1{{.*}} : index
// CHECK: %[[L1:.*]] = arith.addi %[[LAST]], %c1{{.*}} : index
// CHECK: %[[D:.*]] = arith.subi %[[LSAFE]], %[[R]]#1 : index
// CHECK: %[[P1:.*]] = arith.addi %[[D]], %[[L1]] : index
// CHECK: %[[CTX:.*]] = arith.maxsi %[[P1]], %c0{{.*}} : index
// CHECK: scf.if %[[LIVE]] {
// The block table row is the sequence's, the query row the token's.
// CHECK: arith.muli %[[SEQ]], %{{.*}} : index
// CHECK: arith.muli %[[ROW]], %{{.*}} : index
// CHECK: gpu.return

// The reduce kernel finds its row the same way; a program past its
// sequence's tokens stores nothing (its heads are not valid) and walks no
// partition (its context length is 0).
// CHECK: gpu.func @pa_f16_d128_h4_reduce({{.*}}, %[[RQSL:[^:]*]]: memref<1099511627776xi32>, %[[RMQL:[^:]*]]: i32, %{{[^:]*}}: i32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32) workgroup
// CHECK: %[[RSEQ:.*]] = gpu.block_id y
// CHECK: arith.cmpi ne, %[[RMQL]], %c0_i32 : i32
// CHECK: memref.load %[[RQSL]][%[[RSEQ]]]
// CHECK: %[[RLIVE:.*]] = arith.cmpi slt
// CHECK: %[[RCTX:.*]] = arith.maxsi
// CHECK: arith.andi %[[RLIVE]], %{{.*}} : i1
// CHECK: arith.select %[[RLIVE]], %[[RCTX]], %c0{{.*}} : index
// CHECK: gpu.barrier
// CHECK: gpu.return

// The tensor-core tile packs max(8 / group, 1) tokens of a sequence (group
// 4: two tokens' heads in the 8-row tile): the grid launches
// ceil(max_query_len / 2) packs, the kernel derives the same count. A
// packed program runs unmasked the whole steps every packed token attends
// to (from the last token's window start to the first token's context),
// then masked the rest, each slot against its own range (i32 offsets).
// MMA-LABEL: func.func @spec
// MMA: } else {
// MMA: %[[PACKS:.*]] = arith.ceildivui %{{.*}}, %c2{{.*}} : index
// MMA: %[[PX:.*]] = arith.muli %{{.*}}, %[[PACKS]] : index
// MMA: gpu.launch_func @pa_f16_d128_h8_mma::@pa_f16_d128_h8_mma_partition blocks in (%[[PX]],
// MMA: gpu.module @pa_f16_d128_h8_mma attributes {paged_attn.variant = {{{.*}}query_packs = "ceil(query_slots/max(1,heads_per_program/group_size))"
// MMA: gpu.func @pa_f16_d128_h8_mma_partition({{.*}}, %[[QSLK:[^:]*]]: memref<1099511627776xi32>, %[[MQL:[^:]*]]: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32) workgroup
// MMA: %[[FIT0:.*]] = arith.divui %c8, %{{.*}} : index
// MMA: %[[FIT:.*]] = arith.maxui %[[FIT0]], %c1{{.*}} : index
// MMA: %[[P:.*]] = arith.select %{{.*}}, %[[FIT]], %c1{{.*}} : index
// MMA: %[[SL:.*]] = arith.maxui
// MMA: %[[NP:.*]] = arith.ceildivui %[[SL]], %[[P]] : index
// MMA: memref.load %[[QSLK]]
// MMA: %[[PK:.*]] = arith.remui %{{.*}}, %[[NP]] : index
// MMA: %[[J0:.*]] = arith.muli %[[PK]], %[[P]] : index
// MMA: %[[LIVE:.*]] = arith.cmpi slt, %[[J0]]
// MMA: scf.if %[[LIVE]] {
// MMA: %[[FIRSTCTX:.*]] = arith.maxsi
// MMA: arith.minui %{{.*}}, %[[FIRSTCTX]] : index
// MMA: scf.for
// MMA: nvvm.mma.sync
// MMA: scf.yield
// MMA: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c4_i32{{.*}} iter_args(
// MMA: nvvm.mma.sync
// MMA: arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// MMA: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
func.func @spec(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %qsl: memref<?xi32>, %qlen: index, %max: index,
    %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      query_start_loc(%qsl, %qlen : memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}

// -----

// Without query_start_loc the launch is unchanged (no multiply) and the
// kernels get max_query_len 0: one query token per sequence.
// CHECK-LABEL: func.func @one_token
// CHECK-NOT: arith.muli
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition blocks in (%{{[^,]*}}, %{{[^,]*}}, %{{[^)]*}})
// CHECK-SAME: %{{[^ ]*}} : memref<1099511627776xi32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : i32)
func.func @one_token(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
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
