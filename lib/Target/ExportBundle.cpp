//===- ExportBundle.cpp - write PTX + manifest for the runtime ------------===//
//
// The last step of the pipeline: the runtime needs, for each kernel variant,
// the PTX and a manifest saying what is in it (docs/bundle-format.md). The
// parameter lists come from the table the kernel builders read
// (KernelParams.h); the grid formulas are the contract of
// lib/Conversion/PagedAttnToGPU/KernelBuilders.h.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/PagedAttnToGPU/KernelParams.h"
#include "PagedAttn/Conversion/PagedAttnToGPU/PagedAttnToGPU.h"
#include "PagedAttn/Target/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::paged_attn {
#define GEN_PASS_DEF_PAGEDATTNEXPORTBUNDLE
#include "PagedAttn/Target/Passes.h.inc"
} // namespace mlir::paged_attn

using namespace mlir;
using namespace mlir::paged_attn;

namespace {

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

int64_t intOf(DictionaryAttr key, StringRef name) {
  return cast<IntegerAttr>(key.get(name)).getInt();
}

/// Writes `ptx` to `path`; returns an error message.
std::string writePtx(StringRef path, StringRef ptx) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    return "cannot write " + path.str() + ": " + ec.message();
  out << ptx;
  out.close();
  return out.has_error() ? "cannot write " + path.str() : "";
}

/// Runs `ptxas -arch=<chip> -o <cubin> <ptx>`; returns an error message
/// holding what ptxas printed.
std::string assemble(StringRef ptxas, StringRef chip, StringRef ptxPath,
                     StringRef cubinPath) {
  llvm::SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("pa-ptxas", "log", log))
    return "cannot create a temporary file: " + ec.message();
  std::string arch = ("-arch=" + chip).str();
  StringRef args[] = {ptxas, arch, "-o", cubinPath, ptxPath};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, /*Env=*/std::nullopt,
                                     redirects, /*SecondsToWait=*/0,
                                     /*MemoryLimit=*/0, &error);
  std::string printed;
  if (auto text = llvm::MemoryBuffer::getFile(log))
    printed = (*text)->getBuffer().trim().str();
  llvm::sys::fs::remove(log);
  if (rc == 0)
    return "";
  return (ptxas + " " + arch + " " + ptxPath + " failed" +
          (error.empty() ? "" : ": " + error) + ": " + printed)
      .str();
}

