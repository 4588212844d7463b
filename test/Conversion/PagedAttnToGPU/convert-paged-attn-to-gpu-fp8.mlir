// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_70" | FileCheck %s --check-prefixes=CHECK,SW
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 kernel=simt heads-per-program=4" | FileCheck %s --check-prefixes=CHECK,HW
// RUN: sed s/f8E4M3FN/f8E5M2/g %s | pa-opt -convert-paged-attn-to-gpu="chip=sm_70" | FileCheck %s --check-prefix=E5M2
// RUN: pa-opt %s -convert-paged-attn-to-gpu="chip=sm_90 l2-prefetch-bytes=0" | FileCheck %s --check-prefixes=MMA,BF16

// fp8 KV caches (x = 16) run on the SIMT kernel on every chip. The op's
// scales reach the kernel as scalars with the device-pointer path off; k_scale
// joins the query's scale, v_scale the partition's output. sm_70 widens
// e4m3 by a byte permute and masks into f16 bits (value / 2^8: the factor
// 256 joins both scales; 0x3f803f80 = 1065369472 keeps the low seven bits
// shifted one place right, 0x80008000 = -2147450880 the signs); sm_89+
// uses cvt.rn.f16x2.e4m3x2 (no factor). A lane reads 8-byte halves of a key
// chunk (16 lanes per d128 token) and 8-token value loads.

// CHECK-LABEL: func.func @e4m3
// CHECK-SAME: %[[KS:[^:]*]]: f32, %[[VS:[^:]*]]: f32
// CHECK: gpu.launch_func @pa_f16_kvf8E4M3FN_d128_h4::@pa_f16_kvf8E4M3FN_d128_h4_onepass
// CHECK-SAME: %{{[^ ]*}} : i32, %[[KS]] : f32, %[[VS]] : f32, %[[P:[^ ]*]] : memref<1099511627776xf32>, %[[P]] : memref<1099511627776xf32>, %[[OFF:[^ ]*]] : i32, %[[P]] : memref<1099511627776xf32>, %[[OFF2:[^ ]*]] : i32, %{{[^ ]*}} : memref<1099511627776xi32>, %c0_i32{{[_0-9]*}} : i32, %{{[^ ]*}} : i32, %{{[^ ]*}} : memref<1099511627776xi32>)
// CHECK: gpu.launch_func @pa_f16_kvf8E4M3FN_d128_h4::@pa_f16_kvf8E4M3FN_d128_h4_partition
// CHECK-SAME: %[[KS]] : f32, %[[VS]] : f32,
// CHECK: gpu.launch_func @pa_f16_kvf8E4M3FN_d128_h4::@pa_f16_kvf8E4M3FN_d128_h4_reduce

