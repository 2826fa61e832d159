#!/usr/bin/env python3
"""The leaderboard behind scripts/leaderboard.sh: one student's entry built, checked, timed, and
appended to a CSV as one row.

The entry is the student's step 5 forward kernel (or, from a full kit, a rung of step 7's ladder
built from their code). It is built in a copy of this repository where only the student's step 5
forward regions (and for a rung, their ladder region) replace the solution's; then
step07_leaderboard (step07_benchmark/leaderboard/) checks and times it: fresh random inputs for
every call, outputs poisoned with NaN, every call checked against float64, and on a GPU an L2 flush
before each call and PyTorch SDPA timed beside it. The defaults come from the key "leaderboard" of
course.json; the options override them. The CSV is only ever appended to, always with the same
header, so that the files of several runs or machines merge (--merge) and rank (--rank).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import kit  # noqa: E402  (scripts/lib/kit.py)

ROOT = HERE.parents[2]
COURSE = HERE / "course.json"
PROG = "leaderboard.sh"
WORK_MARKER = ".fa2-leaderboard"
KERNEL_FILE = "step05_fa2_kernel/flash_fwd_kernel.hpp"
LADDER_FILE = "step07_benchmark/kernels/lab/ladder/ladder_kernel.hpp"
PROGRAM = "step07_benchmark/leaderboard/step07_leaderboard"
KERNELS = ("step5", "v2", "v3", "v4")
DTYPES = ("bf16", "float32")
SDPA_KEYS = ("sdpa", "sdpa-fa2", "sdpa-cudnn", "sdpa-mem")
PRESETS = ("cpu-only", "default", "sm90")
STEP_OF_BEGIN = re.compile(r"// BEGIN SOLUTION (step\d\d)")

# One row per entry. Every file this script writes has exactly this header, so that the files of
# several runs merge by appending their rows.
COLUMNS = [
    "student", "level", "kernel", "path", "B", "H", "N", "D", "causal", "dtype",
    "median_ms", "tflops", "sdpa_ms", "sdpa_backend", "speed_vs_sdpa", "device", "sm_mhz_min", "sm_mhz_max",
    "checked_calls", "timed_calls", "sample_rows", "atol", "rtol", "seed",
    "status", "reason", "notes", "date", "grader_commit", "submission",
]


class LeaderboardError(Exception):
    """A failure of the grader's side: the row (if any) says `error`, and the exit code is 1."""


class UsageError(Exception):
    """A mistake on the command line: exit 2, the message names the option."""


def log(message: str) -> None:
    print(message, flush=True)


# ---- configuration ------------------------------------------------------------------------


