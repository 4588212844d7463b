// RUN: pa-opt %s | pa-opt | FileCheck %s
// RUN: pa-opt %s --mlir-print-op-generic | pa-opt | FileCheck %s

// Round trips of decode_v2 in both forms, pretty and generic.

// CHECK-LABEL: func.func @tensor_form_no_workspace
// CHECK-SAME: (%[[Q:.*]]: tensor<?x32x128xf16>, %[[K:.*]]: tensor<?x8x16x16x8xf16>, %[[V:.*]]: tensor<?x8x128x16xf16>, %[[BT:.*]]: tensor<?x?xi32>, %[[SL:.*]]: tensor<?xi32>, %[[OUT:.*]]: tensor<?x32x128xf16>)
// CHECK: %[[R:.*]] = paged_attn.decode_v2 ins(%[[Q]], %[[K]], %[[V]], %[[BT]], %[[SL]] : tensor<?x32x128xf16>, tensor<?x8x16x16x8xf16>, tensor<?x8x128x16xf16>, tensor<?x?xi32>, tensor<?xi32>) outs(%[[OUT]] : tensor<?x32x128xf16>) {scale = 0.0883883461 : f32} -> tensor<?x32x128xf16>
// CHECK: return %[[R]]
func.func @tensor_form_no_workspace(%q: tensor<?x32x128xf16>, %kc: tensor<?x8x16x16x8xf16>,
    %vc: tensor<?x8x128x16xf16>, %bt: tensor<?x?xi32>, %sl: tensor<?xi32>,
    %out: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : tensor<?x32x128xf16>, tensor<?x8x16x16x8xf16>, tensor<?x8x128x16xf16>,
        tensor<?x?xi32>, tensor<?xi32>)
      outs(%out : tensor<?x32x128xf16>) {scale = 0.0883883461 : f32}
      -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// CHECK-LABEL: func.func @tensor_form_workspace
// CHECK: %{{.*}}:4 = paged_attn.decode_v2 ins({{.*}}) max_seq_len(%{{.*}}) outs(%{{.*}} : tensor<4x16x64xbf16>) workspace(%{{.*}}, %{{.*}}, %{{.*}} : tensor<4x16x3xf32>, tensor<4x16x3xf32>, tensor<4x16x3x64xf32>) {partition_size = 1024 : i64, scale = 1.250000e-01 : f32} -> tensor<4x16x64xbf16>, tensor<4x16x3xf32>, tensor<4x16x3xf32>, tensor<4x16x3x64xf32>
func.func @tensor_form_workspace(%q: tensor<4x16x64xbf16>, %kc: tensor<100x2x8x32x8xbf16>,
    %vc: tensor<100x2x64x32xbf16>, %bt: tensor<4x96xi32>, %sl: tensor<4xi32>, %max: index,
    %out: tensor<4x16x64xbf16>, %es: tensor<4x16x3xf32>, %ml: tensor<4x16x3xf32>,
    %tmp: tensor<4x16x3x64xf32>) -> tensor<4x16x64xbf16> {
  %r:4 = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : tensor<4x16x64xbf16>, tensor<100x2x8x32x8xbf16>, tensor<100x2x64x32xbf16>,
        tensor<4x96xi32>, tensor<4xi32>)
      max_seq_len(%max)
      outs(%out : tensor<4x16x64xbf16>)
      workspace(%es, %ml, %tmp : tensor<4x16x3xf32>, tensor<4x16x3xf32>, tensor<4x16x3x64xf32>)
      {scale = 0.125 : f32, partition_size = 1024 : i64}
      -> tensor<4x16x64xbf16>, tensor<4x16x3xf32>, tensor<4x16x3xf32>, tensor<4x16x3x64xf32>
  return %r#0 : tensor<4x16x64xbf16>
}

