//===- Passes.h - paged_attn conversions ------------------------*- C++ -*-===//
#ifndef PAGED_ATTN_CONVERSION_PASSES_H
#define PAGED_ATTN_CONVERSION_PASSES_H

#include "PagedAttn/Conversion/PagedAttnToGPU/PagedAttnToGPU.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace arith {
class ArithDialect;
} // namespace arith
namespace func {
class FuncDialect;
} // namespace func
namespace gpu {
class GPUDialect;
} // namespace gpu
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace NVVM {
class NVVMDialect;
} // namespace NVVM
namespace memref {
class MemRefDialect;
} // namespace memref
namespace scf {
class SCFDialect;
} // namespace scf
namespace vector {
class VectorDialect;
} // namespace vector
} // namespace mlir

namespace mlir::paged_attn {

#define GEN_PASS_DECL
#include "PagedAttn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "PagedAttn/Conversion/Passes.h.inc"

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_CONVERSION_PASSES_H
