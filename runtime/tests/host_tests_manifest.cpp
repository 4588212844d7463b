//===- host_tests_manifest.cpp - manifests, grids, variants ---------------===//
//
// Host tests of the bundle side: the manifest parser (a valid bundle and one
// broken copy per error, each naming file:line and the fault), the grid
// expressions, chip checks and variant selection with its GQA tiles.
//
//===----------------------------------------------------------------------===//

#include "host_test_support.h"

namespace pa_test {

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

namespace {

/// A broken copy of the valid manifest: one per error. Each names the file
/// and line (or the file, for a record that is missing) and what is wrong.
struct Broken {
  const char *test;
  const char *prefix; // line to replace ("" appends `with`)
  const char *with;   // replacement ("" erases the line)
  const char *expect; // in the message, after "path:line: " when line > 0
  bool atLine;        // the message points at the replaced line
};

/// The case of one broken manifest: its status and message.
void runBrokenManifest(const Broken &b) {
  run(b.test, [&b] {
    std::vector<std::string> lines = manifestLines(Spec());
    int line;
    if (b.prefix[0]) {
      line = lineOf(lines, b.prefix);
      lines = replaced(lines, b.prefix, b.with);
    } else {
      lines.push_back(b.with);
      line = int(lines.size());
    }
    std::string path = "lib/broken.manifest";
    BundleDesc d;
    pa_status st = parseManifest(join(lines), path, d);
    CHECK_EQ(int(st.code), int(PA_ERROR_BUNDLE));
    std::string message = st.message;
    if (std::string(b.test) == "manifest_error_params_without_kernel") {
      // Points at the orphaned params record, which moved up one line.
      std::string prefix = at(path, lineOf(lines, "params onepass"));
      CHECK_EQ(message.compare(0, prefix.size(), prefix), 0);
    } else if (b.atLine) {
      std::string prefix = at(path, line);
      CHECK_MSG(message.compare(0, prefix.size(), prefix) == 0,
                "message '" + message + "' does not start with '" + prefix +
                    "'");
    } else {
      std::string prefix = path + ": ";
      CHECK_EQ(message.compare(0, prefix.size(), prefix), 0);
    }
    CHECK_MSG(message.find(b.expect) != std::string::npos,
              "message '" + message + "' lacks '" + b.expect + "'");
  });
}

/// A valid manifest, every field parsed; the optional wide_twin_of.
void validManifestTests() {
  run("manifest_valid", [] {
    std::string dir = makeDir("valid");
    std::string path = writeBundle(dir, Spec());
    BundleDesc d;
    CHECK_OK(readManifest(path, d));
    CHECK_EQ(d.name, std::string("f16_d128_b16_h4_sm70"));
    CHECK_EQ(d.chip, std::string("sm_70"));
    CHECK_EQ(d.chipVersion, 70);
    CHECK(!d.chipArchSpecific);
    CHECK_EQ(d.ptxPath, dir + "/f16_d128_b16_h4_sm70.ptx");
    CHECK_EQ(int(d.dtype), int(PA_F16));
    CHECK_EQ(int(d.cacheDtype), int(PA_F16));
    CHECK_EQ(int(d.tmpDtype), int(PA_F32));
    CHECK_EQ(d.headSize, 128);
    CHECK_EQ(d.blockSize, 16);
    CHECK_EQ(d.headsPerProgram, 4);
    CHECK_EQ(d.warps, 4);
    CHECK_EQ(d.tokenStep, 16);
    const KernelDesc &p = d.kernel(Role::Partition);
    CHECK(p.present && p.hasParams && p.hasGrid);
    CHECK_EQ(p.symbol, std::string("pa_f16_d128_b16_h4_sm70_partition"));
    CHECK_EQ(p.threads, 128);
    CHECK_EQ(p.smem, 8448);
    CHECK_EQ(p.params.size(), size_t(16));
    CHECK(p.params[0] == ParamId::Query);
    CHECK(p.params[8] == ParamId::TmpOutput);
    CHECK(p.params[9] == ParamId::Scale);
    CHECK(p.params[14] == ParamId::GroupSize);
    CHECK(p.params[15] == ParamId::SlidingWindow);
    CHECK(d.hasOnePass());
    const KernelDesc &r = d.kernel(Role::Reduce);
    CHECK_EQ(r.params.size(), size_t(10));
    CHECK(r.params[5] == ParamId::NumHeads);
    CHECK(r.params[8] == ParamId::SlidingWindow);
    CHECK(r.params[9] == ParamId::NumPartitions);
    CHECK_EQ(r.grid[0].text,
             std::string("ceil(num_heads/ceil(4/ceil(num_partitions/8)))"));
    CHECK_EQ(r.grid[1].text, std::string("num_seqs"));
    CHECK_EQ(r.grid[2].text, std::string("1")); // omitted: 1
  });

  // wide_twin_of is optional; it names the bundle this one is the twin of.
  run("manifest_wide_twin_of", [] {
    Spec s;
    s.twinOf = "f16_d128_b16_h8_wmma_sm70";
    CHECK_EQ(descFor(s).twinOf, std::string("f16_d128_b16_h8_wmma_sm70"));
    CHECK_EQ(descFor(Spec()).twinOf, std::string());
    std::vector<std::string> lines = manifestLines(s);
    lines.push_back("wide_twin_of other_sm70");
    BundleDesc d;
    pa_status st = parseManifest(join(lines), "mem/t.manifest", d);
    CHECK_EQ(int(st.code), int(PA_ERROR_BUNDLE));
    CHECK(std::strstr(st.message, "duplicate record 'wide_twin_of'") !=
          nullptr);
  });
}

/// fp8 cache dtypes: the scale parameters, the names, x = 16 head sizes.
void fp8ManifestTests() {
  // fp8 caches: cache_dtype names an fp8 type (MLIR's names) beside a
  // 16- or 32-bit dtype; the kernels take the five scale parameters.
  run("manifest_fp8_cache_dtype", [] {
    struct {
      const char *cache, *dtype;
      int elem;
    } cases[] = {{"f8E4M3FN", "f16", kElemF8E4M3FN},
                 {"f8E5M2", "f16", kElemF8E5M2},
                 {"f8E4M3FN", "bf16", kElemF8E4M3FN},
                 {"f8E5M2", "f32", kElemF8E5M2}};
    for (const auto &c : cases) {
      BundleDesc d = descFor(fp8Spec(c.cache, c.dtype));
      CHECK_EQ(int(d.cacheDtype), c.elem);
      CHECK_EQ(std::string(dtypeName(d.dtype)), std::string(c.dtype));
      CHECK_EQ(std::string(elemTypeName(d.cacheDtype)), std::string(c.cache));
      CHECK(isFp8(d.cacheDtype));
      CHECK(d.takesFp8Scales());
      const KernelDesc &p = d.kernel(Role::Partition);
      CHECK_EQ(p.params.size(), size_t(21));
      CHECK(p.params[15] == ParamId::SlidingWindow);
      CHECK(p.params[16] == ParamId::KScale);
      CHECK(p.params[17] == ParamId::VScale);
      CHECK(p.params[18] == ParamId::KScalePtr);
      CHECK(p.params[19] == ParamId::VScalePtr);
      CHECK(p.params[20] == ParamId::ScalesOnDevice);
      CHECK_EQ(d.kernel(Role::OnePass).params.size(), size_t(21));
      CHECK_EQ(d.kernel(Role::Reduce).params.size(), size_t(10)); // unchanged
    }
    // A 16-bit bundle does not take them.
    CHECK(!descFor(Spec()).takesFp8Scales());
    CHECK_EQ(dtypeBytes(kElemF8E4M3FN), 1);
    CHECK_EQ(dtypeBytes(kElemF8E5M2), 1);
    CHECK_EQ(dtypeBytes(PA_BF16), 2);
    CHECK_EQ(dtypeBytes(PA_F32), 4);
    // The internal fp8 values are no pa_dtype.
    CHECK(dtypeName(kElemF8E4M3FN) == nullptr);
    pa_dtype dt;
    CHECK(!parseDtype("f8E4M3FN", dt));
    ElemType et;
    CHECK(parseElemType("f8E5M2", et) && et == kElemF8E5M2);
    CHECK(parseElemType("bf16", et) && et == kElemBF16);
    CHECK(!parseElemType("fp8", et));
    CHECK(!parseElemType("f8E4M3", et));
    // The scale names are parameters of any kernel; pointers are 64-bit.
    CHECK_EQ(std::string(paramName(ParamId::KScalePtr)),
             std::string("k_scale_ptr"));
    CHECK_EQ(std::string(paramName(ParamId::ScalesOnDevice)),
             std::string("scales_on_device"));
    CHECK(isPointerParam(ParamId::KScalePtr));
    CHECK(isPointerParam(ParamId::VScalePtr));
    CHECK(!isPointerParam(ParamId::KScale));
    CHECK(!isPointerParam(ParamId::ScalesOnDevice));
  });

  run("manifest_fp8_head_size_multiple_of_16", [] {
    // x = 16 one-byte elements: head 80 is a multiple of 16, 72 only of 8.
    Spec s = fp8Spec("f8E4M3FN");
    s.head = 80;
    BundleDesc d;
    CHECK_OK(parseManifest(join(manifestLines(s)), "a.manifest", d));
    s.head = 72;
    std::vector<std::string> lines = manifestLines(s);
    CHECK_STATUS(parseManifest(join(lines), "a.manifest", d), PA_ERROR_BUNDLE,
                 at("a.manifest", lineOf(lines, "head_size")) +
                     "head_size 72 is not a multiple of x = 16 (16 bytes of "
                     "f8E4M3FN)");
    s = fp8Spec("f8E5M2", "f32");
    s.head = 72;
    CHECK_STATUS(parseManifest(join(manifestLines(s)), "a.manifest", d),
                 PA_ERROR_BUNDLE, "x = 16 (16 bytes of f8E5M2)");
    Spec f16;
    f16.head = 72; // x = 8 for f16
    CHECK_OK(parseManifest(join(manifestLines(f16)), "a.manifest", d));
  });
}

/// The file's form: comments, blank lines and CRLF, the optional one-pass
/// kernel, PTX paths, an unreadable file.
void manifestFileTests() {
  run("manifest_comments_blank_lines_crlf", [] {
    std::vector<std::string> lines = manifestLines(Spec());
    lines.insert(lines.begin() + 1, "# a comment line");
    lines.insert(lines.begin() + 2, "");
    lines[4] += "   # trailing comment";
    std::string text;
    for (const std::string &l : lines)
      text += l + "\r\n";
    BundleDesc d;
    CHECK_OK(parseManifest(text, "x/y.manifest", d));
    CHECK_EQ(d.chip, std::string("sm_70"));
    CHECK_EQ(d.ptxPath, std::string("x/f16_d128_b16_h4_sm70.ptx"));
  });

  run("manifest_onepass_optional", [] {
    Spec s;
    s.onePass = false;
    BundleDesc d;
    CHECK_OK(parseManifest(join(manifestLines(s)), "a.manifest", d));
    CHECK(!d.hasOnePass());
    CHECK_EQ(d.ptxPath, std::string("f16_d128_b16_h4_sm70.ptx"));
  });

  run("manifest_absolute_ptx_path", [] {
    std::vector<std::string> lines =
        replaced(manifestLines(Spec()), "ptx ", "ptx /abs/k.ptx");
    BundleDesc d;
    CHECK_OK(parseManifest(join(lines), "dir/a.manifest", d));
    CHECK_EQ(d.ptxPath, std::string("/abs/k.ptx"));
  });

  run("manifest_unreadable_is_io_error", [] {
    BundleDesc d;
    CHECK_STATUS(readManifest(tempRoot + "/no/such.manifest", d), PA_ERROR_IO,
                 "cannot open manifest");
  });
}

/// Broken records: the magic line, the version, unknown, missing and
/// duplicate records.
void brokenRecordTests() {
  static const Broken kBroken[] = {
      {"manifest_error_wide_twin_of_values", "", "wide_twin_of a_sm70 b_sm70",
       "record 'wide_twin_of' takes exactly one value, got 2", true},
      {"manifest_error_own_wide_twin", "", "wide_twin_of f16_d128_b16_h4_sm70",
       "bundle 'f16_d128_b16_h4_sm70' cannot be its own wide twin", true},
      {"manifest_error_bad_magic", "paged_attn-bundle", "paged-attn 1",
       "not a paged_attn bundle manifest", true},
      {"manifest_error_bad_version", "paged_attn-bundle", "paged_attn-bundle 2",
       "bundle format version 2 is not supported", true},
      {"manifest_error_unknown_record", "", "alibi yes",
       "unknown record 'alibi'", true},
      {"manifest_error_missing_name", "name ", "", "missing record 'name'",
       false},
      {"manifest_error_missing_warps", "warps ", "", "missing record 'warps'",
       false},
      {"manifest_error_missing_token_step", "token_step ", "",
       "missing record 'token_step'", false},
      {"manifest_error_missing_kernel_reduce", "kernel reduce", "",
       "missing record 'kernel reduce'", false},
      {"manifest_error_missing_params", "params partition", "",
       "missing record 'params partition'", false},
      {"manifest_error_missing_grid", "grid reduce", "",
       "missing record 'grid reduce'", false},
      {"manifest_error_duplicate_record", "", "head_size 64",
       "duplicate record 'head_size' (first at line 8)", true},
  };
  for (const Broken &b : kBroken)
    runBrokenManifest(b);
}

/// Broken values: numbers, kernel records and params lists.
void brokenValueTests() {
  static const Broken kBroken[] = {
      {"manifest_error_extra_value", "head_size", "head_size 128 256",
       "record 'head_size' takes exactly one value, got 2", true},
      {"manifest_error_bad_number", "head_size", "head_size 12x",
       "bad number '12x' for head_size", true},
      {"manifest_error_negative_number", "block_size", "block_size -16",
       "bad number '-16' for block_size", true},
      {"manifest_error_block_size_word", "block_size", "block_size all",
       "bad number 'all' for block_size (expected an integer in 1..65536 or "
       "'any')",
       true},
      {"manifest_error_zero_number", "heads_per_program", "heads_per_program 0",
       "bad number '0' for heads_per_program", true},
      {"manifest_error_bad_threads", "kernel partition",
       "kernel partition k threads 2048 smem 0",
       "bad number '2048' for threads", true},
      {"manifest_error_bad_smem", "kernel reduce",
       "kernel reduce k threads 128 smem 1e3", "bad number '1e3' for smem",
       true},
      {"manifest_error_kernel_syntax", "kernel reduce", "kernel reduce k 128 0",
       "expected 'kernel ROLE SYMBOL threads N smem BYTES'", true},
      {"manifest_error_unknown_role", "kernel reduce",
       "kernel prefill k threads 128 smem 0", "unknown kernel role 'prefill'",
       true},
      {"manifest_error_unknown_param", "params reduce",
       "params reduce output window_size", "unknown param 'window_size'", true},
      {"manifest_error_duplicate_param", "params reduce",
       "params reduce output output", "param 'output' appears twice", true},
      {"manifest_error_unknown_params_role", "params reduce",
       "params decode output", "unknown params role 'decode'", true},
  };
  for (const Broken &b : kBroken)
    runBrokenManifest(b);
}

/// Broken types: dtypes, cache and tmp dtypes, head size and chip.
void brokenTypeTests() {
  static const Broken kBroken[] = {
      {"manifest_error_unknown_dtype", "dtype", "dtype fp8",
       "unknown dtype 'fp8'", true},
      {"manifest_error_cache_dtype", "cache_dtype", "cache_dtype bf16",
       "cache_dtype bf16 differs from dtype f16", true},
      {"manifest_error_cache_dtype_f32", "cache_dtype", "cache_dtype f32",
       "cache_dtype f32 differs from dtype f16: only caches of the query's "
       "type or fp8 caches (f8E4M3FN, f8E5M2) are supported",
       true},
      {"manifest_error_unknown_cache_dtype", "cache_dtype", "cache_dtype fp8",
       "unknown cache_dtype 'fp8' (expected f16, bf16, f32, f8E4M3FN or "
       "f8E5M2)",
       true},
      {"manifest_error_cache_dtype_e4m3_without_fn", "cache_dtype",
       "cache_dtype f8E4M3", "unknown cache_dtype 'f8E4M3'", true},
      {"manifest_error_dtype_fp8_name", "dtype", "dtype f8E4M3FN",
       "unknown dtype 'f8E4M3FN' (expected f16, bf16 or f32)", true},
      {"manifest_error_tmp_dtype_fp8_name", "tmp_dtype", "tmp_dtype f8E5M2",
       "unknown tmp_dtype 'f8E5M2' (expected f16, bf16 or f32)", true},
      {"manifest_error_tmp_dtype", "tmp_dtype", "tmp_dtype bf16",
       "tmp_dtype bf16 must be f32 or the dtype (f16)", true},
      {"manifest_error_head_size_x", "head_size", "head_size 100",
       "head_size 100 is not a multiple of x = 8", true},
      {"manifest_error_bad_chip", "chip", "chip sm70",
       "bad chip 'sm70' (expected sm_XY", true},
  };
  for (const Broken &b : kBroken)
    runBrokenManifest(b);
}

/// Broken grids and order: grid expressions, params without their kernel,
/// a repeated magic line, an empty manifest.
void brokenGridAndOrderTests() {
  static const Broken kBroken[] = {
      {"manifest_error_grid_unknown_name", "grid reduce",
       "grid reduce ceil(num_heads/4) batch",
       "bad grid y expression 'batch': unknown name 'batch'", true},
      {"manifest_error_grid_ceil", "grid reduce",
       "grid reduce ceil(num_heads) num_seqs", "ceil() takes a division a/b",
       true},
      {"manifest_error_grid_paren", "grid reduce",
       "grid reduce (num_heads num_seqs", "missing ')'", true},
      {"manifest_error_grid_arity", "grid reduce", "grid reduce 1 1 1 1",
       "expected 'grid ROLE X [Y [Z]]'", true},
      {"manifest_error_grid_empty", "grid reduce", "grid reduce",
       "expected 'grid ROLE X [Y [Z]]'", true},
      {"manifest_error_params_without_kernel", "kernel onepass", "",
       "'params onepass' without a 'kernel onepass' record", false},
      {"manifest_error_magic_repeated", "", "paged_attn-bundle 1",
       "may only be the first line", true},
  };
  for (const Broken &b : kBroken)
    runBrokenManifest(b);

  run("manifest_error_empty", [] {
    BundleDesc d;
    CHECK_STATUS(parseManifest("", "e.manifest", d), PA_ERROR_BUNDLE,
                 "e.manifest:1: empty manifest");
  });
}

/// Parses `lines` as "lib/c.manifest" and checks the refusal: PA_ERROR_BUNDLE
/// whose message starts with the file and the line of the first line
/// starting with `linePrefix` (no line when empty) and contains `expect`.
void checkClusterRefused(const std::vector<std::string> &lines,
                         const std::string &linePrefix,
                         const std::string &expect) {
  const std::string path = "lib/c.manifest";
  std::string prefix =
      linePrefix.empty() ? path + ": " : at(path, lineOf(lines, linePrefix));
  CHECK_MSG(linePrefix.empty() || lineOf(lines, linePrefix) > 0,
            "no line '" + linePrefix + "'");
  BundleDesc d;
  pa_status st = parseManifest(join(lines), path, d);
  CHECK_EQ(int(st.code), int(PA_ERROR_BUNDLE));
  std::string message = st.message;
  CHECK_MSG(message.compare(0, prefix.size(), prefix) == 0,
            "message '" + message + "' does not start with '" + prefix + "'");
  CHECK_MSG(message.find(expect) != std::string::npos,
            "message '" + message + "' lacks '" + expect + "'");
}

/// The cluster kernel (the sm_90 `_w8` bundles'): optional; with it the
/// bundle has the one-pass kernel, the same parameters and cluster_size.
void clusterManifestTests() {
  run("manifest_cluster_kernel", [] {
    BundleDesc d = descFor(clusterSpec());
    CHECK(d.hasCluster());
    CHECK(d.hasOnePass());
    CHECK_EQ(d.clusterSize, 4);
    const KernelDesc &c = d.kernel(Role::Cluster);
    CHECK(c.present && c.hasParams && c.hasGrid);
    CHECK_EQ(c.symbol, std::string("pa_f16_d128_b16_h8_w8_mma_sm90_cluster"));
    CHECK_EQ(c.threads, 256);
    CHECK_EQ(c.smem, 37000);
    CHECK(c.params == d.kernel(Role::OnePass).params);
    CHECK_EQ(c.params.size(), size_t(16));
    CHECK_EQ(c.grid[0].text, std::string("4*query_slots"));
    CHECK_EQ(c.grid[1].text,
             std::string("num_kv_heads*ceil(group_size/heads_per_program)"));
    CHECK_EQ(c.grid[2].text, std::string("num_seqs"));
    CHECK_EQ(std::string(roleName(Role::Cluster)), std::string("cluster"));
    CHECK_EQ(kNumRoles, 4);
    // Without one: no cluster kernel, cluster size 0.
    BundleDesc plain = descFor(Spec());
    CHECK(!plain.hasCluster());
    CHECK_EQ(plain.clusterSize, 0);
    // The records may come in any order: the cluster's first.
    std::vector<std::string> lines = manifestLines(clusterSpec());
    std::vector<std::string> moved(lines.end() - 4, lines.end());
    lines.erase(lines.end() - 4, lines.end());
    lines.insert(lines.begin() + 1, moved.begin(), moved.end());
    CHECK_EQ(lines[1], std::string("cluster_size 4"));
    BundleDesc reordered;
    CHECK_OK(parseManifest(join(lines), "lib/c.manifest", reordered));
    CHECK_EQ(reordered.clusterSize, 4);
    CHECK(reordered.kernel(Role::Cluster).params == c.params);
    // Clusters of 2 to 8 programs.
    for (int size = 2; size <= 8; ++size) {
      Spec s = clusterSpec();
      s.cluster = size;
      BundleDesc sized;
      CHECK_OK(parseManifest(join(manifestLines(s)), "lib/c.manifest", sized));
      CHECK_EQ(sized.clusterSize, size);
      CHECK_EQ(sized.kernel(Role::Cluster).grid[0].text,
               std::to_string(size) + "*query_slots");
    }
    // Every feature parameter the one-pass kernel takes, the cluster kernel
    // takes too: the bundle still serves them.
    Spec full = clusterSpec();
    full.sinks = full.queryTokens = full.packsTokens = full.bounds = true;
    full.split = true;
    full.tmp = "any";
    BundleDesc f = descFor(full);
    CHECK(f.hasCluster());
    CHECK(f.takesSinks());
    CHECK(f.takesQueryTokens());
    CHECK(f.kernel(Role::Cluster).params == f.kernel(Role::OnePass).params);
    CHECK_EQ(f.kernel(Role::Cluster).grid[0].text,
             std::string("4*ceil(query_slots/max(1,heads_per_program/"
                         "group_size))"));
  });

  run("manifest_error_cluster_without_onepass", [] {
    Spec s = clusterSpec();
    s.onePass = false;
    checkClusterRefused(manifestLines(s), "kernel cluster",
                        "'kernel cluster' without a 'kernel onepass' record");
  });

  run("manifest_error_cluster_params_differ", [] {
    std::vector<std::string> lines = manifestLines(clusterSpec());
    std::string params = lines[lineOf(lines, "params cluster") - 1];
    // Two parameters swapped.
    std::string swapped = params;
    size_t pos = swapped.find("num_kv_heads group_size");
    CHECK(pos != std::string::npos);
    swapped.replace(pos, 23, "group_size num_kv_heads");
    std::vector<std::string> broken =
        replaced(lines, "params cluster", swapped);
    checkClusterRefused(
        broken, "params cluster",
        "'params cluster' differs from 'params onepass' (line " +
            std::to_string(lineOf(broken, "params onepass")) +
            ") at parameter 14 (group_size, expected num_kv_heads): the "
            "cluster kernel takes exactly the one-pass kernel's parameters");
    // One parameter fewer.
    std::string shorter = params.substr(0, params.rfind(' '));
    checkClusterRefused(replaced(lines, "params cluster", shorter),
                        "params cluster",
                        "at parameter 16 (none, expected sliding_window)");
    // One more.
    checkClusterRefused(replaced(lines, "params cluster", params + " sinks"),
                        "params cluster",
                        "at parameter 17 (sinks, expected none)");
  });

  run("manifest_error_cluster_size_missing", [] {
    checkClusterRefused(
        replaced(manifestLines(clusterSpec()), "cluster_size", ""),
        "kernel cluster", "'kernel cluster' without a 'cluster_size' record");
  });

  run("manifest_error_cluster_size_range", [] {
    for (const char *value : {"0", "1", "9", "16", "-4", "four", "4x"}) {
      std::vector<std::string> lines =
          replaced(manifestLines(clusterSpec()), "cluster_size",
                   std::string("cluster_size ") + value);
      checkClusterRefused(lines, "cluster_size",
                          std::string("bad number '") + value +
                              "' for cluster_size (expected an integer in "
                              "2..8");
      if (!harness.failure.empty())
        return;
    }
    checkClusterRefused(replaced(manifestLines(clusterSpec()), "cluster_size",
                                 "cluster_size 4 4"),
                        "cluster_size",
                        "record 'cluster_size' takes exactly one value, got 2");
    std::vector<std::string> twice = manifestLines(clusterSpec());
    twice.push_back("cluster_size 2");
    checkClusterRefused(twice, "cluster_size 2",
                        "duplicate record 'cluster_size' (first at line " +
                            std::to_string(lineOf(twice, "cluster_size")) +
                            ")");
  });

  run("manifest_error_cluster_size_without_kernel", [] {
    std::vector<std::string> lines = manifestLines(Spec());
    lines.push_back("cluster_size 4");
    checkClusterRefused(lines, "cluster_size",
                        "'cluster_size' without a 'kernel cluster' record");
    // The cluster kernel's other records without it are refused as any
    // role's are.
    checkClusterRefused(
        replaced(manifestLines(clusterSpec()), "kernel cluster", ""),
        "params cluster", "'params cluster' without a 'kernel cluster' record");
  });

  run("manifest_error_cluster_missing_grid", [] {
    checkClusterRefused(
        replaced(manifestLines(clusterSpec()), "grid cluster", ""), "",
        "missing record 'grid cluster'");
    checkClusterRefused(
        replaced(manifestLines(clusterSpec()), "params cluster", ""), "",
        "missing record 'params cluster'");
  });

  run("manifest_error_cluster_needs_sm90", [] {
    Spec s = clusterSpec();
    s.chip = "sm_80";
    checkClusterRefused(manifestLines(s), "kernel cluster",
                        "a cluster kernel needs chip sm_90 or newer "
                        "(thread-block clusters), but the bundle's chip is "
                        "sm_80");
    s.chip = "sm_90a";
    BundleDesc d;
    CHECK_OK(parseManifest(join(manifestLines(s)), "lib/c.manifest", d));
    CHECK(d.hasCluster());
  });

  run("manifest_error_unknown_role_names_cluster", [] {
    std::vector<std::string> lines = manifestLines(clusterSpec());
    checkClusterRefused(
        replaced(lines, "kernel cluster",
                 "kernel clusters k threads 256 smem 0"),
        "kernel clusters",
        "unknown kernel role 'clusters' (expected partition, onepass, reduce "
        "or cluster)");
  });
}

} // namespace

void manifestTests() {
  validManifestTests();
  fp8ManifestTests();
  manifestFileTests();
  brokenRecordTests();
  brokenValueTests();
  brokenTypeTests();
  brokenGridAndOrderTests();
  clusterManifestTests();
}

//===----------------------------------------------------------------------===//
// Grid expressions
//===----------------------------------------------------------------------===//

void gridExprTests() {
  run("grid_expr_eval", [] {
    GridEnv env;
    env.set(GridSym::NumKvHeads, 8);
    env.set(GridSym::GroupSize, 6);
    env.set(GridSym::HeadsPerProgram, 4);
    env.set(GridSym::NumHeads, 48);
    env.set(GridSym::NumSeqs, 3);
    env.set(GridSym::NumPartitions, 20);
    struct {
      const char *text;
      int64_t value;
    } cases[] = {{"num_kv_heads*ceil(group_size/heads_per_program)", 16},
                 {"ceil(num_heads/32)", 2},
                 {"num_heads/32", 1},
                 {"(num_seqs+1)*2-3", 5},
                 {"ceil(7/2)", 4},
                 {"7/2", 3},
                 {"ceil((num_heads/heads_per_program))", 12},
                 {"ceil(num_heads/ceil(4/ceil(num_partitions/8)))", 24},
                 {"max(1,heads_per_program/group_size)", 1},
                 {"max(16/group_size,1)", 2},
                 {"num_partitions*ceil(5/max(1,8/group_size))", 100},
                 {"1", 1}};
    for (const auto &c : cases) {
      GridExpr e;
      std::string why;
      CHECK_MSG(parseGridExpr(c.text, e, why),
                std::string(c.text) + ": " + why);
      int64_t v = 0;
      CHECK(evalGridExpr(e, env, v));
      CHECK_EQ(v, c.value);
    }
  });

  run("grid_expr_errors", [] {
    struct {
      const char *text;
      const char *why;
    } cases[] = {{"", "empty expression"},
                 {"seqs", "unknown name 'seqs'"},
                 {"ceil(num_heads)", "ceil() takes a division a/b"},
                 {"ceil num_heads", "ceil must be followed by '('"},
                 {"(num_heads", "missing ')'"},
                 {"num_heads+", "expression ends early"},
                 {"num_heads)", "unexpected ')' at column 10"},
                 {"2^3", "unexpected '^' at column 2"},
                 {"99999999999", "number too large"},
                 {"max(1)", "max() takes two expressions"},
                 {"max 1", "max must be followed by '('"},
                 {"max(1,2", "missing ')' after max("}};
    for (const auto &c : cases) {
      GridExpr e;
      std::string why;
      CHECK_MSG(!parseGridExpr(c.text, e, why),
                std::string("'") + c.text + "' parsed");
      CHECK_MSG(why.find(c.why) != std::string::npos,
                std::string("'") + c.text + "': '" + why + "' lacks '" + c.why +
                    "'");
    }
  });

  run("grid_expr_division_by_zero", [] {
    GridExpr e;
    std::string why;
    CHECK(parseGridExpr("num_seqs/num_heads", e, why));
    GridEnv env;
    int64_t v;
    CHECK(!evalGridExpr(e, env, v));
  });
}

//===----------------------------------------------------------------------===//
// Variants
//===----------------------------------------------------------------------===//

namespace {

/// Block-agnostic bundles ("block_size any") and fixed ones.
void blockSizeVariantTests() {
  run("manifest_block_size_any", [] {
    Spec s;
    s.block = 0; // "block_size any"
    BundleDesc d;
    CHECK_OK(parseManifest(join(manifestLines(s)), "a.manifest", d));
    CHECK_EQ(d.blockSize, kAnyBlockSize);
    CHECK(servesBlockSize(d, 8) && servesBlockSize(d, 128));
    s.block = 16;
    CHECK_OK(parseManifest(join(manifestLines(s)), "a.manifest", d));
    CHECK(servesBlockSize(d, 16) && !servesBlockSize(d, 8));
  });

  run("variant_any_block_size", [] {
    // A block-agnostic bundle (the compiler's: block_size is a kernel
    // parameter) serves keys of every block size, a fixed one only its own;
    // through the index as through the plain scan.
    std::vector<BundleDesc> descs;
    Spec s;
    s.name = "f16_b16";
    descs.push_back(descFor(s)); // 0: f16 d128, block 16 only
    s.name = "f16_any";
    s.block = 0;
    descs.push_back(descFor(s)); // 1: f16 d128, any block
    s.name = "bf16_any";
    s.dtype = "bf16";
    descs.push_back(descFor(s)); // 2: bf16 d128, any block
    VariantIndex index;
    index.rebuild(descs);
    for (int block : {8, 16, 32, 64, 128}) {
      VariantKey f16{PA_F16, PA_F32, 128, block, 4};
      VariantKey bf16{PA_BF16, PA_F32, 128, block, 4};
      // Ties go to the first loaded: the fixed bundle for block 16.
      int f16Want = block == 16 ? 0 : 1;
      CHECK_EQ(selectVariant(descs, kH200, f16), f16Want);
      CHECK_EQ(selectVariant(descs, index, kH200, f16), f16Want);
      CHECK_EQ(selectVariant(descs, kH200, bf16), 2);
      CHECK_EQ(selectVariant(descs, index, kH200, bf16), 2);
    }
    CHECK_EQ(selectVariant(descs, index, kH200, {PA_F16, PA_F32, 64, 8, 4}),
             -1);
  });
}

/// Chip names, and bundles for chips newer than the device.
void chipTests() {
  run("chip_parse", [] {
    int v;
    bool a;
    CHECK(parseChip("sm_70", v, a) && v == 70 && !a);
    CHECK(parseChip("sm_90a", v, a) && v == 90 && a);
    CHECK(parseChip("sm_100", v, a) && v == 100 && !a);
    for (const char *bad :
         {"sm70", "sm_7", "sm_70b", "SM_70", "sm_", "70", "sm_1000"})
      CHECK_MSG(!parseChip(bad, v, a), std::string("'") + bad + "' parsed");
  });

  run("chip_refused_when_newer_than_device", [] {
    Spec s;
    s.chip = "sm_90";
    BundleDesc d = descFor(s);
    DeviceInfo a100{1, 80, 108};
    CHECK_STATUS(checkChip(d, a100), PA_ERROR_BUNDLE,
                 "is compiled for sm_90, newer than device 1 (sm_80, compute "
                 "capability 8.0)");
    CHECK_OK(checkChip(d, kH200));
    CHECK_OK(checkChip(descFor(Spec()), kH200));
    s.chip = "sm_90a";
    CHECK_STATUS(checkChip(descFor(s), DeviceInfo{0, 100, 148}),
                 PA_ERROR_BUNDLE, "which runs only on sm_90");
    CHECK_OK(checkChip(descFor(s), kH200));
  });
}

/// Exact keys, and the GQA tile chosen for each group size.
void variantKeyTests() {
  run("variant_exact_match", [] {
    std::vector<BundleDesc> descs;
    Spec s;
    descs.push_back(descFor(s)); // 0: f16 d128 b16 tmp f32
    s.name = "bf16";
    s.dtype = "bf16";
    descs.push_back(descFor(s)); // 1: bf16
    s.name = "f16_d64";
    s.dtype = "f16";
    s.head = 64;
    descs.push_back(descFor(s)); // 2: f16 d64
    s.name = "f16_b32";
    s.head = 128;
    s.block = 32;
    descs.push_back(descFor(s)); // 3: f16 b32
    s.name = "f16_tmp16";
    s.block = 16;
    s.tmp = "f16";
    descs.push_back(descFor(s)); // 4: tmp f16
    CHECK_EQ(selectVariant(descs, kH200, {PA_F16, PA_F32, 128, 16, 4}), 0);
    CHECK_EQ(selectVariant(descs, kH200, {PA_BF16, PA_F32, 128, 16, 4}), 1);
    CHECK_EQ(selectVariant(descs, kH200, {PA_F16, PA_F32, 64, 16, 4}), 2);
    CHECK_EQ(selectVariant(descs, kH200, {PA_F16, PA_F32, 128, 32, 4}), 3);
    CHECK_EQ(selectVariant(descs, kH200, {PA_F16, PA_F16, 128, 16, 4}), 4);
    CHECK_EQ(selectVariant(descs, kH200, {PA_F32, PA_F32, 128, 16, 4}), -1);
    CHECK_EQ(selectVariant(descs, kH200, {PA_F16, PA_F32, 256, 16, 4}), -1);
    CHECK_EQ(selectVariant(descs, kH200, {PA_F16, PA_F32, 128, 8, 4}), -1);
    CHECK_EQ(selectVariant(descs, kH200, {PA_BF16, PA_BF16, 128, 16, 4}), -1);
  });

  // GQA tiles {1, 2, 4, 8}: the smallest tile covering the group, else the
  // largest (several programs per KV head).
  run("variant_gqa_tiles", [] {
    std::vector<BundleDesc> descs;
    for (int tile : {4, 1, 8, 2}) // load order must not matter
      descs.push_back(descFor(tileSpec(tile)));
    struct {
      int group, tile;
      int64_t programs;
    } cases[] = {{1, 1, 1}, {2, 2, 1}, {3, 4, 1},  {4, 4, 1},  {6, 8, 1},
                 {7, 8, 1}, {8, 8, 1}, {16, 8, 2}, {64, 8, 8}, {32, 8, 4}};
    for (const auto &c : cases) {
      int i = selectVariant(descs, kH200, {PA_F16, PA_F32, 128, 16, c.group});
      CHECK(i >= 0);
      CHECK_MSG(descs[i].headsPerProgram == c.tile,
                "group " + std::to_string(c.group) + " got tile " +
                    std::to_string(descs[i].headsPerProgram) + ", expected " +
                    std::to_string(c.tile));
      CHECK_EQ(tilesPerKvHead(c.group, c.tile), c.programs);
    }
  });

  run("variant_gqa_tiles_without_cover", [] {
    std::vector<BundleDesc> descs = {descFor(tileSpec(1)), descFor(tileSpec(2)),
                                     descFor(tileSpec(4))};
    int i = selectVariant(descs, kH200, {PA_F16, PA_F32, 128, 16, 6});
    CHECK(i >= 0);
    CHECK_EQ(descs[i].headsPerProgram, 4);
    CHECK_EQ(tilesPerKvHead(6, 4), int64_t(2));
    i = selectVariant(descs, kH200, {PA_F16, PA_F32, 128, 16, 7});
    CHECK_EQ(descs[i].headsPerProgram, 4);
    descs = {descFor(tileSpec(8))};
    i = selectVariant(descs, kH200, {PA_F16, PA_F32, 128, 16, 1});
    CHECK_EQ(i, 0); // only tile: used, masked
  });
}

/// The variant index chooses what the scan chooses.
void variantIndexTests() {
  // The index (what calls through a context use) chooses what the scan of
  // every bundle chooses, for every key over a mixed set of bundles: dtypes,
  // caches, tmp types, head and block sizes, tiles, chips, _ext, twins.
  run("variant_index_matches_scan", [] {
    std::vector<BundleDesc> descs;
    int n = 0;
    auto add = [&](Spec s) {
      s.name = "b" + std::to_string(n++);
      descs.push_back(descFor(s));
    };
    for (const char *chip : {"sm_70", "sm_90", "sm_90a"})
      for (const char *dtype : {"f16", "bf16"})
        for (int head : {64, 128})
          for (int tile : {1, 4, 8}) {
            Spec s;
            s.chip = chip;
            s.dtype = dtype;
            s.head = head;
            s.tile = tile;
            s.block = tile == 4 ? 32 : 16;
            // Fixed tmp types (older builds) and run-time ones side by side.
            s.tmp = tile == 8 ? dtype : tile == 1 && head == 64 ? "any" : "f32";
            add(s);
            s.features = kExtFeatures;
            add(s);
          }
    add(fp8Spec("f8E4M3FN"));
    add(fp8Spec("f8E5M2", "bf16"));
    Spec wide;
    wide.warps = 8;
    add(wide);
    Spec declared;
    declared.warps = 8;
    declared.tile = 2;
    declared.twinOf = "b0";
    add(declared);
    linkWideTwins(descs);
    VariantIndex index;
    index.rebuild(descs);
    int compared = 0, found = 0;
    for (DeviceInfo dev : {kV100, DeviceInfo{0, 86, 84}, kH200})
      for (pa_dtype dtype : {PA_F16, PA_BF16, PA_F32})
        for (pa_dtype tmp : {PA_F32, PA_F16, PA_BF16})
          for (int head : {64, 128, 256})
            for (int block : {16, 32})
              for (int group : {1, 3, 4, 8, 16})
                for (int features = 0; features < 4; ++features)
                  for (int cache : {-1, int(kElemF8E4M3FN), int(kElemF8E5M2)}) {
                    VariantKey key{dtype, tmp,          head,
                                   block, group,        (features & 1) != 0,
                                   (features & 2) != 0, cache};
                    int scan = selectVariant(descs, dev, key);
                    int indexed = selectVariant(descs, index, dev, key);
                    ++compared;
                    found += scan >= 0;
                    CHECK_MSG(scan == indexed,
                              "index chose " + std::to_string(indexed) +
                                  ", the scan " + std::to_string(scan));
                  }
    CHECK(found > 100); // the sweep finds bundles, not only misses
    CHECK(compared > found);
    // An index of nothing finds nothing; one built again finds it all.
    VariantIndex empty;
    CHECK_EQ(selectVariant(descs, empty, kH200, {PA_F16, PA_F32, 128, 16, 4}),
             -1);
    index.rebuild(descs);
    CHECK(selectVariant(descs, index, kH200, {PA_F16, PA_F32, 128, 16, 4}) >=
          0);
  });
}

/// Among the bundles that serve a key: the newest runnable chip, the lean
/// or _ext variant by the call's features.
void variantPreferenceTests() {
  run("variant_prefers_newest_runnable_chip", [] {
    Spec s70, s80, s90;
    s70.name = "k70";
    s80.name = "k80";
    s80.chip = "sm_80";
    s90.name = "k90";
    s90.chip = "sm_90";
    std::vector<BundleDesc> descs = {descFor(s70), descFor(s90), descFor(s80)};
    VariantKey key{PA_F16, PA_F32, 128, 16, 4};
    CHECK_EQ(descs[selectVariant(descs, kH200, key)].name, std::string("k90"));
    CHECK_EQ(descs[selectVariant(descs, DeviceInfo{0, 86, 84}, key)].name,
             std::string("k80"));
    CHECK_EQ(descs[selectVariant(descs, kV100, key)].name, std::string("k70"));
  });

  // Features: a call without ALiBi or soft cap gets the lean variant, one
  // with them the _ext variant; a bundle whose kernels do not take
  // sliding_window (built before it existed) serves no windowed call.
  run("variant_features", [] {
    Spec lean, ext, legacy;
    lean.name = "lean";
    ext.name = "ext";
    ext.features = kExtFeatures;
    legacy.name = "legacy";
    legacy.features = "";
    std::vector<BundleDesc> descs = {descFor(ext), descFor(lean)};
    VariantKey plain{PA_F16, PA_F32, 128, 16, 4};
    VariantKey alibi = plain, window = plain;
    alibi.extLogits = true;
    window.slidingWindow = true;
    CHECK_EQ(descs[selectVariant(descs, kH200, plain)].name,
             std::string("lean"));
    CHECK_EQ(descs[selectVariant(descs, kH200, alibi)].name,
             std::string("ext"));
    CHECK_EQ(descs[selectVariant(descs, kH200, window)].name,
             std::string("lean"));
    descs = {descFor(legacy)};
    CHECK_EQ(selectVariant(descs, kH200, plain), 0);
    CHECK_EQ(selectVariant(descs, kH200, window), -1);
    CHECK_EQ(selectVariant(descs, kH200, alibi), -1);
    // The reducer must take the window too: it skips the partitions before
    // the window, which leave no tmp_output.
    BundleDesc half = descFor(lean);
    std::vector<ParamId> &reduce = half.kernels[int(Role::Reduce)].params;
    CHECK_EQ(int(reduce[reduce.size() - 2]), int(ParamId::SlidingWindow));
    reduce.erase(reduce.end() - 2);
    descs = {half};
    CHECK_EQ(selectVariant(descs, kH200, plain), 0);
    CHECK_EQ(selectVariant(descs, kH200, window), -1);
  });
}

/// fp8 caches in the key, with and without features.
void fp8VariantTests() {
  // fp8 caches: the cache type is part of the key. An fp8 bundle serves
  // only calls with that fp8 type; a 16-bit bundle never serves an fp8
  // call; a bundle whose kernels lack the scale parameters serves none.
  run("variant_fp8_cache_dtype", [] {
    std::vector<BundleDesc> descs = {
        descFor(Spec()),                      // 0: f16, cache f16
        descFor(fp8Spec("f8E4M3FN")),         // 1: f16, cache e4m3
        descFor(fp8Spec("f8E5M2")),           // 2: f16, cache e5m2
        descFor(fp8Spec("f8E4M3FN", "bf16")), // 3: bf16, cache e4m3
    };
    VariantKey f16{PA_F16, PA_F32, 128, 16, 4};
    VariantKey e4m3 = f16, e5m2 = f16;
    e4m3.cacheDtype = kElemF8E4M3FN;
    e5m2.cacheDtype = kElemF8E5M2;
    VariantKey bf16e4m3 = e4m3, bf16 = f16, f32e4m3 = e4m3;
    bf16e4m3.dtype = bf16.dtype = PA_BF16;
    f32e4m3.dtype = PA_F32;
    VariantKey f16explicit = f16;
    f16explicit.cacheDtype = kElemF16;
    CHECK_EQ(selectVariant(descs, kH200, f16), 0);
    CHECK_EQ(selectVariant(descs, kH200, f16explicit), 0);
    CHECK_EQ(selectVariant(descs, kH200, e4m3), 1);
    CHECK_EQ(selectVariant(descs, kH200, e5m2), 2);
    CHECK_EQ(selectVariant(descs, kH200, bf16e4m3), 3);
    CHECK_EQ(selectVariant(descs, kH200, bf16), -1); // only an fp8 bf16
    CHECK_EQ(selectVariant(descs, kH200, f32e4m3), -1);
    // A 16-bit bundle never serves an fp8 call, an fp8 one never a 16-bit.
    std::vector<BundleDesc> only16 = {descFor(Spec())};
    CHECK_EQ(selectVariant(only16, kH200, e4m3), -1);
    CHECK_EQ(selectVariant(only16, kH200, e5m2), -1);
    std::vector<BundleDesc> only8 = {descFor(fp8Spec("f8E4M3FN"))};
    CHECK_EQ(selectVariant(only8, kH200, f16), -1);
    CHECK_EQ(selectVariant(only8, kH200, e5m2), -1);
    CHECK_EQ(selectVariant(only8, kV100, e4m3), 0);
    // Without the five scale parameters (partition or one-pass kernel), an
    // fp8 bundle serves nothing.
    Spec bare = fp8Spec("f8E4M3FN");
    bare.fp8Scales = false;
    std::vector<BundleDesc> noScales = {descFor(bare)};
    CHECK(!noScales[0].takesFp8Scales());
    CHECK_EQ(selectVariant(noScales, kH200, e4m3), -1);
    BundleDesc half = descFor(fp8Spec("f8E4M3FN"));
    half.kernels[int(Role::OnePass)].params.pop_back(); // no scales_on_device
    CHECK(!half.takesFp8Scales());
    CHECK_EQ(selectVariant({half}, kH200, e4m3), -1);
    Spec noOnePass = fp8Spec("f8E4M3FN");
    noOnePass.onePass = false;
    CHECK_EQ(selectVariant({descFor(noOnePass)}, kH200, e4m3), 0);
  });

  run("variant_fp8_features", [] {
    Spec lean = fp8Spec("f8E5M2"), ext = fp8Spec("f8E5M2");
    ext.name = "ext";
    ext.features = kExtFeatures;
    std::vector<BundleDesc> descs = {descFor(ext), descFor(lean),
                                     descFor(tileSpec(4))};
    CHECK_EQ(descs[0].kernel(Role::Partition).params.size(), size_t(24));
    CHECK(descs[0].takesFp8Scales());
    VariantKey plain{PA_F16, PA_F32, 128, 16, 4};
    plain.cacheDtype = kElemF8E5M2;
    VariantKey alibi = plain, window = plain;
    alibi.extLogits = true;
    window.slidingWindow = true;
    CHECK_EQ(descs[selectVariant(descs, kH200, plain)].name, lean.name);
    CHECK_EQ(descs[selectVariant(descs, kH200, window)].name, lean.name);
    CHECK_EQ(descs[selectVariant(descs, kH200, alibi)].name,
             std::string("ext"));
  });
}

/// The chip decides before the tile.
void chipBeforeTileTests() {
  // The chip decides before the tile: on an H200 the sm_90 tensor-core
  // bundle (tile 8) serves a group of 4 even though the sm_70 SIMT bundle's
  // tile 4 would cover it more tightly.
  run("variant_chip_before_tile", [] {
    Spec simt = tileSpec(4), mma = tileSpec(8);
    simt.name = "simt70";
    mma.name = "mma90";
    mma.chip = "sm_90";
    std::vector<BundleDesc> descs = {descFor(simt), descFor(mma)};
    VariantKey key{PA_F16, PA_F32, 128, 16, 4};
    CHECK_EQ(descs[selectVariant(descs, kH200, key)].name,
             std::string("mma90"));
    CHECK_EQ(descs[selectVariant(descs, kV100, key)].name,
             std::string("simt70"));
  });
}

} // namespace

void variantTests() {
  blockSizeVariantTests();
  chipTests();
  variantKeyTests();
  variantIndexTests();
  variantPreferenceTests();
  fp8VariantTests();
  chipBeforeTileTests();
}

} // namespace pa_test
