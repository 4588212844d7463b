// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90" | FileCheck %s --check-prefix=MMA

// tmp_output's element type is a run-time parameter (tmp_f32): one variant
// serves a workspace in f32 and one in the query's 16-bit type. The host
// passes tmp_output's bytes and the flag from the op's static type; the
// partition kernel stores either type, the reduce kernel runs the loop of
// the one it is given.

// Two ops, f16 and f32 workspaces: one variant module, flag 0 then 1.
// CHECK-LABEL: func.func @both_tmp_types
// CHECK: %[[B16:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<1099511627776xf16> to memref<1099511627776xi8>
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition {{.*}}, %[[B16]] : memref<1099511627776xi8>, {{.*}}, %c0_i32{{[_0-9]*}} : i32)
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_reduce {{.*}}, %[[B16]] : memref<1099511627776xi8>, {{.*}}, %c0_i32{{[_0-9]*}} : i32)
// CHECK: %[[B32:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<1099511627776xf32> to memref<1099511627776xi8>
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_partition {{.*}}, %[[B32]] : memref<1099511627776xi8>, {{.*}}, %c1_i32{{[_0-9]*}} : i32)
// CHECK: gpu.launch_func @pa_f16_d128_h4::@pa_f16_d128_h4_reduce {{.*}}, %[[B32]] : memref<1099511627776xi8>, {{.*}}, %c1_i32{{[_0-9]*}} : i32)
// CHECK: gpu.module @pa_f16_d128_h4 attributes
// CHECK-NOT: gpu.module

// Partition: after the cross-warp merge, each (head, dim) result is stored
// as f32 or as f16 by a branch on the flag (uniform over the kernel).
// CHECK: gpu.func @pa_f16_d128_h4_partition({{.*}}, %[[PT:arg8]]: memref<1099511627776xi8>, {{.*}}, %[[PF:[^:]*]]: i32) workgroup
// CHECK: gpu.barrier
// CHECK: %[[V32:.*]] = memref.view %[[PT]][%{{.*}}][] : memref<1099511627776xi8> to memref<274877906944xf32>
// CHECK: %[[V16:.*]] = memref.view %[[PT]][%{{.*}}][] : memref<1099511627776xi8> to memref<549755813888xf16>
// CHECK: %[[IS32:.*]] = arith.cmpi ne, %[[PF]], %c0_i32
// CHECK: scf.if %[[IS32]] {
// CHECK-NEXT: memref.store %[[R:.*]], %[[V32]][%[[I:.*]]] : memref<274877906944xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[H:.*]] = arith.truncf %[[R]] : f32 to f16
// CHECK-NEXT: memref.store %[[H]], %[[V16]][%[[I]]] : memref<549755813888xf16>
// CHECK: gpu.return

// The one-pass kernel takes tmp_output (bytes) but no flag: it never
// touches the workspace.
// CHECK: gpu.func @pa_f16_d128_h4_onepass({{.*}}: memref<1099511627776xi8>, {{.*}}: memref<1099511627776xi32>) workgroup
// CHECK-NOT: memref.view
// CHECK: gpu.return

// Reduce: the same 4-element lane slices either way; one loop per type.
// CHECK: gpu.func @pa_f16_d128_h4_reduce({{.*}}, %[[RT:arg5]]: memref<1099511627776xi8>, {{.*}}, %[[RF:[^:]*]]: i32) workgroup
// CHECK: %[[R32:.*]] = memref.view %[[RT]][%{{.*}}][] : memref<1099511627776xi8> to memref<274877906944xf32>
// CHECK: %[[R16:.*]] = memref.view %[[RT]][%{{.*}}][] : memref<1099511627776xi8> to memref<549755813888xf16>
// CHECK: %[[RIS32:.*]] = arith.cmpi ne, %[[RF]], %c0_i32
// CHECK: %[[ACC:.*]]:4 = scf.if %[[RIS32]] -> (f32, f32, f32, f32) {
// CHECK: scf.for
// CHECK-COUNT-8: vector.load %[[R32]][%{{.*}}] {alignment = 16 : i64} : memref<274877906944xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: scf.for
// CHECK-COUNT-8: vector.load %[[R16]][%{{.*}}] {alignment = 8 : i64} : memref<549755813888xf16>, vector<4xf16>
// CHECK: vector.from_elements %[[ACC]]#0, %[[ACC]]#1, %[[ACC]]#2, %[[ACC]]#3 : vector<4xf32>
// CHECK: gpu.return

// The tensor-core kernel stores through the same epilogue.
// MMA: gpu.func @pa_f16_d128_h8_mma_partition({{.*}}, %[[MT:arg8]]: memref<1099511627776xi8>, {{.*}}, %[[MF:[^:]*]]: i32) workgroup
// MMA: %[[MV32:.*]] = memref.view %[[MT]]{{.*}} to memref<274877906944xf32>
// MMA: %[[MV16:.*]] = memref.view %[[MT]]{{.*}} to memref<549755813888xf16>
// MMA: %[[MIS32:.*]] = arith.cmpi ne, %[[MF]], %c0_i32
// MMA: scf.if %[[MIS32]] {
// MMA-NEXT: memref.store %{{.*}}, %[[MV32]]
// MMA-NEXT: } else {
// MMA-NEXT: arith.truncf
// MMA-NEXT: memref.store %{{.*}}, %[[MV16]]
func.func @both_tmp_types(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %max: index,
    %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp16: memref<?x32x?x128xf16>, %tmp32: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp16 : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf16>)
      {scale = 0.0883883461 : f32}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp32 : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}

// -----

// An f32 query has an f32 workspace only: f32 views, no branch.
// CHECK-LABEL: func.func @f32_query
// CHECK: gpu.func @pa_f32_d64_h1_partition({{.*}}, %[[FT:arg8]]: memref<1099511627776xi8>,
// CHECK: memref.view %[[FT]]{{.*}} to memref<274877906944xf32>
// CHECK-NOT: arith.truncf
// CHECK: gpu.func @pa_f32_d64_h1_onepass
// CHECK: gpu.func @pa_f32_d64_h1_reduce({{.*}}, %[[FRT:arg5]]: memref<1099511627776xi8>,
// CHECK: memref.view %[[FRT]]{{.*}} to memref<274877906944xf32>
// CHECK-NOT: memref.view
// CHECK: gpu.return
func.func @f32_query(%q: memref<?x8x64xf32>, %kc: memref<?x8x16x16x4xf32>,
    %vc: memref<?x8x64x16xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %max: index,
    %out: memref<?x8x64xf32>, %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>,
    %tmp: memref<?x8x?x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x64xf32>, memref<?x8x16x16x4xf32>, memref<?x8x64x16xf32>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x8x64xf32>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x64xf32>)
      {scale = 0.125 : f32}
  return
}
