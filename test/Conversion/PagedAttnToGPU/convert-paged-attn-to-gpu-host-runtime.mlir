// RUN: pa-opt %s -split-input-file -convert-paged-attn-to-gpu="chip=sm_90 host=runtime" -cse | FileCheck %s

// host=runtime: the kernels are still built (for export) but nothing
// launches them; each decode_v2 becomes one call of the runtime's flat
// entry, its operands in HostABI.def's order after the context and stream:
// dtype, tmp_dtype, num_seqs, num_heads, num_kv_heads, head_size,
// block_size, num_blocks, max_blocks_per_seq, max_num_partitions,
// partition_size, max_seq_len, scale, 9 pointers (query .. tmp_output),
// alibi_slopes, sliding_window, logits_soft_cap, kv_cache_dtype, k_scale,
// v_scale, k_scale_ptr, v_scale_ptr, sinks; then the status.

// CHECK-LABEL: module attributes {gpu.container_module
// CHECK: func.func private @pa_host_decode_v2(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, f32, i32, f32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32
// The context, stream and status arguments are appended, marked.
// CHECK-LABEL: func.func @bf16_features(
// CHECK-SAME: %[[Q:[^:]*]]: memref<?x16x64xbf16>, %[[K:[^:]*]]: memref<?x4x8x32x8xbf16>, %[[V:[^:]*]]: memref<?x4x64x32xbf16>, %[[BT:[^:]*]]: memref<?x?xi32>, %[[SL:[^:]*]]: memref<?xi32>, %[[AL:[^:]*]]: memref<16xf32>, %[[O:[^:]*]]: memref<?x16x64xbf16>, %[[ES:[^:]*]]: memref<?x16x?xf32>, %[[ML:[^:]*]]: memref<?x16x?xf32>, %[[TMP:[^:]*]]: memref<?x16x?x64xbf16>,
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "context"}, %[[STREAM:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "stream"}, %[[STATUS:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "status"})
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-NOT: gpu.launch_func
// Scalars: bf16 = 1 (dtype and tmp_dtype), sizes from the types or dims.
// CHECK-DAG: %[[BF16:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[NSEQ:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK-DAG: %[[H:.*]] = arith.constant 16 : i32
// CHECK-DAG: %[[KVH:.*]] = arith.constant 4 : i32
// CHECK-DAG: %[[D:.*]] = arith.constant 64 : i32
// CHECK-DAG: %[[B:.*]] = arith.constant 32 : i32
// CHECK-DAG: %[[PS:.*]] = arith.constant 256 : i32
// CHECK-DAG: %[[WIN:.*]] = arith.constant 1000 : i32
// CHECK-DAG: %[[CAP:.*]] = arith.constant 3.000000e+01 : f32
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// Pointers: the aligned pointer of each memref.
// CHECK-DAG: %[[QI:.*]] = memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK-DAG: %[[QI64:.*]] = arith.index_cast %[[QI]] : index to i64
// CHECK-DAG: %[[QP:.*]] = llvm.inttoptr %[[QI64]] : i64 to !llvm.ptr
// CHECK-DAG: %[[ALI:.*]] = memref.extract_aligned_pointer_as_index %[[AL]]
// CHECK-DAG: %[[ALI64:.*]] = arith.index_cast %[[ALI]] : index to i64
// CHECK-DAG: %[[ALP:.*]] = llvm.inttoptr %[[ALI64]] : i64 to !llvm.ptr
// CHECK-DAG: %[[TI:.*]] = memref.extract_aligned_pointer_as_index %[[TMP]]
// CHECK-DAG: %[[TI64:.*]] = arith.index_cast %[[TI]] : index to i64
// CHECK-DAG: %[[TP:.*]] = llvm.inttoptr %[[TI64]] : i64 to !llvm.ptr
// CHECK-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG: %[[AUTO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ZEROF:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: call @pa_host_decode_v2(%[[CTX]], %[[STREAM]], %[[BF16]], %[[BF16]], %[[NSEQ]], %[[H]], %[[KVH]], %[[D]], %[[B]], %{{.*}}, %{{.*}}, %{{.*}}, %[[PS]], %[[AUTO]], %[[SCALE]], %[[QP]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[TP]], %[[ALP]], %[[WIN]], %[[CAP]], %[[AUTO]], %[[ZEROF]], %[[ZEROF]], %[[NULL]], %[[NULL]], %[[NULL]], %[[NULL]], %{{[^,]*}}, %[[STATUS]]) : (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, f32, i32, f32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32
// CHECK-NEXT: return
// The variant's kernels, for export.
// CHECK: gpu.module @pa_bf16_d64_h
func.func @bf16_features(%q: memref<?x16x64xbf16>, %kc: memref<?x4x8x32x8xbf16>,
                         %vc: memref<?x4x64x32xbf16>, %bt: memref<?x?xi32>,
                         %sl: memref<?xi32>, %alibi: memref<16xf32>,
                         %out: memref<?x16x64xbf16>, %es: memref<?x16x?xf32>,
                         %ml: memref<?x16x?xf32>, %tmp: memref<?x16x?x64xbf16>) {
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<?x16x64xbf16>, memref<?x4x8x32x8xbf16>,
          memref<?x4x64x32xbf16>, memref<?x?xi32>, memref<?xi32>)
      alibi_slopes(%alibi : memref<16xf32>)
      outs(%out : memref<?x16x64xbf16>)
      workspace(%es, %ml, %tmp : memref<?x16x?xf32>, memref<?x16x?xf32>,
                memref<?x16x?x64xbf16>)
      {scale = 0.125 : f32, partition_size = 256 : i64,
       sliding_window = 1000 : i64, logits_soft_cap = 30.0 : f32}
  return
}

