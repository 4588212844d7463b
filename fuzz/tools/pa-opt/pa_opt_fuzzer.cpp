//===- pa_opt_fuzzer.cpp - libFuzzer target: parse, verify, lower ---------===//
//
// pa-opt's promise (docs/dialect.md): malformed input gives an `error:`,
// never a crash or an assert. One input is an .mlir module (the seeds are
// the chunks of test/'s .mlir files). The target parses it (which runs the
// verifiers, decode_v2's included) and, when it verifies, runs the project's
// part of paged-attn-to-ptx: the workspace pass, one-shot bufferization and
// convert-paged-attn-to-gpu for sm_70, sm_80 or sm_90 (picked by the input's
// length, so every kernel family's builders run). The upstream NVVM
// conversion and serialization after it are not the project's code and
// would cut the executions per second by an order of magnitude.
//
// Findings: a crash, a sanitizer report, an assertion (the fuzz build keeps
// them on), or a lowering that succeeds but leaves IR that does not verify.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Dialect/PagedAttn/Transforms/Passes.h"
#include "PagedAttn/InitAll.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlir;

namespace {

const DialectRegistry &registry() {
  static const DialectRegistry *r = [] {
    auto *reg = new DialectRegistry();
    paged_attn::registerAllDialects(*reg);
    return reg;
  }();
  return *r;
}

/// The project's passes of paged-attn-to-ptx, configured as it does.
void buildLowering(PassManager &pm, const char *chip) {
  pm.addPass(paged_attn::createPagedAttnMaterializeWorkspace());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  paged_attn::ConvertPagedAttnToGPUOptions convert;
  convert.chip = chip;
  pm.addPass(paged_attn::createConvertPagedAttnToGPU(convert));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: nothing carries over, so a finding
  // reproduces from its input alone.
  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) {
    return success(); // refusals are expected; their text is not checked
  });
  // NUL-terminated, as pa-opt's MemoryBuffers are: MLIR's lexer reads the
  // terminator (a bare fuzzer buffer made it read one byte past the end).
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module)
    return 0;

  static const char *const kChips[] = {"sm_70", "sm_80", "sm_90"};
  PassManager pm(&context);
  pm.enableVerifier(false); // verified below, once, as the oracle
  buildLowering(pm, kChips[size % 3]);
  if (failed(pm.run(*module)))
    return 0;
  if (failed(verify(*module))) {
    llvm::errs() << "the lowering succeeded but left invalid IR:\n";
    module->print(llvm::errs());
    std::abort();
  }
  return 0;
}
