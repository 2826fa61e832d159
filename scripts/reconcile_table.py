#!/usr/bin/env python3
"""Puts side by side one kernel timed three ways by `scripts/gpu_session.sh bench-repeat` (its
reconcile step): the sweep's way (step07_bench --repeat, do_bench's budget), isolated launches on a
cold L2 (step07_bench --isolated, one folder per idle gap), and ncu's own launches (--clock-control
none, SpeedOfLight section), each with the clocks it ran at. Prints a Markdown table.
Usage: scripts/reconcile_table.py DIR > reconcile.md
DIR holds sweep/ and isolated_*/ (each with step07_results.csv, and sweep/ with step07_rounds.csv)
and ncu_n<N>.csv. Any of these files may be compressed (NAME.gz, as the committed large ones under
step07_benchmark/results/ are): it is read through gzip."""
import csv
import gzip
import io
import math
import pathlib
import re
import sys

# ncu's units, to milliseconds and to MHz.
TIME_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "s": 1e3,
           "second": 1e3}
FREQ_MHZ = {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3, "cycle/second": 1e-6, "cycle/usecond": 1.0,
            "cycle/nsecond": 1e3, "cycle/msecond": 1e-3}


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def lower_median(values):
    """The lower middle value, as the benchmark's medians (torch.median)."""
    v = sorted(values)
    return v[(len(v) - 1) // 2]


def flops(b, h, n, d, causal):
    f = 4.0 * b * h * n * n * d
    return f / 2 if causal else f


def open_text(path):
    """The file for reading as text, through gzip when its name ends in .gz."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", newline="", errors="replace")
    return open(path, newline="", errors="replace")


def found(folder, name):
    """folder/name, else folder/name.gz, else None."""
    for path in (folder / name, folder / (name + ".gz")):
        if path.exists():
            return path
    return None


def read_csv(path):
    with open_text(path) as f:
        return list(csv.DictReader(f))


def clock_cells(row):
    return [row.get(k, "") or "n/a" for k in ("sm_mhz", "mem_mhz", "power_w", "temp_c", "clock_events")]


def bench_rows(folder, way):
    """One row per (impl, N) measured in `folder` by step07_bench: median, min and max of its runs
    (over the rounds' medians when it ran in rounds), and NVML's reading."""
    results = found(folder, "step07_results.csv")
    if results is None:
        return [[way, "-", "-", "no step07_results.csv in " + str(folder)] + [""] * 9]
    rounds = {}
    rounds_path = found(folder, "step07_rounds.csv")
    if rounds_path is not None:
        for r in read_csv(rounds_path):
            rounds.setdefault((r["impl"], r["N"], r["causal"]), []).append(float(r["ms_median"]))
    out = []
    for r in read_csv(results):
        if r["status"] != "ok":
            if r["status"] not in ("quoted",):
                out.append([way, r["impl"], r["N"], r["status"] + ": " + r["note"]] + [""] * 9)
            continue
        key = (r["impl"], r["N"], r["causal"])
        n, d, b, h = int(r["N"]), int(r["D"]), int(r["B"]), int(r["H"])
        med = float(r["ms_median"])
        if key in rounds:
            lo, hi, runs = min(rounds[key]), max(rounds[key]), f'{len(rounds[key])} rounds, {r["reps"]} runs'
        else:
            lo, hi, runs = float(r["ms_min"]), float(r["ms_p80"]), f'{r["reps"]} runs (max shown: p80)'
        tf = flops(b, h, n, d, r["causal"] == "true") / med * 1e-9
        out.append([way, r["impl"], str(n), runs, f"{med:.4f}", f"{lo:.4f}..{hi:.4f}", f"{tf:.1f}"] + clock_cells(r))
    return out


def ncu_rows(path):
    """One row per ncu file: the profiled launches' duration (median, range) and the SM and memory
    clocks ncu measured over each launch. The problem is the one step07_bench's own output in the
    file names (its first "== B=.. H=.. N=.. D=.." line)."""
    n = int(re.search(r"ncu_n(\d+)\.csv(?:\.gz)?$", path.name).group(1))
    with open_text(path) as f:
        text = f.read()
    start = text.find('"ID","Process ID"')
    if start < 0:
        last = [line for line in text.splitlines() if line.strip()][-1:] or ["empty"]
        return [["ncu", "-", str(n), "no profiled launch: " + last[0][:120]] + [""] * 9]
    shape = re.search(r"== B=(\d+) H=(\d+) N=(\d+) D=(\d+) (non-causal|causal)", text)
    if shape is None:
        return [["ncu", "-", str(n), "step07_bench printed no problem line"] + [""] * 9]
    b, h, d, causal = int(shape.group(1)), int(shape.group(2)), int(shape.group(4)), shape.group(5) == "causal"
    timed_key = re.search(r"^\s+(\S+)\s+ok\s", text[:start], re.MULTILINE)
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, units = rows[0], rows[1]
    data = [dict(zip(header, r)) for r in rows[2:] if len(r) == len(header)]
    unit = dict(zip(header, units))

    def values(metric, table):
        scale = table.get(unit.get(metric, "").strip().lower())
        got = [number(r.get(metric, "")) for r in data]
        return [v * scale for v in got if v is not None] if scale is not None else []

    ms = values("gpu__time_duration.sum", TIME_MS)
    sm = values("sm__cycles_elapsed.avg.per_second", FREQ_MHZ)
    mem = values("dram__cycles_elapsed.avg.per_second", FREQ_MHZ)
    if not ms:
        return [["ncu", "-", str(n), "no gpu__time_duration.sum with a known unit"] + [""] * 9]
    impl = timed_key.group(1) if timed_key else data[0].get("Kernel Name", "?").split("<")[0][-30:]
    med = lower_median(ms)
    tf = flops(b, h, n, d, causal) / med * 1e-9
    sm_cell = f"{lower_median(sm):.0f} ({min(sm):.0f}..{max(sm):.0f})" if sm else "n/a"
    mem_cell = f"{lower_median(mem):.0f}" if mem else "n/a"
    return [["ncu --clock-control none", impl, str(n), f"{len(ms)} launches", f"{med:.4f}",
             f"{min(ms):.4f}..{max(ms):.4f}", f"{tf:.1f}", sm_cell, mem_cell, "n/a", "n/a", "n/a"]]


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) != 2 or argv[1].startswith("-"):
        print("reconcile_table.py: expected one argument, the folder (see --help)", file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    if not root.is_dir():
        print(f"reconcile_table.py: {root} is not a directory", file=sys.stderr)
        return 1
    rows = bench_rows(root / "sweep", "sweep (do_bench in rounds)")
    for folder in sorted(root.glob("isolated_*"), key=lambda p: number(re.sub(r"\D", "", p.name)) or 0):
        rows += bench_rows(folder, "isolated, cold L2, " + folder.name.split("_", 1)[1] + " idle before each")
    ncu_files = list(root.glob("ncu_n*.csv"))
    ncu_files += [p for p in root.glob("ncu_n*.csv.gz") if not p.with_suffix("").exists()]  # a plain copy wins
    for path in sorted(ncu_files, key=lambda p: int(re.sub(r"\D", "", p.name) or 0)):
        rows += ncu_rows(path)
    rows.sort(key=lambda r: number(r[2]) or 0)  # by N, each N's ways in the order above
    head = ["way", "impl", "N", "runs", "median ms", "min..max ms", "TFLOP/s (median)", "SM MHz", "memory MHz",
            "power W", "temp C", "clock events"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        r = (r + [""] * len(head))[:len(head)]
        print("| " + " | ".join(r) + " |")
    print("\nstep07_bench's clocks are NVML's after the timed runs (the median over rounds or launches); "
          "ncu's are its SM and DRAM cycles over each launch's duration (median, and range for the SM).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
