#!/usr/bin/env bash
#===- scripts/peers/run_flashinfer_compare.sh - FlashInfer beside ours ------===#
#
# On the GPU machine (no network, 10 minutes a command): install the carried
# FlashInfer (.whl/, made on the build machine by scripts/peers/pack_flashinfer.sh)
# into /tmp/site, probe it (probe_flashinfer.py: loads, is right, host time a
# call), then run compare.py with ours and FlashInfer on the same inputs, and
# print a short table last (summarize.py, with the read ceiling of each config).
# FlashInfer's JIT cache goes to /tmp; its JIT is off (FLASHINFER_DISABLE_JIT=1)
# unless FI_JIT=1, so a module not prebuilt makes that impl fail ('-') rather than
# spend minutes of nvcc inside the time limit. Logs and the JSON go to $OUT.
#
# Usage (repo root; PA_KERNEL_LIBRARY and PA_RUNTIME_LIB set for ours):
#   scripts/peers/run_flashinfer_compare.sh COMPARE_PY SEED_PY [compare.py options]
#   e.g. ... --configs gqa-b64-L4096,gqa-b1-L512   or   --dtype bfloat16 --quick
# Env: PEERS_BUDGET_S (default 560: the whole script's seconds), FI_JIT=1.
#===------------------------------------------------------------------------===#
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
compare="$1" seed="$2"; shift 2
out="${OUT:-$root/peers-logs}"
budget="${PEERS_BUDGET_S:-560}"
mkdir -p "$out"
site=/tmp/site
export PYTHONUNBUFFERED=1 FLASHINFER_WORKSPACE_BASE=/tmp MAX_JOBS="$(nproc)"
[ "${FI_JIT:-0}" = 1 ] || export FLASHINFER_DISABLE_JIT=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$site" "$root"/.whl/*.whl || exit 1
tar -xJf "$root"/.whl/flashinfer-python-*-sm90a.tar.xz -C "$site" || exit 1
export PYTHONPATH="$site:$root/runtime/python:$root/scripts/peers${PYTHONPATH:+:$PYTHONPATH}"
echo "# installed in ${SECONDS}s: $(ls "$site"/flashinfer/data/aot | wc -l) prebuilt FlashInfer modules"

tc=()
ls "$site"/flashinfer/data/aot | grep -q '^batch_prefill' && tc=(--tensor-cores)
timeout 150 python3 "$root/scripts/peers/probe_flashinfer.py" "${tc[@]}" 2>&1 | tee "$out/probe.log"
echo "# probe rc=${PIPESTATUS[0]} at ${SECONDS}s"

impls=(--impl ours=paged_attn:paged_attention_v2 --impl flashinfer=flashinfer_impl:paged_attention_v2)
[ ${#tc[@]} -gt 0 ] && impls+=(--impl flashinfer_tc=flashinfer_impl:paged_attention_v2_tc)
left=$((budget - SECONDS - 40))
python3 -c 'import torch; print("#", torch.cuda.get_device_name(0))'
timeout "$left" python3 "$compare" --path "$root/runtime/python" --path "$root/scripts/peers" \
  --seed "$seed" "${impls[@]}" --json "$out/compare-flashinfer.json" "$@" \
  > "$out/compare-flashinfer.log" 2>&1
rc=$?
grep -v '^\s*$' "$out/compare-flashinfer.log" | grep -iv 'warn' | tail -n 40
echo "# compare.py rc=$rc (124: stopped at its ${left}s limit) at ${SECONDS}s"
[ -f "$out/compare-flashinfer.json" ] &&
  timeout 60 python3 "$root/scripts/peers/summarize.py" "$out/compare-flashinfer.json" --ceiling |
    tee "$out/summary.txt"
