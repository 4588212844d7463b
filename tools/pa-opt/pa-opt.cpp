//===- pa-opt.cpp - the paged_attn optimizer driver -----------------------===//
//
// mlir-opt for paged_attn: the project's dialect, passes and pipelines plus
// the upstream pieces they use, and nothing else.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::paged_attn::registerAllDialects(registry);
  mlir::paged_attn::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "paged_attn optimizer driver\n", registry));
}
