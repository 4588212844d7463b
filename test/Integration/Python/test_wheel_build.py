# REQUIRES: python-torch, pa-runtime
# RUN: %python %s
#
# The wheel without a GPU: scripts/build-wheel.sh (scikit-build-core from
# .tools/python-torch, no build isolation, no network) packages a stand-in
# kernel library folder holding a manifest, PTX, a cubin and a file of
# another kind. The wheel must hold every package module, libpa_runtime.so in
# paged_attn/lib/ and every file of the folder, byte for byte, in
# paged_attn/kernels/, no bytecode, and carry the package's version and the
# py3-none tag; unpacked into a bare folder, the package (no PA_* variable)
# must load its own libpa_runtime.so and find its own kernels.
# test_wheel.py installs a real wheel with pip and makes a call on the GPU.

import os
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

PKG = os.path.join(T.REPO, "runtime", "python", "paged_attn")
LIBRARY = {"pa_x_sm90.manifest": b"paged_attn-bundle 1\nname pa_x_sm90\n",
           "pa_x_sm90.ptx": b".version 8.0\n", "pa_x_sm90.sm_90.cubin": b"\x7fELF\x00\x01",
           "pa_x_sm90.fatbin": b"\x50\xed\x55\xba"}
WHEEL = {}  # the built wheel's path, for the checks after the build


def version():
    for line in open(os.path.join(PKG, "__init__.py")):
        if line.startswith("__version__"):
            return line.split('"')[1]
    raise AssertionError("no __version__ in paged_attn/__init__.py")


def builds(tmp):
    lib, out = os.path.join(tmp, "lib"), os.path.join(tmp, "out")
    os.mkdir(lib)
    for name, data in LIBRARY.items():
        with open(os.path.join(lib, name), "wb") as f:
            f.write(data)
    p = subprocess.run(["bash", os.path.join(T.REPO, "scripts", "build-wheel.sh"), lib, out,
                        "--no-build-isolation", "--no-index"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    (wheel,) = os.listdir(out)
    assert wheel == "paged_attn-%s-py3-none-linux_x86_64.whl" % version(), wheel
    WHEEL["path"] = os.path.join(out, wheel)
    return p.stdout.strip().replace(out + "/", "")


def holds_everything():
    z = zipfile.ZipFile(WHEEL["path"])
    names = set(z.namelist())
    modules = {"paged_attn/" + f for f in os.listdir(PKG) if f.endswith(".py")}
    assert modules <= names, modules - names
    assert "paged_attn/lib/libpa_runtime.so" in names, sorted(names)
    for name, data in LIBRARY.items():
        assert z.read("paged_attn/kernels/" + name) == data, name
    stray = [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not stray, stray
    return "%d files" % len(names)


FINDS_ITS_OWN = r'''
import os, paged_attn
from paged_attn import _capi, ops
pkg = os.path.dirname(paged_attn.__file__)
assert pkg == os.path.join(%(site)r, "paged_attn"), pkg
assert _capi.library().pa_runtime_path == os.path.join(pkg, "lib", "libpa_runtime.so")
assert ops.kernel_library_dir() == os.path.join(pkg, "kernels"), ops.kernel_library_dir()
print("OK", _capi.library().pa_runtime_path)
'''


def unpacked_finds_its_own(tmp):
    site = os.path.join(tmp, "site")
    zipfile.ZipFile(WHEEL["path"]).extractall(site)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PA_")}
    # torch from wherever %python finds it; the package only from site.
    torch_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                  if p and not p.endswith(os.path.join("runtime", "python"))]
    env["PYTHONPATH"] = os.pathsep.join([site] + torch_path)
    p = subprocess.run([sys.executable, "-c", FINDS_ITS_OWN % dict(site=site)], env=env,
                       cwd=tmp, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("OK"), p.stdout + p.stderr


def body(r):
    with tempfile.TemporaryDirectory() as tmp:
        r.run("build-wheel.sh builds the wheel", builds, tmp)
        if "path" in WHEEL:
            r.run("the wheel holds the package, the runtime, every library file",
                  holds_everything)
            r.run("unpacked, the package finds its runtime and kernels", unpacked_finds_its_own,
                  tmp)


def main():
    T.Results("the paged_attn wheel (scikit-build-core, no GPU)").guarded(body)


if __name__ == "__main__":
    main()
