# -*- Python -*-
"""lit configuration of the paged_attn test suite."""

import os
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "PAGED_ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pa_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py"]

config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.pa_tools_dir, append_path=True)
llvm_config.use_default_substitutions()

tool_dirs = [config.pa_tools_dir, config.llvm_tools_dir]
tools = ["pa-opt"]


def usable(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


# ptxas for sm_70 (CUDA 11.8) and for sm_90 (CUDA 12+); a test that needs a
# missing one is UNSUPPORTED.
if usable(config.pa_ptxas_sm70):
    config.available_features.add("ptxas-sm70")
    tools.append(ToolSubst("%ptxas-sm70", config.pa_ptxas_sm70))
else:
    lit_config.note("no ptxas for sm_70 (%r): its tests are UNSUPPORTED; "
                    "scripts/setup.sh fetches one" % config.pa_ptxas_sm70)
if usable(config.pa_ptxas_sm90):
    config.available_features.add("ptxas-sm90")
    tools.append(ToolSubst("%ptxas-sm90", config.pa_ptxas_sm90))
else:
    lit_config.note("no ptxas for sm_90: its tests are UNSUPPORTED")
if config.pa_cuda_gpu.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("cuda-gpu")
else:
    lit_config.note("no CUDA GPU: the end-to-end GPU tests are UNSUPPORTED")

if config.pa_runtime_built.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("pa-runtime")
    config.substitutions.append(
        ("%pa_runtime_host_tests", config.pa_runtime_host_tests))
    config.substitutions.append(
        ("%pa_fake_driver_dir", os.path.join(config.pa_obj_root, "fake-driver")))
    config.substitutions.append(
        ("%pa_fake_driver_test",
         os.path.join(config.pa_tools_dir, "pa_fake_driver_test")))
    config.substitutions.append(
        ("%e2e_decode", os.path.join(config.pa_tools_dir, "e2e_decode")))
    config.substitutions.append(
        ("%stress_decode", os.path.join(config.pa_tools_dir, "stress_decode")))
else:
    lit_config.note("the runtime was not built (no cuda.h): its tests are "
                    "UNSUPPORTED")

if config.pa_kernel_library_built.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("pa-kernel-library")

# The install test: cmake, and the arguments that configure a consumer with
# this build's generator and compilers.
config.substitutions.append(("%cmake", config.pa_cmake))
config.substitutions.append(
    ("%pa_consumer_cmake_args", config.pa_consumer_cmake_args))

# The sanitizer and fuzzer builds (scripts/fuzz-sanitize.sh builds them and
# scripts/test.sh names them): lit --param pa_sanitize_dir=DIR (the runtime
# with ASan+UBSan, its host tests and fuzzers) and --param pa_fuzz_dir=DIR
# (pa_opt_fuzzer over instrumented compiler sources); pa_fuzz_seconds bounds
# each fuzz run (default 60). A missing build leaves its tests UNSUPPORTED.
fuzz_seconds = int(lit_config.params.get("pa_fuzz_seconds", "60"))
fuzz_binaries = {
    "asan-runtime": ("pa_sanitize_dir", {"asan_host_tests": "pa_runtime_host_tests"}),
    "fuzz-runtime": ("pa_sanitize_dir", {"pa_manifest_fuzzer": "pa_manifest_fuzzer",
                                         "pa_gridexpr_fuzzer": "pa_gridexpr_fuzzer"}),
    "fuzz-pa-opt": ("pa_fuzz_dir", {"pa_opt_fuzzer": "pa_opt_fuzzer"}),
}
for feature, (param, binaries) in fuzz_binaries.items():
    folder = lit_config.params.get(param, "")
    paths = {sub: os.path.join(folder, "bin", exe) for sub, exe in binaries.items()}
    if not folder or not all(usable(p) for p in paths.values()):
        lit_config.note("no %s build (--param %s): its tests are UNSUPPORTED" % (feature, param))
        continue
    config.available_features.add(feature)
    for sub, path in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        config.substitutions.append(("%" + sub, path))
# Fixed seed: a CI failure replays with the same flags; new inputs go to %t.
config.substitutions.append(
    ("%fuzz_flags", "-max_total_time=%d -seed=1 -print_final_stats=1 "
                    "-rss_limit_mb=4096 -timeout=30" % fuzz_seconds))
config.substitutions.append(("%fuzz_short_flags", "-max_total_time=%d -seed=1 "
                             "-print_final_stats=1" % max(1, fuzz_seconds // 4)))
symbolizer = os.path.join(config.llvm_tools_dir, "llvm-symbolizer")
config.environment["ASAN_SYMBOLIZER_PATH"] = symbolizer
config.environment["ASAN_OPTIONS"] = "detect_leaks=1:strict_string_checks=1"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"

# Python: the helper scripts under kernels/, and the torch tests on a GPU.
config.substitutions.append(("%python", sys.executable))
if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0:
    config.available_features.add("python-torch")

config.substitutions.append(("%pa_src_root", config.pa_src_root))
config.substitutions.append(
    ("%pa_kernel_library", os.path.join(config.pa_obj_root, "kernel-library")))
config.substitutions.append(("%pa_obj_root", config.pa_obj_root))
llvm_config.add_tool_substitutions(tools, tool_dirs)