// CHECK-LABEL: func.func @memref_form
// CHECK: paged_attn.decode_v2 ins(%{{.*}} : memref<?x32x256xf32>, memref<?x8x64x8x4xf32>, memref<?x8x256x8xf32>, memref<?x?xi32>, memref<?xi32>) outs(%{{.*}} : memref<?x32x256xf32>) workspace(%{{.*}} : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x256xf32>) {scale = 6.250000e-02 : f32}
// CHECK-NOT: ->
func.func @memref_form(%q: memref<?x32x256xf32>, %kc: memref<?x8x64x8x4xf32>,
    %vc: memref<?x8x256x8xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x32x256xf32>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x256xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x256xf32>, memref<?x8x64x8x4xf32>, memref<?x8x256x8xf32>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x32x256xf32>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x256xf32>)
      {scale = 0.0625 : f32, partition_size = 512 : i64}
  return
}

// The block size may be dynamic (the kernels take it at run time), in one
// cache or both.
// CHECK-LABEL: func.func @dynamic_block_size
// CHECK: paged_attn.decode_v2 ins(%{{.*}} : memref<?x8x128xf16>, memref<?x8x16x?x8xf16>, memref<?x8x128x?xf16>, memref<?x?xi32>, memref<?xi32>) outs(%{{.*}} : memref<?x8x128xf16>)
// CHECK-LABEL: func.func @dynamic_block_size_one_cache
// CHECK: paged_attn.decode_v2 ins(%{{.*}} : memref<?x8x128xf16>, memref<?x8x16x64x8xf16>, memref<?x8x128x?xf16>, memref<?x?xi32>, memref<?xi32>)
func.func @dynamic_block_size(%q: memref<?x8x128xf16>, %kc: memref<?x8x16x?x8xf16>,
    %vc: memref<?x8x128x?xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x8x128xf16>, %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>,
    %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x128xf16>, memref<?x8x16x?x8xf16>, memref<?x8x128x?xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x128xf32>)
      {scale = 0.0625 : f32}
  return
}
func.func @dynamic_block_size_one_cache(%q: memref<?x8x128xf16>, %kc: memref<?x8x16x64x8xf16>,
    %vc: memref<?x8x128x?xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x8x128xf16>, %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>,
    %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x8x128xf16>, memref<?x8x16x64x8xf16>, memref<?x8x128x?xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x128xf32>)
      {scale = 0.0625 : f32}
  return
}

// The optional operands the lowering rejects until implemented still parse,
// print and verify: ALiBi slopes and an fp8 cache with its scales.

// CHECK-LABEL: func.func @alibi_and_fp8
// CHECK: paged_attn.decode_v2 ins({{.*}} : memref<?x32x128xf16>, memref<?x4x8x16x16xf8E4M3FN>, memref<?x4x128x16xf8E4M3FN>, memref<?x?xi32>, memref<?xi32>) alibi_slopes(%{{.*}} : memref<32xf32>) kv_scales(%{{.*}}, %{{.*}}) outs
func.func @alibi_and_fp8(%q: memref<?x32x128xf16>, %kc: memref<?x4x8x16x16xf8E4M3FN>,
    %vc: memref<?x4x128x16xf8E4M3FN>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %slopes: memref<32xf32>, %ks: f32, %vs: f32, %out: memref<?x32x128xf16>,
    %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x128xf16>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x4x8x16x16xf8E4M3FN>, memref<?x4x128x16xf8E4M3FN>,
        memref<?x?xi32>, memref<?xi32>)
      alibi_slopes(%slopes : memref<32xf32>) kv_scales(%ks, %vs)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf16>)
      {scale = 0.0883883461 : f32}
  return
}

// Sliding window and logits soft cap are attributes (model constants).
// CHECK-LABEL: func.func @window_and_soft_cap
// CHECK: paged_attn.decode_v2
// CHECK-SAME: alibi_slopes(%{{.*}} : memref<32xf32>)
// CHECK-SAME: {logits_soft_cap = 5.000000e+01 : f32, scale = 6.250000e-02 : f32, sliding_window = 4096 : i64}
func.func @window_and_soft_cap(%q: memref<?x32x256xbf16>, %kc: memref<?x16x32x16x8xbf16>,
    %vc: memref<?x16x256x16xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %slopes: memref<32xf32>, %out: memref<?x32x256xbf16>, %es: memref<?x32x?xf32>,
    %ml: memref<?x32x?xf32>, %tmp: memref<?x32x?x256xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x256xbf16>,
      memref<?x16x32x16x8xbf16>, memref<?x16x256x16xbf16>, memref<?x?xi32>, memref<?xi32>)
      alibi_slopes(%slopes : memref<32xf32>)
      outs(%out : memref<?x32x256xbf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x256xf32>)
      {scale = 0.0625 : f32, sliding_window = 4096 : i64, logits_soft_cap = 50.0 : f32}
  return
}

