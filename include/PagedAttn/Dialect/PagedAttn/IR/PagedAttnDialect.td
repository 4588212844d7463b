//===- PagedAttnDialect.td - paged_attn dialect ------------*- tablegen -*-===//
//
// The paged_attn dialect: decode attention over a block-paged KV cache.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_DIALECT_TD
#define PAGED_ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def PagedAttn_Dialect : Dialect {
  let name = "paged_attn";
  let cppNamespace = "::mlir::paged_attn";
  let summary = "Decode attention over a block-paged KV cache";
  let description = [{
    The `paged_attn` dialect holds the operations a graph compiler emits for
    the decode step of a transformer served from a block-paged KV cache
    (vLLM's layouts). Its passes lower them through the upstream GPU and
    NVVM dialects into the two-kernel PagedAttention V2 structure: a
    partition kernel (one program per sequence, KV head and context
    partition) and a log-sum-exp reduce kernel.
  }];
  let dependentDialects = [];
}

class PagedAttn_Op<string mnemonic, list<Trait> traits = []>
    : Op<PagedAttn_Dialect, mnemonic, traits>;

#endif // PAGED_ATTN_DIALECT_TD
