#!/usr/bin/env bash
#===- scripts/gpu-check.sh - everything that needs a GPU, in one go --------===#
#
# For a GPU machine without MLIR (the compiler's outputs are built elsewhere
# and brought along): the end-to-end harness against a float64 reference from
# sm_70 PTX (driver JIT) and from sm_90 bundles, compute-sanitizer memcheck
# and racecheck, the Python drop-in's tests, and the side-by-side benchmark.
# Logs go to $OUT (or ./gpu-check-logs); a summary table is printed last.
#
# Usage: scripts/gpu-check.sh BIN_DIR LIB_SM70 LIB_SM90 [COMPARE_PY SEED_PY]
#   BIN_DIR   holds e2e_decode and libpa_runtime.so
#   LIB_SM70  a kernel library folder with only sm_70 bundles
#   LIB_SM90  a kernel library folder with sm_90 bundles
#===------------------------------------------------------------------------===#
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$1" lib70="$2" lib90="$3" compare="${4:-}" seed="${5:-}"
out="${OUT:-$root/gpu-check-logs}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$root/runtime/python" PA_RUNTIME_LIB="$bin/libpa_runtime.so"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
summary=()
step() { # name timeout command...
  local name="$1" limit="$2"; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local last
  last="$(grep -E '[0-9]+ passed, [0-9]+ failed|ERROR SUMMARY' "$out/$name.log" | tail -1)"
  summary+=("$(printf '%-22s rc=%-3s %4ss  %s' "$name" "$rc" $((SECONDS - start)) "$last")")
}
nvidia-smi -L | tee "$out/gpu.txt"
step e2e-sm70-jit 300 "$bin/e2e_decode" --library "$lib70" --quick
step e2e-sm90 300 "$bin/e2e_decode" --library "$lib90" --quick
step e2e-sm90-long 300 "$bin/e2e_decode" --library "$lib90" --quick --long --seed 7
if command -v compute-sanitizer >/dev/null; then
  step memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$bin/e2e_decode" --library "$lib90" --quick --case 3
  step racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$bin/e2e_decode" --library "$lib90" --quick --case 3
fi
export PA_KERNEL_LIBRARY="$lib90"
[ -n "$seed" ] && export PA_SEED_PATH="$seed"
for t in test_reference:70 test_seed:70 test_cuda_graph:40 test_errors:40; do
  step "py-${t%:*}" "${t#*:}" python3 "$root/test/Integration/Python/${t%:*}.py"
done
if [ -n "${PA_EXAMPLE_LIBRARY:-}" ]; then
  PA_KERNEL_LIBRARY="$PA_EXAMPLE_LIBRARY" step example 60 python3 "$root/examples/run_example.py"
fi
if [ -n "$compare" ]; then
  step bench-f16-sm90 300 python3 "$compare" --impl ours=paged_attn:paged_attention_v2 \
    --path "$root/runtime/python" --seed "$seed" --json "$out/bench-f16-sm90.json"
  step bench-bf16-sm90 200 python3 "$compare" --impl ours=paged_attn:paged_attention_v2 \
    --path "$root/runtime/python" --seed "$seed" --dtype bfloat16 --quick
  PA_KERNEL_LIBRARY="$lib70" step bench-f16-sm70-jit 200 python3 "$compare" \
    --impl ours=paged_attn:paged_attention_v2 --path "$root/runtime/python" --seed "$seed" --quick
fi
echo; echo "== summary ($(date -u +%F))"
printf '%s\n' "${summary[@]}"
