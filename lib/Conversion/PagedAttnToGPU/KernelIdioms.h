//===- KernelIdioms.h - small IR idioms the kernels share -------*- C++ -*-===//
//
// The handful of constructs both kernels emit the same way: 16-byte vector
// loads, conversion to fp32, warp shuffles, index arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELIDIOMS_H
#define PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELIDIOMS_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::paged_attn {

/// An index constant.
Value cIdx(ImplicitLocOpBuilder &b, int64_t v);
/// An f32 constant.
Value cF32(ImplicitLocOpBuilder &b, float v);
/// An i32 constant.
Value cI32(ImplicitLocOpBuilder &b, int64_t v);
/// An i32 kernel argument (or loaded i32) as an index.
Value toIndex(ImplicitLocOpBuilder &b, Value i32);
/// The sliding window's first token, max(seqLen - window, 0) (index), for
/// the i32 kernel parameter `window` (0: no window, the result is 0).
Value slidingWindowStart(ImplicitLocOpBuilder &b, Value seqLen, Value window);

/// Context tokens per partition for a sequence of `len` tokens (index), from
/// the i32 kernel parameters partition_tokens (T) and partition_split (P):
/// T when P = 0, else roundup(max(ceil(len / P), 1), T), which splits len
/// into at most P partitions (the runtime's fixed grid: docs/runtime.md).
/// The partition and reduce kernels compute it alike.
Value partitionTokensOf(ImplicitLocOpBuilder &b, Value len, Value tokens,
                        Value split);

/// Where a program's query rows lie (docs/features.md, "Several query
/// tokens"). A program serves `perProgram` (P) consecutive query tokens of
/// its sequence `seq`, from token j0: one everywhere but in the tensor-core
/// tiles that pack a GQA group's heads of several tokens. The grid's x
/// coordinate carries the program's pack of tokens as its fastest part:
/// gridX = unit * packs + j0 / P, packs = ceil(max(max_query_len, 1) / P),
/// so the programs of one sequence's tokens are neighbours and share their
/// K/V reads in L2.
struct QueryRow {
  Value unit;   // gridX / packs: the program's partition (or head block)
  Value start;  // the sequence's first row: query_start_loc[seq] (or seq)
  Value qLen;   // its query tokens: q_len (or 1)
  Value j0;     // the program's first token
  Value len;    // seq_lens[seq]
  Value row;    // the first token's query, output and workspace row
  Value seqLen; // context tokens the program's last token attends to
  Value live;   // i1, j0 < q_len: the other programs have no row
  // With a capacity: seq_lens[seq] as loaded (i32), and whether it is bad
  // (negative or above the capacity; i1). A bad length counts as 0 tokens
  // (`len` is then 0).
  Value rawLen, lenBad;
};
/// The query rows of the program at (`gridX`, `seq`), from the kernel
/// parameters seq_lens, query_start_loc and max_query_len (i32; 0: one
/// token per sequence, query_start_loc not read) and `perProgram` (index).
/// With `capacity` (index: max_blocks_per_seq * block_size), seq_lens[seq]
/// is checked against it. gridX is unit * packs + pack, or with a
/// `clusterSize` (the cluster kernel, whose cluster's programs are adjacent
/// in x) pack * clusterSize + unit.
QueryRow queryRowOf(ImplicitLocOpBuilder &b, Value gridX, Value seq,
                    Value seqLens, Value queryStartLoc, Value maxQueryLen,
                    Value perProgram, Value capacity = {},
                    int64_t clusterSize = 0);
/// Context tokens query token `j` of `q`'s sequence attends to:
/// max(seq_lens[seq] - q_len + j + 1, 0).
Value tokenContext(ImplicitLocOpBuilder &b, const QueryRow &q, Value j);

/// Bad block tables (docs/runtime.md), cold paths of the kernels that
/// normalize the softmax (one-pass, reduce). Counts a bad input in
/// error_word[0] and, if it is the first, stores (seq, index, value) in
/// error_word[1..4) (i32 values; index -1: seq_lens[seq]).
void recordBadInput(ImplicitLocOpBuilder &b, Value errorWord, Value seq,
                    Value index, Value value);
/// Records the highest logical block of the tokens [start, end) (index;
/// `shift` = log2(block_size)) whose entry in block_tables row `tableRow`
/// (index) is outside [0, num_blocks); nothing when none is. Downwards: a
/// range [s, end) with s <= start whose blocks from start on are attended
/// records an attended bad entry whenever there is one.
void recordLastBadEntry(ImplicitLocOpBuilder &b, Value blockTables,
                         Value tableRow, Value numBlocks, Value shift,
                         Value start, Value end, Value errorWord, Value seq);

/// Loads `n` elements at `memref[offset]` as one vector with the alignment
/// of its size (16 bytes for the cache and query chunks): one ld.global.v4.
Value loadVector(ImplicitLocOpBuilder &b, Value memref, Value offset,
                 int64_t n);
/// loadVector of 4, 8 or 16 bytes of global memory, issued where it stands:
/// an inline-PTX ld.global with side effects, so that LLVM does not sink it
/// past a branch on another load (it would then wait for that load first).
Value loadVectorPinned(ImplicitLocOpBuilder &b, Value memref, Value offset,
                       int64_t n);
