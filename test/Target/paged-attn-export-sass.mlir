// Machine code ahead of time: with ptxas=PATH the export assembles each
// bundle's PTX for its chip into a cubin beside it and names it in a
// `sass CHIP FILE` record (docs/bundle-format.md). sm_90 with the toolkit's
// ptxas, sm_70 with CUDA 11.8's.
// REQUIRES: ptxas-sm90, ptxas-sm70
// RUN: rm -rf %t && mkdir -p %t/90 %t/70
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90 export-dir=%t/90 ptxas=%ptxas-sm90" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM90 < %t/90/pa_f16_d128_h8_mma_sm90.manifest
// RUN: head -c 4 %t/90/pa_f16_d128_h8_mma_sm90.cubin | od -c | FileCheck %s --check-prefix=ELF
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_70 export-dir=%t/70 ptxas=%ptxas-sm70" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM70 < %t/70/pa_f16_d128_h8_wmma_sm70.manifest
// RUN: head -c 4 %t/70/pa_f16_d128_h8_wmma_sm70.cubin | od -c | FileCheck %s --check-prefix=ELF
// Without ptxas: PTX only, no record.
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90 export-dir=%t/ptx" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/ptx/pa_f16_d128_h8_mma_sm90.manifest
// RUN: not ls %t/ptx/pa_f16_d128_h8_mma_sm90.cubin
// A ptxas that fails (here: one that does not know the chip) fails the export.
// RUN: not pa-opt %s -paged-attn-to-ptx="chip=sm_70 export-dir=%t/bad ptxas=%ptxas-sm90" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pa-opt %s -paged-attn-to-ptx="chip=sm_90 ptxas=%ptxas-sm90" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODIR

// SM90: ptx pa_f16_d128_h8_mma_sm90.ptx
// SM90-NEXT: sass sm_90 pa_f16_d128_h8_mma_sm90.cubin
// SM70: ptx pa_f16_d128_h8_wmma_sm70.ptx
// SM70-NEXT: sass sm_70 pa_f16_d128_h8_wmma_sm70.cubin
// ELF: 177 E L F
// PTX: ptx pa_f16_d128_h8_mma_sm90.ptx
// PTX-NOT: sass
// BAD: error: {{.*}}ptxas -arch=sm_70 {{.*}}pa_f16_d128_h8_wmma_sm70.ptx failed: {{.*}}sm_70
// NODIR: error: paged-attn-to-ptx: ptxas assembles the exported bundles; it needs export-dir

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
