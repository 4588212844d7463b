//===- PagedAttnToPTX.cpp - the paged-attn-to-ptx pipeline ----------------===//
//
// Upstream passes do everything that is not specific to paged attention:
// one-shot bufferization, the GPU-to-NVVM conversion, target attachment
// and serialization to PTX. The project contributes the workspace, the
// conversion to GPU kernels and the export.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Pipelines/Pipelines.h"

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Dialect/PagedAttn/Transforms/Passes.h"
#include "PagedAttn/Target/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::paged_attn;

std::string mlir::paged_attn::minimumPtxFeature(llvm::StringRef chip) {
  return llvm::StringSwitch<std::string>(chip)
      // PTX 6.1 for sm_70: the wmma kernel's m8n32k16 shape is from 6.1.
      .Case("sm_70", "+ptx61")
      .Case("sm_72", "+ptx61")
      .Case("sm_75", "+ptx63")
      .Case("sm_80", "+ptx70")
      .Case("sm_86", "+ptx71")
      .Case("sm_87", "+ptx74")
      .Case("sm_89", "+ptx78")
      .Case("sm_90", "+ptx78")
      .Case("sm_90a", "+ptx80")
      .Case("sm_100", "+ptx86")
      .Case("sm_120", "+ptx87")
      .Default("");
}

static void buildKernelsToPTX(OpPassManager &pm,
                              const PagedAttnToPTXOptions &options);
static std::string ptxFeatureFor(const PagedAttnToPTXOptions &options);
static void buildRuntimeHostToLLVM(OpPassManager &pm);

void mlir::paged_attn::buildPagedAttnToPTXPipeline(
    OpPassManager &pm, const PagedAttnToPTXOptions &options) {
  // Tensor form -> memref form, workspace allocated where none was given.
  pm.addPass(createPagedAttnMaterializeWorkspace());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));

  // decode_v2 -> kernels + launches.
  ConvertPagedAttnToGPUOptions convert;
  convert.headsPerProgram = options.headsPerProgram;
  convert.warps = options.warps;
  convert.chip = options.chip;
  convert.kernel = options.kernel;
  convert.simtPieceBytes = options.simtPieceBytes;
  convert.l2PrefetchBytes = options.l2PrefetchBytes;
  convert.clusterSize = options.clusterSize;
  convert.host = options.host;
  pm.addPass(createConvertPagedAttnToGPU(convert));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  bool runtimeHost = options.host == "runtime";
  if (!runtimeHost || !options.exportDir.empty())
    buildKernelsToPTX(pm, options);
  if (runtimeHost)
    buildRuntimeHostToLLVM(pm);
}

/// The kernels to PTX in gpu.binary ops, and the bundles if asked.
static void buildKernelsToPTX(OpPassManager &pm,
                              const PagedAttnToPTXOptions &options) {
  // Device code -> NVVM, with bare pointers for the kernel parameters.
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  device.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features.empty()
                        ? ptxFeatureFor(options)
                        : options.features.getValue();
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));

  if (!options.exportDir.empty()) {
    PagedAttnExportBundleOptions exportOptions;
    exportOptions.outputDir = options.exportDir;
    exportOptions.wideTwinOf = options.wideTwinOf;
    exportOptions.ptxas = options.ptxas;
    pm.addPass(createPagedAttnExportBundle(exportOptions));
  }
}

/// The chip's minimum PTX version, raised to 7.4 for an explicit L2
/// prefetch size hint (.L2::64B/128B/256B) where the chip's is older (the
/// rule asks for none before sm_90, so only an explicit option raises it).
static std::string ptxFeatureFor(const PagedAttnToPTXOptions &options) {
  std::string feature = minimumPtxFeature(options.chip);
  unsigned version = 0;
  if (options.l2PrefetchBytes > 0 &&
      !StringRef(feature).drop_front(4).getAsInteger(10, version) &&
      version < 74)
    return "+ptx74";
  return feature;
}

/// host=runtime: the kernels are in the bundles; the host code (runtime
/// calls, memref plumbing) goes to the LLVM dialect, ready for
/// mlir-translate --mlir-to-llvmir.
static void buildRuntimeHostToLLVM(OpPassManager &pm) {
  pm.addPass(createPagedAttnStripKernels());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::paged_attn::registerPagedAttnPipelines() {
  // PassPipelineRegistration's own builder cannot refuse options; this one
  // refuses a wide-twin-of that nothing would write.
  registerPassPipeline(
      "paged-attn-to-ptx",
      "Lower decode_v2 (tensor or memref form) to PTX kernels: workspace, "
      "bufferization, convert-paged-attn-to-gpu, NVVM, gpu-module-to-binary, "
      "and optionally the runtime bundles",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        PagedAttnToPTXOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (!options.wideTwinOf.empty() && options.exportDir.empty())
          return errorHandler("paged-attn-to-ptx: wide-twin-of declares the "
                              "exported bundles twins; it needs export-dir");
        if (options.host != "launch" && options.host != "runtime")
          return errorHandler("paged-attn-to-ptx: host must be launch or "
                              "runtime, got '" +
                              options.host + "'");
        if (!options.ptxas.empty() && options.exportDir.empty())
          return errorHandler("paged-attn-to-ptx: ptxas assembles the "
                              "exported bundles; it needs export-dir");
        buildPagedAttnToPTXPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(PagedAttnToPTXOptions());
      });
}
