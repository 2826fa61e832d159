"""A sliding window's speed, through the installed package: the fast forward and backward with a
window of w keys per query against full attention on the same inputs. With a window, "fast" runs
the kernels built for one: on an sm_90 GPU the windowed twins of v6's forward and of v6b's
backward; elsewhere v5's both ways. Full attention is timed twice: as the window (N, N), which
is bounded, so it runs the same windowed kernels, but past every key (the full computation: "x"
is what skipping tiles buys), and without a window ("vs fast": the kernels "fast" runs then, v6 and
v6b on an sm_90 GPU).

Two kinds of window, each query seeing about w keys:
  local causal:  is_causal=True, window=(w - 1, 0): the w - 1 keys before the query and itself;
                 full causal attention computes about N / 2 keys per query, so skipping the
                 tiles outside can gain at most about N / (2 w);
  symmetric:     window=(w / 2, w / 2): full attention computes N keys per query, at most N / w.
"x" and "vs fast" are full attention's time over the window's, per round; the table shows the
median and the range over the rounds, next to that ideal ratio.

Run it where `fa2_attention` imports: installed (`pip install ./python`), or from a build with
PYTHONPATH=python.

    python3 python/benchmarks/window.py                      # B 1, H 16, N 4096 and 16384, w 256 and 1024
    python3 python/benchmarks/window.py --csv window.csv     # also every round's times
"""

import argparse
import statistics

import torch

import fa2_attention
from timing import median_ms, write_csv


def time_case(B, H, N, D, causal, window, reps, warmup, generator):
    """Forward and backward times (ms) of kernel="fast" at `window` on three input sets."""

    def draw():
        return torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16, generator=generator)

    sets = []
    for _ in range(3):
        q, k, v, dout = draw(), draw(), draw(), draw()
        out, lse = torch.ops.fa2.forward(q, k, v, causal, None, "fast", *window)
        sets.append((q, k, v, dout, out, lse))

    def fwd(q, k, v, dout, out, lse):
        torch.ops.fa2.forward(q, k, v, causal, None, "fast", *window)

    def bwd(q, k, v, dout, out, lse):
        torch.ops.fa2.backward(dout, q, k, v, out, lse, causal, None, "fast", False, *window)

    return median_ms(fwd, sets, reps, warmup), median_ms(bwd, sets, reps, warmup)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, nargs="+", default=[4096, 16384])
    parser.add_argument("--width", type=int, nargs="+", default=[256, 1024], help="keys per query, w")
    parser.add_argument("--head-dim", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--csv", default=None, help="write every round's times here")
    a = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {fa2_attention.library_path}")
    generator = torch.Generator(device="cuda")
    generator.manual_seed(0)

    cases = []  # (D, N, kind, w, causal, window)
    for D in a.head_dim:
        for N in a.seq:
            for w in a.width:
                cases.append((D, N, "local causal", w, True, (w - 1, 0)))
                cases.append((D, N, "symmetric", w, False, (w // 2, w // 2)))
    rows = []
    for r in range(a.rounds):
        for D, N, kind, w, causal, window in cases:
            timings = {
                "window": time_case(a.batch, a.heads, N, D, causal, window, a.reps, a.warmup, generator),
                "full (N, N)": time_case(a.batch, a.heads, N, D, causal, (N, N), a.reps, a.warmup, generator),
                "full fast": time_case(a.batch, a.heads, N, D, causal, (-1, -1), a.reps, a.warmup, generator),
            }
            for what, (fwd_ms, bwd_ms) in timings.items():
                rows.append(dict(round=r, D=D, N=N, kind=kind, w=w, causal=int(causal), left=window[0],
                                 right=window[1], run=what, fwd_ms=fwd_ms, bwd_ms=bwd_ms))
    if a.csv:
        write_csv(a.csv, rows)

    def ms(r, D, N, kind, w, run, pass_):
        return next(x[f"{pass_}_ms"] for x in rows
                    if (x["round"], x["D"], x["N"], x["kind"], x["w"], x["run"]) == (r, D, N, kind, w, run))

    print(f"\nB {a.batch}, H {a.heads}, bf16, kernel=\"fast\"; ms = median over {a.rounds} rounds; x = time of the "
          f"window (N, N) / window time (median of the rounds' ratios, range in brackets); 'vs fast' = time without "
          f"a window / window time")
    print("| pass | D | N | window | w | ideal | window ms | (N, N) ms | x | no window ms | vs fast |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for pass_ in ("fwd", "bwd"):
        for D, N, kind, w, causal, window in cases:
            rounds = range(a.rounds)
            t_win = statistics.median(ms(r, D, N, kind, w, "window", pass_) for r in rounds)
            t_nn = statistics.median(ms(r, D, N, kind, w, "full (N, N)", pass_) for r in rounds)
            t_fast = statistics.median(ms(r, D, N, kind, w, "full fast", pass_) for r in rounds)
            x = [ms(r, D, N, kind, w, "full (N, N)", pass_) / ms(r, D, N, kind, w, "window", pass_) for r in rounds]
            y = [ms(r, D, N, kind, w, "full fast", pass_) / ms(r, D, N, kind, w, "window", pass_) for r in rounds]
            ideal = N / (2 * w) if causal else N / w
            print(f"| {pass_} | {D} | {N} | {kind} ({window[0]}, {window[1]}) | {w} | {ideal:.1f} | {t_win:.3f} | "
                  f"{t_nn:.3f} | {statistics.median(x):.1f} ({min(x):.1f}-{max(x):.1f}) | {t_fast:.3f} | "
                  f"{statistics.median(y):.1f} ({min(y):.1f}-{max(y):.1f}) |")


if __name__ == "__main__":
    main()
