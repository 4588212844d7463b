//===- host_tests_tmp.cpp - tmp_output's type at run time -----------------===//
//
// `tmp_dtype any` bundles (docs/bundle-format.md): their partition and
// reduce kernels take tmp_output's element type as the tmp_f32 parameter,
// so one bundle serves a workspace in f32 and one in the dtype. The
// manifest's checks, the variant choice (scan and index), the marshalled
// flag, wide twins, and bundles of older builds with a fixed tmp_dtype.
//
//===----------------------------------------------------------------------===//

#include "host_test_support.h"

namespace pa_test {

namespace {

Spec anySpec(const std::string &name = "f16_d128_h4_any_sm70") {
  Spec s;
  s.name = name;
  s.tmp = "any";
  return s;
}

/// The i32 parameter `id` of `kernel` as marshalled, or -1 if it takes none.
int32_t marshalledI32(const KernelDesc &kernel, const pa_decode_args &a,
                      const DecodePlan &plan, ParamId id) {
  KernelArgs k;
  marshalParams(kernel, a, plan, k);
  for (int i = 0; i < k.count; ++i)
    if (kernel.params[i] == id)
      return *static_cast<int32_t *>(k.pointers[i]);
  return -1;
}

void tmpManifestTests() {
  run("tmp_any_manifest", [] {
    BundleDesc d = descFor(anySpec());
    CHECK(d.tmpAny);
    CHECK(d.takes(ParamId::TmpF32, Role::Partition));
    CHECK(d.takes(ParamId::TmpF32, Role::Reduce));
    CHECK(!d.takes(ParamId::TmpF32, Role::OnePass));
    CHECK_EQ(std::string(paramName(ParamId::TmpF32)), "tmp_f32");
    CHECK(!isPointerParam(ParamId::TmpF32));
    // A bundle of an older build names its one tmp type.
    CHECK(!descFor(Spec()).tmpAny);
  });

  // "any" without the parameter: the kernels could not be told the type.
  run("tmp_any_needs_the_parameter", [] {
    std::vector<std::string> lines =
        replaced(manifestLines(Spec()), "tmp_dtype", "tmp_dtype any");
    BundleDesc d;
    CHECK_STATUS(parseManifest(join(lines), "mem/t.manifest", d),
                 PA_ERROR_BUNDLE,
                 at("mem/t.manifest", lineOf(lines, "tmp_dtype")) +
                     "tmp_dtype any, but the partition kernel does not "
                     "take tmp_f32");
    Spec s = anySpec();
    lines = manifestLines(s);
    std::string reduce = "params reduce";
    int line = lineOf(lines, reduce);
    lines[line - 1] = lines[line - 1].substr(
        0, lines[line - 1].size() - std::string(" tmp_f32").size());
    CHECK_STATUS(parseManifest(join(lines), "mem/t.manifest", d),
                 PA_ERROR_BUNDLE, "the reduce kernel does not take tmp_f32");
    // Other values are still refused as before.
    lines = replaced(manifestLines(s), "tmp_dtype", "tmp_dtype anything");
    CHECK_STATUS(parseManifest(join(lines), "mem/t.manifest", d),
                 PA_ERROR_BUNDLE, "unknown tmp_dtype 'anything'");
  });
}

void tmpSelectionTests() {
  // One bundle serves f32 and the dtype, not another 16-bit type.
  run("tmp_any_serves_both", [] {
    std::vector<BundleDesc> descs = {descFor(anySpec())};
    VariantIndex index;
    index.rebuild(descs);
    for (pa_dtype tmp : {PA_F32, PA_F16, PA_BF16}) {
      VariantKey key{PA_F16, tmp, 128, 16, 4};
      int want = tmp == PA_BF16 ? -1 : 0;
      CHECK_EQ(selectVariant(descs, kH200, key), want);
      CHECK_EQ(selectVariant(descs, index, kH200, key), want);
    }
    // An f32 query's workspace is f32: served.
    Spec f32 = anySpec("f32_any");
    f32.dtype = "f32";
    descs = {descFor(f32)};
    index.rebuild(descs);
    CHECK_EQ(selectVariant(descs, index, kH200, {PA_F32, PA_F32, 128, 16, 4}),
             0);
  });

  // Beside bundles of an older build (fixed tmp types) the rules are the
  // usual ones (newest chip, tile, lean, warps, then load order): scan and
  // index agree, and each tmp type finds a bundle.
  run("tmp_any_beside_fixed_bundles", [] {
    Spec f32 = Spec(), f16 = Spec(), any70 = anySpec(), any90 = anySpec("a90");
    f32.name = "fixed_f32";
    f16.name = "fixed_f16";
    f16.tmp = "f16";
    any90.chip = "sm_90";
    std::vector<BundleDesc> descs = {descFor(f32), descFor(f16),
                                     descFor(any70)};
    VariantIndex index;
    index.rebuild(descs);
    for (pa_dtype tmp : {PA_F32, PA_F16}) {
      VariantKey key{PA_F16, tmp, 128, 16, 4};
      int i = selectVariant(descs, index, kH200, key);
      CHECK_EQ(i, tmp == PA_F32 ? 0 : 1); // same chip and kernel: load order
      CHECK_EQ(selectVariant(descs, kH200, key), i);
    }
    descs.push_back(descFor(any90)); // newer chip: it serves both
    index.rebuild(descs);
    for (pa_dtype tmp : {PA_F32, PA_F16})
      CHECK_EQ(selectVariant(descs, index, kH200, {PA_F16, tmp, 128, 16, 4}),
               3);
  });

  // Same-kernel wide twins link among `any` bundles, not with a fixed one.
  run("tmp_any_wide_twins", [] {
    Spec wide = anySpec("wide"), fixedWide = Spec();
    wide.warps = 8;
    fixedWide.name = "fixed_wide";
    fixedWide.warps = 8;
    std::vector<BundleDesc> descs = {descFor(anySpec()), descFor(Spec()),
                                     descFor(wide), descFor(fixedWide)};
    linkWideTwins(descs);
    CHECK_EQ(descs[0].wideTwin, 2);
    CHECK_EQ(descs[1].wideTwin, 3);
  });
}

void tmpCallTests() {
  // The flag follows the call's tmp_dtype: 1 f32, 0 the dtype; the
  // one-pass kernel takes none.
  run("tmp_any_marshal", [] {
    BundleDesc d = descFor(anySpec());
    for (pa_dtype tmp : {PA_F32, PA_F16}) {
      pa_decode_args a = validArgs();
      a.tmp_dtype = tmp;
      DecodePlan plan;
      CHECK_OK(planDecode(kH200, {d}, a, true, plan));
      int32_t want = tmp == PA_F32 ? 1 : 0;
      CHECK_EQ(marshalledI32(d.kernel(Role::Partition), a, plan,
                             ParamId::TmpF32),
               want);
      CHECK_EQ(marshalledI32(d.kernel(Role::Reduce), a, plan, ParamId::TmpF32),
               want);
      CHECK_EQ(marshalledI32(d.kernel(Role::OnePass), a, plan,
                             ParamId::TmpF32),
               -1);
    }
  });

  // Through the C API: one loaded bundle plans calls of both tmp types; a
  // library of fixed f32 bundles still refuses an f16 workspace, naming it.
  run("tmp_any_plans_both", [] {
    HostContext h(kH200, {anySpec()});
    for (pa_dtype tmp : {PA_F32, PA_F16}) {
      pa_decode_args a = validArgs();
      a.tmp_dtype = tmp;
      pa_plan plan;
      CHECK_OK(pa_plan_decode_v2(h.ctx, &a, &plan));
      CHECK_EQ(std::string(plan.variant), "f16_d128_h4_any_sm70");
    }
    HostContext old(kH200, {Spec()});
    pa_decode_args a = validArgs();
    a.tmp_dtype = PA_F16;
    pa_plan plan;
    CHECK_STATUS(pa_plan_decode_v2(old.ctx, &a, &plan), PA_ERROR_UNSUPPORTED,
                 "tmp_dtype f16");
  });
}

} // namespace

void tmpDtypeTests() {
  tmpManifestTests();
  tmpSelectionTests();
  tmpCallTests();
}

} // namespace pa_test
