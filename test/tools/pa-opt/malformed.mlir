// Malformed input makes pa-opt exit non-zero with an error naming the
// location and the rule broken, and never crash.
// RUN: not pa-opt %s --split-input-file 2>&1 | FileCheck %s

// A verifier failure.
// CHECK: malformed.mlir:[[@LINE+3]]:3: error: 'paged_attn.decode_v2' op num_heads (12) must be a multiple of num_kv_heads (8)
func.func @bad_group(%q: memref<?x12x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>,
    %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x12x128xf16>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x12x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x12x128xf16>) {scale = 1.0 : f32}
  return
}

// -----

// A syntax error: the scale attribute is missing.
// CHECK: malformed.mlir:[[@LINE+3]]:3: error: 'paged_attn.decode_v2' op requires attribute 'scale'
func.func @no_scale(%q: memref<?x8x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>,
    %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x128xf16>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x8x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) outs(%out : memref<?x8x128xf16>)
  return
}

// -----

// Garbage where an operand list belongs.
// CHECK: malformed.mlir:[[@LINE+2]]:{{[0-9]+}}: error: expected
func.func @garbage() {
  paged_attn.decode_v2 ins(42)
  return
}
// CHECK-NOT: Stack dump
// CHECK-NOT: PLEASE submit a bug report
