#!/usr/bin/env bash
#===- scripts/run-example.sh - the main job --------------------------------===#
#
# Builds pa-opt and the runtime, compiles examples/decode_v2.mlir (a GQA
# decode step, tensor form) to PTX for sm_70 with paged-attn-to-ptx, writes
# its bundle to build/example/, and prints what ptxas says of each kernel
# (registers, shared memory, spills). On a machine with a CUDA GPU and torch
# it then runs the example's kernels through the runtime, checks them
# against a float64 reference and prints the bandwidth.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
chip="${PA_CHIP:-sm_70}"
"$root/scripts/build.sh" pa-opt >/dev/null
[ -f "$build/lib/libpa_runtime.so" ] || ninja -C "$build" pa_runtime >/dev/null 2>&1 || true
out="$build/example"
rm -rf "$out" && mkdir -p "$out"

echo "== examples/decode_v2.mlir -> PTX ($chip) with paged-attn-to-ptx"
start=$(date +%s%N)
"$build/bin/pa-opt" "$root/examples/decode_v2.mlir" \
  -paged-attn-to-ptx="chip=$chip export-dir=$out" -o "$out/lowered.mlir"
ms=$((($(date +%s%N) - start) / 1000000))
echo "compiled in $ms ms: $(cd "$out" && ls *.ptx *.manifest | tr '\n' ' ')"
grep -E '^\.(version|target)|^\.visible \.entry' "$out"/*.ptx | sed 's/(//'

ptxas="$root/.tools/cuda-11.8/bin/ptxas"
[ "$chip" = sm_70 ] || ptxas="$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)"
echo; echo "== ptxas -arch=$chip -v"
if [ -x "$ptxas" ]; then
  python3 "$root/kernels/check_ptxas.py" --ptxas "$ptxas" --arch "$chip" "$out"/*.ptx
else
  echo "no ptxas for $chip here (scripts/setup.sh fetches CUDA 11.8's for sm_70)"
fi

echo
if nvidia-smi -L >/dev/null 2>&1 && python3 -c "import torch" 2>/dev/null &&
   [ -f "$build/lib/libpa_runtime.so" ]; then
  echo "== on the GPU"
  PYTHONPATH="$root/runtime/python" PA_RUNTIME_LIB="$build/lib/libpa_runtime.so" \
    PA_KERNEL_LIBRARY="$out" python3 "$root/examples/run_example.py"
else
  echo "== no CUDA GPU with torch here: the GPU run of the example is skipped"
fi
