"""Step 7's sweep through the PyTorch operator, beside the peers a user would compare it with:
kernel="fast" against SDPA's FlashAttention-2 and cuDNN backends and, where `flash_attn.cute`
imports, FlashAttention-4 (the flash-attn-4 package; on an H100 or H200 its sm_90 path). Three
passes: the forward, the backward alone (the forward's outputs given) and forward+backward.

Every implementation of a problem and pass is timed in the same rotating passes
(timing.interleaved_ms: each pass times every implementation once, in an order rotated by one
from pass to pass), because at its power limit the GPU's clock moves by 10 to 20% within a second
and implementations timed one after another would meet different clocks. A round's ratio of two
implementations is the median of their pass-by-pass ratios; the table gives the median TFLOP/s over
the rounds and each ratio's median and range over them, each round with fresh inputs. Each
implementation gets its own layout: (B, H, N, D) for this project and SDPA, (B, N, H, D) for
FlashAttention-4, both contiguous.

    --deterministic  also times the backward passes with deterministic gradients, this project's
                     and FlashAttention-4's (SDPA has none), and their cost against the default
    --window W       also times causal attention under a window of the W keys up to the query
                     (window (W - 1, 0)) against full causal attention, for this project and FA4

Without flash-attn-4 its columns are left out and the first lines say why. Run it where
`fa2_attention` imports: installed (`pip install ./python`), or from a build with PYTHONPATH=python.

    python3 python/benchmarks/peers.py                      # B 4, H 8, N 512 to 16384, D 64 and 128
    python3 python/benchmarks/peers.py --seq 4096 16384 --deterministic --window 4096 --csv peers.csv
"""

import argparse
import statistics

import torch

import fa2_attention
from timing import first_output, flops, interleaved_ms, sm_clock_mhz, write_csv

PASSES = ("fwd", "bwd", "fwd+bwd")


def load_fa4():
    """FlashAttention-4's flash_attn_func, or None and why it is missing."""
    try:
        from flash_attn.cute import flash_attn_func
    except Exception as e:  # not installed, or installed without what it needs
        return None, f"flash_attn.cute does not import ({type(e).__name__}: {e})"
    return flash_attn_func, None


def pass_flops(B, H, N, D, causal, pass_):
    """timing.flops for a pass; forward+backward counts both."""
    forward, backward = flops(B, H, N, D, causal, False), flops(B, H, N, D, causal, True)
    return {"fwd": forward, "bwd": backward, "fwd+bwd": forward + backward}[pass_]


class Problem:
    """One input set: q, k, v, dout in (B, H, N, D), the same in (B, N, H, D) for FlashAttention-4."""

    def __init__(self, B, H, N, D, generator):
        def draw():
            return torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16, generator=generator)

        self.q, self.k, self.v, self.dout = draw(), draw(), draw(), draw()
        self.nhd = tuple(t.transpose(1, 2).contiguous() for t in (self.q, self.k, self.v, self.dout))


def implementations(causal, window, fa4, deterministic):
    """{name: (forward(problem, q, k, v) -> out, layout)}: what each column calls, and whether it takes
    (B, H, N, D) or (B, N, H, D). window is (left, right) or None; deterministic asks for
    deterministic gradients (SDPA, which has none, is left out then, and under a window)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    impls = {}

    def fast(p, q, k, v):
        return fa2_attention.flash_attention(q, k, v, is_causal=causal, kernel="fast", deterministic=deterministic,
                                             window=window or (-1, -1))

    impls["fast"] = (fast, "bhnd")
    if fa4 is not None:
        def flash4(p, q, k, v):
            kwargs = {"causal": causal, "deterministic": deterministic}
            if window is not None:
                kwargs["window_size"] = window
            return first_output(fa4(q, k, v, **kwargs))

        impls["fa4"] = (flash4, "bnhd")
    if window is None and not deterministic:
        for name, backend in (("sdpa-fa2", SDPBackend.FLASH_ATTENTION), ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION)):
            def sdpa(p, q, k, v, backend=backend):
                with sdpa_kernel(backend):
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

            impls[name] = (sdpa, "bhnd")
    return impls


def callables(impl, pass_, problems):
    """(fn, input_sets) that interleaved_ms times for one implementation and pass. The backward alone
    runs autograd.grad on a graph kept from one forward per input set (retain_graph)."""
    forward, layout = impl

    def tensors(p):
        return (p.q, p.k, p.v, p.dout) if layout == "bhnd" else p.nhd

    if pass_ == "fwd":
        def fwd(p, q, k, v, dout):
            forward(p, q, k, v)

        return fwd, [(p, *tensors(p)) for p in problems]
    if pass_ == "fwd+bwd":
        def fwd_bwd(p, q, k, v, dout):
            leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
            torch.autograd.grad(forward(p, *leaves), leaves, dout)

        return fwd_bwd, [(p, *tensors(p)) for p in problems]
    graphs = []
    for p in problems:
        q, k, v, dout = tensors(p)
        leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
        graphs.append((forward(p, *leaves), leaves, dout))

    def bwd(out, leaves, dout):
        torch.autograd.grad(out, leaves, dout, retain_graph=True)

    return bwd, graphs


def time_round(B, H, N, D, causal, a, fa4, generator):
    """One round of one problem: {(column, pass): [ms, one per timing pass]}. A column is an
    implementation's name, with " det" for deterministic gradients and " window" under the window."""
    problems = [Problem(B, H, N, D, generator) for _ in range(3)]
    variants = {"": implementations(causal, None, fa4, False)}
    if a.deterministic:
        variants[" det"] = implementations(causal, None, fa4, True)
    if a.window and causal:
        variants[" window"] = implementations(causal, (a.window - 1, 0), fa4, False)
    times = {}
    for pass_ in PASSES:
        timed = {}
        for suffix, impls in variants.items():
            if suffix == " det" and pass_ == "fwd":
                continue  # deterministic gradients change only the backward
            for name, impl in impls.items():
                timed[name + suffix] = callables(impl, pass_, problems)
        for column, ms in interleaved_ms(timed, a.reps, a.warmup).items():
            times[(column, pass_)] = ms
    return times


