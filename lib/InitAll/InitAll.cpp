//===- InitAll.cpp - register what pa-opt and the pipelines use -----------===//
//
// Deliberately explicit: every upstream dialect and pass listed here is one
// a paged_attn pipeline runs, so the tool stays small and its --help short.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/InitAll.h"

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::paged_attn::registerAllDialects(DialectRegistry &registry) {
  registry.insert<paged_attn::PagedAttnDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  NVVM::NVVMDialect, math::MathDialect, memref::MemRefDialect,
                  scf::SCFDialect, tensor::TensorDialect,
                  vector::VectorDialect>();
}

void mlir::paged_attn::registerAllPasses() {
  registerCanonicalizerPass();
  registerCSEPass();
}
