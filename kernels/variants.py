"""The documented variant sets of the kernel library.

A variant is (dtype, head_size, block_size, heads_per_program); group sizes
are runtime parameters, served by the smallest heads_per_program tile that
covers the group (larger groups run several tiles per KV head).

* library:  what the build packages for the runtime: every dtype x head size
            x block size, with tiles 1, 2, 4, 8 (4 max for head sizes > 128).
* covering: a smaller set in which every value of every dimension appears,
            with the corner pairs — what CI assembles with ptxas.
* full:     the whole product, behind the opt-in target.
"""
import itertools

DTYPES = ["f16", "bf16", "f32"]
HEAD_SIZES = [64, 80, 96, 112, 128, 192, 256]
BLOCK_SIZES = [8, 16, 32]
BYTES = {"f16": 2, "bf16": 2, "f32": 4}


def tiles(dtype, head_size):
    """GQA tiles compiled: the register budget allows 8 heads per program for
    f32 up to head size 128, 4 otherwise (see KernelPlan.cpp)."""
    return [1, 2, 4, 8] if dtype == "f32" and head_size <= 128 else [1, 2, 4]


def name(v):
    n = f"{v['dtype']}_d{v['head_size']}_b{v['block_size']}_h{v['heads_per_program']}"
    tmp = v.get("tmp_dtype", "f32")
    return n if tmp == "f32" else f"{n}_tmp{tmp}"


def full():
    """Every dtype x head size x block size x tile, with tmp_output in f32;
    the 16-bit dtypes also with tmp_output in their own type (the seed's
    convention)."""
    out = []
    for t, d, b in itertools.product(DTYPES, HEAD_SIZES, BLOCK_SIZES):
        for h in tiles(t, d):
            for tmp in (["f32", t] if t != "f32" else ["f32"]):
                out.append(dict(dtype=t, head_size=d, block_size=b, heads_per_program=h,
                                tmp_dtype=tmp))
    return out


def covering():
    out = []
    # Every head size with every dtype, at the common block size and tile.
    for t, d in itertools.product(DTYPES, HEAD_SIZES):
        out.append(dict(dtype=t, head_size=d, block_size=16, heads_per_program=4 if d <= 128 else 2))
    # Every block size and every tile at the corners of head size and dtype.
    for t, d, b in itertools.product(DTYPES, [64, 256], [8, 32]):
        out.append(dict(dtype=t, head_size=d, block_size=b, heads_per_program=max(tiles(t, d))))
    for t in ["f16", "bf16", "f32"]:
        for h in tiles(t, 128):
            out.append(dict(dtype=t, head_size=128, block_size=16, heads_per_program=h))
    # tmp_output in the query's 16-bit type, at a small and a large head size.
    for t, d in itertools.product(["f16", "bf16"], [64, 256]):
        out.append(dict(dtype=t, head_size=d, block_size=16, heads_per_program=2, tmp_dtype=t))
    seen, uniq = set(), []
    for v in out:
        if name(v) not in seen:
            seen.add(name(v))
            uniq.append(v)
    return uniq


def variant_set(which):
    return {"library": full, "covering": covering, "full": full}[which]()
