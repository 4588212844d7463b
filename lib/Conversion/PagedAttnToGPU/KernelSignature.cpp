//===- KernelSignature.cpp - kernel signatures from the parameter table ---===//
//
// The gpu.func argument types of a kernel and its arguments by name, from
// the one table of kernel parameters (KernelParams.h).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"

using namespace mlir;
using namespace mlir::paged_attn;

SmallVector<Type> KernelSignature::types(MLIRContext *ctx) const {
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  SmallVector<Type> out;
  for (const KernelParam &p : params) {
    switch (p.type) {
    case ParamType::QueryPtr:
      out.push_back(flatMemRefType(plan.elemType));
      break;
    case ParamType::CachePtr:
      out.push_back(flatMemRefType(plan.cacheType));
      break;
    case ParamType::TmpPtr: // bytes, viewed as the run-time type
      out.push_back(flatMemRefType(IntegerType::get(ctx, 8)));
      break;
    case ParamType::F32Ptr:
      out.push_back(flatMemRefType(f32));
      break;
    case ParamType::I32Ptr:
      out.push_back(flatMemRefType(i32));
      break;
    case ParamType::F32:
      out.push_back(f32);
      break;
    case ParamType::I32:
      out.push_back(i32);
      break;
    }
  }
  return out;
}

Value KernelSignature::arg(Block &entry, StringRef name) const {
  for (auto [i, p] : llvm::enumerate(params))
    if (name == p.name)
      return entry.getArgument(i);
  return Value();
}
