// The whole pipeline on a tensor-form decode step: PTX for sm_70 (the
// default; tensor cores through wmma, or CUDA cores) and for sm_80 and
// sm_90 (tensor cores through mma.sync), with all three kernels, 16-byte
// loads and warp shuffles.
// RUN: pa-opt %s -paged-attn-to-ptx | FileCheck %s --check-prefixes=CHECK,WMMA,SM70
// RUN: pa-opt %s -paged-attn-to-ptx="kernel=simt" | FileCheck %s --check-prefixes=CHECK,SIMT,SM70
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90" | FileCheck %s --check-prefixes=CHECK,MMA,SM90
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_80 features=+ptx75 opt-level=1" | FileCheck %s --check-prefixes=CHECK,MMA,SM80
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90 kernel=simt" | FileCheck %s --check-prefixes=CHECK,SIMT,SM90S

// The host function now launches the kernels on bufferized operands.
// CHECK-LABEL: func.func @decode_step
// CHECK-SAME: memref<?x32x128xf16>
// CHECK: memref.alloc
// SIMT: gpu.launch_func @[[V:pa_f16_d128_h4]]::@pa_f16_d128_h4_onepass
// WMMA: gpu.launch_func @[[V:pa_f16_d128_h8_wmma]]::@pa_f16_d128_h8_wmma_onepass
// MMA: gpu.launch_func @[[V:pa_f16_d128_h8_mma]]::@pa_f16_d128_h8_mma_onepass
// CHECK: gpu.launch_func @[[V]]::@[[V]]_partition
// CHECK: gpu.launch_func @[[V]]::@[[V]]_reduce

// The binary: PTX of the lowest ISA version the chip needs, unless given.
// SM70: gpu.binary @[[V]] [#gpu.object<#nvvm.target<O = 3, chip = "sm_70", features = "+ptx61">
// SM70-SAME: .version 6.1\0A.target sm_70
// SM90: gpu.binary @[[V]] [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx78">
// SM90-SAME: .version 7.8\0A.target sm_90
// SM90S: gpu.binary @[[V]] [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx78">
// SM80: gpu.binary @[[V]] [#gpu.object<#nvvm.target<O = 1, chip = "sm_80", features = "+ptx75">
// SM80-SAME: .version 7.5\0A.target sm_80
// CHECK-NOT: __nv_
// CHECK-SAME: .visible .entry [[V]]_partition(
// CHECK-SAME: ld.global.v4.{{[bu]}}32
// SIMT-SAME: shfl.sync.bfly.b32
// Tensor cores: the 8-byte value loads (from sm_90 with the L2 fetching
// 256 bytes around a miss), the score and P.V products, the step max
// across lanes and the warp-private transpose of the weights.
// SM90-SAME: ld.global.L2::256B.v2.b32
// SM80-SAME: ld.global.v2.b32
// MMA-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// MMA-SAME: shfl.sync.bfly.b32
// MMA-SAME: bar.warp.sync
// MMA-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// wmma: keys and values staged in shared memory, the score product, the
// step max across lanes, then the rescale and P.V.
// WMMA-SAME: ld.global.v4.b32
// WMMA-SAME: st.shared.v4.b32
// WMMA-SAME: wmma.load.b.sync.col.m16n16k16.shared.f16
// WMMA-SAME: wmma.mma.sync.row.col.m16n16k16.f32.f32
// WMMA-SAME: wmma.store.d.sync.row.m16n16k16.shared.f32
// WMMA-SAME: shfl.sync.bfly.b32
// WMMA-SAME: wmma.load.c.sync.row.m8n32k16.shared.f32
// WMMA-SAME: wmma.mma.sync.row.col.m8n32k16.f32.f32
// CHECK-SAME: ex2.approx
// CHECK-SAME: bar.sync
// CHECK-SAME: .visible .entry [[V]]_onepass(
// CHECK-SAME: .visible .entry [[V]]_reduce(
// CHECK-SAME: shfl.sync.bfly.b32
// CHECK-SAME: ld.global.v4.b32
func.func @decode_step(%query: tensor<?x32x128xf16>, %key_cache: tensor<?x8x16x16x8xf16>,
    %value_cache: tensor<?x8x128x16xf16>, %block_tables: tensor<?x?xi32>,
    %seq_lens: tensor<?xi32>, %max_seq_len: index,
    %output: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %out = paged_attn.decode_v2
      ins(%query, %key_cache, %value_cache, %block_tables, %seq_lens
          : tensor<?x32x128xf16>, tensor<?x8x16x16x8xf16>, tensor<?x8x128x16xf16>,
            tensor<?x?xi32>, tensor<?xi32>)
      max_seq_len(%max_seq_len) outs(%output : tensor<?x32x128xf16>)
      {scale = 0.0883883461 : f32} -> tensor<?x32x128xf16>
  return %out : tensor<?x32x128xf16>
}
