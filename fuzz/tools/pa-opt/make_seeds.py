#!/usr/bin/env python3
"""Writes pa_opt_fuzzer's seeds: every `// -----` chunk of test/'s .mlir
files and examples/ that holds a paged_attn op, with its comment lines
(RUN, CHECK, expected-error) dropped.

Usage: make_seeds.py OUT_DIR. The committed corpus (corpus/ beside this
file) is these seeds after `pa_opt_fuzzer -merge=1 corpus/ OUT_DIR`, which
keeps the ones that add coverage, plus what fuzzing found
(docs/testing.md, "Fuzzing").
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def chunks(path):
    for i, chunk in enumerate(path.read_text().split("// -----")):
        lines = [l for l in chunk.splitlines() if not l.lstrip().startswith("//")]
        text = "\n".join(lines).strip() + "\n"
        if "paged_attn." in text:
            yield i, text


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    sources = sorted((ROOT / "test").rglob("*.mlir")) + [ROOT / "examples/decode_v2.mlir"]
    count = 0
    for src in sources:
        for i, text in chunks(src):
            (out / f"{src.stem}-{i}.mlir").write_text(text)
            count += 1
    print(f"{count} seeds -> {out}")


if __name__ == "__main__":
    main()
