//===- Passes.td - paged_attn export -----------------------*- tablegen -*-===//

#ifndef PAGED_ATTN_TARGET_PASSES_TD
#define PAGED_ATTN_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

def PagedAttnExportBundle : Pass<"paged-attn-export-bundle", "ModuleOp"> {
  let summary = "Write each kernel variant's PTX and manifest for the runtime";
  let description = [{
    After `gpu-module-to-binary{format=isa}`, writes for every `gpu.binary`
    that `convert-paged-attn-to-gpu` made (its key is in the module's
    `paged_attn.variants`) and every PTX object in it:
    `<output-dir>/<variant>_<chip>.ptx` and `<variant>_<chip>.manifest`,
    the bundle the runtime loads (docs/bundle-format.md: kernel names,
    parameter order, grid formulas, shared memory, variant key, chip). The
    IR is left unchanged. With `wide-twin-of=V`, every manifest written also
    says `wide_twin_of V_<chip>`: the bundle runs only as the wide twin of
    variant V's bundle for the same chip (the kernel library's twins of
    another kernel and tile; docs/runtime.md). With `ptxas=PATH`, every
    PTX is also assembled by that `ptxas` for its chip into
    `<variant>_<chip>.cubin`, which the manifest names in a `sass <chip>
    FILE` record: the runtime loads that machine code on a device of exactly
    that chip and JIT-compiles the PTX elsewhere (docs/bundle-format.md).
  }];
  let options = [
    Option<"outputDir", "output-dir", "std::string", /*default=*/"\".\"",
           "Folder the bundles are written to (created if missing)">,
    Option<"wideTwinOf", "wide-twin-of", "std::string", /*default=*/"\"\"",
           "Declare the bundles the wide twins of this variant (its name "
           "without the chip)">,
    Option<"ptxas", "ptxas", "std::string", /*default=*/"\"\"",
           "ptxas that assembles each bundle's PTX for its chip (a .cubin "
           "beside it); empty: PTX only">,
  ];
}

#endif // PAGED_ATTN_TARGET_PASSES_TD
