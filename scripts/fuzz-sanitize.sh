#!/usr/bin/env bash
#===- scripts/fuzz-sanitize.sh - the sanitizer and fuzzer builds -----------===#
#
# Configures (once) and builds, with clang-22, two folders inside the main
# build folder:
#   sanitize/  the runtime alone (-DPA_BUILD_COMPILER=OFF) with ASan+UBSan:
#              its host tests and the manifest and grid-expression fuzzers;
#   fuzz/      the compiler's own sources (lib/) with ASan+UBSan, libFuzzer
#              coverage and assertions on, linked into pa_opt_fuzzer with
#              Debian's libMLIR (not instrumented: its code is not ours).
# scripts/test.sh hands both to lit (test/Fuzz/, test/Runtime/
# host-tests-asan.test). Without clang-22 it says so and builds nothing;
# those tests are then UNSUPPORTED. Usage: fuzz-sanitize.sh [BUILD_DIR]
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${PA_BUILD_DIR:-$root/build}}"
if ! command -v clang++-22 >/dev/null ||
   [ ! -d /usr/lib/llvm-22/lib/clang/22/lib/linux ]; then
  echo "fuzz-sanitize: no clang-22 / libclang-rt-22-dev: not built" >&2
  exit 0
fi
# -O1 keeps the compile time of the instrumented build down; no -DNDEBUG,
# so the project's assertions (and LLVM's inline ones) stay on.
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-22
        -DCMAKE_CXX_COMPILER=clang++-22 "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only"
        -DPA_SANITIZE=address,undefined -DPA_BUILD_FUZZERS=ON)
configure() { # DIR ARGS...
  local dir="$1"; shift
  [ -f "$dir/build.ninja" ] || cmake -S "$root" -B "$dir" "${common[@]}" "$@" >/dev/null
}
configure "$build/sanitize" -DPA_BUILD_COMPILER=OFF
ninja -C "$build/sanitize" pa_runtime_host_tests pa_manifest_fuzzer pa_gridexpr_fuzzer
configure "$build/fuzz" -DPA_CUDA_GPU=OFF -DPA_BUILD_KERNEL_LIBRARY=OFF
ninja -C "$build/fuzz" pa_opt_fuzzer