// Attention sinks: a per-head f32 operand, with every other feature.
// CHECK-LABEL: func.func @sinks
// CHECK: paged_attn.decode_v2
// CHECK-SAME: alibi_slopes(%{{.*}} : tensor<32xf32>) sinks(%{{.*}} : tensor<32xf32>) max_seq_len
// CHECK-SAME: {logits_soft_cap = 3.000000e+01 : f32, scale = 0.0883883461 : f32, sliding_window = 128 : i64} -> tensor<?x32x128xf16>
func.func @sinks(%q: tensor<?x32x128xf16>, %kc: tensor<?x8x16x16x8xf16>,
    %vc: tensor<?x8x128x16xf16>, %bt: tensor<?x?xi32>, %sl: tensor<?xi32>,
    %slopes: tensor<32xf32>, %sinks: tensor<32xf32>, %len: index,
    %out: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : tensor<?x32x128xf16>, tensor<?x8x16x16x8xf16>, tensor<?x8x128x16xf16>,
        tensor<?x?xi32>, tensor<?xi32>)
      alibi_slopes(%slopes : tensor<32xf32>) sinks(%sinks : tensor<32xf32>)
      max_seq_len(%len)
      outs(%out : tensor<?x32x128xf16>)
      {scale = 0.0883883461 : f32, sliding_window = 128 : i64, logits_soft_cap = 30.0 : f32}
      -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// Several query tokens per sequence (speculative decoding): query_start_loc
// and max_query_len split the query rows; every other feature composes.
// CHECK-LABEL: func.func @multi_token
// CHECK: paged_attn.decode_v2
// CHECK-SAME: sinks(%{{.*}} : tensor<32xf32>) query_start_loc(%{{.*}}, %{{.*}} : tensor<?xi32>) max_seq_len
func.func @multi_token(%q: tensor<?x32x128xf16>, %kc: tensor<?x8x16x16x8xf16>,
    %vc: tensor<?x8x128x16xf16>, %bt: tensor<?x?xi32>, %sl: tensor<?xi32>,
    %sinks: tensor<32xf32>, %qsl: tensor<?xi32>, %qlen: index, %len: index,
    %out: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : tensor<?x32x128xf16>, tensor<?x8x16x16x8xf16>, tensor<?x8x128x16xf16>,
        tensor<?x?xi32>, tensor<?xi32>)
      sinks(%sinks : tensor<32xf32>)
      query_start_loc(%qsl, %qlen : tensor<?xi32>)
      max_seq_len(%len)
      outs(%out : tensor<?x32x128xf16>)
      {scale = 0.0883883461 : f32, sliding_window = 128 : i64}
      -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// With several query tokens the query's rows (7 tokens) need not match the
// sequences (3); query_start_loc has num_seqs + 1 entries.
// CHECK-LABEL: func.func @multi_token_static
// CHECK: query_start_loc(%{{.*}}, %{{.*}} : memref<4xi32>)
func.func @multi_token_static(%q: memref<7x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<3x?xi32>, %sl: memref<3xi32>,
    %qsl: memref<4xi32>, %out: memref<7x32x128xf16>, %es: memref<7x32x?xf32>,
    %ml: memref<7x32x?xf32>, %tmp: memref<7x32x?x128xf32>) {
  %c4 = arith.constant 4 : index
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<7x32x128xf16>,
      memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<3x?xi32>, memref<3xi32>)
      query_start_loc(%qsl, %c4 : memref<4xi32>)
      outs(%out : memref<7x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<7x32x?xf32>, memref<7x32x?xf32>, memref<7x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}
