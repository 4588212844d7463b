#!/usr/bin/env bash
# Prepare FlashInfer for the GPU machine, on the build machine (no GPU needed).
#
# The GPU machine has no network, takes at most 64 MiB of carried files and
# 10 minutes a command. flashinfer-python's wheel is 101 MB (its CUDA sources
# for every kernel it can JIT), and a JIT build there costs minutes per
# module. So, here:
#   1. download flashinfer-python and what it needs at import that the GPU
#      machine's image lacks (apache-tvm-ffi, for CPython 3.12; a recent
#      typing-extensions, which tvm-ffi asks for) into build-peers/dl;
#   2. build the decode modules compare.py needs, for sm_90a, with this
#      machine's nvcc (build_flashinfer_aot.py), into build-peers/aot;
#   3. unpack the wheel, drop the CUDA sources no decode module needs
#      (kept: data/include, data/cccl, data/spdlog and the batch decode and
#      prefill sources of data/csrc, so a module not prebuilt can still be
#      JIT-compiled there), add the prebuilt modules under
#      flashinfer/data/aot/ (where FlashInfer loads them from instead of
#      building), and write .whl/flashinfer-python-<version>-sm90a.tar.xz;
#   4. put the tvm-ffi and typing-extensions wheels beside it in .whl/.
# scripts/peers/run_flashinfer_compare.sh installs .whl/ there.
#
# Usage: PYTHON=python-with-torch scripts/peers/pack_flashinfer.sh [build_flashinfer_aot.py options]
#   PYTHON   a Python (any 3.10+) with torch importable (FlashInfer imports it
#            to generate its sources; no GPU needed); flashinfer, tvm-ffi and
#            the rest of its import are installed into build-peers/py for it
#            (default python3)
#   default modules (no options): the decode kernel for fp16 and bf16 x head
#   sizes 64/128/256, fp8 e4m3/e5m2 caches at 128, the tensor-core kernel for
#   fp16 x 64/128/256 (about 40 minutes on 2 cores; modules already in
#   build-peers/aot are kept).
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
FI_VERSION=${FI_VERSION:-0.7.4}
TVM_FFI_VERSION=${TVM_FFI_VERSION:-0.1.15.post2}
PYTHON=${PYTHON:-python3}
dl=build-peers/dl
mkdir -p "$dl" .whl  # both ignored (.gitignore: /build-*/, /.whl/)

plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
[ -f "$dl/flashinfer_python-$FI_VERSION-py3-none-any.whl" ] ||
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: -d "$dl" "flashinfer-python==$FI_VERSION"
ls "$dl"/apache_tvm_ffi-"$TVM_FFI_VERSION"-cp312-*.whl >/dev/null 2>&1 ||
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${plat[@]}" -d "$dl" "apache-tvm-ffi==$TVM_FFI_VERSION"
ls "$dl"/typing_extensions-*.whl >/dev/null 2>&1 ||
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: -d "$dl" "typing-extensions==4.15.0"

# flashinfer and what its import needs, for the builder's own Python (its
# version, not 3.12); ninja and nvcc (CUDA_HOME, else /usr/local/cuda) from the system.
if [ ! -d build-peers/py/flashinfer ]; then
  "$PYTHON" -m pip install -q --no-deps --no-warn-conflicts --target build-peers/py \
    "$dl/flashinfer_python-$FI_VERSION-py3-none-any.whl"
  "$PYTHON" -m pip install -q --no-warn-conflicts --target build-peers/py \
    "apache-tvm-ffi==$TVM_FFI_VERSION" \
    tqdm requests packaging nvidia-ml-py
fi
args=("$@")
[ $# -gt 0 ] || args=(--tensor-cores --fp8-heads 128)
PYTHONPATH="$root/build-peers/py${PYTHONPATH:+:$PYTHONPATH}" \
  "$PYTHON" scripts/peers/build_flashinfer_aot.py build-peers "${args[@]}"

stage=build-peers/stage
rm -rf "$stage" && mkdir -p "$stage"
(cd "$stage" && unzip -q "$root/$dl/flashinfer_python-$FI_VERSION-py3-none-any.whl")
data=$stage/flashinfer/data
rm -rf "$data/cutlass"
find "$data/csrc" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
find "$data/csrc" -maxdepth 1 -type f ! \( -name 'batch_decode*' -o -name 'batch_prefill*' \
  -o -name '*.h' -o -name '*.cuh' \) -delete
# CUDA sources inside the Python packages (other kernels' NVRTC/JIT sources).
find "$stage/flashinfer" -path "$data" -prune -o -type f \
  \( -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.ptx' \) \
  -print0 | xargs -0 rm -f
cp -r build-peers/aot "$data/aot"
out=.whl/flashinfer-python-$FI_VERSION-sm90a.tar.xz
tar -C "$stage" -cf - flashinfer "flashinfer_python-$FI_VERSION.dist-info" | xz -6 -T0 > "$out"
rm -f .whl/apache_tvm_ffi-*.whl .whl/typing_extensions-*.whl
cp "$dl"/apache_tvm_ffi-"$TVM_FFI_VERSION"-cp312-*.whl "$dl"/typing_extensions-*.whl .whl/
ls -la .whl
du -cb .whl/* | tail -1 | awk '{printf "carry .whl: %.1f MiB (limit 64 MiB with everything else)\n", $1 / 1048576}'