// CHECK: gpu.module @pa_f16_kvf8E4M3FN_d128_h4 attributes {paged_attn.variant = {cache_dtype = f8E4M3FN, dtype = f16, ext_logits = false, head_size = 128 : i64, heads_per_program = 4 : i64, query_packs = "query_slots", reduce_grid_x = "ceil(num_heads/ceil(4/ceil(num_partitions/8)))*query_slots", reduce_shared_bytes = 2080 : i64, reduce_threads = 128 : i64, shared_bytes = 9472 : i64, token_step = 16 : i64, warps = 4 : i64}}
// CHECK: gpu.func @pa_f16_kvf8E4M3FN_d128_h4_partition(%{{.*}}, %[[SCALE:arg9]]: f32, {{.*}}, %[[WIN:arg17]]: i32, %[[K:arg18]]: f32, %[[V:arg19]]: f32, %[[KP:arg20]]: memref<1099511627776xf32>, %[[VP:arg21]]: memref<1099511627776xf32>, %[[ON:arg22]]: i32, %{{[^:]*}}: memref<1099511627776xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32)
// Bit 0: k_scale from the device; bit 1: v_scale.
// CHECK: %[[B0:.*]] = arith.andi %[[ON]], %c1_i32
// CHECK: %[[D0:.*]] = arith.cmpi ne, %[[B0]]
// CHECK: %[[KSEL:.*]] = scf.if %[[D0]] -> (f32) {
// CHECK:   memref.load %[[KP]][%{{.*}}]
// CHECK: } else {
// CHECK:   scf.yield %[[K]] : f32
// SW: %[[F:.*]] = arith.constant 2.560000e+02 : f32
// SW: %[[KF:.*]] = arith.mulf %[[KSEL]], %[[F]] : f32
// SW: arith.mulf %[[SCALE]], %[[KF]] : f32
// HW: %[[KF:.*]] = arith.mulf %[[KSEL]], %cst : f32
// HW: arith.mulf %[[SCALE]], %[[KF]] : f32
// CHECK: %[[B1:.*]] = arith.andi %[[ON]], %c2_i32
// CHECK: scf.if
// CHECK:   memref.load %[[VP]][%{{.*}}]
// CHECK:   scf.yield %[[V]] : f32
// The token loop: 8-byte key pieces and 8-token value rows.
// CHECK: scf.for
// CHECK: vector.load %arg1[%{{.*}}] {alignment = 8 : i64} : memref<1099511627776xf8E4M3FN>, vector<8xf8E4M3FN>
// CHECK: vector.load %arg2[%{{.*}}] {alignment = 8 : i64} : memref<1099511627776xf8E4M3FN>, vector<8xf8E4M3FN>
// SW: %[[BYTES:.*]] = arith.bitcast %{{.*}} : vector<8xf8E4M3FN> to vector<8xi8>
// SW: %[[P:.*]] = vector.shuffle %[[BYTES]], %{{.*}} [8, 0, 9, 1, 10, 2, 11, 3, 12, 4, 13, 5, 14, 6, 15, 7] : vector<8xi8>, vector<8xi8>
// SW: %[[W:.*]] = vector.bitcast %[[P]] : vector<16xi8> to vector<4xi32>
// SW-DAG: %[[MAGMASK:.*]] = arith.constant dense<1065369472> : vector<4xi32>
// SW-DAG: %[[ONE:.*]] = arith.constant dense<1> : vector<4xi32>
// SW: %[[SH:.*]] = arith.shrui %[[W]], %[[ONE]] : vector<4xi32>
// SW: %[[MAG:.*]] = arith.andi %[[SH]], %[[MAGMASK]] : vector<4xi32>
// SW: %[[SIGNMASK:.*]] = arith.constant dense<-2147450880> : vector<4xi32>
// SW: %[[SIGN:.*]] = arith.andi %[[W]], %[[SIGNMASK]] : vector<4xi32>
// SW: %[[BITS:.*]] = arith.ori %[[MAG]], %[[SIGN]] : vector<4xi32>
// SW: %[[H:.*]] = vector.bitcast %[[BITS]] : vector<4xi32> to vector<8xf16>
// SW: arith.extf %[[H]] : vector<8xf16> to vector<8xf32>
// HW: %[[BYTES:.*]] = arith.bitcast %{{.*}} : vector<8xf8E4M3FN> to vector<8xi8>
// HW: %[[PAIR:.*]] = vector.shuffle %[[BYTES]], %[[BYTES]] [0, 1] : vector<8xi8>, vector<8xi8>
// HW: nvvm.convert.f8x2.to.f16x2 %[[PAIR]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// HW-NOT: arith.shli {{.*}} : vector<
// v_scale multiplies the partition's output.
// CHECK: arith.divf
// CHECK-NEXT: arith.mulf %{{.*}}, %{{.*}} : f32

// sm_89+ with an f16 query: the tensor-core kernel. 16-byte key chunks (16
// dims) widen to 8 f16 pairs, the A operands of 4 k16 blocks; 4-token value
// rows are 4 bytes.
// MMA: gpu.func @pa_f16_kvf8E4M3FN_d128_h8_mma_partition
// MMA: scf.for
// MMA: %[[K:.*]] = vector.load %arg1[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf8E4M3FN>, vector<16xf8E4M3FN>
// MMA-COUNT-8: nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// MMA: vector.load %arg2[%{{.*}}] {alignment = 4 : i64} : memref<1099511627776xf8E4M3FN>, vector<4xf8E4M3FN>
// MMA: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32)