def course_defaults() -> dict:
    try:
        course = json.loads(COURSE.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise LeaderboardError(f"cannot read {COURSE}: {error}") from error
    config = course.get("leaderboard")
    if not isinstance(config, dict):
        raise LeaderboardError(f"{COURSE} has no key 'leaderboard' (the defaults of {PROG}; INSTRUCTOR.md says "
                               "what it holds)")
    for path in ("gpu", "host"):
        block = config.get(path)
        missing = [k for k in ("B", "H", "N", "D", "causal", "dtype", "calls", "warmup_calls", "sample_rows")
                   if not isinstance(block, dict) or k not in block]
        if missing:
            raise LeaderboardError(f"{COURSE}: leaderboard.{path} lacks {', '.join(missing)}")
    if not isinstance(config.get("tolerance"), dict):
        raise LeaderboardError(f"{COURSE}: leaderboard.tolerance is missing (atol and rtol per dtype)")
    return config


def settings(args: argparse.Namespace, config: dict) -> dict:
    """The run's problem and protocol: course.json's block for the path, each option overriding."""
    block = dict(config["host" if args.host else "gpu"])
    for key, option in (("B", "batch"), ("H", "heads"), ("N", "n"), ("D", "d"), ("causal", "causal"),
                        ("dtype", "dtype"), ("calls", "calls"), ("warmup_calls", "warmup_calls"),
                        ("sample_rows", "sample_rows")):
        value = getattr(args, option)
        if value is not None:
            block[key] = value
    if block["dtype"] not in DTYPES:
        raise UsageError(f"--dtype: {block['dtype']!r} (from course.json or the option) must be one of "
                         f"{', '.join(DTYPES)}")
    tolerance = config["tolerance"].get(block["dtype"])
    if not isinstance(tolerance, dict) or "atol" not in tolerance or "rtol" not in tolerance:
        raise LeaderboardError(f"{COURSE}: leaderboard.tolerance.{block['dtype']} needs atol and rtol")
    block["atol"] = args.atol if args.atol is not None else tolerance["atol"]
    block["rtol"] = args.rtol if args.rtol is not None else tolerance["rtol"]
    block["sdpa"] = args.sdpa or config.get("sdpa", "sdpa")
    if block["sdpa"] not in SDPA_KEYS:
        raise UsageError(f"--sdpa: {block['sdpa']!r} must be one of {', '.join(SDPA_KEYS)}")
    for key, option, lo in (("B", "--batch", 1), ("H", "--heads", 1), ("N", "--n", 1), ("calls", "--calls", 1),
                            ("warmup_calls", "--warmup-calls", 0), ("sample_rows", "--sample-rows", 1)):
        if not isinstance(block[key], int) or isinstance(block[key], bool) or block[key] < lo:
            raise UsageError(f"{option}: got {block[key]!r}, must be an integer >= {lo}")
    if not isinstance(block["causal"], bool):
        raise UsageError(f"--causal: course.json says {block['causal']!r}, must be true or false")
    if block["D"] not in (16, 32, 64, 128):
        raise UsageError(f"--d: got {block['D']!r}, must be one of 16, 32, 64, 128 (the kernels' head dims)")
    for key in ("atol", "rtol"):
        if not isinstance(block[key], (int, float)) or not 0 <= block[key] <= 1:
            raise UsageError(f"--{key}: got {block[key]!r}, must be a number in 0..1")
    return block


# ---- the CSV ------------------------------------------------------------------------------


def read_rows(path: Path) -> list[dict]:
    """The rows of a leaderboard CSV; refuses a file with another header."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise LeaderboardError(f"cannot read {path}: {error}") from error
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header != COLUMNS:
        raise LeaderboardError(f"{path} is not a leaderboard CSV of this version: its header is "
                               f"{','.join(header or [])!r}, expected {','.join(COLUMNS)!r}")
    return [dict(zip(COLUMNS, values)) for values in reader if values]


def append_rows(path: Path, rows: list[dict]) -> None:
    """Appends rows, writing the header first when the file is new or empty; never truncates."""
    fresh = not path.exists() or path.stat().st_size == 0
    if not fresh:
        read_rows(path)  # the same header, or refuse
        with open(path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            needs_newline = handle.read(1) not in (b"\n", b"\r")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if fresh:
        writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([row.get(column, "") for column in COLUMNS])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8", newline="") as handle:
            if not fresh and needs_newline:
                handle.write("\n")
            handle.write(buffer.getvalue())
    except OSError as error:
        raise LeaderboardError(f"cannot append to {path}: {error}") from error


def number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def rank(paths: list[Path]) -> str:
    """Markdown: for each problem and device, the ranked rows by median time; then every row that
    is not ranked, with its reason."""
    rows = [row for path in paths for row in read_rows(path)]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["status"] == "ranked":
            key = (row["path"], row["device"], row["B"], row["H"], row["N"], row["D"], row["causal"], row["dtype"])
            groups.setdefault(key, []).append(row)
    out = []
    for (path, device, B, H, N, D, causal, dtype), members in sorted(groups.items()):
        mask = "causal" if causal == "true" else "non-causal"
        out += [f"## {device} ({path}): B={B} H={H} N={N} D={D}, {mask}, {dtype}", ""]
        if path == "host":
            out += ["Host path: the times are the interpreter's, for checking the protocol, not for ranking.", ""]
        out += ["| rank | student | kernel | median ms | TFLOP/s | speed vs SDPA | SM MHz | date |",
                "|---|---|---|---|---|---|---|---|"]
        for i, r in enumerate(sorted(members, key=lambda r: number(r["median_ms"]) or float("inf")), start=1):
            clocks = f"{r['sm_mhz_min']}-{r['sm_mhz_max']}" if r["sm_mhz_min"] else ""
            out.append(f"| {i} | {r['student']} | {r['kernel']} | {r['median_ms']} | {r['tflops']} | "
                       f"{r['speed_vs_sdpa']} | {clocks} | {r['date']} |")
        out.append("")
    others = [r for r in rows if r["status"] != "ranked"]
    if others:
        out += ["## Not ranked", ""]
        for r in others:
            mask = "causal" if r["causal"] == "true" else "non-causal"
            out.append(f"- {r['status']}: {r['student']} ({r['kernel']}, {r['path']}, N={r['N']} D={r['D']} {mask}, "
                       f"{r['date']}): {r['reason']}")
        out.append("")
    if not rows:
        out.append("no rows")
    return "\n".join(out) + "\n"


def merge(out: Path, paths: list[Path]) -> int:
    """Appends to `out` the rows of `paths` that it does not hold yet; returns how many."""
    have = {tuple(r.values()) for r in read_rows(out)} if out.exists() and out.stat().st_size > 0 else set()
    new: list[dict] = []
    for path in paths:
        if path.resolve() == out.resolve():
            raise UsageError(f"--merge: {path} is the output itself")
        for row in read_rows(path):
            if tuple(row.values()) not in have:
                have.add(tuple(row.values()))
                new.append(row)
    append_rows(out, new)
    return len(new)


# ---- the student's tree -------------------------------------------------------------------


def student_name(submission: Path) -> str:
    if submission.is_dir():
        folder = submission.resolve()
        return folder.parent.name if folder.name == "submission" else folder.name
    name = submission.name
    for suffix in (".tar.gz", ".tgz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return submission.stem


def grader_commit() -> str:
    def git(*words: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *words], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""
    head = git("rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown (not a git checkout)"
    return head + (" with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def prepare_work(work: Path) -> None:
    """A new or empty folder, or one this script used before (its marker says so)."""
    if work.exists() and not work.is_dir():
        raise UsageError(f"--work: {work} exists and is not a directory")
    if work.is_dir() and any(work.iterdir()) and not (work / WORK_MARKER).is_file():
        raise UsageError(f"--work: {work} is not empty and was not written by {PROG} (no {WORK_MARKER}): "
                         "choose a new or empty folder")
    work.mkdir(parents=True, exist_ok=True)
    (work / WORK_MARKER).write_text(f"written by scripts/{PROG}: src/ is a copy of the course repository with one "
                                    "student's regions, rewritten by every run; logs/ and result.json are the last "
                                    "run's\n")


def write_if_changed(path: Path, data: bytes) -> None:
    """Writes only when the content differs, so that the build recompiles only what changed."""
    if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    path.write_bytes(data)


def sync_repository(src: Path) -> None:
    """src becomes a copy of this repository's files (kit.repository_files). Files an earlier run
    copied that the repository no longer has are removed; src/build/ is left alone."""
    files = kit.repository_files(ROOT)
    for rel in files:
        write_if_changed(src / rel, (ROOT / rel).read_bytes())
    listed = set(files)
    for path in sorted(src.rglob("*"), reverse=True):
        rel = path.relative_to(src).as_posix()
        if rel == "build" or rel.startswith("build/"):
            continue
        if path.is_file() and rel not in listed:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def fill_file(rel: str, level: str, submitted: list[dict], steps: set[str], src: Path) -> tuple[list[str], list[str]]:
    """Writes `rel` into src with the student's bodies for the regions of `steps` (the others keep
    the solution), with kit.parse and kit.fill, as the grader does. Returns (notes, missing): when
    the submission's BEGIN lines differ from this repository's (a kit made before the markers'
    wording changed) but its regions are the same steps and levels in the same order, the bodies
    are matched by position and a note says so; `missing` lists the regions that got no body."""
    nodes = kit.parse((ROOT / rel).read_text(encoding="utf-8"), rel)
    bodies, note = kit.align_bodies(nodes, level, submitted, steps)
    notes = [f"{rel}: {note}"] if note else []
    lines, warnings = kit.fill(nodes, level, bodies, steps)
    write_if_changed(src / rel, "".join(lines).encode("utf-8"))
    missing = [w for w in warnings if "no body submitted" in w]
    notes += [f"{rel}: {w}" for w in warnings if w not in missing]
    return notes, [f"{rel}: {w.replace(': graded as its TODO', '')}" for w in missing]


def unfinished(regions: dict, rel: str, steps: set[str]) -> list[str]:
    """The student's regions of `rel` and `steps` that are still the kit's TODO."""
    found = []
    for region in regions.get(rel, []):
        step = STEP_OF_BEGIN.search(region["begin"])
        if step and step.group(1) in steps and 'fa2::todo("TODO(' in region["body"]:
            found.append(region["begin"].strip())
    return found


def first_errors(text: str, limit: int = 10) -> str:
    lines = text.splitlines()
    picked = [line.strip() for line in lines if re.search(r"\berror\b|static assertion", line)]
    return " | ".join(picked[:limit]) or " | ".join(lines[-limit:])


def run_logged(cmd: list[str], cwd: Path, logfile: Path, env: dict, timeout: float | None = None,
               echo: bool = False) -> int:
    """Runs cmd with its output appended to logfile (and copied to stdout with echo); returns its
    exit code, or 124 when it ran past `timeout` seconds (it is then killed)."""
    with open(logfile, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(cmd)}\n")
        handle.flush()
        process = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                   text=True, errors="replace")

        def pump() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                handle.write(line)
                if echo:
                    sys.stdout.write(line)
                    sys.stdout.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = 124
        reader.join()
        return code


# ---- one entry ----------------------------------------------------------------------------


def entry(args: argparse.Namespace) -> int:
    config = course_defaults()
    run = settings(args, config)
    if args.solution:
        # The repository's own regions: the reference row an instructor ranks students against.
        level, regions, submission_label, kit_commit = "solution", {}, "(this repository)", ""
        student = args.student if args.student is not None else "solution"
    else:
        submission = Path(args.paths[0])
        if not submission.exists():
            raise UsageError(f"SUBMISSION: {submission} does not exist")
        manifest, regions, _ = kit.read_submission(submission)
        level = manifest["level"]
        folder = submission.resolve()
        submission_label = (f"{folder.parent.name}/{folder.name}" if submission.is_dir() and folder.name == "submission"
                            else submission.name)
        kit_commit = manifest.get("kit_commit", "")
        student = args.student if args.student is not None else student_name(submission)
    if not student.strip() or any(ch in student for ch in "\r\n"):
        raise UsageError(f"--student: {student!r} must be a non-empty name on one line")
    kernel = args.kernel
    if kernel != "step5" and level not in ("full", "solution"):
        raise UsageError(f"--kernel {kernel}: a rung of the ladder is an entry of a full kit only (HANDOUT.md, "
                         f"step 7); this submission is a {level} kit: use --kernel step5")
    preset = args.preset or ("cpu-only" if args.host else "default")
    if preset == "cpu-only" and not args.host:
        raise UsageError("--preset cpu-only builds no CUDA: add --host, or use --preset default or sm90 on a GPU machine")
    csv_path = Path(args.csv).resolve()
    if csv_path.exists():
        if csv_path.is_dir():
            raise UsageError(f"--csv: {csv_path} is a directory")
        if csv_path.stat().st_size > 0:
            read_rows(csv_path)  # refuse another header before spending minutes on a build
    row = {
        "student": student, "level": level,
        "kernel": kernel + (f"+self-test:{args.self_test}" if args.self_test else ""),
        "path": "host" if args.host else "gpu", "B": run["B"], "H": run["H"], "N": run["N"], "D": run["D"],
        "causal": "true" if run["causal"] else "false", "dtype": run["dtype"],
        "timed_calls": run["calls"], "sample_rows": run["sample_rows"], "atol": run["atol"], "rtol": run["rtol"],
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "grader_commit": grader_commit(), "submission": submission_label,
    }
    if args.self_test:
        row["notes"] = f"self-test of the checker ({args.self_test}): not an entry, must be rejected"
    steps_of = [(KERNEL_FILE, {"step05"})] + ([(LADDER_FILE, {"step07"})] if kernel != "step5" else [])
    todo = [key for rel, steps in steps_of for key in unfinished(regions, rel, steps)]
    if todo:
        row.update(status="rejected", reason="not built: these regions are still the kit's TODO: " + "; ".join(todo))
        return finish(csv_path, row)

    try:
        measure(args, run, row, regions, level, preset, steps_of, kit_commit)
    except LeaderboardError as error:
        row.update(status="error", reason=str(error))
        finish(csv_path, row)
        return 1
    return finish(csv_path, row)


def measure(args: argparse.Namespace, run: dict, row: dict, regions: dict, level: str, preset: str,
            steps_of: list[tuple[str, set[str]]], kit_commit: str) -> None:
    """Builds the student's tree, runs step07_leaderboard on it and fills the row's measured
    columns and status. Raises LeaderboardError for what goes wrong on the grader's side."""
    kernel = args.kernel
    work = Path(args.work).resolve() if args.work is not None else ROOT / "build" / "leaderboard"
    prepare_work(work)
    src, logs = work / "src", work / "logs"
    logs.mkdir(exist_ok=True)
    for name in ("configure.log", "build.log", "run.log", "result.json"):
        stale = work / name if name == "result.json" else logs / name
        if stale.is_file():
            stale.unlink()  # the last run's, written by this script
    started = time.time()
    origin = "this repository" if level == "solution" else f"{level} kit"
    log(f"{PROG}: {row['student']} ({origin}), {row['kernel']}, on the {'host path' if args.host else 'GPU'}; "
        f"building in {src} (preset {preset})")
    sync_repository(src)
    notes, missing = [], []
    for rel, steps in steps_of if level != "solution" else []:
        file_notes, file_missing = fill_file(rel, level, regions.get(rel, []), steps, src)
        notes += file_notes
        missing += file_missing
    for note in notes:
        log(f"  note: {note}")
    if notes:
        row["notes"] = "; ".join([n for n in (row.get("notes", ""),) if n] + notes)
    if missing:
        raise LeaderboardError("the submission's regions do not match this repository's (was its kit made from "
                               f"another version, commit {kit_commit or 'unknown'}?): " + "; ".join(missing))

    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", str(work))
    env["CCACHE_NOHASHDIR"] = "1"
    configure = ["cmake", "--preset", preset, "-DFA2_WARNINGS_AS_ERRORS=OFF", "-DFA2_BUILD_TESTS=OFF"]
    if shutil.which("ccache"):
        configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
    if run_logged(configure, src, logs / "configure.log", env) != 0:
        raise LeaderboardError(f"the copy of the repository did not configure: see {logs / 'configure.log'}")
    build = ["cmake", "--build", "--preset", preset, "--target", "step07_leaderboard", "--parallel", str(args.jobs)]
    if run_logged(build, src, logs / "build.log", env) != 0:
        text = (logs / "build.log").read_text(encoding="utf-8", errors="replace")
        errors = first_errors(text)
        context = "\n".join(line for line in text.splitlines()
                            if re.search(r"\berror\b|required from|In file included from|In instantiation of", line))
        if level != "solution" and any(Path(rel).name in context for rel, _ in steps_of):
            row.update(status="rejected", reason=f"did not compile: {errors}")
            return
        raise LeaderboardError(f"the leaderboard program did not build, and not in the student's files "
                               f"(see {logs / 'build.log'}): {errors}")
    log(f"  built in {time.time() - started:.0f} s")

    result = work / "result.json"
    command = [str(src / "build" / preset / PROGRAM), f"--kernel={kernel}", f"--batch={run['B']}",
               f"--heads={run['H']}", f"--n={run['N']}", f"--d={run['D']}", f"--dtype={run['dtype']}",
               f"--calls={run['calls']}", f"--warmup-calls={run['warmup_calls']}",
               f"--sample-rows={run['sample_rows']}", f"--atol={run['atol']}", f"--rtol={run['rtol']}",
               f"--sdpa={run['sdpa']}", f"--json={result}"]
    if run["causal"]:
        command.append("--causal")
    if args.host:
        command.append("--host")
    if args.seed is not None:
        command.append(f"--seed={args.seed}")
    if args.self_test:
        command.append(f"--self-test={args.self_test}")
    code = run_logged(command, src, logs / "run.log", env, timeout=args.timeout, echo=True)
    if code == 124:
        row.update(status="rejected", reason=f"did not finish within {args.timeout:g} s (--timeout)")
        return
    if code != 0 or not result.is_file():
        output = (logs / "run.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
        tail = [line for line in output if not line.startswith("$ ")][-2:]
        raise LeaderboardError(f"step07_leaderboard exited with {code}: " + " | ".join(tail))
    try:
        measured = json.loads(result.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise LeaderboardError(f"{result} is not JSON: {error}") from error
    for key in ("median_ms", "tflops", "sdpa_ms", "sdpa_backend", "speed_vs_sdpa", "device", "sm_mhz_min",
                "sm_mhz_max", "checked_calls", "seed", "status", "reason"):
        value = measured.get(key)
        row[key] = "" if value is None else value
    notes = [n for n in (row.get("notes", ""), measured.get("notes", "")) if n]
    row["notes"] = "; ".join(notes)



def finish(csv_path: Path, row: dict) -> int:
    append_rows(csv_path, [row])
    what = (f"{row['median_ms']} ms, {row['tflops']} TFLOP/s"
            + (f", {row['speed_vs_sdpa']} of SDPA's speed" if row.get("speed_vs_sdpa") not in (None, "") else "")
            if row["status"] == "ranked" else row["reason"])
    log(f"{PROG}: {row['student']}, {row['kernel']}: {row['status']}: {what}")
    log(f"{PROG}: appended one row to {csv_path}")
    return 0 if row["status"] in ("ranked", "rejected") else 1


# ---- command line -------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, allow_abbrev=False, description=__doc__.split("\n\n")[0],
                                usage="%(prog)s [options] SUBMISSION | --solution | --rank CSV... | --merge OUT.csv CSV...")
    p.add_argument("paths", nargs="*", metavar="SUBMISSION",
                   help="a student's archive from make_submission.sh (or its unpacked folder)")
    p.add_argument("--student", help="the student column (default: the archive's name without .tar.gz)")
    p.add_argument("--kernel", choices=KERNELS, default="step5",
                   help="step5 (default), or a rung of the ladder, v2, v3 or v4 (full kits only)")
    p.add_argument("--csv", default="leaderboard.csv", help="the CSV to append the row to (default leaderboard.csv)")
    p.add_argument("--host", action="store_true", help="the host path (no GPU; times are the interpreter's)")
    p.add_argument("--preset", choices=PRESETS, help="build preset (default: default, or cpu-only with --host)")
    p.add_argument("--work", help="build folder, kept between runs (default build/leaderboard in this repository)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel build jobs")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds the program may run (default 900)")
    p.add_argument("--batch", type=int, help="B (default from course.json)")
    p.add_argument("--heads", type=int, help="H")
    p.add_argument("--n", type=int, help="N, queries and keys per head")
    p.add_argument("--d", type=int, help="D, the head dim: 16, 32, 64 or 128")
    p.add_argument("--causal", action=argparse.BooleanOptionalAction, default=None, help="the causal mask")
    p.add_argument("--dtype", choices=DTYPES, help="the inputs' and outputs' type")
    p.add_argument("--calls", type=int, help="timed calls")
    p.add_argument("--warmup-calls", type=int, help="calls checked but not timed")
    p.add_argument("--sample-rows", type=int, help="rows per call compared with float64")
    p.add_argument("--atol", type=float, help="absolute tolerance (default from course.json, per dtype)")
    p.add_argument("--rtol", type=float, help="relative tolerance")
    p.add_argument("--seed", type=int, help="seed of the inputs and the sampled rows (default: a fresh one)")
    p.add_argument("--sdpa", choices=SDPA_KEYS, help="the SDPA entry of the ratio (default from course.json)")
    p.add_argument("--self-test", choices=("replay", "unwritten"),
                   help="a self-test of the checker: the entry cheats on purpose and must be rejected")
    p.add_argument("--solution", action="store_true",
                   help="the entry is this repository's own kernel (no SUBMISSION): the reference row")
    p.add_argument("--rank", action="store_true", help="print the ranking of the CSV files given, as Markdown")
    p.add_argument("--merge", metavar="OUT.csv", help="append to OUT.csv the rows of the CSV files given")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        if args.rank and args.merge:
            raise UsageError("--rank and --merge: one at a time")
        if args.rank or args.merge:
            if not args.paths:
                raise UsageError(f"{'--rank' if args.rank else '--merge'}: name the CSV files to read")
            paths = [Path(x) for x in args.paths]
            for path in paths:
                if not path.is_file():
                    raise UsageError(f"{'--rank' if args.rank else '--merge'}: {path} is not a file")
            if args.rank:
                sys.stdout.write(rank(paths))
            else:
                added = merge(Path(args.merge), paths)
                log(f"{PROG}: appended {added} row(s) to {args.merge}")
            return 0
        if args.solution and args.paths:
            raise UsageError(f"--solution: times this repository's kernel and takes no SUBMISSION (got {args.paths[0]})")
        if not args.solution and len(args.paths) != 1:
            raise UsageError(f"SUBMISSION: name one submission (got {len(args.paths)})")
        if args.jobs < 1:
            raise UsageError(f"--jobs: got {args.jobs}, must be at least 1")
        if args.timeout <= 0:
            raise UsageError(f"--timeout: got {args.timeout}, must be positive")
        return entry(args)
    except UsageError as error:
        print(f"{PROG}: {error}\n({PROG} --help lists the options)", file=sys.stderr)
        return 2
    except (LeaderboardError, kit.KitError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
