// RUN: pa-opt %s -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="kernel=mma chip=sm_90" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_70 kernel=wmma" | FileCheck %s

// Bad block tables (docs/features.md and docs/runtime.md, "Bad block
// tables"), the same in the SIMT, tensor-core (mma) and wmma kernels: every
// block-table entry is checked against num_blocks by one unsigned compare
// (negative entries are huge) and replaced by block 0 when out of range.
// The logits of that block's tokens become NaN before the masks (SIMT: the
// logits; mma and wmma: the scale of their rows), so exactly the slots that
// attend to one of them get a NaN sum and output; no flag is carried
// through the step loops (but wmma's, of the step it loads ahead). The
// kernels that normalize the softmax record the bad input: the one-pass
// kernel's threads check its range's blocks before its token loop; after a
// partition kernel (NaN exp_sums) the reducer's thread 0 scans its row's
// blocks. The record:
// error_word {count, seq, index, value}. A seq_len outside [0,
// max_blocks_per_seq * block_size] counts as 0 tokens.

// The host launch: num_blocks is key_cache's dim 0; without a runtime, each
// call allocates a zeroed error word of its own.
// CHECK-LABEL: func.func @bounds
// CHECK-SAME: %[[KC:[^:]*]]: memref<?x8x16x16x8xf16>
// CHECK: %[[EW:.*]] = gpu.alloc () : memref<4xi32>
// CHECK: gpu.memset %[[EW]], %{{.*}} : memref<4xi32>, i32
// CHECK: %[[NBD:.*]] = memref.dim %[[KC]], %c0{{.*}} : memref<?x8x16x16x8xf16>
// CHECK: %[[NBI:.*]] = arith.index_cast %[[NBD]] : index to i32
// CHECK: %[[EWF:.*]] = memref.reinterpret_cast %[[EW]]
// CHECK: gpu.launch_func @{{[a-z0-9_]*}}::@{{[a-z0-9_]*}}_onepass
// CHECK-SAME: %[[NBI]] : i32, %[[EWF]] : memref<1099511627776xi32>{{(, %[^ ]* : i32)?}})
// CHECK: gpu.launch_func @{{[a-z0-9_]*}}::@{{[a-z0-9_]*}}_partition
// CHECK-SAME: %[[NBI]] : i32, %{{[^ ]*}} : i32)
// CHECK: gpu.launch_func @{{[a-z0-9_]*}}::@{{[a-z0-9_]*}}_reduce
// CHECK-SAME: %[[NBI]] : i32, %[[EWF]] : memref<1099511627776xi32>{{(, %[^ ]* : i32)?}})
// CHECK: gpu.dealloc %[[EW]] : memref<4xi32>

// The partition kernel takes num_blocks last (it records nothing).
// CHECK: gpu.func @[[V:[a-z0-9_]*]]_partition(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[BT:[^:]*]]: memref<1099511627776xi32>, %[[SL:[^:]*]]: memref<1099511627776xi32>, {{.*}}: f32, %[[MB:[^:]*]]: i32, %[[BS:[^:]*]]: i32, {{.*}}, %[[NB:[^:]*]]: i32, %{{[^:]*}}: i32) workgroup
// seq_lens[s] against max_blocks_per_seq * block_size: one unsigned compare.
// CHECK: %[[MBI:.*]] = arith.index_cast %[[MB]] : i32 to index
// CHECK-NEXT: %[[BSI:.*]] = arith.index_cast %[[BS]] : i32 to index
// CHECK-NEXT: %[[CAP:.*]] = arith.muli %[[MBI]], %[[BSI]] : index
// CHECK: %[[RAW:.*]] = memref.load %[[SL]][%{{.*}}] : memref<1099511627776xi32>
// CHECK-NEXT: %[[LENI:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK-NEXT: %[[LBAD:.*]] = arith.cmpi ugt, %[[LENI]], %[[CAP]] : index
// CHECK: arith.select %[[LBAD]], %c0{{.*}}, %[[LENI]] : index
// The token loop: each entry load, one compare against num_blocks, block 0
// in its place; later the NaN logits (or scale) of a bad block.
// CHECK: } else {
// CHECK: %[[E:.*]] = memref.load %[[BT]][%{{.*}}] : memref<1099511627776xi32>
// CHECK-NEXT: %[[BAD:.*]] = arith.cmpi uge, %[[E]], %[[NB]] : i32
// CHECK: arith.select %[[BAD]], %c0_i32{{.*}}, %[[E]] : i32
// CHECK: %[[NAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK-NEXT: arith.select %{{.*}}, %[[NAN]], %{{.*}} : f32
// The epilogue as without the checks: the NaN sums reach exp_sums.
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.barrier
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.return