def ratio_cell(rows, numerator, denominator):
    """Median and range over the rounds of the rounds' ratios, denominator's time / numerator's time
    (above 1 when the numerator is faster; for "det" and "window" against the default, the cost),
    or '-' when a column is missing."""
    values = [r[denominator] / r[numerator] for r in rows if numerator in r and denominator in r]
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--head-dim", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--window", type=int, default=0, help="W: also causal attention under window (W - 1, 0)")
    parser.add_argument("--csv", default=None, help="write every round's median time here")
    a = parser.parse_args()
    if a.window < 0:
        parser.error(f"--window: got {a.window}, allowed 0 (none) or a positive number of keys")
    if not torch.cuda.is_available():
        raise SystemExit("peers.py times GPU kernels: torch.cuda.is_available() is False here")

    fa4, why_not = load_fa4()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, "
          f"{fa2_attention.library_path}")
    print("fa4: " + (f"flash_attn.cute from {fa4.__module__}" if fa4 else f"not timed: {why_not}"))
    generator = torch.Generator(device="cuda")
    generator.manual_seed(0)
    B, H = a.batch, a.heads
    problems = [(D, causal, N) for D in a.head_dim for causal in (False, True) for N in a.seq]
    results = {}  # (D, causal, N, pass) -> [ {column: ms}, one per round ]
    csv_rows = []
    for r in range(a.rounds):
        for D, causal, N in problems:
            times = time_round(B, H, N, D, causal, a, fa4, generator)
            clock = sm_clock_mhz()
            for pass_ in PASSES:
                by_column = {c: statistics.median(ms) for (c, p), ms in times.items() if p == pass_}
                results.setdefault((D, causal, N, pass_), []).append(by_column)
                for column, ms in by_column.items():
                    csv_rows.append(dict(round=r, B=B, H=H, N=N, D=D, causal=int(causal), pass_=pass_, impl=column,
                                         ms=ms, tflops=pass_flops(B, H, N, D, causal, pass_) / ms * 1e-9,
                                         sm_clock_mhz=clock))
    if a.csv:
        write_csv(a.csv, csv_rows)

    columns = ["fast", "fa4", "sdpa-fa2", "sdpa-cudnn"]
    print(f"\nB {B}, H {H}, bf16; TFLOP/s: median over {a.rounds} rounds (fwd+bwd counted as 3.5x the forward's "
          "FLOPs); a/b: b's time / a's time, median of the rounds (range), above 1 when a is faster")
    print("| pass | D | causal | N | " + " | ".join(columns) + " | fast/fa4 | fast/cudnn | fast/fa2 |")
    print("|---|---|---|---|" + "---|" * (len(columns) + 3))
    for pass_ in PASSES:
        for D, causal, N in problems:
            rows = results[(D, causal, N, pass_)]
            flop = pass_flops(B, H, N, D, causal, pass_)
            cells = []
            for c in columns:
                ms = [row[c] for row in rows if c in row]
                cells.append(f"{flop / statistics.median(ms) * 1e-9:.1f}" if ms else "-")
            cells += [ratio_cell(rows, "fast", "fa4"), ratio_cell(rows, "fast", "sdpa-cudnn"),
                      ratio_cell(rows, "fast", "sdpa-fa2")]
            print(f"| {pass_} | {D} | {'yes' if causal else 'no'} | {N} | " + " | ".join(cells) + " |")
    if a.deterministic:
        print("\nDeterministic gradients: time with them / time without (median of the rounds, range)")
        print("| pass | D | causal | N | fast | fa4 |")
        print("|---|---|---|---|---|---|")
        for pass_ in ("bwd", "fwd+bwd"):
            for D, causal, N in problems:
                rows = results[(D, causal, N, pass_)]
                cells = [ratio_cell(rows, c, f"{c} det") for c in ("fast", "fa4")]
                print(f"| {pass_} | {D} | {'yes' if causal else 'no'} | {N} | " + " | ".join(cells) + " |")
    if a.window:
        print(f"\nWindow ({a.window - 1}, 0) against full causal attention: time with it / time without "
              "(median of the rounds, range)")
        print("| pass | D | N | fast | fa4 |")
        print("|---|---|---|---|---|")
        for pass_ in PASSES:
            for D, causal, N in problems:
                if causal:
                    rows = results[(D, causal, N, pass_)]
                    cells = [ratio_cell(rows, c, f"{c} window") for c in ("fast", "fa4")]
                    print(f"| {pass_} | {D} | {N} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