/// Asks the L1 (and L2) to fetch the line of global memory holding
/// `memref[offset]`: prefetch.global.L1, inline PTX, no result.
void prefetchL1(ImplicitLocOpBuilder &b, Value memref, Value offset);
/// loadVector of 4, 8 or 16 bytes of global memory with the L2 prefetch
/// size hint `l2Bytes` (64, 128 or 256; 0 is loadVector):
/// ld.global.L2::<l2Bytes>B, inline PTX (LLVM's NVPTX has no such load).
/// The cache is read-only while a kernel runs, so the asm is pure.
Value loadVectorL2(ImplicitLocOpBuilder &b, Value memref, Value offset,
                   int64_t n, int64_t l2Bytes);
/// Converts a loaded vector to fp32 scalars (bf16 by a 16-bit shift, f16 by
/// cvt, f32 as is; fp8 by cvt.f16x2 where `fp8Hardware` (sm_89+), else by
/// shifts, e4m3 then being 2^-8 of its value: KernelPlan::cacheFactor).
SmallVector<Value> toF32Scalars(ImplicitLocOpBuilder &b, Value vec,
                                bool fp8Hardware = false);
/// Elements i, i + 1 of `bytes` (an fp8 vector of `fp8Type` bitcast to i8)
/// as an exact vector<2xf16>: cvt.rn.f16x2.e4m3x2 / e5m2x2 (sm_89+).
Value fp8PairToF16(ImplicitLocOpBuilder &b, Value bytes, Type fp8Type,
                   int64_t i);
/// Converts an fp32 scalar to `type` (round to nearest even).
Value fromF32(ImplicitLocOpBuilder &b, Value f32, Type type);

/// tmp_output, whose element type is a run-time parameter (`tmp_f32`,
/// KernelParams.h): its bytes viewed (memref.view) as f32 and, for a 16-bit
/// query, as the query's type, and the i1 that picks one. The f32 view
/// alone (`isF32` null) for f32 queries, whose tmp_output is f32.
struct TmpViews {
  Value f32, half, isF32;
  /// Whether the kernel picks at run time (a 16-bit query).
  bool both() const { return static_cast<bool>(isF32); }
};
TmpViews viewTmpOutput(ImplicitLocOpBuilder &b, Value bytes, Value tmpF32,
                       Type queryType);

/// `gpu.shuffle xor` over the full warp.
Value shuffleXor(ImplicitLocOpBuilder &b, Value v, int64_t offset);
/// `gpu.shuffle idx` over the full warp: `v` of lane `srcLane` (an index).
Value shuffleIdx(ImplicitLocOpBuilder &b, Value v, Value srcLane);

/// exp2, as the ex2.approx.f32 instruction (-inf gives +0).
Value exp2(ImplicitLocOpBuilder &b, Value v);
/// a * x + c, contracted into one fma.rn.f32.
Value fma(ImplicitLocOpBuilder &b, Value a, Value x, Value c);
/// max(a, c) for values that are never NaN (-inf allowed).
Value maxf(ImplicitLocOpBuilder &b, Value a, Value c);

/// `v` combined with its xor partners at each of `offsets` in turn (a
/// butterfly over those lane bits): every lane ends with its group's total.
/// `combine` is maxf or addf.
Value xorReduce(ImplicitLocOpBuilder &b, Value v, ArrayRef<int64_t> offsets,
                Value (*combine)(ImplicitLocOpBuilder &, Value, Value));
/// The sum of `v` over the `size` lanes `stride` apart that form the lane's
/// cluster (`gpu.subgroup_reduce add`, lowered to the same xor butterfly
/// as xorReduce by upstream's shuffle patterns).
Value clusterSum(ImplicitLocOpBuilder &b, Value v, int64_t stride,
                 int64_t size);
/// The xor offsets first, 2 first, 4 first, ... below `end`.
SmallVector<int64_t> xorOffsets(int64_t first, int64_t end);
/// a + c (arith.addf), in the form xorReduce takes.
Value addf(ImplicitLocOpBuilder &b, Value a, Value c);

/// Folds one step's logits (log2 domain) of one query row into its running
/// online softmax (m, l), the one update every partition kernel uses: the
/// step max over `logits` and over the lanes at xor `offsets` (the row's
/// other tokens), mNew = max(m, step max); appends the weights
/// p_i = 2^(logit_i - mNew) to `p`; l = l * alpha + sum(p); m = mNew.
/// Returns alpha = 2^(m - mNew), the old accumulators' rescale factor.
Value foldOnlineSoftmax(ImplicitLocOpBuilder &b, Value &m, Value &l,
                        ArrayRef<Value> logits, ArrayRef<int64_t> offsets,
                        SmallVectorImpl<Value> &p);

/// The attention sink of query head `head` (index) as an online-softmax
/// state (m, l) to merge where the softmax is normalized: (sinks[head] *
/// `domain`, 1) when the i32 kernel parameter `hasSinks` is nonzero (one
/// load, under a uniform branch), else (-FLT_MAX, 0), which merges as the
/// identity. `domain` is log2(e) for a state in the log2 domain, 1 for the
/// natural one.
std::pair<Value, Value> sinkState(ImplicitLocOpBuilder &b, Value sinks,
                                  Value hasSinks, Value head, double domain);

/// The softmax's normalization of a row that may have attended to no token.
/// normalize: `acc / l`, or `acc` itself where l == 0 (a row of no tokens:
/// its acc is 0, so the output is 0, as vLLM's kernels give; a NaN from a
/// bad input stays NaN either way). normalizer: the factor 1 / l, or 1
/// where l == 0, for callers that multiply by it.
Value normalize(ImplicitLocOpBuilder &b, Value acc, Value l);
Value normalizer(ImplicitLocOpBuilder &b, Value l);

} // namespace mlir::paged_attn

#endif // PAGED_ATTN_LIB_CONVERSION_PAGEDATTNTOGPU_KERNELIDIOMS_H
