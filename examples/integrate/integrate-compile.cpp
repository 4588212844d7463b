//===- integrate-compile.cpp - a graph compiler's use of paged_attn -------===//
//
// What a compiler that captured a decode step does with paged_attn's C++
// API: register the dialect and what its pipeline needs in its own registry,
// find the decode steps it captured (paged_attn.decode_v2, the op class from
// the installed headers), add paged-attn-to-ptx to its own pass manager and
// run it on its module, here parsed from a file. The bundles land in OUT_DIR.
//
//   integrate-compile INPUT.mlir OUT_DIR [CHIP]
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Dialect/PagedAttn/IR/PagedAttn.h"
#include "PagedAttn/InitAll.h"
#include "PagedAttn/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    llvm::errs() << "usage: integrate-compile INPUT.mlir OUT_DIR [CHIP]\n";
    return 2;
  }
  // The compiler's own dialects would be inserted here too.
  DialectRegistry registry;
  paged_attn::registerAllDialects(registry);
  MLIRContext context(registry);

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  int steps = 0;
  module->walk([&](paged_attn::DecodeV2Op) { ++steps; });
  llvm::outs() << "decode_v2 ops: " << steps << "\n";

  paged_attn::PagedAttnToPTXOptions options;
  options.chip = argc == 4 ? argv[3] : "sm_90";
  options.exportDir = argv[2];
  PassManager pm(&context);
  paged_attn::buildPagedAttnToPTXPipeline(pm, options);
  if (failed(pm.run(*module)))
    return 1;
  llvm::outs() << "wrote the bundles for " << options.chip << " to "
               << argv[2] << "\n";
  return 0;
}
