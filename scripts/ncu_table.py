#!/usr/bin/env python3
"""Tabulates the CSV files `scripts/gpu_session.sh profile` writes (one ncu raw page per step and
head dim, named STEP_dD.csv) as a Markdown table: time, registers, pipe utilisation and the
largest stall reasons. Usage: scripts/ncu_table.py DIR > table.md
A page may also be compressed, STEP_dD.csv.gz (as the committed ones under step07_benchmark/results/
are): it is read through gzip."""
import csv
import gzip
import io
import pathlib
import re
import sys

STALL = re.compile(r"^smsp__average_warps_issue_stalled_(.*)_per_issue_active\.ratio$")
# (heading, metric or function of the row). The tensor pipe: the wgmma counter where this ncu has
# one, else the hmma counter, which on sm_90 counts wgmma too. MUFU: where ncu offers no busy
# cycles for it, its warp instructions per SM cycle over its rate, 16 lanes per SM per cycle
# (half a warp instruction).
def tensor(row):
    return number(row.get("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                          row.get("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "")))


def mufu(row):
    busy = number(row.get("sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_active", ""))
    if busy is not None:
        return busy
    inst, cycles = number(row.get("sm__inst_executed_pipe_xu.sum", "")), number(row.get("sm__cycles_active.avg", ""))
    sms = number(row.get("device__attribute_multiprocessor_count", ""))
    if inst is None or not cycles or not sms:
        return None
    return 100.0 * inst / sms / cycles / 0.5


COLUMNS = [
    ("tensor pipe %", tensor),
    ("MUFU %", mufu),
    ("FMA %", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
    ("ALU %", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"),
    ("issue slots %", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
]


def step_key(name):
    """v5 first, then v6.1, v6.2, ... in numeric order."""
    m = re.match(r"v(\d+)(?:\.(\d+))?_d(\d+)$", name)
    return (int(m.group(3)), int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0, 0)


def page_name(path):
    """STEP_dD of STEP_dD.csv or STEP_dD.csv.gz."""
    name = path.name[:-len(".gz")] if path.name.endswith(".gz") else path.name
    return name[:-len(".csv")]


def read_text(path):
    """The file's text, through gzip when its name ends in .gz."""
    if path.name.endswith(".gz"):
        with gzip.open(path, "rt", errors="replace") as f:
            return f.read()
    return path.read_text(errors="replace")


def read_row(path):
    """The profiled kernel's metrics (name -> text), or None when ncu profiled nothing."""
    text = read_text(path)
    start = text.find('"ID","Process ID"')
    if start < 0:
        return None
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, data = rows[0], [r for r in rows[2:] if len(r) == len(rows[0])]  # rows[1]: units
    return dict(zip(header, data[0])) if data else None


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) != 2 or not pathlib.Path(sys.argv[1]).is_dir():
        sys.exit("usage: ncu_table.py DIR (the folder of STEP_dD.csv or STEP_dD.csv.gz files)")
    folder = pathlib.Path(sys.argv[1])
    plain = list(folder.glob("*_d*.csv"))
    packed = [p for p in folder.glob("*_d*.csv.gz") if not p.with_suffix("").exists()]  # a plain copy wins
    files = sorted(plain + packed, key=lambda p: step_key(page_name(p)))
    print("| step | D | kernel time (us) | registers | " + " | ".join(h for h, _ in COLUMNS) +
          " | largest stalls (cycles per issued instruction) |")
    print("|" + "---|" * (5 + len(COLUMNS)))
    for path in files:
        step, d = page_name(path).rsplit("_d", 1)
        row = read_row(path)
        if row is None:
            print(f"| {step} | {d} | not profiled (see {path.name}) |" + " |" * (2 + len(COLUMNS)))
            continue
        ns = number(row.get("gpu__time_duration.sum", ""))
        cells = [step, d, f"{ns / 1000:.1f}" if ns is not None else "?", row.get("launch__registers_per_thread", "?")]
        for _, metric in COLUMNS:
            v = metric(row) if callable(metric) else number(row.get(metric, ""))
            cells.append(f"{v:.1f}" if v is not None else "n/a")
        stalls = [(STALL.match(k).group(1), number(v)) for k, v in row.items() if STALL.match(k)]
        stalls = sorted(((n, v) for n, v in stalls if v is not None and n != "selected"), key=lambda x: -x[1])
        cells.append(", ".join(f"{n} {v:.2f}" for n, v in stalls[:4]) or "n/a")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
