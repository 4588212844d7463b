"""The documented variant sets of the kernel library, per chip.

A variant is (dtype, head_size, heads_per_program); group sizes are runtime
parameters, served by the smallest heads_per_program tile that covers the
group (larger groups run several tiles per KV head), and so is the block
size: every bundle serves blocks of 8, 16, 32, 64 and 128 tokens (the
kernels take block_size at run time; docs/kernels.md), and so is tmp_output's
element type: every bundle serves tmp_output in f32 and in the query's type
(the kernels take tmp_f32 at run time).

Which partition kernel a variant gets follows the planning rule of
convert-paged-attn-to-gpu (KernelPlan.cpp): from sm_80, f16 and bf16 use the
tensor-core kernel (tiles of 8 or 16 query heads, n8 blocks of the mma);
on sm_70, f16 at head sizes 64, 96 and 128 uses the wmma kernel for its
8-head tile and the SIMT kernel for tiles 1 and 2 (and 4 at head size 64,
with 2 warps per program: warps()); the other sm_70 keys
and f32 caches use the SIMT kernel (tiles 1, 2, 4, and 8 for f32 up to head
size 128); fp8 caches use the tensor cores from sm_89 with 16-bit queries
(a bf16 one staged as f16), else the SIMT kernel (tiles 1 and 4).

* library:  what the build packages for the runtime: every dtype x head size
            x tile, each lean and _ext (ALiBi / soft cap), the fp8 caches
            (fp8()) and the wide twins (wide_twins()): 254 sm_70, 212 sm_80,
            216 sm_90 bundles.
* covering: a smaller set in which every value of every dimension appears,
            with the corner pairs — what CI assembles with ptxas.
* full:     the whole product, behind the opt-in target.

The rules below restate the compiler's planning rule (which kernel, how many
warps, the name); kernels/check_variants.py asks the compiler
(`pa-opt ... print-plans=true`) for every variant of the library and fails
on any difference (lit: test/Target/variant-names.test).
"""
import itertools

DTYPES = ["f16", "bf16", "f32"]
HEAD_SIZES = [64, 80, 96, 112, 128, 192, 256]
#: Served by every bundle at run time (not a bundle axis): the block sizes
#: the GPU checks run (kernels/gpu_check.py, runtime/tests/e2e_decode.cpp).
BLOCK_SIZES = [8, 16, 32, 64, 128]
BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f8E4M3FN": 1, "f8E5M2": 1}


def sm(chip):
    return int(chip[3:].rstrip("a"))


FP8_CACHES = ["f8E4M3FN", "f8E5M2"]
# fp8 caches: 16-bit queries, bundles for sm_70 (SIMT, software conversion),
# sm_80 (the same SIMT kernel: no fp8 conversion before sm_89; its own
# bundles so that an A100 loads machine code instead of JIT-compiling the
# sm_70 PTX on first use) and sm_90 (cvt.rn.f16x2.e4m3x2 / e5m2x2; tensor
# cores for 16-bit queries).
FP8_DTYPES = ["f16", "bf16"]
FP8_CHIPS = ["sm_70", "sm_80", "sm_90"]


def uses_mma(dtype, chip, cache=None):
    """The rule of KernelPlan.cpp: tensor cores from sm_80 for 16-bit caches
    of the query's type, and from sm_89 for fp8 caches with 16-bit queries
    (a bf16 query staged as f16: KernelPlan::queryToF16)."""
    if (cache or dtype) in FP8_CACHES:
        return dtype in ("f16", "bf16") and sm(chip) >= 89
    return (cache or dtype) == dtype and dtype != "f32" and sm(chip) >= 80


def uses_wmma(dtype, chip, head_size, tile, cache=None):
    """The wmma kernel (KernelPlan.cpp): f16 query and cache before sm_80,
    head sizes 64, 96 and 128, the 8-head tile."""
    return (dtype == "f16" and (cache or dtype) == "f16" and sm(chip) < 80 and
            head_size in (64, 96, 128) and tile == 8)


