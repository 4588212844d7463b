# REQUIRES: cuda-gpu, python-torch, multi-gpu
# RUN: %python %s
#
# Several GPUs (issue 30): one context per device, and tensor parallelism
# over heads. (a) One process drives every visible device, each in turn and
# then interleaved call by call, each result checked against the float64
# reference on its own device. (b) `torch.distributed.run --nproc-per-node=N`
# with NCCL: rank r computes its shard of the query heads (and their KV
# heads) of one batch, the shards are all-gathered, and rank 0 compares the
# whole with the one-GPU result of the same inputs and with the reference.
# UNSUPPORTED with fewer than two GPUs (lit feature multi-gpu).

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402

pa = T.import_paged_attn()
CASE = dict(S=5, H=32, KVH=8, D=128, BS=16, lens=[1, 300, 1025, 2600, 4000],
            dtype=torch.float16, sinks=(-1.0, 2.0), seed=31)


def one_device(device):
    c = T.Case(device=device, **CASE)
    pa.paged_attention_v2(*c.args(), sinks=c.sinks)
    torch.cuda.synchronize(device)
    return T.check_close(c.output, c.reference(), c.dtype)


def each_in_turn():
    errs = [one_device("cuda:%d" % d) for d in range(torch.cuda.device_count())]
    return "%d devices, max rel err %.2e" % (len(errs), max(errs))


def interleaved():
    cases = [T.Case(device="cuda:%d" % d, **CASE) for d in range(torch.cuda.device_count())]
    errs = []
    for _ in range(3):  # calls alternate between the devices' contexts
        for c in cases:
            c.poison()
            pa.paged_attention_v2(*c.args(), sinks=c.sinks)
        for c in cases:
            torch.cuda.synchronize(c.output.device)
            errs.append(T.check_close(c.output, c.reference(), c.dtype))
    return "%d calls, max rel err %.2e" % (len(errs), max(errs))


def shard(c, rank, world):
    """Rank `rank`'s heads: query heads [h0, h1) and their KV heads, as
    contiguous tensors on this rank's device."""
    kv0, kv1 = c.KVH * rank // world, c.KVH * (rank + 1) // world
    g = c.H // c.KVH
    h0, h1 = kv0 * g, kv1 * g
    dev = torch.device("cuda", rank)
    part = lambda t: t.to(dev).contiguous()  # noqa: E731
    q = part(c.query[:, h0:h1])
    kc, vc = part(c.key_cache[:, kv0:kv1]), part(c.value_cache[:, kv0:kv1])
    out = torch.empty_like(q)
    es = torch.empty(c.S, h1 - h0, c.P, dtype=torch.float32, device=dev)
    ml, tmp = torch.empty_like(es), torch.empty(c.S, h1 - h0, c.P, c.D, device=dev)
    pa.paged_attention_v2(out, es, ml, tmp, q, kc, vc, kv1 - kv0, c.scale,
                          part(c.block_tables), part(c.seq_lens), c.BS, c.max_seq_len, None,
                          sinks=part(c.sinks[h0:h1]))
    return out


def worker():
    """One rank of the torch.distributed run."""
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    c = T.Case(device="cuda:0" if rank == 0 else "cpu", **CASE)  # same seed: same inputs
    out = shard(c, rank, world)
    # Shards of equal size (KVH divisible by the world): gather along heads.
    parts = [torch.empty_like(out) for _ in range(world)]
    dist.all_gather(parts, out)
    if rank == 0:
        whole = torch.cat(parts, dim=1)
        pa.paged_attention_v2(*c.args(), sinks=c.sinks)
        torch.cuda.synchronize()
        # The shards may split their contexts differently (the partition
        # rule sees fewer programs), so compare within the dtype's bound.
        diff = T.rel_error(whole, c.output.double())
        err = T.check_close(whole, c.reference(), c.dtype)
        print("RANK0 rel diff sharded vs one GPU %.2e, rel err vs reference %.2e" % (diff, err))
        assert diff <= T.BOUNDS["float16"], diff
    dist.destroy_process_group()


def tensor_parallel():
    n = torch.cuda.device_count()
    if CASE["KVH"] % n:
        n = 2  # shard the 8 KV heads evenly
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node=%d" % n, os.path.abspath(__file__), "--worker"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError("torch.distributed.run failed (%d):\n%s\n%s"
                             % (r.returncode, r.stdout[-4000:], r.stderr[-4000:]))
    line = [l for l in r.stdout.splitlines() if l.startswith("RANK0")]
    return "%d ranks: %s" % (n, line[0] if line else "?")


def main():
    r = T.Results("several GPUs")
    r.run("each device in turn", each_in_turn)
    r.run("devices interleaved", interleaved)
    r.run("tensor parallel over heads (NCCL all_gather)", tensor_parallel)
    r.finish()


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        main()
