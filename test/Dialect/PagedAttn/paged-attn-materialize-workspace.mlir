// RUN: pa-opt %s -split-input-file -paged-attn-materialize-workspace | FileCheck %s
// RUN: pa-opt %s -split-input-file -paged-attn-materialize-workspace \
// RUN:   -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   | FileCheck %s --check-prefix=BUF

// With max_seq_len: P = ceil(max_seq_len / partition_size).

// CHECK-LABEL: func.func @with_max_len
// CHECK-SAME: (%[[Q:.*]]: tensor<?x32x128xf16>, %{{.*}}, %[[MAX:[^:]*]]: index, %[[OUT:.*]]: tensor<?x32x128xf16>)
// CHECK: %[[P:.*]] = arith.ceildivui %[[MAX]], %c1024
// CHECK: %[[S:.*]] = tensor.dim %[[Q]], %c0
// CHECK: %[[ES:.*]] = tensor.empty(%[[S]], %[[P]]) : tensor<?x32x?xf32>
// CHECK: %[[ML:.*]] = tensor.empty(%[[S]], %[[P]]) : tensor<?x32x?xf32>
// CHECK: %[[TMP:.*]] = tensor.empty(%[[S]], %[[P]]) : tensor<?x32x?x128xf32>
// CHECK: %[[R:.*]]:4 = paged_attn.decode_v2 {{.*}} outs(%[[OUT]] : tensor<?x32x128xf16>) workspace(%[[ES]], %[[ML]], %[[TMP]] : {{.*}}) {partition_size = 1024 : i64, scale = 1.250000e-01 : f32}
// CHECK: return %[[R]]#0

// Bufferized: the workspace is allocated, the op is in memref form, and the
// output is written in place into the function's argument.
// BUF-LABEL: func.func @with_max_len
// BUF-SAME: %[[OUT:[^:]*]]: memref<?x32x128xf16>) -> memref<?x32x128xf16>
// BUF: %[[ES:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {{.*}}: memref<?x32x?xf32>
// BUF: %[[TMP:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {{.*}}: memref<?x32x?x128xf32>
// BUF: paged_attn.decode_v2 ins({{.*}} : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>) max_seq_len(%{{.*}}) outs(%[[OUT]] : memref<?x32x128xf16>) workspace(%[[ES]], %{{.*}}, %[[TMP]] :
// BUF-NOT: ->
// BUF: return %[[OUT]]
func.func @with_max_len(%q: tensor<?x32x128xf16>, %kc: tensor<?x8x16x16x8xf16>,
    %vc: tensor<?x8x128x16xf16>, %bt: tensor<?x?xi32>, %sl: tensor<?xi32>, %max: index,
    %out: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : tensor<?x32x128xf16>, tensor<?x8x16x16x8xf16>, tensor<?x8x128x16xf16>,
        tensor<?x?xi32>, tensor<?xi32>) max_seq_len(%max)
      outs(%out : tensor<?x32x128xf16>) {scale = 0.125 : f32, partition_size = 1024 : i64}
      -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// -----

// Without max_seq_len and with a static block table: P folds to
// ceil(64 blocks * 16 tokens / 512) = 2.

// CHECK-LABEL: func.func @static_table
// CHECK: tensor.empty() : tensor<4x8x2xf32>
// CHECK: tensor.empty() : tensor<4x8x2x64xf32>
// CHECK: paged_attn.decode_v2 {{.*}} workspace({{.*}} : tensor<4x8x2xf32>, tensor<4x8x2xf32>, tensor<4x8x2x64xf32>)
func.func @static_table(%q: tensor<4x8x64xbf16>, %kc: tensor<300x8x8x16x8xbf16>,
    %vc: tensor<300x8x64x16xbf16>, %bt: tensor<4x64xi32>, %sl: tensor<4xi32>,
    %out: tensor<4x8x64xbf16>) -> tensor<4x8x64xbf16> {
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : tensor<4x8x64xbf16>, tensor<300x8x8x16x8xbf16>, tensor<300x8x64x16xbf16>,
        tensor<4x64xi32>, tensor<4xi32>)
      outs(%out : tensor<4x8x64xbf16>) {scale = 0.125 : f32}
      -> tensor<4x8x64xbf16>
  return %r : tensor<4x8x64xbf16>
}

