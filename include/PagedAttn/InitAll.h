//===- InitAll.h - register what pa-opt and the pipelines use ---*- C++ -*-===//
//
// The project's dialect and passes, and only the upstream dialects, passes
// and interfaces its pipelines need. Tools call these two functions instead
// of upstream's register-everything helpers.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_INITALL_H
#define PAGED_ATTN_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::paged_attn {

/// Registers paged_attn and the upstream dialects, interface models and
/// LLVM IR translations the pipelines use.
void registerAllDialects(DialectRegistry &registry);

/// Registers paged_attn's passes and pipelines and the upstream passes the
/// pipelines run, so each can also be run alone.
void registerAllPasses();

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_INITALL_H
