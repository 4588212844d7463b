#!/usr/bin/env bash
#===- scripts/run-example.sh - the main job --------------------------------===#
#
# Builds pa-opt and runs it on the example decode step under examples/,
# printing the verified, round-tripped op.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" pa-opt >/dev/null
echo "== examples/decode_v2.mlir, parsed, verified and printed by pa-opt"
"$build/bin/pa-opt" "$root/examples/decode_v2.mlir"
