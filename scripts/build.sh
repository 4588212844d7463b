#!/usr/bin/env bash
#===- scripts/build.sh - configure and build paged_attn --------------------===#
#
# Runs setup.sh, then configures (once) and builds into build/ with Ninja.
# Extra arguments are passed to ninja (targets).
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
build="${PA_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build" "$@"
