// A variant built with a cluster size exports its cluster kernel beside the
// others: the size, the kernel (the one-pass kernel's parameters) and its
// grid, whose x is the size times the one-pass kernel's (docs/bundle-format.md).
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90 warps=8 cluster-size=4 export-dir=%t" -o /dev/null
// RUN: FileCheck %s < %t/pa_f16_d128_h8_w8_mma_sm90.manifest
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90 warps=8 export-dir=%t/none" -o /dev/null
// RUN: FileCheck %s --check-prefix=NONE < %t/none/pa_f16_d128_h8_w8_mma_sm90.manifest

// CHECK: token_step 16
// CHECK-NEXT: cluster_size 4
// CHECK-NEXT: kernel partition pa_f16_d128_h8_w8_mma_partition threads 256 smem [[SMEM:[0-9]+]]
// CHECK-NEXT: kernel onepass pa_f16_d128_h8_w8_mma_onepass threads 256 smem [[SMEM]]
// CHECK-NEXT: kernel cluster pa_f16_d128_h8_w8_mma_cluster threads 256 smem [[SMEM]]
// CHECK-NEXT: kernel reduce
// CHECK: params onepass [[ONEPASS:.*]]
// CHECK-NEXT: params cluster [[ONEPASS]]{{$}}
// CHECK-NEXT: params reduce
// CHECK: grid onepass [[PACKS:[^ ]+]] num_kv_heads*ceil(group_size/heads_per_program) num_seqs
// CHECK-NEXT: grid cluster 4*[[PACKS]] num_kv_heads*ceil(group_size/heads_per_program) num_seqs
// CHECK-NEXT: grid reduce

// NONE-NOT: cluster

func.func @variant(%q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
    %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>,
      memref<?x8x16x16x8xf16>, memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 1.0 : f32}
  return
}