// The one-pass kernel: a bad seq_len reads nothing: thread 0 records it as
// (seq, -1, seq_len) and the rows are NaN. Else, before the token loop, the
// threads check the blocks of the program's range (a strided loop, one
// trip mostly, carrying the last bad block and its entry), a barrier, and
// each thread that found one records it; then the same loop as the
// partition kernel's.
// CHECK: gpu.func @[[V]]_onepass({{.*}}, %[[OBT:[^:]*]]: memref<1099511627776xi32>, %[[OSL:[^:]*]]: memref<1099511627776xi32>, {{.*}}, %[[ONB:[^:]*]]: i32, %[[ERR:[^:]*]]: memref<1099511627776xi32>) workgroup
// CHECK: %[[ORAW:.*]] = memref.load %[[OSL]]
// CHECK: %[[OLBAD:.*]] = arith.cmpi ugt
// CHECK: scf.if %[[OLBAD]] {
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[ERR]][%{{.*}}] : (i32, memref<1099511627776xi32>) -> i32
// CHECK: memref.store %{{.*}}, %[[ERR]][%c1{{.*}}] : memref<1099511627776xi32>
// CHECK: memref.store %c-1_i32{{.*}}, %[[ERR]][%c2{{.*}}] : memref<1099511627776xi32>
// CHECK: memref.store %[[ORAW]], %[[ERR]][%c3{{.*}}] : memref<1099511627776xi32>
// CHECK: %[[ONAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK: %[[ONAN16:.*]] = arith.truncf %[[ONAN]] : f32 to f16
// CHECK: memref.store %[[ONAN16]]
// CHECK: } else {
// CHECK: %[[CHK:.*]]:2 = scf.for %{{.*}} = %thread_id_x to %{{.*}} step %c128{{.*}} iter_args(%{{.*}} = %c-1_i32{{.*}}, %{{.*}} = %c-1_i32{{.*}}) -> (i32, i32) {
// CHECK: %[[CE:.*]] = memref.load %[[OBT]]
// CHECK-NEXT: arith.cmpi uge, %[[CE]], %[[ONB]] : i32
// CHECK: %[[FOUND:.*]] = arith.cmpi ne, %[[CHK]]#0, %c-1_i32{{.*}} : i32
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if %[[FOUND]] {
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[ERR]][%{{.*}}] : (i32, memref<1099511627776xi32>) -> i32
// CHECK: memref.store %[[CHK]]#0, %[[ERR]][%c2{{.*}}]
// CHECK: memref.store %[[CHK]]#1, %[[ERR]][%c3{{.*}}]
// The token loop as the partition kernel's; its epilogue as without the
// checks (the NaN sums make the rows NaN).
// CHECK: arith.cmpi uge, %{{.*}}, %[[ONB]] : i32
// CHECK: %[[ONANL:.*]] = arith.constant 0x7FC00000 : f32
// CHECK-NEXT: arith.select %{{.*}}, %[[ONANL]], %{{.*}} : f32
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.barrier
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.return

// The reducer takes block_tables, max_blocks_per_seq, block_size,
// num_blocks and error_word: a bad seq_len reads no partition and starts
// the sum at NaN; a row with a NaN sum (a bad seq_len, or a bad entry in a
// partition) has thread 0 record it.
// CHECK: gpu.func @[[V]]_reduce(%[[RBT:[^:]*]]: memref<1099511627776xi32>, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[RMB:[^:]*]]: i32, %[[RBS:[^:]*]]: i32, {{.*}}, %[[RNB:[^:]*]]: i32, %[[RERR:[^:]*]]: memref<1099511627776xi32>, %{{[^:]*}}: i32) workgroup
// CHECK: %[[RMBI:.*]] = arith.index_cast %[[RMB]] : i32 to index
// CHECK-NEXT: %[[RBSI:.*]] = arith.index_cast %[[RBS]] : i32 to index
// CHECK-NEXT: %[[RCAP:.*]] = arith.muli %[[RMBI]], %[[RBSI]] : index
// CHECK: %[[RRAW:.*]] = memref.load
// CHECK: %[[RBAD:.*]] = arith.cmpi ugt, %{{.*}}, %[[RCAP]] : index
// CHECK: %[[RNAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK: %[[L0:.*]] = arith.select %[[RBAD]], %[[RNAN]], %{{.*}} : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[L0]]) -> (f32, f32)
// After the statistics, before the walk over the partial outputs.
// CHECK: %[[RL:.*]] = arith.cmpf uno, %{{.*}}, %{{.*}} : f32
// CHECK: %[[RREC:.*]] = arith.andi %{{.*}}, %[[RL]] : i1
// CHECK-NEXT: scf.if %[[RREC]] {
// CHECK-NEXT: scf.if %[[RBAD]] {
// CHECK: memref.store %[[RRAW]], %[[RERR]][%c3{{.*}}]
// CHECK: } else {
// CHECK: scf.while
// CHECK: memref.load %[[RBT]]
// CHECK-NEXT: arith.cmpi ult, %{{.*}}, %[[RNB]] : i32
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[RERR]]
// CHECK: scf.for
// CHECK: vector.load %{{.*}} : memref<274877906944xf32>, vector<4xf32>
func.func @bounds(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
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
