//===- KernelParams.h - the kernel ABI as one table -------------*- C++ -*-===//
//
// Every parameter of the kernels of a variant (partition, one-pass, reduce;
// the cluster kernel takes the one-pass kernel's), in signature order, with its type, the kernels that take it and
// the variants that have it. The kernel builders derive their signatures
// from it and find their arguments by name, the host launch fills it by
// name, and the bundle export writes the manifest's `params` records from
// it (docs/bundle-format.md), so a parameter is added in one row.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_CONVERSION_PAGEDATTNTOGPU_KERNELPARAMS_H
#define PAGED_ATTN_CONVERSION_PAGEDATTNTOGPU_KERNELPARAMS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace mlir::paged_attn {

/// The kernels of a variant, as the manifest names them. The cluster
/// kernel (variants built with a cluster size) is the one-pass kernel over
/// a thread-block cluster: it takes the one-pass kernel's parameters.
enum class KernelRole : uint8_t { Partition, OnePass, Reduce, Cluster };

inline const char *roleName(KernelRole role) {
  switch (role) {
  case KernelRole::Partition:
    return "partition";
  case KernelRole::OnePass:
    return "onepass";
  case KernelRole::Reduce:
    return "reduce";
  case KernelRole::Cluster:
    return "cluster";
  }
  return "";
}

/// What a parameter holds. Pointers are flat memrefs of the element type
/// named (the runtime passes a 64-bit device pointer); tmp_output's is a
/// memref of bytes that the kernels view (memref.view) as f32 or as the
/// query's 16-bit type, as `tmp_f32` says at run time.
enum class ParamType : uint8_t {
  QueryPtr, // the query's (and output's) element type
  CachePtr, // the caches' element type
  TmpPtr,   // tmp_output: bytes (i8), f32 or the query's type at run time
  F32Ptr,
  I32Ptr,
  F32,
  I32,
};

/// Which variants take a parameter.
enum class ParamWhen : uint8_t {
  Always,
  ExtLogits, // _ext variants (ALiBi and the logits soft cap compiled in)
  Fp8Cache,  // variants of an fp8 KV cache
};

struct KernelParam {
  const char *name;
  ParamType type;
  ParamWhen when;
  uint8_t roles; // bit (1 << KernelRole) per kernel that takes it
};

namespace param_roles {
inline constexpr uint8_t P = 1 << uint8_t(KernelRole::Partition);
inline constexpr uint8_t O = 1 << uint8_t(KernelRole::OnePass);
inline constexpr uint8_t R = 1 << uint8_t(KernelRole::Reduce);
} // namespace param_roles

