#!/usr/bin/env bash
#===- scripts/setup-torch.sh - torch for the CPU tests of the torch op -----===#
#
# Installs PyTorch 2.11 (the GPU machine's) from PyPI into .tools/python-torch
# with `pip install --target`, for the lit tests that check the custom op's
# registration, schema, fake implementation, opcheck and a fullgraph trace on
# the CPU (test/Integration/Python/lit.local.cfg puts the folder on
# PYTHONPATH). PyPI has no CPU-only torch for x86-64 Linux, so this is the
# CUDA wheel without its optional parts: torch itself (--no-deps), its
# pure-Python requirements and the CUDA libraries `import torch` loads
# (torch.__init__'s preload list), no triton, no nvtx. Also scikit-build-core,
# the wheel's build backend, for the wheel's CPU test (test_wheel_build.py
# builds without network). About 60 s and 4 GB on a fresh machine; nothing
# when the stamp file says it is there.
# Skipped where the system python3 already imports torch. A failure is
# reported, not fatal: the tests that need torch are then UNSUPPORTED.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="$root/.tools/python-torch"
py=/usr/bin/python3
torch_pin="torch==2.11.*"
stamp="$target/.installed-$torch_pin-skbuild"
log="$root/.tools/python-torch.log"

if "$py" -c "import torch" >/dev/null 2>&1 || [ -f "$stamp" ]; then
  exit 0
fi
if ! "$py" -m pip --version >/dev/null 2>&1; then
  echo "setup: installing python3-pip"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    python3-pip >/dev/null || true
fi
echo "setup: installing $torch_pin (CPU use) into .tools/python-torch"
rm -rf "$target"
mkdir -p "$root/.tools"
pip=("$py" -m pip install -q --disable-pip-version-check --no-warn-script-location
     --root-user-action=ignore
     --target "$target")
# torch 2.11.0's requirements, less triton, cuda-bindings and nvtx; then torch
# without its requirements.
if "${pip[@]}" filelock "typing-extensions>=4.10.0" "setuptools<82" "sympy>=1.13.3" \
     "networkx>=2.5.1" jinja2 "fsspec>=0.8.5" "scikit-build-core>=0.10" \
     "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc]==13.0.2" \
     "nvidia-cudnn-cu13==9.19.0.56" "nvidia-cusparselt-cu13==0.8.0" \
     "nvidia-nccl-cu13==2.28.9" "nvidia-nvshmem-cu13==3.4.5" >"$log" 2>&1 &&
   "${pip[@]}" --upgrade --no-deps "$torch_pin" >>"$log" 2>&1 &&
   PYTHONPATH="$target" "$py" -c "import torch" >/dev/null 2>&1; then
  touch "$stamp"
else
  echo "setup: WARNING: could not install $torch_pin (see .tools/python-torch.log); the" \
       "torch op's CPU tests will be UNSUPPORTED" >&2
fi
exit 0
