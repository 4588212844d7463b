#!/usr/bin/env python3
"""The host side of one eager paged_attention_v2 call, phase by phase (a
benchmark): what Python spends before the kernels are queued.

  call       paged_attn.paged_attention_v2(...): everything below
  op_args    the argument-type rules before the op's schema (_op.op_args)
  dispatch   torch.ops.paged_attn.paged_attention_v2 with an empty
             implementation of the same schema: the dispatcher's own cost
             (not in `call` in plain eager mode, which skips it: _op.call)
  check      every rule on the op's arguments (_checks.check_call)
  pack       the pa_decode_args struct (ops._decode_args)
  launch     pa_decode_v2 through ctypes (a GPU: the runtime plans and
             queues the kernels; without one: a call with a NULL context,
             which returns at once: the ctypes crossing alone)

With a CUDA GPU the tensors are CUDA tensors and `call` and `launch` queue
the kernels for real, in bursts of 50 calls with the queue drained between
bursts (untimed), so the times are the host's even where the kernels take
longer. Without one (`--cpu`, or no GPU) they are CPU tensors, and two things are
stubbed: the rule that the tensors be on a CUDA device and the launch
(and the call skips the dispatcher as it would on CUDA tensors); every
other rule runs as on a GPU.

Usage: PYTHONPATH=runtime/python python3 scripts/host_overhead.py [--cpu]
           [--calls 20000] [--rounds 5] [--json FILE]
Prints one table: the best (and median) microseconds per call of each phase.
"""
import argparse
import ctypes
import json
import platform
import statistics
import sys
import time

import torch

import paged_attn
from paged_attn import _capi, _checks, _op, ops

# name: seqs, heads, kv heads, head size, block, context, features. Batch 1:
# the host work does not depend on the sizes, and on a GPU each call's
# kernels (about 10 us) must take less than its host side, or the loop
# would time the GPU once the launch queue fills.
CONFIGS = {
    "gqa-b1-L512": (1, 32, 8, 128, 16, 512, ""),
    "gqa-b1-L512 fp8+all": (1, 32, 8, 128, 16, 512, "fp8 alibi window cap sinks"),
    "gqa-b1-L512 q_len 4": (1, 32, 8, 128, 16, 512, "spec4"),
}


