// The whole pipeline on a tensor-form decode step: PTX for sm_70 (the
// default) and for sm_90, with both kernels, 16-byte loads and warp shuffles.
// RUN: pa-opt %s -paged-attn-to-ptx | FileCheck %s --check-prefixes=CHECK,SM70
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_90" | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: pa-opt %s -paged-attn-to-ptx="chip=sm_80 features=+ptx75 opt-level=1" | FileCheck %s --check-prefixes=CHECK,SM80

// The host function now launches the kernels on bufferized operands.
// CHECK-LABEL: func.func @decode_step
// CHECK-SAME: memref<?x32x128xf16>
// CHECK: memref.alloc
// CHECK: gpu.launch_func @pa_f16_d128_b16_h4::@pa_f16_d128_b16_h4_onepass
// CHECK: gpu.launch_func @pa_f16_d128_b16_h4::@pa_f16_d128_b16_h4_partition
// CHECK: gpu.launch_func @pa_f16_d128_b16_h4::@pa_f16_d128_b16_h4_reduce

// The binary: PTX of the lowest ISA version the chip needs, unless given.
// SM70: gpu.binary @pa_f16_d128_b16_h4 [#gpu.object<#nvvm.target<O = 3, chip = "sm_70", features = "+ptx60">
// SM70-SAME: .version 6.0\0A.target sm_70
// SM90: gpu.binary @pa_f16_d128_b16_h4 [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx78">
// SM90-SAME: .version 7.8\0A.target sm_90
// SM80: gpu.binary @pa_f16_d128_b16_h4 [#gpu.object<#nvvm.target<O = 1, chip = "sm_80", features = "+ptx75">
// SM80-SAME: .version 7.5\0A.target sm_80
// CHECK-NOT: __nv_
// CHECK-SAME: .visible .entry pa_f16_d128_b16_h4_partition(
// CHECK-SAME: ld.global.v4.{{[bu]}}32
// CHECK-SAME: shfl.sync.bfly.b32
// CHECK-SAME: ex2.approx
// CHECK-SAME: bar.sync
// CHECK-SAME: .visible .entry pa_f16_d128_b16_h4_onepass(
// CHECK-SAME: .visible .entry pa_f16_d128_b16_h4_reduce(
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
