#!/usr/bin/env bash
#===- scripts/wheel-smoke.sh - install the wheel in a fresh venv, call it --===#
#
# Usage: scripts/wheel-smoke.sh WHEEL [PYTHON (default python3)]
# Creates a virtual environment in a temporary folder outside the checkout
# (--system-site-packages: torch comes from the system), installs WHEEL with
# `pip install --no-deps --no-index`, and runs scripts/wheel_smoke.py (copied
# there) with no PYTHONPATH, PA_RUNTIME_LIB or PA_KERNEL_LIBRARY. Needs a
# CUDA GPU; no network.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wheel="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
python="${2:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# A venv without ensurepip (Debian's python3 without python3-venv) gets no pip:
# then the interpreter's own pip installs into it (pip >= 22.3: --python).
if "$python" -m venv --system-site-packages "$tmp/venv" 2>/dev/null; then
  "$tmp/venv/bin/python" -m pip install -q --no-deps --no-index "$wheel"
else
  "$python" -m venv --system-site-packages --without-pip "$tmp/venv"
  "$python" -m pip --python "$tmp/venv/bin/python" install -q --no-deps --no-index "$wheel"
fi
# --system-site-packages gives the base interpreter's packages; where
# PYTHON is itself a virtual environment (torch installed there), its
# site-packages are what "the system's torch" means: a .pth names them.
site="$("$tmp/venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
"$python" -c 'import site; print("\n".join(site.getsitepackages()))' >"$site/_pa_parent_site.pth"
cp "$here/wheel_smoke.py" "$tmp/"
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1))"
cd "$tmp"
env -u PYTHONPATH -u PA_RUNTIME_LIB -u PA_KERNEL_LIBRARY "$tmp/venv/bin/python" wheel_smoke.py
