//===- PartitionProgram.h - what both partition kernels share ---*- C++ -*-===//
//
// The SIMT and the tensor-core partition kernels differ only in how a warp
// consumes its token steps. Everything around that is here: the signature
// (the bundle ABI), the prologue (which program, which partition), the
// sentinels of empty partitions, and the epilogue that merges the warps'
// online-softmax states through workgroup memory and writes the partition's
// statistics and partial output (or, one-pass, the output).
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_PARTITIONPROGRAM_H
#define PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_PARTITIONPROGRAM_H

#include "KernelIdioms.h"
#include "KernelPlan.h"
#include "PagedAttn/Conversion/PagedAttnToGPU/KernelParams.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::paged_attn {

/// Builds one partition (or one-pass) kernel; subclasses emit the token
/// loop. Grid (partitions x query slots, KV heads x head tiles, sequences):
/// KernelIdioms.h, QueryRow.
class PartitionProgram {
public:
  PartitionProgram(const KernelPlan &plan, KernelRole role)
      : plan(plan), onePass(role != KernelRole::Partition),
        clusterSize(role == KernelRole::Cluster ? plan.clusterSize : 0) {}
  virtual ~PartitionProgram() = default;

  gpu::GPUFuncOp build(OpBuilder &moduleBuilder, Location loc);

protected:
  /// The work of a non-empty partition: the token loop (emitStepLoop), each
  /// warp's state stored in the epilogue layout, then emitEpilogue.
  virtual void emitPartition(ImplicitLocOpBuilder &b) = 0;
  /// What a program loads before it knows its range (the tensor-core
  /// one-pass kernel: the tile's query, MmaPartitionBuilder::hoistsQuery),
  /// so that those loads overlap the seq_lens load instead of following it.
  virtual void stageOperands(ImplicitLocOpBuilder &b) {}

  /// How a step's tokens are masked: not at all (every token inside the
  /// program's range), against the program's range [rangeStart, partEnd)
  /// (tokenValid), or each packed slot against its own token's range (a
  /// program serving several query tokens).
  enum class StepMask { none, range, slots };
  /// One warp step at index `step` (tokens stepBase + step * tokenStep ...),
  /// masked as `mask` says; returns the new per-lane state.
  using StepFn = llvm::function_ref<SmallVector<Value>(
      ImplicitLocOpBuilder &, Value step, StepMask mask, SmallVector<Value>)>;
  /// Values a warp prepares before its whole steps, given its first whole
  /// step and the number of whole steps (e.g. the loads of its first step,
  /// for a loop that loads one step ahead).
  using PrologueFn = llvm::function_ref<SmallVector<Value>(
      ImplicitLocOpBuilder &, Value first, Value full)>;
  /// What a step's slots share, built once before the masked steps.
  using SetupFn = llvm::function_ref<void(ImplicitLocOpBuilder &)>;
  /// The partition's steps from stepBase to partEnd. The whole steps inside
  /// [innerStart, innerEnd), tokens every slot attends, run unmasked, round
  /// robin over the warps. The others, at most two before and two after
  /// (the sliding window's start, the range's end, and with several query
  /// tokens per program the tokens only some of them attend), continue the
  /// round robin through one masked body: StepMask::slots in kernels that
  /// pack tokens (after `edgeSetup`, which builds what those steps share:
  /// a division left in a step is not hoisted past the loop's guard), else
  /// StepMask::range. With a prologue, its values follow the state through
  /// the unmasked steps (which must return them, updated) and are dropped
  /// before the masked ones. Returns the final state.
  SmallVector<Value> emitStepLoop(ImplicitLocOpBuilder &b,
                                  SmallVector<Value> state, StepFn step,
                                  PrologueFn prologue = nullptr,
                                  SetupFn edgeSetup = nullptr);
  /// The block-table entry `rawEntry` (i32, as loaded) made safe to
  /// dereference: itself when 0 <= entry < num_blocks, else 0 (block 0's
  /// address); and whether it was bad (i1). One compare and one select per
  /// entry load; call it at every load of block_tables. The kernel then
  /// gives the logits of that block's tokens NaN (poisonIf) before its
  /// masks: a slot that attends to one of them has a NaN softmax sum, so
  /// its output is NaN (docs/features.md, "Bad block tables"). The entry is
  /// recorded off the hot path (emitRangeCheck, or the reducer).
  struct CheckedEntry {
    Value entry, bad;
  };
  CheckedEntry checkedEntry(ImplicitLocOpBuilder &b, Value rawEntry);
  /// `v` (f32), or NaN where `isBad` (i1).
  Value poisonIf(ImplicitLocOpBuilder &b, Value isBad, Value v);

