//===- host_tests_query_tokens.cpp - several query tokens per sequence ----===//
//
// query_start_loc and max_query_len (docs/features.md, "Several query
// tokens"): their argument checks, the grids that carry the query slots,
// the kernel parameters, and a bundle written before them refusing such a
// call.
//
//===----------------------------------------------------------------------===//

#include "host_test_support.h"

namespace pa_test {

namespace {

/// validArgs() with 4 query tokens per sequence at most.
pa_decode_args multiTokenArgs() {
  pa_decode_args a = validArgs();
  a.query_start_loc = 0x200000;
  a.max_query_len = 4;
  return a;
}

Spec multiTokenSpec() {
  Spec s;
  s.queryTokens = true;
  return s;
}

pa_status planWith(const Spec &spec, const pa_decode_args &a, pa_plan &plan) {
  HostContext h(kH200, {spec});
  std::memset(&plan, 0xff, sizeof(plan));
  return pa_plan_decode_v2(h.ctx, &a, &plan);
}

} // namespace

void queryTokenTests() {
  run("query_tokens_args", [] {
    HostContext h(kH200, {multiTokenSpec()});
    pa_plan plan;
    pa_decode_args a = multiTokenArgs();
    CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    for (int len : {1, 16}) {
      a.max_query_len = len;
      CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    }
    for (int len : {0, -1, 17}) {
      a.max_query_len = len;
      CHECK_STATUS(pa_plan_decode_v2(h.ctx, &a, &plan),
                   PA_ERROR_INVALID_ARGUMENT,
                   "must be in [1, 16] with query_start_loc");
    }
    a = multiTokenArgs();
    a.query_start_loc += 2;
    CHECK_STATUS(pa_plan_decode_v2(h.ctx, &a, &plan), PA_ERROR_INVALID_ARGUMENT,
                 "query_start_loc (0x200002) must be 4-byte aligned");
    // Without query_start_loc: one token per sequence; 0 or 1 only.
    a = validArgs();
    for (int len : {0, 1}) {
      a.max_query_len = len;
      CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
    }
    a.max_query_len = 4;
    CHECK_STATUS(pa_plan_decode_v2(h.ctx, &a, &plan), PA_ERROR_INVALID_ARGUMENT,
                 "max_query_len (4) needs query_start_loc");
  });

  // Fixed grid: every workspace partition, times the 4 query slots; the
  // reduce grid's x likewise. One token per sequence keeps the old grids.
  run("query_tokens_fixed_grids", [] {
    pa_decode_args one = validArgs(), many = multiTokenArgs();
    one.max_seq_len = many.max_seq_len = 0;
    pa_plan p1, p4;
    CHECK_OK(planWith(multiTokenSpec(), one, p1));
    CHECK_OK(planWith(multiTokenSpec(), many, p4));
    CHECK_EQ(p1.num_partitions, 64);
    CHECK_EQ(p4.num_partitions, 64);
    CHECK_EQ(p4.grid[0], 4 * p1.grid[0]);
    CHECK_EQ(p4.grid[1], p1.grid[1]);
    CHECK_EQ(p4.grid[2], unsigned(one.num_seqs));
    CHECK_EQ(p4.reduce_grid[0], 4 * p1.reduce_grid[0]);
    CHECK_EQ(p4.reduce_grid[1], unsigned(one.num_seqs));
  });

  // Adaptive: the query slots count as programs, so the rule never picks
  // more partitions than for one token, and the grid carries the slots.
  run("query_tokens_adaptive_grids", [] {
    pa_decode_args one = validArgs(), many = multiTokenArgs();
    one.num_seqs = many.num_seqs = 64;
    pa_plan p1, p4;
    CHECK_OK(planWith(multiTokenSpec(), one, p1));
    CHECK_OK(planWith(multiTokenSpec(), many, p4));
    CHECK(p4.num_partitions <= p1.num_partitions);
    CHECK_EQ(p4.grid[0], 4u * unsigned(p4.num_partitions));
    CHECK_EQ(p4.grid[2], 64u);
  });

  // The kernels get the pointer and the count; with one token per sequence
  // max_query_len is 0 and the pointer a valid stand-in never read.
  run("query_tokens_marshal", [] {
    BundleDesc d = descFor(multiTokenSpec());
    for (bool multi : {true, false}) {
      pa_decode_args a = multi ? multiTokenArgs() : validArgs();
      DecodePlan plan;
      CHECK_OK(planDecode(kH200, {d}, a, true, plan));
      KernelArgs k;
      for (Role role : {Role::Partition, Role::Reduce}) {
        marshalParams(d.kernel(role), a, plan, k);
        CHECK(k.count >= 2);
        CHECK_EQ(k.values[k.count - 2].ptr,
                 multi ? a.query_start_loc : a.seq_lens);
        CHECK_EQ(*static_cast<int32_t *>(k.pointers[k.count - 1]),
                 multi ? 4 : 0);
      }
    }
  });

  // A bundle whose kernels do not take them cannot serve such a call.
  run("query_tokens_need_a_bundle_that_takes_them", [] {
    pa_decode_args a = multiTokenArgs();
    pa_plan plan;
    CHECK_STATUS(planWith(Spec(), a, plan), PA_ERROR_UNSUPPORTED,
                 "with several query tokens per sequence");
    CHECK(descFor(multiTokenSpec()).takesQueryTokens());
    CHECK(!descFor(Spec()).takesQueryTokens());
    a.query_start_loc = 0;
    a.max_query_len = 0;
    CHECK_OK(planWith(Spec(), a, plan));
  });
  run("query_tokens_pick_the_packing_tile", [] {
    // Tensor-core tiles of 8 and 16 rows, group 4 (32 / 8 heads): one
    // token per sequence runs the 8-row tile (it covers the group); with
    // max_query_len 4 the 16-row tile packs 4 tokens per program, so K/V
    // are read by one program instead of 2 (8 tokens: 2 instead of 4).
    auto tile = [](int rows, bool packs) {
      Spec s = multiTokenSpec();
      s.name = "f16_d128_h" + std::to_string(rows) + (packs ? "_mma" : "") +
               "_sm90";
      s.chip = "sm_90", s.block = 0, s.tile = rows, s.packsTokens = packs;
      return s;
    };
    auto planned = [](const std::vector<Spec> &specs, int queryLen) {
      HostContext h(kH200, specs);
      pa_decode_args a = queryLen ? multiTokenArgs() : validArgs();
      if (queryLen)
        a.max_query_len = queryLen;
      pa_plan plan;
      std::memset(&plan, 0, sizeof(plan));
      pa_status s = pa_plan_decode_v2(h.ctx, &a, &plan);
      return s.code == PA_OK ? std::string(plan.variant) : std::string(s.message);
    };
    std::vector<Spec> mma = {tile(8, true), tile(16, true)};
    CHECK_EQ(planned(mma, 0), "f16_d128_h8_mma_sm90");
    CHECK_EQ(planned(mma, 1), "f16_d128_h8_mma_sm90");
    CHECK_EQ(planned(mma, 2), "f16_d128_h8_mma_sm90"); // 1 program either way
    CHECK_EQ(planned(mma, 4), "f16_d128_h16_mma_sm90");
    CHECK_EQ(planned(mma, 8), "f16_d128_h16_mma_sm90");
    // Tiles that serve one token per program (SIMT): the group decides.
    std::vector<Spec> simt = {tile(8, false), tile(16, false)};
    CHECK_EQ(planned(simt, 8), "f16_d128_h8_sm90");
  });
}

} // namespace pa_test
