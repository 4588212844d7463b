// RUN: pa-opt %s -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="kernel=mma chip=sm_90" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_70 kernel=wmma" | FileCheck %s

// Bad block tables (docs/runtime.md, "Bad block tables"), the same in the
// SIMT, tensor-core (mma) and wmma kernels: every block-table entry is
// checked against num_blocks by one unsigned compare (negative entries are
// huge) and replaced by block 0 when out of range; the lane's flag is OR-ed
// and carried through the step loops (an i1 iteration value); the
// epilogue's barrier ORs the flags over the program (bar.red.or), stores
// NaN and, in a cold branch, rescans the program's blocks to record the
// first bad one in error_word {count, seq, index, value}. A seq_len outside
// [0, max_blocks_per_seq * block_size] counts as 0 tokens.

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
// CHECK-SAME: %[[NBI]] : i32, %[[EWF]] : memref<1099511627776xi32>)
// CHECK: gpu.launch_func @{{[a-z0-9_]*}}::@{{[a-z0-9_]*}}_partition
// CHECK-SAME: %[[NBI]] : i32, %[[EWF]] : memref<1099511627776xi32>)
// CHECK: gpu.launch_func @{{[a-z0-9_]*}}::@{{[a-z0-9_]*}}_reduce
// CHECK: gpu.dealloc %[[EW]] : memref<4xi32>

// The partition kernel takes num_blocks and error_word last.
// CHECK: gpu.func @[[V:[a-z0-9_]*]]_partition(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[BT:[^:]*]]: memref<1099511627776xi32>, %[[SL:[^:]*]]: memref<1099511627776xi32>, {{.*}}, %[[NB:[^:]*]]: i32, %[[ERR:[^:]*]]: memref<1099511627776xi32>) workgroup
// seq_lens[s] against max_blocks_per_seq * block_size: one unsigned compare.
// CHECK: %[[RAW:.*]] = memref.load %[[SL]][%{{.*}}] : memref<1099511627776xi32>
// CHECK-NEXT: %[[LENI:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK-NEXT: %[[LBAD:.*]] = arith.cmpi ugt, %[[LENI]], %{{.*}} : index
// CHECK: arith.select %[[LBAD]], %c0{{.*}}, %[[LENI]] : index
// Empty partitions (every one of a bad seq_len): thread 0 records it as
// (seq, -1, seq_len).
// CHECK: %[[SBAD:.*]] = arith.andi %[[LBAD]], %{{.*}} : i1
// CHECK-NEXT: scf.if %[[SBAD]] {
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[ERR]][%{{.*}}] : (i32, memref<1099511627776xi32>) -> i32
// CHECK: memref.store %{{.*}}, %[[ERR]][%c1{{.*}}] : memref<1099511627776xi32>
// CHECK: memref.store %c-1_i32{{.*}}, %[[ERR]][%c2{{.*}}] : memref<1099511627776xi32>
// CHECK: memref.store %[[RAW]], %[[ERR]][%c3{{.*}}] : memref<1099511627776xi32>
// The token loop: each entry load, one compare against num_blocks, block 0
// in its place, the lane's flag OR-ed (wmma: its loads of the next step sit
// in an scf.if that yields their flag).
// CHECK: } else {
// CHECK: %[[E:.*]] = memref.load %[[BT]][%{{.*}}] : memref<1099511627776xi32>
// CHECK-NEXT: %[[BAD:.*]] = arith.cmpi uge, %[[E]], %[[NB]] : i32
// CHECK: arith.select %[[BAD]], %c0_i32{{.*}}, %[[E]] : i32
// CHECK: arith.ori %{{.*}}, %{{.*}} : i1
// The flag rides the loop's iteration values (last).
// CHECK: scf.yield {{.*}} : {{.*}}, i1
// The epilogue's barrier ORs the flags of the program.
// CHECK: %[[ANY:.*]] = nvvm.barrier #nvvm.reduction<or> %{{.*}} -> i32
// CHECK-NEXT: %[[ANYB:.*]] = arith.cmpi ne, %[[ANY]], %c0_i32{{.*}} : i32
// CHECK: %[[REC:.*]] = arith.andi %[[ANYB]], %{{.*}} : i1
// CHECK-NEXT: scf.if %[[REC]] {
// Cold: a bad seq_len, or the first bad entry of the program's blocks.
// CHECK: scf.if %[[LBAD]] {
// CHECK: memref.atomic_rmw addi
// CHECK: } else {
// CHECK: scf.for %[[LB:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %false{{.*}}) -> (i1) {
// CHECK: %[[SE:.*]] = memref.load %[[BT]][%{{.*}}] : memref<1099511627776xi32>
// CHECK-NEXT: arith.cmpi uge, %[[SE]], %[[NB]] : i32
// CHECK: %[[IDX:.*]] = arith.index_cast %[[LB]] : index to i32
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[ERR]][%{{.*}}] : (i32, memref<1099511627776xi32>) -> i32
// CHECK: memref.store %[[IDX]], %[[ERR]][%c2{{.*}}]
// CHECK: memref.store %[[SE]], %[[ERR]][%c3{{.*}}]
// The result (and exp_sums, for the reducer) NaN.
// CHECK: %[[NAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK: arith.select %[[ANYB]], %[[NAN]], %{{.*}} : f32
// CHECK: arith.select %[[ANYB]], %[[NAN]], %{{.*}} : f32
// CHECK: gpu.return

// The one-pass kernel the same.
// CHECK: gpu.func @[[V]]_onepass({{.*}}, %{{[^:]*}}: i32, %{{[^:]*}}: memref<1099511627776xi32>) workgroup
// CHECK: arith.cmpi ugt
// CHECK: arith.cmpi uge, %{{.*}}, %{{.*}} : i32
// CHECK: nvvm.barrier #nvvm.reduction<or>
// CHECK: memref.atomic_rmw addi

// The reducer takes max_blocks_per_seq (not num_blocks: it reads no block):
// a bad seq_len reads no partition and starts the sum at NaN.
// CHECK: gpu.func @[[V]]_reduce(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[MB:[^:]*]]: i32,
// CHECK: %[[MBI:.*]] = arith.index_cast %[[MB]] : i32 to index
// CHECK: %[[CAP:.*]] = arith.muli %[[MBI]], %c16{{.*}} : index
// CHECK: %[[RBAD:.*]] = arith.cmpi ugt, %{{.*}}, %[[CAP]] : index
// CHECK: %[[RNAN:.*]] = arith.constant 0x7FC00000 : f32
// CHECK: %[[L0:.*]] = arith.select %[[RBAD]], %[[RNAN]], %{{.*}} : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[L0]]) -> (f32, f32)
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