def tiles(dtype, head_size, chip, cache=None):
    """GQA tiles compiled for a chip. Tensor cores: 8 heads (one n8 block),
    16 up to head size 128. wmma (sm_7x, f16, head sizes 64, 96 and 128): 8
    heads for groups of 3 or more, SIMT tiles 1 and 2 below; at head size 64
    also the SIMT 4-head tile (2 warps), so that groups of 3 and 4 do not
    run the 8-head tile half masked. SIMT: the
    register budget allows 8 heads per program for f32 up to head size 128,
    4 otherwise; fp8 caches get 1 and 4 (a group of 2 runs the 4-head tile
    with two heads masked)."""
    if uses_mma(dtype, chip, cache):
        return [8, 16] if head_size <= 128 else [8]
    if (cache or dtype) in FP8_CACHES:
        return [1, 4]
    if uses_wmma(dtype, chip, head_size, 8, cache):
        return [1, 2, 4, 8] if head_size == 64 else [1, 2, 8]
    return [1, 2, 4, 8] if dtype == "f32" and head_size <= 128 else [1, 2, 4]


def warps(v, chip):
    """Warps per partition program: a wide twin's own count (see
    wide_twins); else 4 (the pass's default), but 2 for the
    SIMT 4-head tile of f16 at head size 64 on sm_7x (the wmma keys), whose
    programs hold 218-227 registers per thread (ptxas 11.8, sm_70): two
    warps let four programs share an SM (docs/history/performance-journal.md, 2026-12-06)."""
    if "warps" in v:
        return v["warps"]
    if (uses_wmma(v["dtype"], chip, v["head_size"], 8, v.get("cache")) and
            v["head_size"] == 64 and v["heads_per_program"] == 4):
        return 2
    return 4


def name(v, chip):
    n = v["dtype"]
    if v.get("cache", v["dtype"]) != v["dtype"]:
        n += f"_kv{v['cache']}"
    n += f"_d{v['head_size']}_h{v['heads_per_program']}"
    if warps(v, chip) != 4:
        n += f"_w{warps(v, chip)}"
    if v.get("ext"):
        n += "_ext"
    if uses_wmma(v["dtype"], chip, v["head_size"], v["heads_per_program"], v.get("cache")):
        return n + "_wmma"
    return n + "_mma" if uses_mma(v["dtype"], chip, v.get("cache")) else n


#: Warps per program of a wide twin, and the chips whose tensor-core
#: variants get same-kernel twins.
WIDE_WARPS = 8
WIDE_CHIPS = ["sm_90"]
#: Programs per thread-block cluster of the sm_90 twins' cluster kernel
#: (the one-pass kernel with each context split over a cluster, merged over
#: distributed shared memory), which the runtime runs for one-pass grids of
#: at most one cluster program per SM: batch 1 (docs/kernels.md).
CLUSTER_SIZE = 4


def wide_twins(variants, chip):
    """The 8-warp twins the runtime launches for grids it holds in one wave
    (a small batch), where more warps per program keep more bytes in flight
    on the SMs the grid has.

    sm_90: the same tensor-core kernel with 8 warps, for the 8-head tile of
    16-bit caches up to head size 128. Measured on the H100 (2026-12-06):
    batch 1 17.5 -> 12.7 us; full grids keep the 4-warp kernel (the 8-warp
    one was within -1.4 % to +1.5 % there). Not sm_80 (its twins lost up to
    7 % on full grids), not the 16-head tile nor head sizes 192 and 256
    (57-90 KB of workgroup memory, past the 48 KB of static shared memory
    ptxas allows: "uses too much shared data (..., 0xc000 max)").

    sm_7x: the wmma kernel with 8 warps does not help (11.9 -> 11.6 us per
    batch-1 kernel on the H100, and 86 KB of shared memory), so each wmma
    variant at head sizes 96 and 128 has as its twin the SIMT kernel with
    the 4-head tile and 8 warps, which declares itself the twin (`twin_of`:
    `wide_twin_of` in its manifest) and is never chosen on its own: batch 1
    16.4 -> 13.3 us on the H100 (docs/history/performance-journal.md, E). ptxas 11.8: 0
    spills, 177-220 registers. The runtime runs it for groups up to 4 (its
    tile would read K and V twice for larger ones) and grids of at most one
    program per two SMs. Not at head size 64: there groups 3 and 4 already
    run the SIMT 4-head tile (2 warps) and the wmma kernel only larger
    groups."""
    if chip in WIDE_CHIPS:
        return [dict(v, warps=WIDE_WARPS, cluster=CLUSTER_SIZE) for v in variants
                if uses_mma(v["dtype"], chip, v.get("cache")) and
                v.get("cache", v["dtype"]) == v["dtype"] and "warps" not in v and
                v["heads_per_program"] == 8 and v["head_size"] <= 128]
    return [dict(v, heads_per_program=4, warps=WIDE_WARPS, twin_of=name(v, chip))
            for v in variants
            if uses_wmma(v["dtype"], chip, v["head_size"], v["heads_per_program"],
                         v.get("cache")) and "warps" not in v and v["head_size"] != 64]