/// The table, in every kernel's signature order. Semantics of each name:
/// docs/bundle-format.md.
inline constexpr KernelParam kKernelParams[] = {
    // clang-format off
    {"query",              ParamType::QueryPtr, ParamWhen::Always,    param_roles::P | param_roles::O},
    {"key_cache",          ParamType::CachePtr, ParamWhen::Always,    param_roles::P | param_roles::O},
    {"value_cache",        ParamType::CachePtr, ParamWhen::Always,    param_roles::P | param_roles::O},
    {"block_tables",       ParamType::I32Ptr,   ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"seq_lens",           ParamType::I32Ptr,   ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"output",             ParamType::QueryPtr, ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"exp_sums",           ParamType::F32Ptr,   ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"max_logits",         ParamType::F32Ptr,   ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"tmp_output",         ParamType::TmpPtr,   ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"scale",              ParamType::F32,      ParamWhen::Always,    param_roles::P | param_roles::O},
    {"max_blocks_per_seq", ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    // Tokens per KV-cache block, a power of two in [8, 128]: run time, so
    // one bundle serves every block size (docs/kernels.md). The reducer
    // checks seq_lens against max_blocks_per_seq * block_size.
    {"block_size",         ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"num_heads",          ParamType::I32,      ParamWhen::Always,    param_roles::R},
    {"max_num_partitions", ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"partition_tokens",   ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    // 0: every partition holds partition_tokens. P > 0 (the runtime's fixed
    // grid): a sequence of len tokens is split into at most P partitions of
    // roundup(ceil(len / P), partition_tokens) tokens (partitionTokensOf).
    {"partition_split",    ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::R},
    {"num_kv_heads",       ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O},
    {"group_size",         ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O},
    {"alibi_slopes",       ParamType::F32Ptr,   ParamWhen::ExtLogits, param_roles::P | param_roles::O},
    {"has_alibi",          ParamType::I32,      ParamWhen::ExtLogits, param_roles::P | param_roles::O},
    {"sliding_window",     ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"logits_soft_cap",    ParamType::F32,      ParamWhen::ExtLogits, param_roles::P | param_roles::O},
    {"k_scale",            ParamType::F32,      ParamWhen::Fp8Cache,  param_roles::P | param_roles::O},
    {"v_scale",            ParamType::F32,      ParamWhen::Fp8Cache,  param_roles::P | param_roles::O},
    {"k_scale_ptr",        ParamType::F32Ptr,   ParamWhen::Fp8Cache,  param_roles::P | param_roles::O},
    {"v_scale_ptr",        ParamType::F32Ptr,   ParamWhen::Fp8Cache,  param_roles::P | param_roles::O},
    {"scales_on_device",   ParamType::I32,      ParamWhen::Fp8Cache,  param_roles::P | param_roles::O},
    {"num_partitions",     ParamType::I32,      ParamWhen::Always,    param_roles::R},
    // Attention sinks: read where the softmax is normalized (one-pass
    // epilogue, reducer), never by the partition kernel.
    {"sinks",              ParamType::F32Ptr,   ParamWhen::Always,    param_roles::O | param_roles::R},
    {"has_sinks",          ParamType::I32,      ParamWhen::Always,    param_roles::O | param_roles::R},
    // Several query tokens per sequence: max_query_len 0 means one (row =
    // sequence) and query_start_loc is then never read.
    {"query_start_loc",    ParamType::I32Ptr,   ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"max_query_len",      ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    // Bounds (docs/runtime.md, "Bad block tables"): block-table entries
    // outside [0, num_blocks) are never dereferenced; the kernels that
    // normalize the softmax (one-pass, reduce) record a bad entry
    // (or seq_len) in error_word[0..4) = {count, seq, index, value}, a
    // buffer the runtime owns (the reducer reads block_tables only then).
    {"num_blocks",         ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::O | param_roles::R},
    {"error_word",         ParamType::I32Ptr,   ParamWhen::Always,    param_roles::O | param_roles::R},
    // tmp_output's element type, a run-time choice so that one bundle serves
    // both (docs/kernels.md): 1 f32, 0 the query's 16-bit type (f32 queries
    // ignore it). Not the one-pass kernel's: it never touches tmp_output.
    {"tmp_f32",            ParamType::I32,      ParamWhen::Always,    param_roles::P | param_roles::R},
    // clang-format on
};

/// The parameters of `role` in a variant with (`extLogits`) ALiBi and the
/// soft cap and (`fp8Cache`) an fp8 cache, in signature order.
inline llvm::SmallVector<KernelParam> kernelParams(KernelRole role,
                                                   bool extLogits,
                                                   bool fp8Cache) {
  if (role == KernelRole::Cluster)
    role = KernelRole::OnePass;
  llvm::SmallVector<KernelParam> out;
  for (const KernelParam &p : kKernelParams) {
    if (!(p.roles & (1 << uint8_t(role))))
      continue;
    if ((p.when == ParamWhen::ExtLogits && !extLogits) ||
        (p.when == ParamWhen::Fp8Cache && !fp8Cache))
      continue;
    out.push_back(p);
  }
  return out;
}

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_CONVERSION_PAGEDATTNTOGPU_KERNELPARAMS_H