  /// First token of warp step `step`.
  Value stepToken(ImplicitLocOpBuilder &b, Value step);
  /// The logical block of token `tok` (tok / block_size) and its slot in
  /// it (tok % block_size); `v` * block_size. block_size is the kernel's
  /// run-time parameter, a power of two: shifts and a mask.
  Value blockOf(ImplicitLocOpBuilder &b, Value tok);
  Value blockSlotOf(ImplicitLocOpBuilder &b, Value tok);
  Value timesBlock(ImplicitLocOpBuilder &b, Value v);
  /// Element offset of key_cache[phys, kvh, chunk, slot, 0]: `base` (that
  /// of [phys, kvh]) + (chunk * block_size + slot) * x.
  Value keyChunkOffset(ImplicitLocOpBuilder &b, Value base, Value chunk,
                       Value slot);
  /// Whether token `tok` is attended in a masked step: rangeStart <= tok <
  /// partEnd.
  Value tokenValid(ImplicitLocOpBuilder &b, Value tok);

  /// ALiBi slope of query head `head` times log2(e) (0 when the call has no
  /// ALiBi); only in _ext variants.
  Value alibiSlopeLog2(ImplicitLocOpBuilder &b, Value head);
  /// The ALiBi position of token `tok` as f32: tok - seq_len + 1 (<= 0).
  Value alibiPosition(ImplicitLocOpBuilder &b, Value tok);
  /// Logits soft cap applied to scores in the log2 domain, when enabled at
  /// run time (one uniform branch): s -> C tanh(s / C), C = cap * log2(e).
  /// The scores unchanged in variants without it.
  SmallVector<Value> softCap(ImplicitLocOpBuilder &b, ArrayRef<Value> scores);

  /// Whether the kernel packs several query tokens of a sequence into its
  /// tile (the tensor-core kernel: a GQA group smaller than the tile leaves
  /// rows for the next tokens' heads).
  bool packsTokens() const { return plan.packsTokens(); }
  /// Query tokens per program: max(heads_per_program / group, 1) when the
  /// kernel packs tokens and the call has several, else 1.
  Value tokensPerProgram(ImplicitLocOpBuilder &b, Value groupLen);
  /// What tile slot g computes: a query head of a query row (token), and
  /// whether the slot exists (the last tile of a group that is not a
  /// multiple of the tile is masked, as are packed slots past the
  /// sequence's tokens). An invalid slot has the program's row and token.
  struct Slot {
    Value head, valid, row, token;
  };
  Slot slotOf(ImplicitLocOpBuilder &b, Value g);
  /// Query head of tile slot g, and whether it exists.
  std::pair<Value, Value> headOf(ImplicitLocOpBuilder &b, int64_t g);
  /// headOf(g), or the group's last head where slot g is masked: a row of
  /// the query that exists, whose results are dropped.
  Value safeHeadOf(ImplicitLocOpBuilder &b, int64_t g);
  /// Same, for a slot index computed at run time.
  std::pair<Value, Value> headOfSlot(ImplicitLocOpBuilder &b, Value slot);

  /// Stages the tile's query once per program, then one barrier: the
  /// threads take the (slot, chunk) pairs of `rows` x `chunks` 8-element
  /// chunks and hand `store` query[row, head of slot, 8 chunk ..], or zeros
  /// for masked slots, slots from `liveRows` on and chunks past head_size.
  using QueryStoreFn = llvm::function_ref<void(
      ImplicitLocOpBuilder &, Value chunkVec, Value slot, Value chunk)>;
  void stageQuery(ImplicitLocOpBuilder &b, int64_t rows, int64_t liveRows,
                  int64_t chunks, QueryStoreFn store);
  /// stageQuery in two halves, so that the loads can be issued early and
  /// the stores wait for them later: a thread's chunks of one round
  /// (`live`: whether it has one), loaded without branches (the threads
  /// past the last chunk load the last one's address again).
  struct QueryChunk {
    Value live, slot, chunk, value;
  };
  SmallVector<QueryChunk> loadQuery(ImplicitLocOpBuilder &b, int64_t rows,
                                    int64_t liveRows, int64_t chunks);
  /// Chunk `i` (< rows * chunks) of the tile: its slot, chunk and value
  /// (zeros for masked slots and chunks past head_size; `pinned`: loaded by
  /// loadVectorPinned); no `live`.
  QueryChunk queryChunk(ImplicitLocOpBuilder &b, Value i, int64_t rows,
                        int64_t liveRows, int64_t chunks, bool pinned);
  /// Stores the live chunks, then one barrier.
  void storeQuery(ImplicitLocOpBuilder &b, ArrayRef<QueryChunk> loaded,
                  QueryStoreFn store);

