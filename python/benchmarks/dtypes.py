"""float16 against bfloat16, through the installed package: the fast kernels' forward and backward
on the same problems in both dtypes, and PyTorch's scaled_dot_product_attention in both for
comparison. The tensor cores run fp16 and bf16 at one rate, and the kernels differ only in their
multiply instructions and conversions, so the two should take the same time.

A problem's two dtypes are timed in turns (timing.interleaved_ms: `--reps` passes, each timing
both dtypes once, a timing being three calls queued back to back between two CUDA events, one per
input set), because at its power limit the GPU's clock moves by 10 to 20% within a second, and
dtypes timed one after another would meet different clocks. A round's ratio bf16 time / fp16 time
is the median of the passes' ratios; the table shows the median and range of the ratios over the
rounds, each round with fresh inputs. The CSV has every round's median time and ratio, and the SM
clock read after each problem.

Run it where `fa2_attention` imports: installed (`pip install ./python`), or from a build with
PYTHONPATH=python.

    python3 python/benchmarks/dtypes.py                   # B 2, H 16, N 4096 and 8192, D 64 and 128
    python3 python/benchmarks/dtypes.py --csv dtypes.csv  # also every round's times, one row each
"""

import argparse
import statistics

import torch

import fa2_attention
from timing import flops, interleaved_ms, paired_ratio, sdpa_backward, sm_clock_mhz, write_csv

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def inputs(B, H, N, D, causal, dtype, generator):
    """Three sets of q, k, v, dout (random normal) and the fast forward's out and lse."""

    def draw():
        return torch.randn((B, H, N, D), device="cuda", dtype=dtype, generator=generator)

    sets = []
    for _ in range(3):
        q, k, v, dout = draw(), draw(), draw(), draw()
        out, lse = torch.ops.fa2.forward(q, k, v, causal, None, "fast")
        sets.append((q, k, v, dout, out, lse))
    return sets


def time_problem(B, H, N, D, causal, reps, warmup, generator):
    """Both dtypes' four timings of one problem: {impl: {dtype name: [ms, one per pass]}}, the two
    dtypes of an impl timed in turns (interleaved_ms)."""
    sets = {name: inputs(B, H, N, D, causal, dtype, generator) for name, dtype in DTYPES.items()}

    def fwd(q, k, v, dout, out, lse):
        torch.ops.fa2.forward(q, k, v, causal, None, "fast")

    def bwd(q, k, v, dout, out, lse):
        torch.ops.fa2.backward(dout, q, k, v, out, lse, causal, None, "fast", False)

    def sdpa_fwd(q, k, v, dout, out, lse):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    sdpa_bwd = {name: sdpa_backward(sets[name], causal) for name in DTYPES}
    return {
        "fast fwd": interleaved_ms({name: (fwd, sets[name]) for name in DTYPES}, reps, warmup),
        "fast bwd": interleaved_ms({name: (bwd, sets[name]) for name in DTYPES}, reps, warmup),
        "sdpa fwd": interleaved_ms({name: (sdpa_fwd, sets[name]) for name in DTYPES}, reps, warmup),
        "sdpa bwd": interleaved_ms(sdpa_bwd, reps, warmup),
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
            times = time_problem(B, H, N, D, causal, a.reps, a.warmup, generator)
            clock = sm_clock_mhz()
            for what, by_dtype in times.items():
                for name, passes in by_dtype.items():
                    ms = statistics.median(passes)
                    rows.append(dict(round=r, B=B, H=H, N=N, D=D, causal=int(causal), dtype=name, impl=what, ms=ms,
                                     tflops=flops(B, H, N, D, causal, what.endswith("bwd")) / ms * 1e-9,
                                     x=paired_ratio(by_dtype["bf16"], by_dtype["fp16"]), sm_clock_mhz=clock))
    if a.csv:
        write_csv(a.csv, rows)

    def row(r, N, D, causal, dtype, impl):
        return next(x for x in rows if (x["round"], x["N"], x["D"], x["causal"], x["dtype"], x["impl"]) ==
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
                    tf = statistics.median(row(r, N, D, causal, name, impl)["tflops"] for r in range(a.rounds))
                    cells.append(f"{tf:.1f}")
                ratios = [row(r, N, D, causal, "bf16", impl)["x"] for r in range(a.rounds)]
                cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
            print(f"| {pass_} | {D} | {N} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
