// RUN: pa-opt %s -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_70 kernel=wmma" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 warps=8 cluster-size=4" | FileCheck %s --check-prefixes=CHECK,CLUSTER

// A query row that attends to no token (seq_len 0) has l = 0 and acc = 0
// where the softmax is normalized: the output is acc itself there, 0 (as
// vLLM's kernels give), not 0 / 0. Every other row divides as before, and a
// NaN from a bad input stays NaN (a NaN l is not 0; a NaN acc is kept).
// The one-pass epilogue (shared by the SIMT, tensor-core and wmma kernels,
// and the cluster kernel's merge) selects acc / l or acc; the reducer's
// factor is 1 / L, or 1 where L = 0.

// CHECK-LABEL: func.func @empty_rows

// The partition kernel's outputs are partials: a partition the reducer
// reads has tokens (l > 0), so its epilogue divides unguarded.
// CHECK: gpu.func @{{[a-z0-9_]*}}_partition(
// CHECK: gpu.barrier
// CHECK-NOT: arith.cmpf oeq
// CHECK: gpu.func @{{[a-z0-9_]*}}_onepass(

// One-pass kernel: after the warps merge, acc / l, or acc where l = 0,
// stored in the output's type.
// CHECK: gpu.barrier
// CHECK: %[[Q:.*]] = arith.divf %[[ACC:[^,]*]], %[[L:[^ ]*]] : f32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[Z:.*]] = arith.cmpf oeq, %[[L]], %[[ZERO]] : f32
// CHECK-NEXT: arith.select %[[Z]], %[[ACC]], %[[Q]] : f32
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<1099511627776xf16>

// The cluster kernel: the merge over the cluster's ranks normalizes alike.
// CLUSTER: gpu.func @{{[a-z0-9_]*}}_cluster(
// CLUSTER: nvvm.cluster.wait
// CLUSTER: %[[CQ:.*]] = arith.divf %[[CACC:[^,]*]], %[[CL:[^ ]*]] : f32
// CLUSTER-NEXT: %[[CZERO:.*]] = arith.constant 0.000000e+00 : f32
// CLUSTER-NEXT: %[[CZ:.*]] = arith.cmpf oeq, %[[CL]], %[[CZERO]] : f32
// CLUSTER-NEXT: arith.select %[[CZ]], %[[CACC]], %[[CQ]] : f32

// Reducer: 1 / L, or 1 where L = 0 (a row of no partitions: its sum is 0).
// CHECK: gpu.func @{{[a-z0-9_]*}}_reduce(
// CHECK: %[[RQ:.*]] = arith.divf %{{.*}}, %[[RL:[^ ]*]] : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[RZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[RZ:.*]] = arith.cmpf oeq, %[[RL]], %[[RZERO]] : f32
// CHECK-NEXT: arith.select %[[RZ]], %[[ONE]], %[[RQ]] : f32
func.func @empty_rows(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
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
