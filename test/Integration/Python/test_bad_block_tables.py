# REQUIRES: cuda-gpu, python-torch
# RUN: %python %s
#
# Bad block tables (docs/runtime.md, "Bad block tables"): block-table entries
# >= num_blocks or negative, and a seq_len beyond the table's capacity, are
# never read; exactly the rows of the sequences that attend to them are NaN,
# the other rows match the float64 reference, and paged_attn.check_errors()
# raises PagedAttnBadInputError naming one of the bad values, once.

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pa_testlib as T  # noqa: E402

import torch  # noqa: E402

pa = T.import_paged_attn()


def run(S, H, KVH, D, BS, lens, poison, max_seq_len, seed, fixed_grid=False):
    g = torch.Generator().manual_seed(seed)
    q, kc, vc, bt, sl = T.simple_case(torch, g, S, H, KVH, D, BS, lens, torch.float16,
                                      spare_blocks=3)
    good_bt, good_sl = bt.clone(), sl.clone()
    nb = kc.shape[0]
    bad_rows, bad_values = set(), []
    for s, kind in poison:
        if kind == "seq_len":
            value = bt.shape[1] * BS + 1
            sl[s] = value
            bad_values.append((s, -1, value))
        else:
            i = (lens[s] - 1) // BS // 2
            value = {"past": nb, "far": nb + 100000, "negative": -1}[kind]
            bt[s, i] = value
            bad_values.append((s, i, value))
        bad_rows.add(s)
    P = -(-bt.shape[1] * BS // T.PARTITION)
    out = torch.full_like(q, float("nan"))
    es = torch.empty(S, H, P, dtype=torch.float32, device="cuda")
    ml = torch.empty_like(es)
    tmp = torch.empty(S, H, P, D, dtype=torch.float32, device="cuda")
    pa.check_errors()  # nothing pending
    pa.paged_attention_v2(out, es, ml, tmp, q, kc, vc, KVH, D ** -0.5, bt, sl, BS,
                          max_seq_len, None, fixed_grid=fixed_grid)
    try:
        pa.check_errors()
    except pa.PagedAttnBadInputError as e:
        reported = (e.seq, e.index, e.value)
        assert reported in bad_values, (reported, bad_values, str(e))
        assert e.count >= 1 and e.code_name == "PA_ERROR_BAD_INPUT", str(e)
        print("reported:", e.message)
    else:
        raise AssertionError("check_errors() raised nothing for %s" % (bad_values,))
    pa.check_errors()  # cleared
    ref = T.reference(q, kc, vc, good_bt, good_sl, D ** -0.5)
    for s in range(S):
        row = out[s]
        if s in bad_rows:
            assert torch.isnan(row).all(), "row %d: %d values not NaN" % (
                s, int((~torch.isnan(row)).sum()))
        else:
            T.check_close(row[None], ref[s][None], torch.float16, "row %d" % s)


def main():
    if not torch.cuda.is_available():
        print("no CUDA device")
        return
    # Adaptive grid, several partitions (reduce kernel), GQA 4.
    run(4, 32, 8, 128, 16, [3000, 1500, 2049, 700], [(0, "past"), (2, "negative")], 3000, 1)
    # One-pass (short contexts), MHA, an entry far past the end.
    run(3, 8, 8, 64, 16, [200, 100, 31], [(1, "far")], 200, 2)
    # A bad seq_len (fixed grid) and a bad entry in another sequence.
    run(3, 32, 8, 128, 16, [1000, 600, 900], [(1, "seq_len"), (2, "negative")], 1000, 3,
        fixed_grid=True)
    print("PASS")


if __name__ == "__main__":
    main()
