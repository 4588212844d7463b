// The PTX of the software fp8 widening (sm_70: no fp8 conversion
// instructions). Each pair of f16 starts as one byte permute that puts a
// zero byte under each of two cache bytes: prmt.b32 d, 0, x, 0x5140
// (bytes 0, x0, 0, x1) and 0x7362 (0, x2, 0, x3), or the same with the
// operands swapped (0x1604, 0x3624). e5m2 is then the f16 itself; e4m3
// moves its seven low bits one place right on the 32-bit word and keeps
// each half's sign: shr.u32 1, and 0x3f803f80 (1065369472), and 0x80008000
// (-2147450880), or. No 16-bit shifts (one per element before).
// RUN: pa-opt %s -paged-attn-to-ptx | FileCheck %s
// RUN: pa-opt %s -paged-attn-to-ptx | FileCheck %s --check-prefix=NOSHIFT

// CHECK: .visible .entry pa_f16_kvf8E5M2_d128_h4_partition(
// CHECK-SAME: prmt.b32 \09%r{{[0-9]+}}, {{(0, %r[0-9]+, 0x5140U|%r[0-9]+, 0, 0x1604U)}};
// CHECK-SAME: prmt.b32 \09%r{{[0-9]+}}, {{(0, %r[0-9]+, 0x7362U|%r[0-9]+, 0, 0x3624U)}};
// NOSHIFT-NOT: shl.b16
// NOSHIFT: .visible .entry pa_f16_kvf8E5M2_d128_h4_reduce(
func.func @e5m2(%q: memref<?x8x128xf16>, %kc: memref<?x2x8x16x16xf8E5M2>,
    %vc: memref<?x2x128x16xf8E5M2>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %ks: f32, %vs: f32, %out: memref<?x8x128xf16>, %es: memref<?x8x?xf32>,
    %ml: memref<?x8x?xf32>, %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x8x128xf16>,
        memref<?x2x8x16x16xf8E5M2>, memref<?x2x128x16xf8E5M2>, memref<?x?xi32>,
        memref<?xi32>)
      kv_scales(%ks, %vs) outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>,
                memref<?x8x?x128xf32>) {scale = 0.125 : f32}
  return
}

// CHECK: .visible .entry pa_f16_kvf8E4M3FN_d128_h4_partition(
// CHECK-SAME: prmt.b32 \09[[W:%r[0-9]+]], {{(0, %r[0-9]+, 0x5140U|%r[0-9]+, 0, 0x1604U)}};
// CHECK-SAME: shr.u32 \09[[S:%r[0-9]+]], [[W]], 1;
// CHECK-SAME: and.b32 \09{{%r[0-9]+}}, [[S]], 1065369472;
// CHECK-SAME: and.b32 \09{{%r[0-9]+}}, [[W]], -2147450880;
// NOSHIFT-NOT: shl.b16
// NOSHIFT: .visible .entry pa_f16_kvf8E4M3FN_d128_h4_reduce(
func.func @e4m3(%q: memref<?x8x128xf16>, %kc: memref<?x2x8x16x16xf8E4M3FN>,
    %vc: memref<?x2x128x16xf8E4M3FN>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %ks: f32, %vs: f32, %out: memref<?x8x128xf16>, %es: memref<?x8x?xf32>,
    %ml: memref<?x8x?xf32>, %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x8x128xf16>,
        memref<?x2x8x16x16xf8E4M3FN>, memref<?x2x128x16xf8E4M3FN>,
        memref<?x?xi32>, memref<?xi32>)
      kv_scales(%ks, %vs) outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>,
                memref<?x8x?x128xf32>) {scale = 0.125 : f32}
  return
}
