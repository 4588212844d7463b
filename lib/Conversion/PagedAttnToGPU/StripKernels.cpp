//===- StripKernels.cpp - paged-attn-strip-kernels ------------------------===//
//
// With host=runtime the kernels reach the runtime through the exported
// bundles, not through the host code: once exported they are erased so that
// the host module lowers to LLVM IR and an object on its own (no gpu.binary
// for mlir-translate to embed, no container module).
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::paged_attn {
#define GEN_PASS_DEF_PAGEDATTNSTRIPKERNELS
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::paged_attn

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

struct PagedAttnStripKernelsPass
    : public mlir::paged_attn::impl::PagedAttnStripKernelsBase<
          PagedAttnStripKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult launches = module.walk([](gpu::LaunchFuncOp launch) {
      launch.emitOpError("launches a kernel paged-attn-strip-kernels would "
                         "erase: lower decode_v2 with host=runtime");
      return WalkResult::interrupt();
    });
    if (launches.wasInterrupted())
      return signalPassFailure();
    SmallVector<Operation *> kernels;
    for (Operation &op : module.getBody()->getOperations())
      if (isa<gpu::GPUModuleOp, gpu::BinaryOp>(op))
        kernels.push_back(&op);
    for (Operation *op : kernels)
      op->erase();
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
    module->removeAttr(kVariantAttrName);
  }
};

} // namespace