// e5m2 is the top byte of an f16: a zero byte under each byte (one byte
// permute per f16 pair in the PTX), no shift, no factor.
// E5M2: gpu.func @pa_f16_kvf8E5M2_d128_h4_partition
// E5M2-NOT: 2.560000e+02
// E5M2: %[[B:.*]] = arith.bitcast %{{.*}} : vector<8xf8E5M2> to vector<8xi8>
// E5M2-NEXT: %[[Z:.*]] = arith.constant dense<0> : vector<8xi8>
// E5M2-NEXT: %[[P:.*]] = vector.shuffle %[[B]], %[[Z]] [8, 0, 9, 1, 10, 2, 11, 3, 12, 4, 13, 5, 14, 6, 15, 7] : vector<8xi8>, vector<8xi8>
// E5M2-NEXT: %[[H:.*]] = vector.bitcast %[[P]] : vector<16xi8> to vector<8xf16>
// E5M2-NEXT: arith.extf %[[H]] : vector<8xf16> to vector<8xf32>
// E5M2-NOT: arith.shli {{.*}} : vector<8xi16>
func.func @e4m3(%q: memref<?x8x128xf16>, %kc: memref<?x2x8x16x16xf8E4M3FN>, %vc: memref<?x2x128x16xf8E4M3FN>,
    %bt: memref<?x?xi32>, %sl: memref<?xi32>, %ks: f32, %vs: f32, %out: memref<?x8x128xf16>,
    %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>, %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x8x128xf16>, memref<?x2x8x16x16xf8E4M3FN>, memref<?x2x128x16xf8E4M3FN>, memref<?x?xi32>, memref<?xi32>)
      kv_scales(%ks, %vs) outs(%out : memref<?x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x128xf32>) {scale = 0.125 : f32}
  return
}

// sm_89+ with a bf16 query: the tensor-core kernel too. The cache still
// widens to f16 (no cvt reaches bf16), so the tile's query is staged as f16:
// its largest magnitude (bf16 bits, warp max by xor shuffles, one word per
// warp) gives k = field - 141, the staged chunks are scaled by 2^-k and
// rounded to f16 in place, and 2^k joins the logits' scale.
// BF16: gpu.func @pa_bf16_kvf8E4M3FN_d128_h8_mma_partition
// BF16: vector.load %arg0[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// BF16: gpu.barrier
// BF16-COUNT-8: arith.maxui %{{.*}}, %{{.*}} : i32
// BF16: gpu.shuffle  xor %{{.*}}, %c1_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : i32
// BF16: gpu.shuffle  xor %{{.*}}, %c16_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : i32
// BF16: gpu.barrier
// BF16: %[[SHIFT:.*]] = arith.shrui %{{.*}}, %c7_i32{{[_0-9]*}} : i32
// BF16-NEXT: arith.subi %[[SHIFT]], %c141_i32{{[_0-9]*}} : i32
// BF16-COUNT-8: arith.truncf %{{.*}} : f32 to f16
// BF16: gpu.barrier
// BF16: scf.for
// BF16: nvvm.convert.f8x2.to.f16x2
// BF16: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32)
// The output in the query's type.
// BF16: gpu.func @pa_bf16_kvf8E4M3FN_d128_h8_mma_onepass
func.func @bf16_e4m3(%q: memref<?x8x128xbf16>, %kc: memref<?x2x8x16x16xf8E4M3FN>, %vc: memref<?x2x128x16xf8E4M3FN>,
    %bt: memref<?x?xi32>, %sl: memref<?xi32>, %ks: f32, %vs: f32, %out: memref<?x8x128xbf16>,
    %es: memref<?x8x?xf32>, %ml: memref<?x8x?xf32>, %tmp: memref<?x8x?x128xf32>) {
  paged_attn.decode_v2 ins(%q, %kc, %vc, %bt, %sl : memref<?x8x128xbf16>, memref<?x2x8x16x16xf8E4M3FN>, memref<?x2x128x16xf8E4M3FN>, memref<?x?xi32>, memref<?xi32>)
      kv_scales(%ks, %vs) outs(%out : memref<?x8x128xbf16>)
      workspace(%es, %ml, %tmp : memref<?x8x?xf32>, memref<?x8x?xf32>, memref<?x8x?x128xf32>) {scale = 0.125 : f32}
  return
}
