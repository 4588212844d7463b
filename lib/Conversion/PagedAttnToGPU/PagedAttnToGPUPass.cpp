//===- PagedAttnToGPUPass.cpp - convert-paged-attn-to-gpu -----------------===//
//
// Assembles the conversion: checks that every decode_v2 can be lowered
// (reporting why not as an error on the op), then applies the host-launch
// pattern, which builds each variant's kernels once. With host=runtime the
// functions first receive their runtime context, stream and status.
//
//===----------------------------------------------------------------------===//

#include "HostRuntimeCall.h"
#include "KernelPlan.h"

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::paged_attn {
#define GEN_PASS_DEF_CONVERTPAGEDATTNTOGPU
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::paged_attn

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

struct ConvertPagedAttnToGPUPass
    : public mlir::paged_attn::impl::ConvertPagedAttnToGPUBase<
          ConvertPagedAttnToGPUPass> {
  using Base::Base;

  /// print-plans: "plan NAME kind KIND warps N" per op, nothing lowered.
  void reportPlans(ModuleOp module, const PagedAttnToGPUOptions &options) {
    bool ok = true;
    module.walk([&](DecodeV2Op op) {
      FailureOr<KernelPlan> plan = planKernel(op, options);
      if (failed(plan)) {
        ok = false;
        return;
      }
      const char *kind = plan->usesMma()    ? "mma"
                         : plan->usesWmma() ? "wmma"
                                            : "simt";
      op.emitRemark() << "plan " << plan->name() << " kind " << kind
                      << " warps " << plan->warps;
    });
    if (!ok)
      signalPassFailure();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    PagedAttnToGPUOptions options;
    options.headsPerProgram = headsPerProgram;
    options.warps = warps;
    options.chip = chip;
    options.kernel = kernel;
    options.simtPieceBytes = simtPieceBytes;
    options.l2PrefetchBytes = l2PrefetchBytes;
    options.clusterSize = clusterSize;
    options.host = host;
    if (host != "launch" && host != "runtime") {
      module.emitError() << "convert-paged-attn-to-gpu: host must be launch "
                            "or runtime, got '"
                         << host << "'";
      return signalPassFailure();
    }

    if (printPlans)
      return reportPlans(module, options);
    bool ok = true;
    bool any = false;
    module.walk([&](DecodeV2Op op) {
      any = true;
      ok &= succeeded(checkDecodeV2Lowerable(op)) &&
            succeeded(planKernel(op, options));
    });
    if (!ok)
      return signalPassFailure();
    if (!any)
      return;
    if (host == "runtime" && failed(prepareRuntimeHostFunctions(module)))
      return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));

    ConversionTarget target(getContext());
    configurePagedAttnToGPULegality(target);
    RewritePatternSet patterns(&getContext());
    populatePagedAttnToGPUPatterns(patterns, options);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // The kernels' gpu.subgroup_reduce (clusterSum) as xor shuffles: the
    // NVVM conversion lowers only unclustered integer ones (redux.sync).
    RewritePatternSet reduces(&getContext());
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
        reduces, /*subgroupSize=*/32);
    // One walk, in place: no folding or hoisting (the canonicalizer after
    // this pass does that).
    FrozenRewritePatternSet frozen(std::move(reduces));
    module.walk([&](gpu::GPUModuleOp kernels) {
      walkAndApplyPatterns(kernels, frozen);
    });
  }
};

} // namespace