  /// Epilogue layout, in f32 words of `shared`: acc[warp][g][dim], then
  /// m[warp][g] (log2 domain), then l[warp][g].
  Value accIndex(ImplicitLocOpBuilder &b, Value warpIdx, Value g, Value dim);
  Value mIndex(ImplicitLocOpBuilder &b, Value warpIdx, Value g);
  Value lIndex(ImplicitLocOpBuilder &b, Value warpIdx, Value g);
  /// Index of the first f32 word after the epilogue layout (kernel scratch).
  int64_t scratchBase() const { return plan.scratchBase(); }

  /// After a barrier: every thread finishes (head, dim) pairs, merging the
  /// warps with the log-sum-exp rule, and stores tmp_output, exp_sums and
  /// max_logits (or the output, one-pass; the cluster kernel merges its
  /// cluster's programs first: emitClusterEpilogue).
  void emitEpilogue(ImplicitLocOpBuilder &b);
  /// An online-softmax state in the log2 domain: max, sum and the
  /// accumulator of one (head, dim) pair.
  struct MergeState {
    Value m, l, acc;
  };
  /// The program's warps' states of slot g, dim `dim` merged; with `head`
  /// (the slot's query head) the attention sink joins them.
  MergeState mergeWarps(ImplicitLocOpBuilder &b, Value g, Value dim,
                          Value head);
  /// output[slot s's row, head, dim] = acc / l (times v_scale for fp8).
  void storeOutput(ImplicitLocOpBuilder &b, const Slot &s, Value dim,
                   const MergeState &st);
  /// The cluster kernel's epilogue: each program stores its warps' merged
  /// state at the scratch's place, then (after a cluster barrier) finishes
  /// its share of the (head, dim) pairs from every program's state, read
  /// over distributed shared memory (mapa), and a last cluster barrier
  /// keeps the states alive until all are read.
  void emitClusterEpilogue(ImplicitLocOpBuilder &b);
  /// The cluster area, at the scratch's place (dead after the token loop):
  /// acc[g][dim] from word 0, m[g] from heads * head_size, l[g] after;
  /// `idx` + `offset` as an index of `shared`.
  Value clusterIndex(ImplicitLocOpBuilder &b, Value idx, int64_t offset);
  /// Each thread's (head, dim) pairs of the program's warps, merged (no
  /// sink), into the cluster area.
  void storeProgramState(ImplicitLocOpBuilder &b);
  /// After the cluster barrier: the program's share of the pairs, every
  /// rank's state merged (with the sink) and stored to the output.
  void mergeCluster(ImplicitLocOpBuilder &b);
  /// `shared` of each program of the cluster, by rank (mapa: pointers in
  /// address space 7, the cluster's shared memory), and the f32 at word
  /// `idx` of one of them (ld.shared::cluster).
  SmallVector<Value> clusterViews(ImplicitLocOpBuilder &b);
  Value loadRemote(ImplicitLocOpBuilder &b, Value view, Value idx);
  /// tmp_output[idx] = result (f32) in the tmp type tmp_f32 picks.
  void storeTmp(ImplicitLocOpBuilder &b, Value result, Value idx);

  const KernelPlan &plan;
  /// Writes the output (one-pass and cluster kernels), no workspace.
  bool onePass;
  /// The cluster kernel: its programs per cluster (0 in the others). A
  /// cluster's programs split the context (`part` is the program's rank)
  /// and merge their states over distributed shared memory.
  int64_t clusterSize;