def full(chip):
    """Every dtype x head size x tile, each also as an _ext variant (ALiBi
    and the logits soft cap compiled in). Each serves tmp_output in f32 and
    in the query's type (a run-time parameter)."""
    out = []
    for t, d in itertools.product(DTYPES, HEAD_SIZES):
        for h in tiles(t, d, chip):
            for ext in (False, True):
                out.append(dict(dtype=t, head_size=d, heads_per_program=h,
                                ext=ext))
    out += wide_twins(out, chip)
    if chip in FP8_CHIPS:
        out += fp8(chip)
    return out


def fp8(chip):
    """fp8 caches: each with the 16-bit queries x head size x tile, lean
    and _ext."""
    out = []
    for c, t, d in itertools.product(FP8_CACHES, FP8_DTYPES, HEAD_SIZES):
        for h in tiles(t, d, chip, c):
            for ext in (False, True):
                out.append(dict(dtype=t, cache=c, head_size=d,
                                heads_per_program=h, ext=ext))
    return out


def covering(chip):
    """Every value of every dimension, with the corner pairs. The block size
    is not among them: every kernel takes it at run time."""
    out = []
    small = lambda t, d: min(tiles(t, d, chip))
    large = lambda t, d: max(tiles(t, d, chip))
    # Every head size with every dtype, the smallest tile.
    for t, d in itertools.product(DTYPES, HEAD_SIZES):
        out.append(dict(dtype=t, head_size=d, heads_per_program=small(t, d)))
    # The largest tile at the corners of head size and dtype.
    for t, d in itertools.product(DTYPES, [64, 256]):
        out.append(dict(dtype=t, head_size=d, heads_per_program=large(t, d)))
    # Every tile at head size 128.
    for t in DTYPES:
        for h in tiles(t, 128, chip):
            out.append(dict(dtype=t, head_size=128, heads_per_program=h))
    # Every tile at head size 64 in f16 (sm_7x: the 2-warp SIMT 4-head
    # tile), lean and _ext.
    for h in tiles("f16", 64, chip):
        for ext in (False, True):
            out.append(dict(dtype="f16", head_size=64, heads_per_program=h, ext=ext))
    # ALiBi and soft cap (_ext): every dtype at the corner head sizes, the
    # largest tile (the most registers).
    for t, d in itertools.product(DTYPES, [64, 128, 256]):
        out.append(dict(dtype=t, head_size=d, heads_per_program=large(t, d), ext=True))
    # fp8 caches (their chips): every head size with each cache type, and the
    # corners of tile and _ext (head size 128 too: its largest _ext tile is
    # at sm_70's 255-register cap).
    if chip in FP8_CHIPS:
        for c, t, d in itertools.product(FP8_CACHES, FP8_DTYPES, HEAD_SIZES):
            out.append(dict(dtype=t, cache=c, head_size=d,
                            heads_per_program=max(tiles(t, d, chip, c))))
        for c, t, d in itertools.product(FP8_CACHES, FP8_DTYPES, [64, 128, 256]):
            for h in tiles(t, d, chip, c):
                out.append(dict(dtype=t, cache=c, head_size=d,
                                heads_per_program=h, ext=h == max(tiles(t, d, chip, c))))
    # The wide twin (its chips) of every variant above that has one.
    out += wide_twins(out, chip)
    seen, uniq = set(), []
    for v in out:
        if name(v, chip) not in seen:
            seen.add(name(v, chip))
            uniq.append(v)
    return uniq


def variant_set(which, chip):
    return {"library": full, "covering": covering, "full": full}[which](chip)
