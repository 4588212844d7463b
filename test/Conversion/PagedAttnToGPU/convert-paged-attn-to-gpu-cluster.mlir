// The cluster kernel (cluster-size=N, sm_90+ tensor-core variants): the
// one-pass kernel with each program's context split over a thread-block
// cluster of N programs, adjacent in x, whose states merge over distributed
// shared memory. The runtime runs it for one-pass grids it holds in one
// wave (batch 1): the context's bytes are read by N SMs instead of one.
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 warps=8 cluster-size=4" | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 warps=8" | FileCheck %s --check-prefix=NONE
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="chip=sm_80 cluster-size=4" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 kernel=simt cluster-size=4" 2>&1 | FileCheck %s --check-prefix=SIMT
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 cluster-size=9" 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90 warps=8 cluster-size=4" | FileCheck %s --check-prefix=PTX

// The variant key carries the size to the bundle's manifest.
// CHECK: cluster_size = 4 : i64
// The partition and one-pass kernels are the variant's without the option.
// CHECK-LABEL: gpu.func @pa_f16_d128_h8_w8_mma_partition
// CHECK-NOT: nvvm.cluster
// CHECK-LABEL: gpu.func @pa_f16_d128_h8_w8_mma_onepass
// CHECK-NOT: nvvm.cluster
// CHECK-LABEL: gpu.func @pa_f16_d128_h8_w8_mma_cluster
// CHECK-SAME: nvvm.cluster_dim = array<i32: 4, 1, 1>
// A program's rank is x mod 4, its query pack x / 4.
// CHECK: %[[X:.*]] = gpu.block_id x
// CHECK: arith.divui %[[X]], %c4
// CHECK: %[[RANK:.*]] = arith.remui %[[X]], %c4
// Its tokens: the context split in 4, whole 16-token steps, clamped to it.
// CHECK: arith.ceildivui
// CHECK: %[[START:.*]] = arith.muli %[[RANK]]
// CHECK: arith.minui %[[START]]
// After the token loop, each program's warps merged into its own area
// (past the epilogue layout: word 8320 = 8 warps x 8 heads x 130), then
// the cluster barrier (release / acquire).
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %arg23[%{{.*}}] : memref<11520xf32, #gpu.address_space<workgroup>>
// CHECK: nvvm.cluster.arrive
// CHECK-NEXT: nvvm.cluster.wait
// Every rank's area, through mapa, read over the cluster; the output
// stored by the rank that owns the pair; a last barrier before anyone
// leaves.
// CHECK: memref.extract_aligned_pointer_as_index %arg23
// CHECK: nvvm.mapa %{{.*}}, %c0_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK: nvvm.mapa %{{.*}}, %c1_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK: nvvm.mapa %{{.*}}, %c2_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK: nvvm.mapa %{{.*}}, %c3_i32{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-COUNT-12: llvm.load %{{.*}} : !llvm.ptr<7> -> f32
// CHECK: memref.store %{{.*}}, %arg5[%{{.*}}] : memref<1099511627776xf16>
// CHECK: nvvm.cluster.arrive
// CHECK-NEXT: nvvm.cluster.wait
// CHECK-LABEL: gpu.func @pa_f16_d128_h8_w8_mma_reduce

// NONE-NOT: cluster_size = 4
// NONE-NOT: _cluster
// NONE-NOT: nvvm.cluster

// SM80: error: 'paged_attn.decode_v2' op cluster-size needs the tensor-core kernel on sm_90 or newer (chip sm_80)
// SIMT: error: 'paged_attn.decode_v2' op cluster-size needs the tensor-core kernel on sm_90 or newer (chip sm_90)
// SIZE: error: 'paged_attn.decode_v2' op cluster-size (9) must be 0 or in [2, 8]

// The PTX (one escaped string): the cluster's shape compiled in, so a plain
// launch runs it in clusters; the barriers and the remote loads.
// PTX: .entry pa_f16_d128_h8_w8_mma_cluster(
// PTX-SAME: .explicitcluster{{[^;]*}}.reqnctapercluster 4, 1, 1
// PTX-SAME: barrier.cluster.arrive;{{[^;]*}}barrier.cluster.wait;
// PTX-SAME: mapa.shared::cluster.u64
// PTX-SAME: ld.shared::cluster.b32
// PTX-SAME: barrier.cluster.arrive;{{[^;]*}}barrier.cluster.wait;
// PTX-SAME: .entry pa_f16_d128_h8_w8_mma_reduce(

func.func @variant(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>,
      memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 1.0 : f32}
  return
}
