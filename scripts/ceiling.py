#!/usr/bin/env python3
"""The read ceiling: how fast this GPU streams N bytes it only reads.

A decode-attention kernel reads every K and V byte of the contexts once and
writes almost nothing. Its honest ceiling is therefore a kernel that reads
the same number of bytes and does no arithmetic on them, not a copy (a copy
also writes, and its read + write figure is not what a read-only kernel
meets). `read_tbs(nbytes)` times such a kernel over a contiguous buffer of
`nbytes` (rounded up to whole tiles) and returns bytes read / median time.

The kernel (Triton): each program loads one tile of 32-bit words, which
Triton emits as 16-byte vector loads (the buffer is 16-byte aligned and no
mask is needed), XOR-reduces it and stores one word, so the loads cannot be
dropped; the writes are 1/tile of the reads. A few tile sizes and warp
counts are timed and the best is the ceiling. Timing is
`triton.testing.do_bench` (median, CUDA events), which clears the L2 cache
before every timed call, as `../shared/bench/compare.py` times the kernels.
Without triton, `torch.sum` over the words stands in (labelled "torch").

Usage:
  scripts/ceiling.py                      read and copy ceilings at a ladder of sizes
  scripts/ceiling.py --bytes 2M,1.07G     those sizes (K, M, G suffixes: 10^3, 10^6, 10^9)
From Python: `from ceiling import read_tbs, copy_tbs` (scripts/ on sys.path).
"""
import argparse
import sys

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the torch reduction stands in
    triton = None

if triton is not None:
    @triton.jit
    def _read_tile(src, out, TILE: tl.constexpr):
        """One tile of 32-bit words per program, XOR-reduced to one word."""
        start = tl.program_id(0).to(tl.int64) * TILE
        x = tl.load(src + start + tl.arange(0, TILE))
        tl.store(out + tl.program_id(0), tl.xor_sum(x, 0))

# (words per tile, warps): 8 KB to 64 KB a program.
VARIANTS = ((2048, 4), (4096, 4), (8192, 8), (16384, 8))


def median_ms(fn, rep_ms=100):
    if triton is not None:
        return triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")
    for _ in range(5):
        fn()
    times = []
    for _ in range(50):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


_cache = {}


def read_ceiling(nbytes, rep_ms=100, device="cuda"):
    """Best read-only bandwidth over `nbytes`: (TB/s, bytes read, how).

    The buffer holds `nbytes` rounded up to whole tiles of the largest
    variant (at most 64 KB more), and the figure counts what was read."""
    nbytes = int(nbytes)
    if nbytes in _cache:
        return _cache[nbytes]
    big = max(t for t, _ in VARIANTS) * 4
    words = -(-nbytes // big) * big // 4
    src = torch.randint(-2**31, 2**31 - 1, (words,), dtype=torch.int32, device=device)
    best = None
    if triton is not None:
        for tile, warps in VARIANTS:
            grid = (words // tile,)
            out = torch.empty(grid[0], dtype=torch.int32, device=device)
            call = lambda: _read_tile[grid](src, out, TILE=tile, num_warps=warps)
            call()
            torch.cuda.synchronize()
            # The reduction is exact: check one tile against torch so a
            # kernel that skipped its loads could not pass for a fast one.
            acc = 0
            for w in src[:tile].cpu().tolist():
                acc ^= w
            if int(out[0].item()) != acc:
                raise RuntimeError(f"read kernel (tile {tile}) gave a wrong XOR")
            t = median_ms(call, rep_ms)
            tbs = words * 4 / t / 1e9
            if best is None or tbs > best[0]:
                best = (tbs, words * 4, f"triton tile {tile * 4 // 1024} KB, {warps} warps")
            del out
    else:
        t = median_ms(lambda: torch.sum(src, dtype=torch.int64), rep_ms)
        best = (words * 4 / t / 1e9, words * 4, "torch.sum")
    del src
    torch.cuda.empty_cache()
    _cache[nbytes] = best
    return best


def read_tbs(nbytes, rep_ms=100):
    """The read ceiling over `nbytes`, TB/s (bytes read / median time)."""
    return read_ceiling(nbytes, rep_ms)[0]


def copy_tbs(nbytes=2 << 30, rep_ms=200):
    """Device-to-device copy of `nbytes`: (bytes read + written) / time, TB/s
    (what scripts/bench.py has always printed its % against)."""
    src = torch.empty(int(nbytes), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t = median_ms(lambda: dst.copy_(src), rep_ms)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * int(nbytes) / t / 1e9


def parse_bytes(text):
    mult = {"K": 1e3, "M": 1e6, "G": 1e9}
    text = text.strip()
    if text and text[-1].upper() in mult:
        return int(float(text[:-1]) * mult[text[-1].upper()])
    return int(float(text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bytes", default="2M,64M,256M,0.54G,1.07G,2.15G,4.29G",
                    help="comma-separated sizes (the K+V bytes of bench.py's configs and more)")
    a = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    copy = copy_tbs()
    print(f"# {props.name} sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
          f"torch {torch.__version__}, triton {triton.__version__ if triton else '-'}; "
          f"device copy of 2 GiB {copy:.3f} TB/s (read + write)")
    print(f"{'bytes':>12} {'read TB/s':>10} {'ms':>9} {'read/copy':>9}  best variant")
    for text in a.bytes.split(","):
        n = parse_bytes(text)
        tbs, nread, how = read_ceiling(n)
        print(f"{nread:12d} {tbs:10.3f} {nread / tbs / 1e9:9.4f} {tbs / copy:9.3f}  {how}",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
