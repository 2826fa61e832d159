"""What the benchmarks here share: timing one call with CUDA events."""

import statistics

import torch


def median_ms(fn, input_sets, reps, warmup, per_timing=3):
    """Median over `reps` timings of the time per call; a timing is `per_timing` calls queued back
    to back between two CUDA events (one per input set), so that the host's work for a call
    overlaps the GPU's work on the one before and the events time the GPU, not the launches."""
    for i in range(warmup):
        fn(*input_sets[i % len(input_sets)])
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(per_timing):
            fn(*input_sets[i % len(input_sets)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per_timing)
    return statistics.median(times)
