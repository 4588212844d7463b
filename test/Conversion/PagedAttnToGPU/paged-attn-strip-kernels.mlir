// RUN: pa-opt %s -convert-paged-attn-to-gpu="host=runtime" -paged-attn-strip-kernels | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu -paged-attn-strip-kernels -verify-diagnostics

// After host=runtime nothing refers to the kernels: they go, with the
// container attribute and the variant keys; the runtime call stays.
// CHECK-LABEL: module {
// CHECK-NOT: gpu.
// CHECK-NOT: paged_attn.variants
// CHECK: func.func private @pa_host_decode_v2
// CHECK: func.func @step
// CHECK: call @pa_host_decode_v2
// CHECK-NOT: gpu.

// With host=launch the launches would lose their kernels: an error.
func.func @step(%q: memref<2x8x128xf16>, %kc: memref<64x8x16x16x8xf16>,
                %vc: memref<64x8x128x16xf16>, %bt: memref<2x32xi32>,
                %sl: memref<2xi32>, %out: memref<2x8x128xf16>,
                %es: memref<2x8x1xf32>, %ml: memref<2x8x1xf32>,
                %tmp: memref<2x8x1x128xf32>) {
  // expected-error @+1 {{launches a kernel paged-attn-strip-kernels would erase: lower decode_v2 with host=runtime}}
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<2x8x128xf16>, memref<64x8x16x16x8xf16>,
          memref<64x8x128x16xf16>, memref<2x32xi32>, memref<2xi32>)
      outs(%out : memref<2x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<2x8x1xf32>, memref<2x8x1xf32>,
                memref<2x8x1x128xf32>)
      {scale = 0.088 : f32}
  return
}