// -----

// A static block table with a dynamic block size: P = ceil(64 *
// dim(key_cache, 3) / 512) at run time.

// CHECK-LABEL: func.func @dynamic_block_size
// CHECK-SAME: (%{{[^:]*}}: tensor<4x8x64xbf16>, %[[KC:[^:]*]]: tensor<300x8x8x?x8xbf16>
// CHECK: %[[BS:.*]] = tensor.dim %[[KC]], %c3
// CHECK: %[[TOK:.*]] = arith.muli %c64, %[[BS]] : index
// CHECK: %[[P:.*]] = arith.ceildivui %[[TOK]], %c512
// CHECK: tensor.empty(%[[P]]) : tensor<4x8x?xf32>
func.func @dynamic_block_size(%q: tensor<4x8x64xbf16>, %kc: tensor<300x8x8x?x8xbf16>,
    %vc: tensor<300x8x64x?xbf16>, %bt: tensor<4x64xi32>, %sl: tensor<4xi32>,
    %out: tensor<4x8x64xbf16>) -> tensor<4x8x64xbf16> {
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : tensor<4x8x64xbf16>, tensor<300x8x8x?x8xbf16>, tensor<300x8x64x?xbf16>,
        tensor<4x64xi32>, tensor<4xi32>)
      outs(%out : tensor<4x8x64xbf16>) {scale = 0.125 : f32}
      -> tensor<4x8x64xbf16>
  return %r : tensor<4x8x64xbf16>
}

// -----

// Ops that already have a workspace, and memref-form ops, are left alone.

// CHECK-LABEL: func.func @untouched
// CHECK-NOT: tensor.empty
// CHECK: paged_attn.decode_v2
func.func @untouched(%q: memref<?x8x64xf32>, %kc: memref<?x8x16x16x4xf32>,
    %vc: memref<?x8x64x16xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x8x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x64xf32>, memref<?x8x16x16x4xf32>, memref<?x8x64x16xf32>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x64xf32>) {scale = 0.125 : f32}
  return
}

// -----

// The feature operands and attributes survive the rewrite.

// CHECK-LABEL: func.func @features
// CHECK-SAME: %[[SINKS_ARG:[a-z0-9]+]]: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<?x8x64xf16>)
// CHECK: paged_attn.decode_v2 ins({{.*}}) alibi_slopes(%{{.*}} : tensor<8xf32>) sinks(%[[SINKS_ARG]] : tensor<8xf32>) outs({{.*}}) workspace({{.*}}) {logits_soft_cap = 5.000000e+01 : f32, scale = 1.250000e-01 : f32, sliding_window = 4096 : i64}
// BUF-LABEL: func.func @features
// BUF: paged_attn.decode_v2 ins({{.*}}) alibi_slopes(%{{.*}} : memref<8xf32>) sinks(%{{.*}} : memref<8xf32>) outs({{.*}}) workspace({{.*}}) {logits_soft_cap = 5.000000e+01 : f32, scale = 1.250000e-01 : f32, sliding_window = 4096 : i64}
func.func @features(%q: tensor<?x8x64xf16>, %kc: tensor<?x1x8x16x8xf16>,
    %vc: tensor<?x1x64x16xf16>, %bt: tensor<?x?xi32>, %sl: tensor<?xi32>,
    %slopes: tensor<8xf32>, %sinks: tensor<8xf32>, %out: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : tensor<?x8x64xf16>, tensor<?x1x8x16x8xf16>, tensor<?x1x64x16xf16>,
        tensor<?x?xi32>, tensor<?xi32>) alibi_slopes(%slopes : tensor<8xf32>)
      sinks(%sinks : tensor<8xf32>)
      outs(%out : tensor<?x8x64xf16>)
      {scale = 0.125 : f32, sliding_window = 4096 : i64, logits_soft_cap = 50.0 : f32}
      -> tensor<?x8x64xf16>
  return %r : tensor<?x8x64xf16>
}
