#!/usr/bin/env python3
"""Runs the example decode step (examples/decode_v2.mlir: 32 query heads over
8 KV heads, head size 128, fp16, 16-token blocks) through paged_attn's drop-in
on the GPU, checks it against a float64 reference and prints the bandwidth.
Used by scripts/run-example.sh; PA_KERNEL_LIBRARY names the compiled bundle."""
import math
import os

import torch

from paged_attn import paged_attention_v2

torch.manual_seed(0)
# PA_EXAMPLE_KV_HEADS=32 turns the example into MHA (for experiments).
seqs, heads, d, bs, ctx = 64, 32, 128, 16, 4096
kv_heads = int(os.environ.get("PA_EXAMPLE_KV_HEADS", 8))
x = 8
blocks_per_seq = ctx // bs
nblocks = seqs * blocks_per_seq
kc = (torch.randn(nblocks, kv_heads, d // x, bs, x) * 0.5).half().cuda()
vc = torch.randn(nblocks, kv_heads, d, bs).half().cuda()
bt = torch.randperm(nblocks).int().reshape(seqs, blocks_per_seq).cuda()
sl = torch.full((seqs,), ctx, dtype=torch.int32).cuda()
q = torch.randn(seqs, heads, d).half().cuda()
parts = math.ceil(ctx / 512)
out = torch.full_like(q, float("nan"))
es = torch.empty(seqs, heads, parts, device="cuda")
ml = torch.empty_like(es)
tmp = torch.empty(seqs, heads, parts, d, device="cuda")
scale = 1 / math.sqrt(d)
call = lambda: paged_attention_v2(out, es, ml, tmp, q, kc, vc, kv_heads, scale, bt, sl, bs, ctx, None)
call()
torch.cuda.synchronize()

# float64 reference on 4 sequences
k = kc.double().permute(0, 3, 1, 2, 4).reshape(nblocks, bs, kv_heads, d)
v = vc.double().permute(0, 3, 1, 2)
err_num = err_den = 0.0
for s in range(4):
    ks = k[bt[s].long()].reshape(-1, kv_heads, d).repeat_interleave(heads // kv_heads, 1)
    vs = v[bt[s].long()].reshape(-1, kv_heads, d).repeat_interleave(heads // kv_heads, 1)
    p = torch.softmax(torch.einsum("hd,lhd->hl", q[s].double(), ks) * scale, -1)
    ref = torch.einsum("hl,lhd->hd", p, vs)
    err_num += (out[s].double() - ref).norm().item() ** 2
    err_den += ref.norm().item() ** 2
err = math.sqrt(err_num / err_den)
print(f"check: rel. error vs float64 reference {err:.2e} (bound 5e-3): {'OK' if err < 5e-3 else 'FAIL'}")

def median_ms(fn, reps=50):
    for _ in range(5):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


kv_bytes = seqs * ctx * kv_heads * d * 2 * 2
# Fixed grid, as under CUDA-graph capture: the workspace is sized for twice
# the current context, and the grid covers all of it whatever the lengths.
es2 = torch.empty(seqs, heads, 2 * parts, device="cuda")
ml2, tmp2 = torch.empty_like(es2), torch.empty(seqs, heads, 2 * parts, d, device="cuda")
fixed = lambda: paged_attention_v2(out, es2, ml2, tmp2, q, kc, vc, kv_heads, scale, bt, sl, bs,
                                   ctx, None, fixed_grid=True)
for mode, fn in (("adaptive grid", call), ("fixed grid (CUDA-graph mode)", fixed)):
    ms = median_ms(fn)
    print(f"{torch.cuda.get_device_name()}, {mode}: {seqs} seqs x {ctx} tokens, "
          f"{kv_bytes / 1e9:.2f} GB of K/V in {ms:.3f} ms (median of 50) = "
          f"{kv_bytes / ms / 1e9:.2f} TB/s")