def make_call(device, seqs, heads, kv_heads, head_size, block, context, features):
    """Keyword arguments of one call (zero-filled: the values are never read)."""
    f16, f32, i32 = torch.float16, torch.float32, torch.int32
    fp8 = "fp8" in features
    rows = seqs * 4 if "spec4" in features else seqs
    x = 16 if fp8 else 8
    cache_dt = torch.uint8 if fp8 else f16
    mb = -(-context // block)
    parts = -(-context // 512)
    z = lambda shape, dt: torch.zeros(shape, dtype=dt, device=device)  # noqa: E731
    a = dict(output=z((rows, heads, head_size), f16), exp_sums=z((rows, heads, parts), f32),
             max_logits=z((rows, heads, parts), f32),
             tmp_output=z((rows, heads, parts, head_size), f32),
             query=z((rows, heads, head_size), f16),
             key_cache=z((seqs * mb, kv_heads, head_size // x, block, x), cache_dt),
             value_cache=z((seqs * mb, kv_heads, head_size, block), cache_dt),
             num_kv_heads=kv_heads, scale=head_size ** -0.5,
             block_tables=z((seqs, mb), i32), seq_lens=z((seqs,), i32) + context,
             block_size=block, max_seq_len=context, alibi_slopes=None)
    if fp8:
        a.update(kv_cache_dtype="fp8", k_scale=z((), f32) + 1, v_scale=0.5)
    if "alibi" in features:
        a["alibi_slopes"] = z((heads,), f32)
    if "window" in features:
        a["sliding_window"] = 1024
    if "cap" in features:
        a["logits_soft_cap"] = 30.0
    if "sinks" in features:
        a["sinks"] = z((heads,), f32)
    if "spec4" in features:
        a.update(query_start_loc=torch.arange(0, rows + 1, 4, dtype=i32, device=device),
                 max_query_len=4)
    return a


def op_arguments(a):
    """The call's arguments as the op takes them (SCHEMA order)."""
    pos = [a[n] for n in ("output", "exp_sums", "max_logits", "tmp_output", "query",
                          "key_cache", "value_cache", "num_kv_heads", "scale", "block_tables",
                          "seq_lens", "block_size", "max_seq_len", "alibi_slopes")]
    return _op.op_args(*pos, a.get("kv_cache_dtype", "auto"), a.get("k_scale", 1.0),
                       a.get("v_scale", 1.0), {}, False, a.get("sliding_window"),
                       a.get("logits_soft_cap"), a.get("sinks"), a.get("query_start_loc"),
                       a.get("max_query_len"))


def timed(fn, calls, rounds, drain, burst=50):
    """Microseconds per call: (best, median) of `rounds` loops of `calls`.
    The calls run in bursts of `burst`, the queue drained between bursts
    (untimed), so that on a GPU no launch waits for the queue to empty: the
    time is the host's even where the kernels take longer."""
    for _ in range(min(calls, 200)):
        fn()
    drain()
    per_round = []
    for _ in range(rounds):
        spent = 0.0
        for _ in range(0, calls, burst):
            t0 = time.perf_counter()
            for _ in range(burst):
                fn()
            spent += time.perf_counter() - t0
            drain()
        per_round.append(spent / (-(-calls // burst) * burst) * 1e6)
    return min(per_round), statistics.median(per_round)


def stub_for_cpu():
    """CPU tensors stand in for CUDA ones: the device rule and the launch go."""
    checks_devices = _checks._check_devices
    _checks._check_devices = lambda *rule_args, need_cuda: checks_devices(*rule_args,
                                                                          need_cuda=False)
    torch.cuda.current_device = lambda: 0

    class NoLaunch:
        kernel_dir, num_variants = "(stub)", 0

        def decode(self, args, stream):
            pass
    ops._context = lambda index: NoLaunch()
    ops._current_stream = lambda index: 0
    _op.dispatch_free = _op.plain_eager


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", action="store_true", help="CPU tensors, launch stubbed")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    gpu = torch.cuda.is_available() and not args.cpu
    device = "cuda" if gpu else "cpu"
    if not gpu:
        stub_for_cpu()
    drain = torch.cuda.synchronize if gpu else (lambda: None)
    empty = torch.library.Library("paged_attn_host_overhead", "DEF")
    empty.define(_op.SCHEMA)
    empty.impl(_op.NAME, lambda *a, **k: None, "CompositeExplicitAutograd")
    lib = _capi.library()
    where = torch.cuda.get_device_name() if gpu else "no GPU: CPU tensors, launch stubbed"
    print("host side of one eager call, us per call, best of %d rounds of %d (median); "
          "python %s, torch %s, %s; %s" % (args.rounds, args.calls, platform.python_version(),
                                           torch.__version__, platform.processor() or
                                           platform.machine(), where))
    phases = ("call", "op_args", "dispatch", "check", "pack", "launch")
    print("| config | " + " | ".join(phases) + " |")
    print("|---" * (len(phases) + 1) + "|")
    results = {}
    for name in args.configs.split(","):
        a = make_call(device, *CONFIGS[name])
        op = op_arguments(a)
        c = _op.check(*op)
        packed = ops._decode_args(c)
        if gpu:
            ctx = ops._context(c.device_index)
            stream = ops._current_stream(c.device_index)
            launch = lambda: ctx.decode(packed, stream)  # noqa: E731
        else:
            launch = lambda: lib.pa_decode_v2(None, ctypes.byref(packed), None)  # noqa: E731
        empty_op = torch.ops.paged_attn_host_overhead.paged_attention_v2
        fns = {"call": lambda: paged_attn.paged_attention_v2(**a),
               "op_args": lambda: op_arguments(a),
               "dispatch": lambda: empty_op(*op),
               "check": lambda: _op.check(*op),
               "pack": lambda: ops._decode_args(c),
               "launch": launch}
        results[name] = {p: timed(fns[p], args.calls, args.rounds, drain) for p in phases}
        print("| %s | %s |" % (name, " | ".join("%.1f (%.1f)" % results[name][p]
                                               for p in phases)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"where": where, "torch": torch.__version__, "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    sys.exit(main())
