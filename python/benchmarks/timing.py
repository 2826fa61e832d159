"""What the benchmarks here share: the FLOP count, SDPA's backward as a timed call, timing calls
with CUDA events, one variant at a time or several in turns, and the CSV of a run's rows."""

import csv
import statistics

import torch


def _timed_ms(fn, input_sets, per_timing):
    """One timing: `per_timing` calls of fn queued back to back (one per input set, in turn) between
    two CUDA events; the time per call in ms."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(per_timing):
        fn(*input_sets[i % len(input_sets)])
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / per_timing


def median_ms(fn, input_sets, reps, warmup, per_timing=3):
    """Median over `reps` timings of the time per call; a timing is `per_timing` calls queued back
    to back between two CUDA events (one per input set), so that the host's work for a call
    overlaps the GPU's work on the one before and the events time the GPU, not the launches."""
    for i in range(warmup):
        fn(*input_sets[i % len(input_sets)])
    torch.cuda.synchronize()
    return statistics.median(_timed_ms(fn, input_sets, per_timing) for _ in range(reps))


def interleaved_ms(variants, reps, warmup, per_timing=3):
    """median_ms's timings for several variants, taken in turns: each of `reps` passes times every
    variant once (in an order rotated by one from pass to pass), so that one variant's timing and
    the next lie a millisecond or so apart. Long attention kernels hold the H200 at its power
    limit, where the SM clock moves by 10 to 20% within a second; variants timed one block after
    another meet different clocks, and the clock's difference reads as theirs. Timed in turns,
    they meet the same ones.

    variants: {name: (fn, input_sets)}. Returns {name: [time per call in ms, one per pass]};
    compare two variants by the median of their pass-by-pass ratios (paired_ratio)."""
    names = list(variants)
    for name in names:
        fn, sets = variants[name]
        for i in range(warmup):
            fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    times = {name: [] for name in names}
    for p in range(reps):
        for name in rotated(names, p):
            times[name].append(_timed_ms(*variants[name], per_timing))
    return times


def paired_ratio(numerator, denominator):
    """The median of the ratios of two variants' timings from the same passes of interleaved_ms."""
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))


def rotated(items, r):
    """items taken from the (r mod len)-th on: pass r of interleaved_ms times its variants in this
    order, so that none is always timed first, last or right after the same one."""
    shift = r % len(items)
    return list(items[shift:]) + list(items[:shift])


def sm_clock_mhz():
    """The GPU's SM clock now (MHz) through NVML, or None where torch cannot read it (no pynvml;
    a CSV writer leaves None's cell empty). Long attention kernels run the H200 at its power limit,
    where the clock moves by 20% from one second to the next: a timing means little without the
    clock it ran at."""
    try:
        return torch.cuda.clock_rate()
    except Exception:  # torch reads it through pynvml, which is optional
        return None


def flops(B, H, N, D, causal, backward):
    """Attention's FLOPs as step07_bench counts them: 4 B H N^2 D for the forward, 2.5 times that for
    the backward, halved for causal."""
    f = 4.0 * B * H * N * N * D * (0.5 if causal else 1.0)
    return 2.5 * f if backward else f


def sdpa_backward(sets, causal, enable_gqa=False):
    """SDPA's backward as a call median_ms can time: one graph per input set (q, k, v, dout, ...),
    run again and again with retain_graph. Returns (fn, graphs)."""
    graphs = []
    for q, k, v, dout, *_ in sets:
        leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
        out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal, enable_gqa=enable_gqa)
        graphs.append((out, leaves, dout))

    def backward(out, leaves, dout):
        torch.autograd.grad(out, leaves, dout, retain_graph=True)

    return backward, graphs


def first_output(x):
    """The output of a call that may also return its logsumexp (FlashAttention-4's, say)."""
    return x[0] if isinstance(x, tuple) else x


def write_csv(path, rows):
    """rows (dicts with the same keys, in the order of the first) as a CSV file at path."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
