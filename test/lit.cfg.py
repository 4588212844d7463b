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
        ("%e2e_decode", os.path.join(config.pa_tools_dir, "e2e_decode")))
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

# Python: the helper scripts under kernels/, and the torch tests on a GPU.
config.substitutions.append(("%python", sys.executable))
if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0:
    config.available_features.add("python-torch")

config.substitutions.append(("%pa_src_root", config.pa_src_root))
config.substitutions.append(
    ("%pa_kernel_library", os.path.join(config.pa_obj_root, "kernel-library")))
config.substitutions.append(("%pa_obj_root", config.pa_obj_root))
llvm_config.add_tool_substitutions(tools, tool_dirs)
