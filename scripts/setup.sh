#!/usr/bin/env bash
#===- scripts/setup.sh - install what paged_attn needs ---------------------===#
#
# Idempotent and quiet when everything is present. Installs with apt:
# LLVM/MLIR 22 (headers, libMLIR.so, mlir-tblgen, lit, FileCheck, not), CMake
# and Ninja, clang-22 and its sanitizer/libFuzzer runtimes (the builds of
# scripts/fuzz-sanitize.sh); then fetches a ptxas that knows sm_70 (CUDA 11.8, from Debian's
# non-free nvidia-cuda-toolkit package) into .tools/cuda-11.8/bin without
# touching the machine's apt sources. A piece that cannot be had is reported;
# the build still works and the tests that need it report UNSUPPORTED.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools cmake ninja-build
          g++ python3 clang-22 libclang-rt-22-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# ptxas for sm_70: CUDA 12+ dropped Volta, Debian's CUDA 11.8 still has it.
ptxas70="$root/.tools/cuda-11.8/bin/ptxas"
if [ ! -x "$ptxas70" ]; then
  echo "setup: fetching ptxas (CUDA 11.8, knows sm_70) into .tools/"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/lists/partial" "$tmp/deb"
  echo "deb http://deb.debian.org/debian bookworm non-free" >"$tmp/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$tmp/lists" -o Debug::NoLocking=1)
  if apt-get -qq "${apt_opts[@]}" update >/dev/null 2>&1 &&
     (cd "$tmp/deb" && apt-get -qq "${apt_opts[@]}" download nvidia-cuda-toolkit \
        >/dev/null 2>&1) &&
     dpkg -x "$tmp"/deb/nvidia-cuda-toolkit_*.deb "$tmp/x" &&
     [ -x "$tmp/x/usr/bin/ptxas" ]; then
    mkdir -p "$(dirname "$ptxas70")"
    cp "$tmp/x/usr/bin/ptxas" "$ptxas70"
  else
    echo "setup: WARNING: could not fetch a ptxas for sm_70; its tests will be UNSUPPORTED" >&2
  fi
fi
if [ ! -x /usr/local/cuda/bin/ptxas ] && ! command -v ptxas >/dev/null; then
  echo "setup: note: no CUDA toolkit ptxas (sm_90); its tests will be UNSUPPORTED" >&2
fi
"$root/scripts/setup-torch.sh"  # torch 2.11 for the torch op's CPU tests (.tools/python-torch)
exit 0
