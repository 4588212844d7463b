# REQUIRES: cuda-gpu, python-torch, pa-wheel
# RUN: bash %pa_src_root/scripts/wheel-smoke.sh %pa_wheel %python | FileCheck %s
#
# The installed package: scripts/wheel-smoke.sh installs the wheel that
# $PA_WHEEL names (scripts/build-wheel.sh builds it) with pip --no-deps into
# a fresh virtual environment outside the checkout, and runs
# scripts/wheel_smoke.py there with no PYTHONPATH, PA_RUNTIME_LIB or
# PA_KERNEL_LIBRARY: the package, its runtime and its kernels come from the
# wheel, and an eager and a torch.compile(fullgraph=True) call match a
# float64 reference. UNSUPPORTED where $PA_WHEEL names no file.
#
# CHECK: wheel: {{.*}}.whl
# CHECK: init: {{.*}}site-packages/paged_attn/lib/libpa_runtime.so{{.*}}site-packages/paged_attn/kernels
# CHECK: eager: rel err
# CHECK: torch.compile(fullgraph=True): rel err
# CHECK: wheel smoke test passed
