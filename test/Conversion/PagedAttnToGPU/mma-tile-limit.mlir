// RUN: not pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 heads-per-program=16" 2>&1 | FileCheck %s
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90" | FileCheck %s --check-prefix=RULE

// Two n8 blocks of heads at head size 256 would need 128 accumulators per
// lane: refused, and the rule picks tile 8 for this group of 16.
// CHECK: error: 'paged_attn.decode_v2' op heads-per-program 16 of the tensor-core kernel needs head_size <= 128 (got 256): its accumulators would spill
// RULE: gpu.launch_func @pa_f16_d256_h8_mma::@pa_f16_d256_h8_mma_partition blocks in (%{{.*}}, %c2{{(_[0-9]+)?}}, %{{.*}})
func.func @mqa16(%q: memref<?x16x256xf16>, %kc: memref<?x1x32x16x8xf16>,
    %vc: memref<?x1x256x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x16x256xf16>, %es: memref<?x16x?xf32>, %ml: memref<?x16x?xf32>,
    %tmp: memref<?x16x?x256xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x16x256xf16>, memref<?x1x32x16x8xf16>, memref<?x1x256x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x16x256xf16>)
      workspace(%es, %ml, %tmp : memref<?x16x?xf32>, memref<?x16x?xf32>, memref<?x16x?x256xf32>)
      {scale = 0.0625 : f32}
  return
}
