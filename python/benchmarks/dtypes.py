"""float16 against bfloat16, through the installed package: the fast kernels' forward and backward
on the same problems in both dtypes, and PyTorch's scaled_dot_product_attention in both for
comparison. The tensor cores run fp16 and bf16 at one rate, and the kernels differ only in their
multiply instructions and conversions, so the two should take the same time.

Each round times every configuration once (median of `--reps` timings after a warm-up, each of
three calls queued back to back between two CUDA events, one per input set); the ratio bf16 time /
fp16 time is taken per round, and the table shows its median and range over the rounds: a range
that contains 1 is a difference within the run-to-run spread. The two dtypes take turns at going
first in a round, so that neither is always timed right after the same problem nor always at the
same point of the clock's drift over a round (at its power limit); the CSV records the SM clock
read after each problem's four timings.

Run it where `fa2_attention` imports: installed (`pip install ./python`), or from a build with
PYTHONPATH=python.

    python3 python/benchmarks/dtypes.py                   # B 2, H 16, N 4096 and 8192, D 64 and 128
    python3 python/benchmarks/dtypes.py --csv dtypes.csv  # also every round's times, one row each
"""

import argparse
import csv
import statistics

import torch

import fa2_attention
from timing import flops, median_ms, rotated, sdpa_backward, sm_clock_mhz

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def time_problem(B, H, N, D, causal, dtype, reps, warmup, generator):
    def draw():
        return torch.randn((B, H, N, D), device="cuda", dtype=dtype, generator=generator)

    sets = []
    for _ in range(3):
        q, k, v, dout = draw(), draw(), draw(), draw()
        out, lse = torch.ops.fa2.forward(q, k, v, causal, None, "fast")
        sets.append((q, k, v, dout, out, lse))

    def fwd(q, k, v, dout, out, lse):
        torch.ops.fa2.forward(q, k, v, causal, None, "fast")

    def bwd(q, k, v, dout, out, lse):
        torch.ops.fa2.backward(dout, q, k, v, out, lse, causal, None, "fast", False)

    def sdpa_fwd(q, k, v, dout, out, lse):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    sdpa_bwd, graphs = sdpa_backward(sets, causal)
    return {
        "fast fwd": median_ms(fwd, sets, reps, warmup),
        "fast bwd": median_ms(bwd, sets, reps, warmup),
        "sdpa fwd": median_ms(sdpa_fwd, sets, reps, warmup),
        "sdpa bwd": median_ms(sdpa_bwd, graphs, reps, warmup),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--head-dim", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--csv", default=None, help="write every round's times here")
    a = parser.parse_args()
    B, H = a.batch, a.heads

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {fa2_attention.library_path}")
    generator = torch.Generator(device="cuda")
    generator.manual_seed(0)
    rows = []
    problems = [(N, D, causal) for D in a.head_dim for N in a.seq for causal in (False, True)]
    for r in range(a.rounds):
        for N, D, causal in problems:
            for name, dtype in rotated(list(DTYPES.items()), r):  # each dtype first in every other round
                times = time_problem(B, H, N, D, causal, dtype, a.reps, a.warmup, generator)
                clock = sm_clock_mhz()
                for what, ms in times.items():
                    rows.append(dict(round=r, B=B, H=H, N=N, D=D, causal=int(causal), dtype=name, impl=what, ms=ms,
                                     tflops=flops(B, H, N, D, causal, what.endswith("bwd")) / ms * 1e-9,
                                     sm_clock_mhz=clock))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)

    def ms_of(r, N, D, causal, dtype, impl):
        return next(x["ms"] for x in rows if (x["round"], x["N"], x["D"], x["causal"], x["dtype"], x["impl"]) ==
                    (r, N, D, int(causal), dtype, impl))

    print(f"\nB {B}, H {H}; TFLOP/s = median over {a.rounds} rounds; 'x' = bf16 time / fp16 time (median of the "
          "rounds' ratios, range in brackets; above 1: fp16 faster)")
    print("| pass | D | N | causal | fast bf16 TFLOP/s | fast fp16 TFLOP/s | fast x | SDPA bf16 TFLOP/s | "
          "SDPA fp16 TFLOP/s | SDPA x |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for pass_ in ("fwd", "bwd"):
        for N, D, causal in problems:
            cells = []
            for impl in (f"fast {pass_}", f"sdpa {pass_}"):
                for name in DTYPES:
                    tf = statistics.median(flops(B, H, N, D, causal, pass_ == "bwd") / ms_of(r, N, D, causal, name, impl)
                                           * 1e-9 for r in range(a.rounds))
                    cells.append(f"{tf:.1f}")
                ratios = [ms_of(r, N, D, causal, "bf16", impl) / ms_of(r, N, D, causal, "fp16", impl)
                          for r in range(a.rounds)]
                cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
            print(f"| {pass_} | {D} | {N} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
