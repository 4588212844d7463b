// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90" | FileCheck %s --check-prefix=MMA
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="kernel=simt" | FileCheck %s --check-prefix=SIMT
// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_70" | FileCheck %s --check-prefix=WMMA

// The block size is a run-time parameter of the partition and one-pass
// kernels (`block_size`, i32, after max_blocks_per_seq): a variant's name
// and key do not hold it, the host passes the caches' static block size or
// memref.dim of the key cache, and the kernels address blocks with
// log2(block_size) (cttz, once) and block_size - 1: block t >> log2, slot
// t & (block_size - 1), a (block, KV head) slab head_size << log2 elements.

// bf16, head size 128, a dynamic block size.
// MMA-LABEL: func.func @dynamic
// MMA-SAME: %[[KC:[^:]*]]: memref<?x8x16x?x8xbf16>
// MMA: %[[C3:.*]] = arith.constant 3 : index
// MMA-NEXT: %[[DIM:.*]] = memref.dim %[[KC]], %[[C3]] : memref<?x8x16x?x8xbf16>
// MMA-NEXT: %[[BS:.*]] = arith.index_cast %[[DIM]] : index to i32
// MMA: gpu.launch_func @pa_bf16_d128_h8_mma::@pa_bf16_d128_h8_mma_onepass {{.*}} args({{.*}}, %{{.*}} : i32, %[[BS]] : i32, {{.*}})
// MMA: gpu.launch_func @pa_bf16_d128_h8_mma::@pa_bf16_d128_h8_mma_partition {{.*}} args({{.*}}, %{{.*}} : i32, %[[BS]] : i32, {{.*}})
// MMA-NOT: block_size =
// MMA: gpu.module @pa_bf16_d128_h8_mma attributes {paged_attn.variant = {cache_dtype = bf16,
// MMA: gpu.func @pa_bf16_d128_h8_mma_partition({{.*}}, %{{[^:]*}}: f32, %{{[^:]*}}: i32, %[[ARG:[^:]*]]: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32)
// MMA: %[[LOG:.*]] = "llvm.intr.cttz"(%[[ARG]]) <{is_zero_poison = false}> : (i32) -> i32
// MMA-NEXT: %[[SHIFT:.*]] = arith.index_cast %[[LOG]] : i32 to index
// MMA-NEXT: %[[LEN:.*]] = arith.index_cast %[[ARG]] : i32 to index
// MMA-NEXT: %[[C1:.*]] = arith.constant 1 : index
// MMA-NEXT: %[[MASK:.*]] = arith.subi %[[LEN]], %[[C1]] : index
// MMA-NEXT: %[[D:.*]] = arith.constant 128 : index
// MMA-NEXT: %[[SLAB:.*]] = arith.shli %[[D]], %[[SHIFT]] : index
// MMA-NEXT: arith.muli %{{.*}}, %[[SLAB]] : index
// A step reads the block-table entries of its halves, tokens tok0 and
// tok0 + 8 (the same entry for blocks of 16 and more), with their slots.
// The whole steps' loop comes first, then the masked steps'.
// MMA: scf.for
// MMA: %[[TOK0:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// MMA: %[[TOK1:.*]] = arith.addi %[[TOK0]], %{{.*}} : index
// MMA-NEXT: %[[B1:.*]] = arith.shrui %[[TOK1]], %[[SHIFT]] : index
// MMA-NEXT: %[[B0:.*]] = arith.shrui %[[TOK0]], %[[SHIFT]] : index
// MMA-NEXT: %[[E0:.*]] = arith.addi %{{.*}}, %[[B0]] : index
// MMA-NEXT: memref.load %{{.*}}[%[[E0]]] : memref<1099511627776xi32>
// MMA: %[[E1:.*]] = arith.addi %{{.*}}, %[[B1]] : index
// MMA-NEXT: memref.load %{{.*}}[%[[E1]]] : memref<1099511627776xi32>
// MMA: arith.andi %[[TOK0]], %[[MASK]] : index
// MMA-NEXT: arith.andi %[[TOK1]], %[[MASK]] : index
// Key chunk c at (c << log2 + slot) * 8; no other block-table load.
// MMA-NOT: memref.load %{{.*}} : memref<1099511627776xi32>
// MMA: arith.shli %{{.*}}, %[[SHIFT]] : index
// The masked steps clamp the second half's block into the sequence's.
// MMA: scf.for
// MMA: %[[LAST:.*]] = arith.subi %{{.*}}, %{{.*}} : index
// MMA-NEXT: %[[LASTB:.*]] = arith.shrui %[[LAST]], %[[SHIFT]] : index
// MMA-NEXT: arith.minui %{{.*}}, %[[LASTB]] : index
func.func @dynamic(%q: memref<?x32x128xbf16>, %kc: memref<?x8x16x?x8xbf16>,
    %vc: memref<?x8x128x?xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %max: index,
    %out: memref<?x32x128xbf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xbf16>, memref<?x8x16x?x8xbf16>, memref<?x8x128x?xbf16>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x32x128xbf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}

