// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s --check-prefixes=CHECK,EPI
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90" | FileCheck %s --check-prefixes=CHECK,EPI
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_70 kernel=wmma" | FileCheck %s --check-prefixes=CHECK,EPI

// Attention sinks are a run-time parameter of every variant (has_sinks 0:
// off), read only where the softmax is normalized: the one-pass kernel's
// epilogue and the reducer. The partition kernel never takes them, so a
// partition's exp_sums and max_logits stay the sink-free statistics the
// reducer merges (the sink counted once, not once per partition). The
// epilogue is shared by the SIMT, tensor-core and wmma kernels.

// CHECK-LABEL: func.func @sinks
// CHECK-SAME: %[[SINKS:[^:]*]]: memref<32xf32>
// CHECK: %[[SF:.*]] = memref.reinterpret_cast %[[SINKS]] to offset: [0], sizes: [1099511627776], strides: [1] : memref<32xf32> to memref<1099511627776xf32>
// CHECK: %[[ON:.*]] = arith.constant 1 : i32
// CHECK: gpu.launch_func @[[V:[a-z0-9_]*]]::@{{[a-z0-9_]*}}_onepass
// CHECK-SAME: %[[SF]] : memref<1099511627776xf32>, %[[ON]] : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>)
// CHECK: gpu.launch_func @[[V]]::@{{[a-z0-9_]*}}_partition
// CHECK-NOT: %[[SF]]
// CHECK-SAME: : i32, %{{[^ ]*}} : i32)
// CHECK: gpu.launch_func @[[V]]::@{{[a-z0-9_]*}}_reduce
// CHECK-SAME: %[[SF]] : memref<1099511627776xf32>, %[[ON]] : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %{{[^ ]*}} : i32)

// The partition kernel ends with sliding_window: no sinks.
// CHECK: gpu.func @{{[a-z0-9_]*}}_partition(
// CHECK-NOT: memref<1099511627776xf32>, %{{[^:]*}}: i32)
// CHECK-SAME: workgroup

// One-pass epilogue: the head's sink in the log2 domain joins the warps'
// maximum, and its exp2 starts the denominator.
// EPI: gpu.func @{{[a-z0-9_]*}}_onepass({{.*}}, %[[OSK:[^:]*]]: memref<1099511627776xf32>, %[[OHS:[^:]*]]: i32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: memref<1099511627776xi32>) workgroup
// EPI: gpu.barrier
// EPI: %[[OSON:.*]] = arith.cmpi ne, %[[OHS]], %c0_i32
// EPI: %[[OS:.*]]:2 = scf.if %[[OSON]] -> (f32, f32) {
// EPI:   %[[RAW:.*]] = memref.load %[[OSK]][%{{.*}}] : memref<1099511627776xf32>
// EPI:   %[[L2:.*]] = arith.mulf %[[RAW]], %{{.*}} : f32
// EPI:   scf.yield %[[L2]], %{{.*}} : f32, f32
// EPI: } else {
// EPI:   scf.yield %{{.*}}, %{{.*}} : f32, f32
// EPI: }
// EPI: %[[MMAX:.*]] = arith.select %{{.*}}, %{{.*}}, %[[OS]]#0 : f32
// EPI: %[[D:.*]] = arith.subf %[[OS]]#0, %[[MMAX]] : f32
// EPI: %[[E:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%[[D]])
// EPI: arith.mulf %[[OS]]#1, %[[E]] : f32

// Reducer: after the statistics, the sink joins M and L (natural log
// domain) before the partitions' weights use M.
// CHECK: gpu.func @{{[a-z0-9_]*}}_reduce({{.*}}, %[[RSK:[^:]*]]: memref<1099511627776xf32>, %[[RHS:[^:]*]]: i32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32) workgroup
// CHECK: gpu.barrier
// CHECK: %[[RSON:.*]] = arith.cmpi ne, %[[RHS]], %c0_i32
// CHECK: %[[RS:.*]]:2 = scf.if %[[RSON]] -> (f32, f32) {
// CHECK:   %[[RRAW:.*]] = memref.load %[[RSK]][%{{.*}}] : memref<1099511627776xf32>
// CHECK-NOT: arith.mulf
// CHECK: scf.yield %[[RRAW]], %{{.*}} : f32, f32
// CHECK: arith.cmpf {{.*}}, %[[RS]]#0 : f32
// CHECK: scf.for
func.func @sinks(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %sinks: memref<32xf32>, %max: index, %out: memref<?x32x128xf16>,
    %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      sinks(%sinks : memref<32xf32>) max_seq_len(%max)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}

// -----

// Without sinks the same variant runs with has_sinks = 0 (the constant's
// name says its value) and exp_sums as a stand-in pointer that is never
// read.

// CHECK-LABEL: func.func @no_sinks
// CHECK-SAME: %[[ES:[^:]*]]: memref<?x32x?xf32>
// CHECK: %[[ESF:.*]] = memref.reinterpret_cast %[[ES]]
// CHECK: gpu.launch_func @{{.*}}_onepass
// CHECK-SAME: %[[ESF]] : memref<1099511627776xf32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>)
// CHECK: gpu.launch_func @{{.*}}_reduce
// CHECK-SAME: %[[ESF]] : memref<1099511627776xf32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %{{[^ ]*}} : i32)
func.func @no_sinks(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %max: index, %out: memref<?x32x128xf16>,
    %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      max_seq_len(%max)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}
