# REQUIRES: cuda-gpu, python-torch, pa-seed
# RUN: %python %s
#
# The drop-in against the seed it replaces: the same inputs, in the seed's
# own style (bench/compare.py's generator: no poisoned padding, workspace of
# ceil(max_seq_len / 512) partitions, the seed given tmp_output in the query
# dtype, ours float32 and the query dtype), into the seed's
# paged_attention_v2_triton and into paged_attn.paged_attention_v2. Each
# output is checked against the float64 reference (5e-3 float16, 1e-2
# bfloat16) and the two against each other (twice that bound).
#
# The seed lives outside this repository: PA_SEED_PATH names its file
# (paged_attention_v2_triton.py; it needs triton). Without it the test
# prints why and passes nothing (lit: the pa-seed feature, UNSUPPORTED).

import importlib.util
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402


def load_seed():
    path = os.environ.get("PA_SEED_PATH", "")
    if not path:
        return None, "PA_SEED_PATH is not set (it names the seed's paged_attention_v2_triton.py)"
    if not os.path.isfile(path):
        return None, "PA_SEED_PATH=%s is not a file" % path
    try:
        import triton  # noqa: F401
    except ImportError as e:
        return None, "the seed needs triton: %s" % e
    spec = importlib.util.spec_from_file_location("seed_pa_v2", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.paged_attention_v2_triton, path


# name: (num_seqs, num_heads, num_kv_heads, head_size, block_size, lens or ("ragged", max))
CONFIGS = {
    "mha-b8-L1024": (8, 32, 32, 128, 16, [1024] * 8),
    "gqa-b16-ragged4096": (16, 32, 8, 128, 16, ("ragged", 4096)),
    "gqa-b4-L32768": (4, 32, 8, 128, 16, [32768, 32768, 777, 1]),
    "d256-b8-L4096": (8, 16, 8, 256, 16, [4096] * 8),
    "d64-b32-L4096": (8, 32, 8, 64, 32, [4096] * 8),
    "gqa-b1-L512": (1, 32, 8, 128, 16, [512]),
    "mqa-b4-L2000": (4, 32, 1, 128, 16, [2000, 1, 513, 1024]),
    "gqa-b8-block8": (8, 16, 4, 128, 8, ("ragged", 3000)),
}


def run_config(torch, pa, seed_fn, name, dtype, seed):
    B, H, KVH, D, bs, lens = CONFIGS[name]
    if isinstance(lens, tuple):
        lens = torch.randint(1, lens[1] + 1, (B,), generator=torch.Generator().manual_seed(seed))
        lens = lens.tolist()
    # compare.py's generator: 7 spare blocks, a table padded with block 0.
    q, kc, vc, bt, sl = T.simple_case(torch, torch.Generator().manual_seed(seed), B, H, KVH, D,
                                      bs, lens, dtype, spare_blocks=7)
    scale = 1.0 / math.sqrt(D)
    max_len = max(lens)
    P = -(-max_len // T.PARTITION)
    ref = T.reference(q, kc, vc, bt, sl, scale)

    def call(fn, tmp_dtype):
        out = torch.full_like(q, float("nan"))
        es = torch.full((B, H, P), float("nan"), dtype=torch.float32, device="cuda")
        ml = torch.full_like(es, float("nan"))
        tmp = torch.full((B, H, P, D), float("nan"), dtype=tmp_dtype, device="cuda")
        fn(out, es, ml, tmp, q, kc, vc, KVH, scale, bt, sl, bs, max_len, None)
        torch.cuda.synchronize()
        return out

    seed_out = call(seed_fn, dtype)
    ours = call(pa.paged_attention_v2, torch.float32)
    ours_q = call(pa.paged_attention_v2, dtype)
    e_seed = T.check_close(seed_out, ref, dtype, "seed vs reference")
    e_ours = T.check_close(ours, ref, dtype, "ours (tmp f32) vs reference")
    e_ours_q = T.check_close(ours_q, ref, dtype, "ours (tmp %s) vs reference"
                             % str(dtype).replace("torch.", ""))
    e_vs = T.rel_error(ours, seed_out.double())
    bound = 2 * T.BOUNDS[str(dtype).replace("torch.", "")]
    if not e_vs <= bound:
        raise AssertionError("ours vs seed: relative difference %.3e exceeds %.0e" % (e_vs, bound))
    return "ref err: seed %.2e, ours %.2e (tmp %s %.2e); ours vs seed %.2e" % (
        e_seed, e_ours, str(dtype).replace("torch.", ""), e_ours_q, e_vs)


def main():
    r = T.Results("paged_attention_v2 vs the seed (paged_attention_v2_triton)")
    seed_fn, where = load_seed()
    if seed_fn is None:
        print("SKIPPED: %s" % where)
        r.finish()
    print("# seed: %s" % where)

    def body(r):
        import torch
        pa = T.import_paged_attn()
        base = T.test_seed_value()
        for dtype in (torch.float16, torch.bfloat16):
            for i, name in enumerate(CONFIGS):
                r.run("%s %s" % (name, str(dtype).replace("torch.", "")), run_config, torch, pa,
                      seed_fn, name, dtype, base + i)
                torch.cuda.empty_cache()

    r.guarded(body)


if __name__ == "__main__":
    main()
