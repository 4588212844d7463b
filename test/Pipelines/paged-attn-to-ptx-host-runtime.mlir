// Host code to an object: the memref-form decode step through
// paged-attn-to-ptx{host=runtime} (LLVM dialect), mlir-translate and llc.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-opt %pa_src_root/examples/hostcode/decode_v2_memref.mlir -paged-attn-to-ptx="chip=sm_90 host=runtime export-dir=%t/kernels" -o %t/step.mlir
// RUN: FileCheck %s --input-file=%t/step.mlir
// RUN: mlir-translate --mlir-to-llvmir %t/step.mlir -o %t/step.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/step.ll -o %t/step.o
// RUN: llvm-nm %t/step.o | FileCheck %s --check-prefix=NM
// The variant's bundle was exported before the kernels were erased.
// RUN: ls %t/kernels | FileCheck %s --check-prefix=BUNDLE
// Without export-dir no kernel is compiled; the host code is the same.
// RUN: pa-opt %pa_src_root/examples/hostcode/decode_v2_memref.mlir -paged-attn-to-ptx="host=runtime" | FileCheck %s
// RUN: not pa-opt %pa_src_root/examples/hostcode/decode_v2_memref.mlir -paged-attn-to-ptx="host=gpu" 2>&1 | FileCheck %s --check-prefix=BAD

// Only the LLVM dialect is left: no kernels, no gpu ops, no memref ops.
// CHECK-NOT: gpu.
// CHECK-LABEL: llvm.func @pa_host_decode_v2(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, f32, i32, f32, f32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr) -> i32
// CHECK-LABEL: llvm.func @decode_step(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "context"}, %[[STREAM:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "stream"}, %[[STATUS:[^:]*]]: !llvm.ptr {paged_attn.host_arg = "status"})
// CHECK-NOT: memref.
// CHECK: llvm.call @pa_host_decode_v2(%[[CTX]], %[[STREAM]],
// CHECK-SAME: %[[STATUS]])
// CHECK: llvm.return
// The C interface main.c calls: descriptors by pointer.
// CHECK-LABEL: llvm.func @_mlir_ciface_decode_step(
// CHECK: llvm.call @decode_step(
// CHECK-NOT: gpu.

// The object defines the function and its C interface and needs the
// runtime's entry only (no mgpu* wrappers, no allocation).
// NM-NOT: {{ U }}
// NM: T _mlir_ciface_decode_step
// NM-NEXT: T decode_step
// NM-NEXT: U pa_host_decode_v2
// NM-NOT: {{ U }}

// BUNDLE: pa_f16_d128_h8_mma_sm90.manifest
// BUNDLE: pa_f16_d128_h8_mma_sm90.ptx

// BAD: paged-attn-to-ptx: host must be launch or runtime, got 'gpu'

// The tensor form (examples/decode_v2.mlir, no workspace): its workspace is
// allocated on the device around the call, through the runtime.
// RUN: pa-opt %pa_src_root/examples/decode_v2.mlir -paged-attn-to-ptx="chip=sm_90 host=runtime" -o %t/tensor.mlir
// RUN: FileCheck %s --check-prefix=TENSOR --input-file=%t/tensor.mlir
// RUN: mlir-translate --mlir-to-llvmir %t/tensor.mlir -o %t/tensor.ll
// RUN: llc -O2 -filetype=obj -relocation-model=pic %t/tensor.ll -o %t/tensor.o
// RUN: llvm-nm %t/tensor.o | FileCheck %s --check-prefix=TENSOR-NM
// TENSOR-NOT: llvm.call @malloc
// TENSOR-LABEL: llvm.func @decode_step(
// TENSOR-COUNT-3: llvm.call @pa_host_alloc(
// TENSOR: llvm.call @pa_host_decode_v2(
// TENSOR-COUNT-3: llvm.call @pa_host_free(
// TENSOR-NOT: llvm.call @malloc
// TENSOR-NM-NOT: {{ U }}
// TENSOR-NM: T _mlir_ciface_decode_step
// TENSOR-NM-NEXT: T decode_step
// TENSOR-NM-NEXT: U pa_host_alloc
// TENSOR-NM-NEXT: U pa_host_decode_v2
// TENSOR-NM-NEXT: U pa_host_free
// TENSOR-NM-NOT: {{ U }}
