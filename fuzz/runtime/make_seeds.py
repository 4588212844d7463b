#!/usr/bin/env python3
"""Writes pa_manifest_fuzzer's seeds from a kernel library (pa-opt's
bundles): each manifest with its `ptx` record renamed to k.ptx, then a NUL
byte and the PTX's header (through `.address_size`), which is all the
loader reads of it on a host-only context. One more seed declares a wide
twin.

Usage: make_seeds.py LIBRARY_DIR OUT_DIR. The committed corpus
(manifest_corpus/ beside this file) is these seeds after
`pa_manifest_fuzzer -merge=1 manifest_corpus/ OUT_DIR`, plus what fuzzing
found (docs/testing.md, "Fuzzing").
"""
import pathlib
import re
import sys


def seed(manifest, ptx_dir):
    text = manifest.read_text()
    ptx_name = re.search(r"^ptx (\S+)$", text, re.M).group(1)
    header = []
    for line in (ptx_dir / ptx_name).read_text().splitlines():
        if line.startswith("."):
            header.append(line)
        if line.startswith(".address_size"):
            break
    text = re.sub(r"^ptx \S+$", "ptx k.ptx", text, flags=re.M)
    return text.encode() + b"\0" + ("\n".join(header) + "\n").encode()


def main():
    lib, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    manifests = sorted(lib.glob("*.manifest"))
    for m in manifests:
        (out / m.stem).write_bytes(seed(m, lib))
    first = seed(manifests[0], lib)
    (out / "declared-twin").write_bytes(
        first.replace(b"\nchip ", b"\nwide_twin_of some_bundle\nchip ", 1))
    print(f"{len(manifests) + 1} seeds -> {out}")


if __name__ == "__main__":
    main()
