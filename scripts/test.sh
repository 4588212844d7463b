#!/usr/bin/env bash
#===- scripts/test.sh - build and run every test ---------------------------===#
#
# Installs what is missing, builds (and the sanitizer and fuzzer builds of
# fuzz-sanitize.sh), runs the lit suite (FileCheck tests, the ptxas checks,
# the time-bounded fuzz runs, the GPU tests, UNSUPPORTED without a GPU) and
# ends with one line "N passed, N failed, N skipped" counted from lit's results.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" >/dev/null
"$root/scripts/fuzz-sanitize.sh" "$build" >/dev/null
results="$build/test-results.xml"
rm -f "$results"
set +e
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$results" \
  --param pa_sanitize_dir="$build/sanitize" --param pa_fuzz_dir="$build/fuzz" \
  "$build/test"
lit_rc=$?
set -e
python3 "$root/scripts/count_results.py" "$results"
exit $lit_rc
