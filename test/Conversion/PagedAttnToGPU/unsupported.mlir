// RUN: pa-opt %s -split-input-file -verify-diagnostics -convert-paged-attn-to-gpu

// What the lowering does not support yet is refused with a diagnostic
// naming it; nothing is lowered silently wrong.

func.func @tensor_form(%q: tensor<?x8x128xf16>, %kc: tensor<?x8x16x16x8xf16>, %vc: tensor<?x8x128x16xf16>,
    %bt: tensor<?x?xi32>, %sl: tensor<?xi32>, %out: tensor<?x8x128xf16>) -> tensor<?x8x128xf16> {
  // expected-error @+1 {{expects the memref form: bufferize first}}
  %r = paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : tensor<?x8x128xf16>, tensor<?x8x16x16x8xf16>, tensor<?x8x128x16xf16>, tensor<?x?xi32>, tensor<?xi32>)
      outs(%out : tensor<?x8x128xf16>) {scale = 1.0 : f32} -> tensor<?x8x128xf16>
  return %r : tensor<?x8x128xf16>
}

// -----

func.func @no_workspace(%q: memref<?x8x128xf16>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>,
    %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x128xf16>) {
  // expected-error @+1 {{needs a workspace (exp_sums, max_logits, tmp_output)}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x8x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x128xf16>) {scale = 1.0 : f32}
  return
}

// -----

func.func @strided(%q: memref<?x8x128xf16, strided<[2048, 128, 1], offset: ?>>, %kc: memref<?x8x16x16x8xf16>, %vc: memref<?x8x128x16xf16>,
    %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x128xf16>,
    %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>, %tmp: memref<?x8x?x128xf32>) {
  // expected-error @+1 {{operands must be contiguous (identity layout)}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x8x128xf16, strided<[2048, 128, 1], offset: ?>>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x128xf32>) {scale = 1.0 : f32}
  return
}
