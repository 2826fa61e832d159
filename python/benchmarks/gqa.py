"""Grouped-query attention's speed, through the installed package: the fast kernels' forward and
backward at H query heads with H_kv = H (multi-head), H / 4 and 1 (multi-query) kv heads, and
PyTorch's scaled_dot_product_attention with enable_gqa=True on the same inputs for comparison.

The FLOP count depends on the query heads only (4 B H N^2 D for the forward, 2.5 times that for
the backward, halved for causal, as step07_bench counts), so a problem's TFLOP/s at H_kv < H
against H_kv = H is the inverse of their time ratio. A problem's kv-head counts are timed in
turns (timing.interleaved_ms: `--reps` passes, each timing every count once, a timing being three
calls queued back to back between two CUDA events, one per input set), because at its power
limit the GPU's clock moves by 10 to 20% within a second: timed one after another, the counts
would meet different clocks (step 7's README, "Grouped-query attention", shows what that did).
A round's ratio is the median of the passes' ratios; the table shows the median and range of
the ratios over the rounds, each round with fresh inputs. The CSV has every round's median time
and ratio, and the SM clock read after each problem.

Run it where `fa2_attention` imports: installed (`pip install ./python`), or from a build with
PYTHONPATH=python.

    python3 python/benchmarks/gqa.py                # B 2, H 32, N 4096 and 8192, D 64 and 128
    python3 python/benchmarks/gqa.py --csv gqa.csv  # also every round's times, one row each
"""

import argparse
import statistics

import torch

import fa2_attention
from timing import flops, interleaved_ms, paired_ratio, sdpa_backward, sm_clock_mhz, write_csv


def inputs(B, H, H_kv, N, D, causal, generator):
    """q, k, v, dout (bf16, random normal) and the fast forward's out and lse for the backward."""

    def draw(*shape):
        return torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=generator)

    q, k, v, dout = draw(B, H, N, D), draw(B, H_kv, N, D), draw(B, H_kv, N, D), draw(B, H, N, D)
    out, lse = torch.ops.fa2.forward(q, k, v, causal, None, "fast")
    return q, k, v, dout, out, lse


def time_problem(B, H, kv_heads, N, D, causal, reps, warmup, generator):
    """Every kv-head count's four timings of one problem: {impl: {H_kv: [ms, one per pass]}}, the
    kv-head counts of an impl timed in turns (interleaved_ms)."""
    sets = {h: [inputs(B, H, h, N, D, causal, generator) for _ in range(3)] for h in kv_heads}

    def fwd(q, k, v, dout, out, lse):
        torch.ops.fa2.forward(q, k, v, causal, None, "fast")

    def bwd(q, k, v, dout, out, lse):
        torch.ops.fa2.backward(dout, q, k, v, out, lse, causal, None, "fast", False)

    def sdpa_fwd(q, k, v, dout, out, lse):
        grouped = q.shape[1] > k.shape[1]
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=grouped)

    sdpa_bwd = {h: sdpa_backward(sets[h], causal, enable_gqa=h < H) for h in kv_heads}
    return {
        "fast fwd": interleaved_ms({h: (fwd, sets[h]) for h in kv_heads}, reps, warmup),
        "fast bwd": interleaved_ms({h: (bwd, sets[h]) for h in kv_heads}, reps, warmup),
        "sdpa fwd": interleaved_ms({h: (sdpa_fwd, sets[h]) for h in kv_heads}, reps, warmup),
        "sdpa bwd": interleaved_ms({h: sdpa_bwd[h] for h in kv_heads}, reps, warmup),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, nargs="+", default=None,
                        help="besides H, which is always timed (default: H/4 and 1)")
    parser.add_argument("--seq", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--head-dim", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--csv", default=None, help="write every round's times here")
    a = parser.parse_args()
    B, H = a.batch, a.heads
    for h in a.kv_heads or []:
        if h < 1 or H % h != 0:
            parser.error(f"--kv-heads: {h} does not divide --heads {H}")
    # H itself is always timed: the ratios are taken against it
    kv_heads = sorted(set(a.kv_heads or [H // 4, 1]) | {H}, reverse=True)

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {fa2_attention.library_path}")
    generator = torch.Generator(device="cuda")
    generator.manual_seed(0)
    rows = []
    problems = [(N, D, causal) for D in a.head_dim for N in a.seq for causal in (False, True)]
    for r in range(a.rounds):
        for N, D, causal in problems:
            times = time_problem(B, H, kv_heads, N, D, causal, a.reps, a.warmup, generator)
            clock = sm_clock_mhz()
            for what, by_kv in times.items():
                backward = what.endswith("bwd")
                for H_kv, passes in by_kv.items():
                    ms = statistics.median(passes)
                    rows.append(dict(round=r, B=B, H=H, H_kv=H_kv, N=N, D=D, causal=int(causal), impl=what, ms=ms,
                                     tflops=flops(B, H, N, D, causal, backward) / ms * 1e-9,
                                     x=paired_ratio(by_kv[H], passes),
                                     sm_clock_mhz=clock))
    if a.csv:
        write_csv(a.csv, rows)

    def row(r, N, D, causal, H_kv, impl):
        return next(x for x in rows if (x["round"], x["N"], x["D"], x["causal"], x["H_kv"], x["impl"]) ==
                    (r, N, D, int(causal), H_kv, impl))

    print(f"\nB {B}, H {H}, bf16; TFLOP/s = median over {a.rounds} rounds; 'x' = time at H_kv = H / time at H_kv "
          f"(median of the rounds' ratios, range in brackets)")
    print("| pass | D | N | causal | H_kv | fast TFLOP/s | fast x | SDPA TFLOP/s | SDPA x |")
    print("|---|---|---|---|---|---|---|---|---|")
    for pass_ in ("fwd", "bwd"):
        for N, D, causal in problems:
            for H_kv in kv_heads:
                cells = []
                for impl in (f"fast {pass_}", f"sdpa {pass_}"):
                    tf = statistics.median(row(r, N, D, causal, H_kv, impl)["tflops"] for r in range(a.rounds))
                    ratios = [row(r, N, D, causal, H_kv, impl)["x"] for r in range(a.rounds)]
                    cells += [f"{tf:.1f}", f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"]
                print(f"| {pass_} | {D} | {N} | {'yes' if causal else 'no'} | {H_kv} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
