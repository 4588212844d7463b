// RUN: pa-opt %s -convert-paged-attn-to-gpu="heads-per-program=2 warps=8" | FileCheck %s
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="heads-per-program=3" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="kernel=mma" 2>&1 | FileCheck %s --check-prefix=MMA70
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 heads-per-program=4" 2>&1 | FileCheck %s --check-prefix=MMATILE
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="chip=sm90" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="kernel=tensor" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="kernel=wmma heads-per-program=4" 2>&1 | FileCheck %s --check-prefix=WMMATILE
// RUN: pa-opt %s -convert-paged-attn-to-gpu="heads-per-program=4 simt-piece-bytes=8" | FileCheck %s --check-prefix=PIECE8
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="simt-piece-bytes=4" 2>&1 | FileCheck %s --check-prefix=PIECE4
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90" | FileCheck %s --check-prefixes=HINT,HINT256
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_80 l2-prefetch-bytes=64" | FileCheck %s --check-prefixes=HINT,HINT64
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 l2-prefetch-bytes=0" | FileCheck %s --check-prefix=NOHINT
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_80" | FileCheck %s --check-prefix=NOHINT
// RUN: not pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 l2-prefetch-bytes=32" 2>&1 | FileCheck %s --check-prefix=HINTBAD
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_80 l2-prefetch-bytes=128" | FileCheck %s --check-prefix=HINTPTX

// The GQA tile and the warps per program are pass options: group 8 served by
// four programs of 2 heads per KV head, 256 threads each.
// (The printer names index constants after their value: %c16, %c256.)
// CHECK: gpu.launch_func @pa_f16_d64_h2_w8::@pa_f16_d64_h2_w8_partition blocks in (%{{.*}}, %c16, %{{.*}}) threads in (%c256, %{{.*}}, %{{.*}})
// CHECK: gpu.func @pa_f16_d64_h2_w8_partition({{.*}}) workgroup(%{{.*}} : memref<1696xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32}

// simt-piece-bytes=8: a lane loads a token's key 8 bytes at a time (d64:
// 16 lanes per token, 2 lane groups), the value rows still 16 bytes (8
// tokens per group), so a warp step is 16 tokens.
// PIECE8: token_step = 16
// PIECE8-LABEL: gpu.func @pa_f16_d64_h4_partition
// PIECE8-NOT: vector<8xf16>
// PIECE8: vector.load {{.*}} {alignment = 8 : i64} : memref<{{[0-9]+}}xf16>, vector<4xf16>
// PIECE8: vector.load {{.*}} {alignment = 16 : i64} : memref<{{[0-9]+}}xf16>, vector<8xf16>
// PIECE4: error: 'paged_attn.decode_v2' op simt-piece-bytes (4) must be 8 or 16

// l2-prefetch-bytes: the tensor-core kernel's key (16-byte) and value
// (8-byte) loads ask the L2 to fetch that many bytes around a missed
// sector; the rule is 256 from sm_90, none before; 0 turns it off.
// HINT-LABEL: gpu.func @pa_f16_d64_h8_mma_partition
// HINT: scf.for
// HINT: memref.extract_aligned_pointer_as_index %arg1
// HINT256: llvm.inline_asm "{ .reg .u64 pa_g; cvta.to.global.u64 pa_g, $4; ld.global.L2::256B.v4.b32 {$0, $1, $2, $3}, [pa_g]; }", "=r,=r,=r,=r,l"
// HINT64: llvm.inline_asm "{ .reg .u64 pa_g; cvta.to.global.u64 pa_g, $4; ld.global.L2::64B.v4.b32 {$0, $1, $2, $3}, [pa_g]; }", "=r,=r,=r,=r,l"
// HINT: vector.bitcast %{{.*}} : vector<4xi32> to vector<8xf16>
// HINT: memref.extract_aligned_pointer_as_index %arg2
// HINT256: llvm.inline_asm "{ .reg .u64 pa_g; cvta.to.global.u64 pa_g, $2; ld.global.L2::256B.v2.b32 {$0, $1}, [pa_g]; }", "=r,=r,l"
// HINT64: llvm.inline_asm "{ .reg .u64 pa_g; cvta.to.global.u64 pa_g, $2; ld.global.L2::64B.v2.b32 {$0, $1}, [pa_g]; }", "=r,=r,l"
// HINT: vector.bitcast %{{.*}} : vector<2xi32> to vector<4xf16>
// HINT: nvvm.mma.sync
// NOHINT-LABEL: gpu.func @pa_f16_d64_h8_mma_partition
// NOHINT-NOT: ld.global.L2::
// NOHINT: gpu.func @pa_f16_d64_h8_mma_reduce
// HINTBAD: error: 'paged_attn.decode_v2' op l2-prefetch-bytes (32) must be 0, 64, 128 or 256 (-1: the rule)
// sm_80's minimum PTX (7.0) is raised to 7.4 for the hint.
// HINTPTX: features = "+ptx74"
// HINTPTX-SAME: .version 7.4
// HINTPTX-SAME: ld.global.L2::128B.v4.b32

// BAD: error: 'paged_attn.decode_v2' op heads-per-program (3) must be a power of two up to 16
// MMA70: error: 'paged_attn.decode_v2' op kernel=mma needs sm_80 or newer (got sm_70) and f16 or bf16 caches of the query's type, or fp8 caches with 16-bit queries on sm_89+ (got 'f16')
// MMATILE: error: 'paged_attn.decode_v2' op heads-per-program (4) of the tensor-core kernel must be 8 or 16 (n8 blocks)
// CHIP: error: 'paged_attn.decode_v2' op unknown chip 'sm90'
// KIND: error: 'paged_attn.decode_v2' op kernel must be auto, simt, mma or wmma (got 'tensor')
// WMMATILE: error: 'paged_attn.decode_v2' op kernel=wmma needs sm_70 or newer, an f16 query and cache, head_size a multiple of 32 up to 128 and heads-per-program 8 (got sm_70, 'f16'/'f16', head_size 64, heads-per-program 4)
func.func @grouped(%q: memref<?x32x64xf16>, %kc: memref<?x4x8x16x8xf16>,
    %vc: memref<?x4x64x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %out: memref<?x32x64xf16>, %es: memref<?x32x?xf32>, %ml: memref<?x32x?xf32>,
    %tmp: memref<?x32x?x64xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl
      : memref<?x32x64xf16>, memref<?x4x8x16x8xf16>, memref<?x4x64x16xf16>,
        memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x32x64xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>, memref<?x32x?x64xf32>)
      {scale = 0.125 : f32}
  return
}
