"""Each kernel's time and cycles under ncu: the grouped-query and float16 comparisons without the
clock's drift. One forward and one backward of every configuration (B 2, H 32; D 64 and 128, N 4096
and 8192, with and without the causal mask; bf16 at H_kv 32, 8 and 1, fp16 at H_kv 32) run between
cudaProfilerStart and Stop; the configurations are printed in that order.

    ncu --profile-from-start off --clock-control none --csv --print-units base --log-file ncu.csv \\
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.max python3 python/benchmarks/kernel_cycles.py > configs.txt
    python3 python/benchmarks/kernel_cycles.py --parse ncu.csv configs.txt > cycles.md

Run it where `fa2_attention` imports: installed (`pip install ./python`), or from a build with
PYTHONPATH=python. One H200's run (2026-12-02): step07_benchmark/results/h200_2026-12-02/paired_timing/
(configs.txt and cycles.md).

ncu replays each kernel alone after flushing the caches and leaves the clocks as they are
(--clock-control none), so `sm__cycles_elapsed.max` (the busiest SM's cycles) is the number to
compare: a kernel at a lower clock takes longer, not more cycles. The parser gives each
configuration its forward (the kernel whose name has "fwd") and its backward (every kernel after
it up to the next configuration's forward, PyTorch's zero-fills included)."""
import csv
import statistics
import sys

VARIANTS = [("bf16", 32), ("bf16", 8), ("bf16", 1), ("fp16", 32)]
PROBLEMS = [(D, N, causal) for D in (64, 128) for N in (4096, 8192) for causal in (False, True)]


def run():
    import torch
    import fa2_attention  # noqa: F401  (loads the operators)

    B, H = 2, 32
    g = torch.Generator(device="cuda").manual_seed(0)
    for D, N, causal in PROBLEMS:
        for dtype_name, H_kv in VARIANTS:
            dtype = getattr(torch, {"bf16": "bfloat16", "fp16": "float16"}[dtype_name])
            q, dout = (torch.randn((B, H, N, D), device="cuda", dtype=dtype, generator=g) for _ in range(2))
            k, v = (torch.randn((B, H_kv, N, D), device="cuda", dtype=dtype, generator=g) for _ in range(2))
            out, lse = torch.ops.fa2.forward(q, k, v, causal, None, "fast")
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            torch.ops.fa2.forward(q, k, v, causal, None, "fast")
            torch.ops.fa2.backward(dout, q, k, v, out, lse, causal, None, "fast", False)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            print(D, N, int(causal), dtype_name, H_kv, flush=True)


def parse(ncu_csv, configs_txt):
    kernels = []  # (id, name, {metric: value})
    with open(ncu_csv) as f:
        lines = [line for line in f if line.startswith('"')]
    for r in csv.DictReader(lines):
        if not kernels or kernels[-1][0] != r["ID"]:
            kernels.append((r["ID"], r["Kernel Name"], {}))
        kernels[-1][2][r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    configs = [line.split() for line in open(configs_txt) if line.strip()]
    passes = []  # per configuration: [fwd metrics, bwd metrics summed]
    for _, name, m in kernels:
        if "fwd" in name:
            passes.append([m, {}])
        else:
            bwd = passes[-1][1]
            for key, value in m.items():
                bwd[key] = bwd.get(key, 0.0) + value
    if len(passes) != len(configs):
        sys.exit(f"{len(passes)} forwards in {ncu_csv}, {len(configs)} configurations in {configs_txt}")
    table = {tuple(c): p for c, p in zip(configs, passes)}
    print("Cycles (sm__cycles_elapsed.max, summed over a pass's kernels) against bf16 at H_kv = 32: above 1 "
          "is fewer cycles. Time in us (gpu__time_duration.sum) for scale.\n")
    print("| D | N | causal | pass | bf16 H_kv 32 us | H_kv 8 x | H_kv 1 x | fp16 H_kv 32 x |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = {v: [] for v in VARIANTS[1:]}
    for D, N, causal in PROBLEMS:
        key = (str(D), str(N), str(int(causal)))
        for i, pass_ in enumerate(("fwd", "bwd")):
            base = table[key + ("bf16", "32")][i]
            cells = [f"{base['gpu__time_duration.sum'] / 1e3:.1f}"]
            for dtype_name, H_kv in VARIANTS[1:]:
                m = table[key + (dtype_name, str(H_kv))][i]
                x = base["sm__cycles_elapsed.max"] / m["sm__cycles_elapsed.max"]
                ratios[(dtype_name, H_kv)].append((pass_, x))
                cells.append(f"{x:.3f}")
            print(f"| {D} | {N} | {'yes' if causal else 'no'} | {pass_} | " + " | ".join(cells) + " |")
    for (dtype_name, H_kv), xs in ratios.items():
        for pass_ in ("fwd", "bwd"):
            vals = [x for p, x in xs if p == pass_]
            print(f"\n{dtype_name} H_kv {H_kv} {pass_}: geometric mean "
                  f"{statistics.geometric_mean(vals):.3f}, range {min(vals):.3f}-{max(vals):.3f}", end="")
    print()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--parse"]:
        parse(*sys.argv[2:4])
    else:
        run()
