# REQUIRES: cuda-gpu, python-torch
# RUN: %python %s
#
# torch.ops.paged_attn.paged_attention_v2 under torch.compile on the GPU,
# with the real kernels: a decode step (pa_testlib.decode_step: workspace
# allocated in the graph, fixed grid, ALiBi, window, soft cap; f16, bf16,
# fp8 with a device-tensor scale) compiles with fullgraph=True and 0 graph
# breaks and matches the float64 reference; under mode="reduce-overhead"
# (Inductor's CUDA graphs, no skip) its replays with new seq_lens,
# block_tables, queries and caches copied into the same inputs match the
# reference each time; torch.library.opcheck passes on CUDA; and a key the
# kernel library lacks raises the same PagedAttnUnsupportedError compiled as
# eager.

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

pa = T.import_paged_attn()
OP = torch.ops.paged_attn.paged_attention_v2.default
SEED = T.test_seed_value()
LENS = ([5, 600, 1100, 77], [1100, 1, 513, 300], [512, 1024, 2, 1000], [33, 7, 1100, 640])


def case(kv=None, dtype=torch.float16, lens=LENS[0], seed=0, k_scale=0.05):
    """Same shapes for every lens of LENS (blocks and partitions for 1100 tokens);
    fp8: k_scale as a device tensor, v_scale a float."""
    return T.Case(S=4, H=16, KVH=4, D=128, BS=16, lens=lens, dtype=dtype, seed=SEED + seed,
                  alibi=True, kv_cache_dtype=kv, k_scale=k_scale if kv else 1.0,
                  v_scale=0.1 if kv else 1.0, scales_on_device=(True, False),
                  extra_blocks=2000 - sum(-(-L // 16) for L in lens),
                  extra_table=70 - max(-(-L // 16) for L in lens),
                  extra_partitions=3 - -(-max(lens) // 512), cache_mag=8.0)


def fullgraph(kv, dtype):
    pa.init(torch.cuda.current_device())
    torch._dynamo.reset()
    c = case(kv, dtype)
    explain = torch._dynamo.explain(T.decode_step)(*T.step_args(c))
    assert explain.graph_break_count == 0 and explain.graph_count == 1, explain
    step = torch.compile(T.decode_step, fullgraph=True)
    errs = [T.check_close(step(*T.step_args(c)), c.reference(**T.STEP_FEATURES), dtype)]
    with torch._dynamo.config.patch(error_on_recompile=True):
        for i, lens in enumerate(LENS[1:]):
            c2 = case(kv, dtype, lens, seed=i + 1)
            errs.append(T.check_close(step(*T.step_args(c2)), c2.reference(**T.STEP_FEATURES),
                                      dtype))
    return "0 graph breaks; max rel err %.1e over %d inputs" % (max(errs), len(errs))


def reduce_overhead(kv):
    """One compiled step, replayed as a CUDA graph with new contents in its inputs."""
    from torch._inductor.cudagraph_trees import CUDAGraphNode, get_container
    pa.init(torch.cuda.current_device())
    torch._dynamo.reset()
    counters.clear()
    c = case(kv)
    for t in (c.key_cache, c.value_cache):  # caches live at fixed addresses, as a model's
        torch._dynamo.mark_static_address(t)
    step = torch.compile(T.decode_step, mode="reduce-overhead", fullgraph=True)
    errs = []
    for i in range(8):
        new = case(kv, lens=LENS[i % len(LENS)], seed=i, k_scale=0.05 * (1 + i % 3))
        for name in ("query", "key_cache", "value_cache", "block_tables", "seq_lens"):
            getattr(c, name).copy_(getattr(new, name))
        if kv:  # the kernel reads the scale at each replay
            c.k_scale_arg.copy_(new.k_scale_arg)
        out = step(*T.step_args(c)).clone()
        errs.append(T.check_close(out, new.reference(**T.STEP_FEATURES), c.dtype))
    assert counters["inductor"]["cudagraph_skips"] == 0, dict(counters["inductor"])
    manager = get_container(torch.cuda.current_device()).tree_manager
    recorded = list(manager.get_roots()) if manager is not None else []
    assert recorded and all(isinstance(n, CUDAGraphNode) for n in recorded), \
        "no CUDA graph recorded"
    return "8 calls (CUDA graph replays after warm-up); max rel err %.1e" % max(errs)


def opcheck(kv, dtype, fixed_grid):
    c = case(kv, dtype)
    args = pa._op.op_args(*c.args()[:14], kv or "auto", getattr(c, "k_scale_arg", 1.0),
                          getattr(c, "v_scale_arg", 1.0), {}, fixed_grid, 300, 30.0)
    result = torch.library.opcheck(OP, args)
    assert len(result) == 4 and set(result.values()) == {"SUCCESS"}, result
    return ", ".join("%s %s" % kv_ for kv_ in sorted(result.items()))


MISSING_KEY = r'''
import sys, torch
sys.path.insert(0, %(here)r)
import pa_testlib as T
import paged_attn as pa
c = T.Case(S=2, H=8, KVH=2, D=%(head)d, BS=16, lens=[40, 700], dtype=torch.float16)
try:
    pa.paged_attention_v2(*c.args())
except pa.PagedAttnUnsupportedError as e:
    eager = str(e)
def step(*a):
    pa.paged_attention_v2(*a)
    return a[0] * 1.0
try:
    torch.compile(step, fullgraph=True)(*c.args())
except pa.PagedAttnUnsupportedError as e:
    assert str(e) == eager, (str(e), eager)
    print("SAME:", eager)
'''


def missing_key_under_compile():
    """A one-bundle library: a head size it lacks is refused alike compiled and eager."""
    src = pa.kernel_library_dir()
    manifest = next(f for f in sorted(os.listdir(src)) if f.endswith(".manifest")
                    and "head_size 128\n" in open(os.path.join(src, f)).read())
    stem = manifest[:-len(".manifest")]
    with tempfile.TemporaryDirectory() as d:
        for f in os.listdir(src):
            if f.startswith(stem + "."):
                os.symlink(os.path.join(src, f), os.path.join(d, f))
        env = dict(os.environ, PA_KERNEL_LIBRARY=d)
        p = subprocess.run([sys.executable, "-c", MISSING_KEY % dict(here=T.HERE, head=64)],
                           env=env, capture_output=True, text=True)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("SAME:")]
    assert p.returncode == 0 and line and "head_size 64" in line[0] and \
        "(kernel library %s, 1 variants)" % d in line[0], p.stdout + p.stderr
    return line[0][:200]


def body(r):
    for kv, dtype in ((None, torch.float16), (None, torch.bfloat16), ("fp8_e4m3", torch.float16)):
        r.run("fullgraph %s %s" % (kv or "auto", str(dtype)[6:]), fullgraph, kv, dtype)
    for kv in (None, "fp8_e5m2"):
        r.run("reduce-overhead fixed grid %s" % (kv or "auto"), reduce_overhead, kv)
    for kv, dtype, fixed in ((None, torch.float16, False), (None, torch.bfloat16, True),
                             ("fp8_e4m3", torch.float16, True)):
        r.run("opcheck cuda %s %s fixed_grid=%s" % (kv or "auto", str(dtype)[6:], fixed), opcheck,
              kv, dtype, fixed)
    r.run("missing key: same error compiled and eager", missing_key_under_compile)


def main():
    T.Results("torch.compile and CUDA graphs with the paged_attn op (GPU)").guarded(body)


if __name__ == "__main__":
    main()
