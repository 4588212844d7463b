#!/usr/bin/env bash
#===- scripts/build-wheel.sh - the installable paged_attn wheel ------------===#
#
# Usage: scripts/build-wheel.sh KERNEL_LIBRARY_DIR [OUT_DIR [PIP_OPTION...]]
# Builds the wheel of pyproject.toml (scikit-build-core, fetched from PyPI
# into pip's isolated build environment unless a PIP_OPTION says
# --no-build-isolation; CMake and Ninja from the machine) in a fresh
# temporary build folder: the Python package, libpa_runtime.so (a
# runtime-only CMake build, no MLIR) and every file of KERNEL_LIBRARY_DIR as
# paged_attn/kernels/. OUT_DIR defaults to build/dist/. Prints the wheel's
# path and size.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 KERNEL_LIBRARY_DIR [OUT_DIR]" >&2
  exit 2
fi
kernels="$(cd "$1" && pwd)"
out="$(mkdir -p "${2:-$root/build/dist}" && cd "${2:-$root/build/dist}" && pwd)"
shift $(($# < 2 ? $# : 2))
# A fresh CMake build each time: the kernel folder is read at configure time.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
PA_WHEEL_KERNEL_LIBRARY="$kernels" python3 -m pip wheel --no-deps --disable-pip-version-check \
  -q -w "$out" --config-settings=build-dir="$tmp" "$@" "$root"
wheel="$(ls -t "$out"/paged_attn-*.whl | head -1)"
echo "$wheel $(du -h "$wheel" | cut -f1) ($(python3 -c "import sys, zipfile
z = zipfile.ZipFile(sys.argv[1]); print(len(z.namelist()), 'files,',
sum(i.file_size for i in z.infolist()) // 1024, 'KiB unpacked')" "$wheel"))"