// -----

// f16, head size 64, MHA, static blocks of 128 on CUDA cores: the host passes
// the constant, the kernel is the same as for any block size (a lane
// group's 8 tokens: block t >> log2, slot t & (block_size - 1)).
// SIMT-LABEL: func.func @static128
// SIMT: %[[BS:.*]] = arith.constant 128 : i32
// SIMT: gpu.launch_func @pa_f16_d64_h1::@pa_f16_d64_h1_onepass {{.*}} args({{.*}}, %{{.*}} : i32, %[[BS]] : i32, {{.*}})
// SIMT: gpu.func @pa_f16_d64_h1_partition(
// SIMT: %[[LOG:.*]] = "llvm.intr.cttz"
// SIMT-NEXT: %[[SHIFT:.*]] = arith.index_cast %[[LOG]] : i32 to index
// SIMT: scf.for
// SIMT: %[[LOGICAL:.*]] = arith.shrui %[[TOK:.*]], %[[SHIFT]] : index
// SIMT-NEXT: %[[SLOT:.*]] = arith.andi %[[TOK]], %{{.*}} : index
// SIMT-NEXT: arith.addi %{{.*}}, %[[LOGICAL]] : index
// SIMT-NEXT: memref.load
// SIMT-NOT: arith.divui %{{.*}}, %c128
// SIMT-NOT: arith.remui %{{.*}}, %c128
// SIMT: gpu.func @pa_f16_d64_h1_reduce(
func.func @static128(%q: memref<?x4x64xf16>, %kc: memref<?x4x8x128x8xf16>,
    %vc: memref<?x4x64x128xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %max: index,
    %out: memref<?x4x64xf16>, %es: memref<?x4x?xf32>, %ml: memref<?x4x?xf32>,
    %tmp: memref<?x4x?x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x4x64xf16>, memref<?x4x8x128x8xf16>, memref<?x4x64x128xf16>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x4x64xf16>)
      workspace(%es, %ml, %tmp : memref<?x4x?xf32>, memref<?x4x?xf32>, memref<?x4x?x64xf32>)
      {scale = 0.125 : f32}
  return
}

// -----

// wmma (f16 GQA on sm_7x), a dynamic block size: a 16-token step reads the
// block-table entries of its two eighths (tok0, tok0 + 8; the second
// clamped into the sequence's blocks where the step may pass its end); a
// token u of the step takes the entry of u / 8 and slot
// (tok0 + u) & (block_size - 1).
// WMMA-LABEL: func.func @wmma
// WMMA: gpu.func @pa_f16_d128_h8_wmma_partition(
// WMMA: %[[LOG:.*]] = "llvm.intr.cttz"
// WMMA-NEXT: %[[SHIFT:.*]] = arith.index_cast %[[LOG]] : i32 to index
// WMMA: %[[LAST:.*]] = arith.shrui %{{.*}}, %[[SHIFT]] : index
// WMMA: %[[B0:.*]] = arith.shrui %[[TOK0:.*]], %[[SHIFT]] : index
// WMMA-NEXT: arith.addi %{{.*}}, %[[B0]] : index
// WMMA-NEXT: memref.load %{{.*}} : memref<1099511627776xi32>
// WMMA: %[[TOK1:.*]] = arith.addi %{{.*}}, %c8{{[_0-9]*}} : index
// WMMA-NEXT: %[[B1:.*]] = arith.shrui %[[TOK1]], %[[SHIFT]] : index
// WMMA-NEXT: %[[B1C:.*]] = arith.minui %[[B1]], %[[LAST]] : index
// WMMA-NEXT: arith.addi %{{.*}}, %[[B1C]] : index
// WMMA-NEXT: memref.load %{{.*}} : memref<1099511627776xi32>
// WMMA-NOT: memref.load %{{.*}} : memref<1099511627776xi32>
// WMMA: %[[EIGHTH:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// WMMA: arith.cmpi eq, %[[EIGHTH]], %{{.*}} : index
// WMMA: %[[U:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// WMMA-NEXT: arith.andi %[[U]], %{{.*}} : index
// WMMA: vector.load %{{.*}} : memref<1099511627776xf16>, vector<8xf16>
func.func @wmma(%q: memref<?x32x128xf16>, %kc: memref<?x4x16x?x8xf16>,
    %vc: memref<?x4x128x?xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %max: index,
    %out: memref<?x32x128xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x128xf16>, memref<?x4x16x?x8xf16>, memref<?x4x128x?xf16>,
        memref<?x?xi32>, memref<?xi32>) max_seq_len(%max)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x128xf32>)
      {scale = 0.0883883461 : f32}
  return
}