/// Writes `<dir>/<bundle>.ptx`, with `ptxas` also `<bundle>.cubin`, and
/// `.manifest`; returns an error message.
std::string writeBundle(StringRef dir, StringRef variant, DictionaryAttr key,
                        StringRef chip, StringRef ptx, StringRef twinOf,
                        StringRef ptxas) {
  std::string chipTag = chip.str();
  chipTag.erase(std::remove(chipTag.begin(), chipTag.end(), '_'),
                chipTag.end()); // sm_70 -> sm70
  std::string bundle = (variant + "_" + chipTag).str();
  llvm::SmallString<256> ptxPath(dir), cubinPath(dir), manifestPath(dir);
  llvm::sys::path::append(ptxPath, bundle + ".ptx");
  llvm::sys::path::append(cubinPath, bundle + ".cubin");
  llvm::sys::path::append(manifestPath, bundle + ".manifest");

  std::string err = writePtx(ptxPath, ptx);
  if (err.empty() && !ptxas.empty())
    err = assemble(ptxas, chip, ptxPath, cubinPath);
  if (!err.empty())
    return err;

  std::error_code ec;
  llvm::raw_fd_ostream m(manifestPath, ec);
  if (ec)
    return "cannot write " + manifestPath.str().str() + ": " + ec.message();
  int64_t threads = 32 * intOf(key, "warps");
  int64_t smem = intOf(key, "shared_bytes");
  auto type = [&](StringRef n) {
    return typeName(cast<TypeAttr>(key.get(n)).getValue());
  };
  m << "paged_attn-bundle 1\n"
    << "name " << bundle << "\n"
    << "chip " << chip << "\n"
    << "ptx " << bundle << ".ptx\n";
  if (!ptxas.empty())
    m << "sass " << chip << " " << bundle << ".cubin\n";
  m << "dtype " << type("dtype") << "\n"
    << "cache_dtype " << type("cache_dtype") << "\n"
    << "tmp_dtype any\n" // a run-time kernel parameter (tmp_f32)
    << "head_size " << intOf(key, "head_size") << "\n"
    << "block_size any\n" // a run-time kernel parameter
    << "heads_per_program " << intOf(key, "heads_per_program") << "\n"
    << "warps " << intOf(key, "warps") << "\n"
    << "token_step " << intOf(key, "token_step") << "\n";
  if (!twinOf.empty())
    m << "wide_twin_of " << twinOf << "_" << chipTag << "\n";
  int64_t cluster = key.get("cluster_size") ? intOf(key, "cluster_size") : 0;
  SmallVector<KernelRole> partitionRoles = {KernelRole::Partition,
                                            KernelRole::OnePass};
  if (cluster) {
    m << "cluster_size " << cluster << "\n";
    partitionRoles.push_back(KernelRole::Cluster);
  }
  for (KernelRole role : partitionRoles)
    m << "kernel " << roleName(role) << " " << variant << "_"
      << roleName(role) << " threads " << threads << " smem " << smem << "\n";
  m << "kernel reduce " << variant << "_reduce threads "
    << intOf(key, "reduce_threads") << " smem "
    << intOf(key, "reduce_shared_bytes") << "\n";
  // Each kernel's parameters, from the one table the builders and the
  // host launch read (KernelParams.h).
  bool ext = cast<BoolAttr>(key.get("ext_logits")).getValue();
  Type cacheType = cast<TypeAttr>(key.get("cache_dtype")).getValue();
  bool fp8 = isa<Float8E4M3FNType, Float8E5M2Type>(cacheType);
  SmallVector<KernelRole> roles = partitionRoles;
  roles.push_back(KernelRole::Reduce);
  for (KernelRole role : roles) {
    m << "params " << roleName(role);
    for (const KernelParam &p : kernelParams(role, ext, fp8))
      m << " " << p.name;
    m << "\n";
  }
  StringRef packs = cast<StringAttr>(key.get("query_packs")).getValue();
  m << "grid partition num_partitions*" << packs
    << " num_kv_heads*ceil(group_size/heads_per_program) num_seqs\n"
    << "grid onepass " << packs
    << " num_kv_heads*ceil(group_size/heads_per_program) num_seqs\n";
  if (cluster)
    m << "grid cluster " << cluster << "*" << packs
      << " num_kv_heads*ceil(group_size/heads_per_program) num_seqs\n";
  m << "grid reduce "
    << cast<StringAttr>(key.get("reduce_grid_x")).getValue()
    << " num_seqs\n";
  return "";
}

struct ExportBundlePass
    : public mlir::paged_attn::impl::PagedAttnExportBundleBase<
          ExportBundlePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto variants = module->getAttrOfType<DictionaryAttr>(kVariantAttrName);
    if (!variants)
      return; // nothing of ours was lowered
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
      module.emitError("cannot create ") << outputDir << ": " << ec.message();
      return signalPassFailure();
    }
    for (auto binary : module.getOps<gpu::BinaryOp>()) {
      auto key = variants.getAs<DictionaryAttr>(binary.getName());
      if (!key)
        continue;
      for (Attribute a : binary.getObjects()) {
        auto object = cast<gpu::ObjectAttr>(a);
        auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
        if (!target || object.getFormat() != gpu::CompilationTarget::Assembly) {
          binary.emitError("expected NVVM PTX objects: run "
                           "gpu-module-to-binary{format=isa} first");
          return signalPassFailure();
        }
        std::string err = writeBundle(outputDir, binary.getName(), key,
                                      target.getChip(),
                                      object.getObject().getValue(),
                                      wideTwinOf, ptxas);
        if (!err.empty()) {
          mlir::emitError(binary.getLoc(), err); // no op dump: the PTX is large
          return signalPassFailure();
        }
      }
    }
  }
};

} // namespace
