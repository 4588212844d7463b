// RUN: pa-opt %s -split-input-file -verify-diagnostics -convert-paged-attn-to-gpu="chip=sm_90 print-plans=true"

// print-plans reports each op's plan and lowers nothing: GQA 4 on sm_90 is
// the tensor-core kernel with its 8-head tile.
func.func @gqa(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  // expected-remark @+1 {{plan pa_f16_d128_h8_mma kind mma warps 4}}
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}