// -----

// A function that has its runtime arguments already (marked) keeps its
// signature; two decode_v2 share them and the one declaration. max_seq_len
// reaches the call as i32; fp8 caches pass E4M3 = 1 and the op's scales.

// CHECK: func.func private @pa_host_decode_v2(
// CHECK-NOT: func.func private @pa_host_decode_v2(
// CHECK-LABEL: func.func @marked(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "context"}, %[[LEN:[^:]*]]: index, %[[STATUS:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "status"}, %[[KS:[^:]*]]: f32, %[[VS:[^:]*]]: f32, %[[STREAM:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "stream"},
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-DAG: %[[F16:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[F32:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[L32:.*]] = arith.index_cast %[[LEN]] : index to i32
// num_seqs 2, max_num_partitions 1 (static dims), fp8 E4M3 = 1:
// CHECK: call @pa_host_decode_v2(%[[CTX]], %[[STREAM]], %[[F16]], %[[F32]], %[[F32]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %[[L32]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[F16]], %{{.*}}, %[[ONE]], %[[KS]], %[[VS]], %{{.*}}, %{{.*}}, %{{.*}}, %[[STATUS]])
// CHECK: call @pa_host_decode_v2(%[[CTX]], %[[STREAM]],
// CHECK-SAME: %[[STATUS]])
// CHECK: return
func.func @marked(%ctx: !llvm.ptr {paged_attn.host_arg = "context"},
                  %len: index,
                  %status: !llvm.ptr {paged_attn.host_arg = "status"},
                  %ks: f32, %vs: f32,
                  %stream: !llvm.ptr {paged_attn.host_arg = "stream"},
                  %q: memref<2x8x128xf16>, %kc: memref<64x8x8x16x16xf8E4M3FN>,
                  %vc: memref<64x8x128x16xf8E4M3FN>, %bt: memref<2x32xi32>,
                  %sl: memref<2xi32>, %out: memref<2x8x128xf16>,
                  %es: memref<2x8x1xf32>, %ml: memref<2x8x1xf32>,
                  %tmp: memref<2x8x1x128xf32>) {
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<2x8x128xf16>, memref<64x8x8x16x16xf8E4M3FN>,
          memref<64x8x128x16xf8E4M3FN>, memref<2x32xi32>, memref<2xi32>)
      kv_scales(%ks, %vs) max_seq_len(%len)
      outs(%out : memref<2x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<2x8x1xf32>, memref<2x8x1xf32>,
                memref<2x8x1x128xf32>)
      {scale = 0.088 : f32}
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<2x8x128xf16>, memref<64x8x8x16x16xf8E4M3FN>,
          memref<64x8x128x16xf8E4M3FN>, memref<2x32xi32>, memref<2xi32>)
      kv_scales(%ks, %vs) max_seq_len(%len)
      outs(%out : memref<2x8x128xf16>)
      workspace(%es, %ml, %tmp : memref<2x8x1xf32>, memref<2x8x1xf32>,
                memref<2x8x1x128xf32>)
      {scale = 0.088 : f32}
  return
}

// -----

// The tensor form's workspace after bufferization: host allocations used by
// the op alone. They become stream-ordered device memory around the call,
// sized from the allocations' own sizes (bytes = element size x dims).