  // Kernel arguments.
  Value query, keyCache, valueCache, blockTables, seqLens, output, expSums,
      maxLogits, tmpOutput, tmpF32, scale, maxBlocks, maxParts, partTokens,
      partSplit, numKvHeads, groupSize, blockSizeArg, alibiSlopes, hasAlibi,
      slidingWindow, logitsSoftCap, sinks, hasSinks, queryStartLoc, maxQueryLen,
      numBlocks, errorWord, shared;
  // The wmma kernel's workgroup memory is one byte buffer (32-byte aligned)
  // that `shared` views as f32 and the kernel as f16; null otherwise.
  Value sharedBuffer;
  // tmp_output's views (the epilogue's; not the one-pass kernel's).
  TmpViews tmp;
  // Values computed once in the prologue. The partition attends to
  // [rangeStart, partEnd): its tokens, from the sliding window's start on;
  // its steps start at stepBase (rangeStart rounded down to a step). Every
  // slot of the program attends to [innerStart, innerEnd) (the same range
  // unless the program packs several query tokens).
  // `seq` indexes block_tables and seq_lens, `row` the query, output and
  // workspace (the query token: KernelIdioms.h, QueryRow); `seqLen` is the
  // row's context length.
  Value tid, lane, warp, part, seq, row, kvHead, tile, numHeads, seqLen,
      partStart, partEnd, rangeStart, stepBase, innerStart, innerEnd, blockRow,
      kvHeadOffset, blockStride;
  // The program's query tokens (KernelIdioms.h) and how many it serves.
  QueryRow tokens;
  Value perProgram;
  // block_size (index), log2(block_size) and block_size - 1.
  Value blockLen, blockShift, blockMask;
  // Soft cap: enabled flag, C = cap * log2(e) and 2 log2(e) / C.
  Value capOn, capLog2, capInvScale;
  // fp8 caches: `scale` above already includes k_scale; the factor for the
  // partition's output (v_scale), null otherwise.
  Value valueScale;
  // Bounds: whether seq_lens[seq] is bad (i1, uniform; such a program
  // reads nothing).
  Value seqLenBad;

private:
  void emitBody(ImplicitLocOpBuilder &b);
  /// The prologue's block values: blockLen, blockShift, blockMask, the
  /// (block, KV head) slab's kvHeadOffset and the blockStride.
  void emitBlockAddressing(ImplicitLocOpBuilder &b);
  /// The tokens of partition `unit` of a context of `ctx` tokens (the
  /// program's last query token's): [unit * partition_tokens, min(that +
  /// partition_tokens, ctx)), one-pass [0, ctx).
  std::pair<Value, Value> partitionOf(ImplicitLocOpBuilder &b, Value unit,
                                      Value ctx);
  void emitSentinels(ImplicitLocOpBuilder &b);
  /// One-pass: prefetches (L1) the block table's first line, so that its
  /// first entries arrive with seq_len rather than one round trip to
  /// memory after it (the range check and the first steps read them).
  void prefetchFirstBlocks(ImplicitLocOpBuilder &b);
  /// One-pass, before the token loop: the threads check the blocks of the
  /// program's range [rangeStart, partEnd) (a block each, mostly) and, after
  /// a barrier, each that found a bad one records it. The partition kernel
  /// leaves recording to the reducer, which sees its NaN exp_sums. Here,
  /// what it needs dies before the loop: checked in the epilogue, it made
  /// the tiles at their register caps spill (as did the check without the
  /// barrier).
  void emitRangeCheck(ImplicitLocOpBuilder &b);
  /// One-pass with a bad seq_len: thread 0 records it, every thread stores
  /// NaN in its (slot, dim) pairs of the output; nothing is read.
  void emitBadLength(ImplicitLocOpBuilder &b);
};

/// The tensor-core partition kernel (MmaPartitionKernel.cpp).
gpu::GPUFuncOp buildMmaPartitionKernel(OpBuilder &moduleBuilder, Location loc,
                                       const KernelPlan &plan, KernelRole role);
/// The wmma partition kernel (WmmaPartitionKernel.cpp).
gpu::GPUFuncOp buildWmmaPartitionKernel(OpBuilder &moduleBuilder, Location loc,
                                        const KernelPlan &plan, KernelRole role);
/// The SIMT partition kernel (PartitionKernel.cpp).
gpu::GPUFuncOp buildSimtPartitionKernel(OpBuilder &moduleBuilder, Location loc,
                                        const KernelPlan &plan, KernelRole role);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_PARTITIONPROGRAM_H
