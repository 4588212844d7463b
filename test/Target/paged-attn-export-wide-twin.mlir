// A declared wide twin: the kernel library builds each sm_70 wmma variant's
// twin as the SIMT kernel with the 4-head tile and 8 warps, and the manifest
// names the bundle it is the twin of (docs/bundle-format.md).
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_70 heads-per-program=4 warps=8 export-dir=%t wide-twin-of=pa_f16_d128_h8_wmma" -o /dev/null
// RUN: FileCheck %s < %t/pa_f16_d128_h4_w8_sm70.manifest
// RUN: not pa-opt %s -paged-attn-to-ptx="chip=sm_70 wide-twin-of=pa_f16_d128_h8_wmma" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR

// CHECK: name pa_f16_d128_h4_w8_sm70
// CHECK: heads_per_program 4
// CHECK-NEXT: warps 8
// CHECK-NEXT: token_step 16
// CHECK-NEXT: wide_twin_of pa_f16_d128_h8_wmma_sm70
// CHECK-NEXT: kernel partition pa_f16_d128_h4_w8_partition threads 256 smem
// CHECK-NOT: wide_twin_of

// Nothing would carry the declaration without export-dir: refused.
// ERR: error: paged-attn-to-ptx: wide-twin-of declares the exported bundles twins; it needs export-dir

func.func @variant(%q: memref<?x4x128xf16>, %kc: memref<?x1x16x16x8xf16>,
    %vc: memref<?x1x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x4x128xf16>, %es: memref<?x4x?xf32>, %ml: memref<?x4x?xf32>,
    %tmp: memref<?x4x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x4x128xf16>,
      memref<?x1x16x16x8xf16>, memref<?x1x128x16xf16>, memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x4x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x4x?xf32>, memref<?x4x?xf32>, memref<?x4x?x128xf32>)
      {scale = 1.0 : f32}
  return
}