// CHECK-DAG: func.func private @pa_host_alloc(!llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
// CHECK-DAG: func.func private @pa_host_free(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-LABEL: func.func @workspace(
// CHECK-SAME: %[[N:[^:]*]]: index, %[[P:[^:]*]]: index,
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "context"}, %[[STREAM:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "stream"}, %[[STATUS:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "status"})
// CHECK-NOT: memref.alloc
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[B0:.*]] = arith.muli %[[C4]], %[[N]] : index
// CHECK: %[[B1:.*]] = arith.muli %[[B0]], %{{.*}} : index
// CHECK: %[[B2:.*]] = arith.muli %[[B1]], %[[P]] : index
// CHECK: %[[BYTES:.*]] = arith.index_cast %[[B2]] : index to i64
// CHECK: %[[ES:.*]] = call @pa_host_alloc(%[[CTX]], %[[STREAM]], %[[BYTES]], %[[STATUS]])
// CHECK: %[[ML:.*]] = call @pa_host_alloc(%[[CTX]], %[[STREAM]], %[[BYTES]], %[[STATUS]])
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[TB:.*]] = arith.muli %[[B2]], %[[C128]] : index
// CHECK: %[[TB64:.*]] = arith.index_cast %[[TB]] : index to i64
// CHECK: %[[TMP:.*]] = call @pa_host_alloc(%[[CTX]], %[[STREAM]], %[[TB64]], %[[STATUS]])
// max_num_partitions is the allocation's size, not a memref.dim of it.
// CHECK: %[[P32:.*]] = arith.index_cast %[[P]] : index to i32
// CHECK: call @pa_host_decode_v2(%[[CTX]], %[[STREAM]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[P32]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ES]], %[[ML]], %[[TMP]],
// CHECK-NEXT: call @pa_host_free(%[[CTX]], %[[STREAM]], %[[ES]], %[[STATUS]])
// CHECK-NEXT: call @pa_host_free(%[[CTX]], %[[STREAM]], %[[ML]], %[[STATUS]])
// CHECK-NEXT: call @pa_host_free(%[[CTX]], %[[STREAM]], %[[TMP]], %[[STATUS]])
// CHECK-NEXT: return
func.func @workspace(%n: index, %p: index,
                     %q: memref<?x32x128xf16>, %kc: memref<?x8x16x16x8xf16>,
                     %vc: memref<?x8x128x16xf16>, %bt: memref<?x?xi32>,
                     %sl: memref<?xi32>, %out: memref<?x32x128xf16>) {
  %es = memref.alloc(%n, %p) : memref<?x32x?xf32>
  %ml = memref.alloc(%n, %p) : memref<?x32x?xf32>
  %tmp = memref.alloc(%n, %p) : memref<?x32x?x128xf32>
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<?x32x128xf16>, memref<?x8x16x16x8xf16>,
          memref<?x8x128x16xf16>, memref<?x?xi32>, memref<?xi32>)
      outs(%out : memref<?x32x128xf16>)
      workspace(%es, %ml, %tmp : memref<?x32x?xf32>, memref<?x32x?xf32>,
                memref<?x32x?x128xf32>)
      {scale = 0.088 : f32}
  return
}

// -----

// Attention sinks reach the call as their pointer (HostABI.def's last row),
// never dropped.
// CHECK-LABEL: func.func @with_sinks(
// CHECK: %[[SK:.*]] = memref.extract_aligned_pointer_as_index %arg5
// CHECK: %[[SKI:.*]] = arith.index_cast %[[SK]] : index to i64
// CHECK: %[[SKP:.*]] = llvm.inttoptr %[[SKI]] : i64 to !llvm.ptr
// CHECK: call @pa_host_decode_v2({{.*}}, %[[SKP]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) :
func.func @with_sinks(%q: memref<?x16x64xf16>, %kc: memref<?x4x8x16x8xf16>,
                      %vc: memref<?x4x64x16xf16>, %bt: memref<?x?xi32>,
                      %sl: memref<?xi32>, %sinks: memref<16xf32>,
                      %out: memref<?x16x64xf16>, %es: memref<?x16x?xf32>,
                      %ml: memref<?x16x?xf32>, %tmp: memref<?x16x?x64xf32>) {
  paged_attn.decode_v2
      ins(%q, %kc, %vc, %bt, %sl : memref<?x16x64xf16>, memref<?x4x8x16x8xf16>,
          memref<?x4x64x16xf16>, memref<?x?xi32>, memref<?xi32>)
      sinks(%sinks : memref<16xf32>)
      outs(%out : memref<?x16x64xf16>)
      workspace(%es, %ml, %tmp : memref<?x16x?xf32>, memref<?x16x?xf32>,
                memref<?x16x?x64xf32>)
      {scale = 0.125 : f32}
  return
}
