#!/usr/bin/env python3
"""The autograder behind scripts/grade.sh: a student's submission in, scores and a report out.

For each group of parts (parts.json) it copies this repository, which is the solution and holds
tests the kits do not ship, puts the student's solution regions of the group's parts (and only
those) into the copy, builds the parts' test targets with `-k 0` and runs ctest. Every region of
the other parts keeps the solution, so a part never pays for another part's bug, and a part whose
code does not compile costs that part only. Tests the student edited or deleted do not matter:
they come from the repository. A part's tests are listed per level in manifest.json: the tests
that carry the part's labels, pass on the solution and fail on the unsolved kit of that level.

Writes, in the output folder: results.json (Gradescope's autograder format), report.md (points
per part and every failing test with its message), and the logs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import kit  # noqa: E402  (scripts/lib/kit.py)

ROOT = HERE.parents[2]
PARTS = json.loads((HERE / "course.json").read_text())
MANIFEST = HERE / "manifest.json"
OUT_MARKER = ".fa2-grade"
STEP_OF_BEGIN = re.compile(r"// BEGIN SOLUTION (step\d\d)")


class GradeError(Exception):
    pass


def log(message: str) -> None:
    print(message, flush=True)


def parts_at(level: str) -> list[dict]:
    return [p for p in PARTS["parts"] if level in p["points"]]


def check_parts_cover_every_region(level: str) -> None:
    """Every region a student writes at this level belongs to a part, or its work would go ungraded."""
    selected = {(r["file"], step) for p in parts_at(level) for r in p["regions"] for step in r["steps"]}
    missing = [f"{rel}:{region.line} ({region.step})" for rel, region in kit.student_regions(ROOT, level)
               if (rel, region.step) not in selected and not kit.is_markdown(rel)]
    if missing:
        raise GradeError(f"parts.json grades no part with these {level} regions: {', '.join(missing)}")


def label_match(labels: list[str], rule: dict) -> bool:
    return all(x in labels for x in rule.get("all", [])) and not any(x in labels for x in rule.get("none", []))


def prepare_output(out: Path) -> None:
    """A new or empty folder, or one this grader wrote before (then only its own content goes)."""
    if out.exists() and not out.is_dir():
        raise GradeError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not (out / OUT_MARKER).is_file():
            raise GradeError(f"{out} is not empty and was not written by grade.sh (no {OUT_MARKER}): "
                             "choose a new or empty folder")
        for name in ("work", "logs", "submission", "results.json", "report.md", "summary.json", "all_tests.json",
                     OUT_MARKER):
            target = out / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / OUT_MARKER).write_text("written by scripts/grade.sh; it replaces this folder's work/, logs/, submission/, "
                                  "results.json and report.md when it grades again\n")


def fill_file(rel: str, level: str, submitted: list[dict], steps: set[str], dst: Path) -> list[str]:
    """Writes `rel` into the tree `dst` with the student's bodies for the regions of `steps`."""
    text = (ROOT / rel).read_text(encoding="utf-8")
    nodes = kit.parse(text, rel)
    bodies = []
    for region in submitted:
        found = STEP_OF_BEGIN.search(region["begin"])
        if found and found.group(1) in steps:
            bodies.append((region["begin"], region["body"].splitlines(keepends=True)))
    lines, warnings = kit.fill(nodes, level, bodies, steps)
    (dst / rel).write_text("".join(lines), encoding="utf-8")
    return [f"{rel}: {w}" for w in warnings]


def copy_repository(dst: Path) -> None:
    for rel in kit.repository_files(ROOT):
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)


def run(cmd: list[str], cwd: Path, logfile: Path, env: dict | None = None) -> int:
    with open(logfile, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(cmd)}\n")
        handle.flush()
        return subprocess.run(cmd, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, env=env).returncode


def first_errors(log_text: str, limit: int = 12) -> str:
    """The compiler's first errors, with the lines that say where they come from."""
    lines = log_text.splitlines()
    picked: list[str] = []
    for i, line in enumerate(lines):
        if re.search(r"\berror\b|static assertion|FAILED:", line) and "Werror" not in line[:40]:
            start = max(0, i - 1) if "required from" in (lines[i - 1] if i else "") else i
            picked.extend(lines[start:i + 1])
        if len(picked) >= limit:
            break
    return "\n".join(picked[:limit]) or "\n".join(lines[-limit:])


def junit_results(path: Path) -> dict[str, dict]:
    """{test name: {passed, output, time}} from ctest --output-junit."""
    results: dict[str, dict] = {}
    if not path.is_file():
        return results
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None or case.get("status") in ("notrun", "disabled")
        out = case.find("system-out")
        results[name] = {"passed": not failed and not skipped, "skipped": skipped and not failed,
                         "output": (out.text or "") if out is not None else "", "time": float(case.get("time", "0") or 0)}
    return results


def listed_tests(build: Path) -> dict[str, list[str]]:
    """{test name: labels} of a configured and built tree."""
    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True)
    tests: dict[str, list[str]] = {}
    if listing.returncode != 0:
        return tests
    for test in json.loads(listing.stdout).get("tests", []):
        labels = next((p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"), [])
        tests[test["name"]] = labels
    return tests


def failure_message(output: str, limit: int = 2000) -> str:
    """The lines of a test's output that say why it failed."""
    keep = [line for line in output.splitlines()
            if re.search(r"TODO\(step|ERROR|error|CHECK|REQUIRE|Expected|expected|FATAL|seed|values:|mismatch|"
                         r"differ|not |NaN|nan|timeout|Timeout|exception|threw", line)]
    text = "\n".join(keep) if keep else output.strip()
    return text[:limit] + ("\n..." if len(text) > limit else "")


def ninja_targets(build: Path) -> set[str]:
    found = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"], capture_output=True, text=True)
    return {line.split(":")[0] for line in found.stdout.splitlines() if ":" in line}


def grade_group(group: list[dict], level: str, regions: dict, out: Path, preset: str, jobs: int,
                env: dict) -> tuple[dict, dict, list[str]]:
    """Builds and tests one group's tree. Returns ({test: result}, {test: labels}, warnings)."""
    name = "+".join(part["key"] for part in group)
    tree = out / "work" / group[0]["key"]
    src = tree / "src"
    logs = out / "logs"
    src.mkdir(parents=True)
    copy_repository(src)
    warnings: list[str] = []
    for part in group:
        for selection in part["regions"]:
            warnings += fill_file(selection["file"], level, regions.get(selection["file"], []),
                                  set(selection["steps"]), src)
    build = src / "build" / preset
    configure_log = logs / f"{group[0]['key']}.configure.log"
    started = time.time()
    cache = ["-DFA2_WARNINGS_AS_ERRORS=OFF"]
    if shutil.which("ccache"):
        cache.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    if run(["cmake", "--preset", preset, *cache], src, configure_log, env) != 0:
        raise GradeError(f"the repository copy for {name} did not configure: see {configure_log}")
    existing = ninja_targets(build)
    build_logs: dict[str, str] = {}
    for part in group:
        targets = [t for t in part["targets"] if t in existing]
        part_log = logs / f"{part['key']}.build.log"
        code = run(["cmake", "--build", "--preset", preset, "--target", *targets, "--", "-k", "0", f"-j{jobs}"],
                   src, part_log, env)
        build_logs[part["key"]] = "" if code == 0 else first_errors(part_log.read_text(encoding="utf-8"))
    labels_regex = "|".join(sorted({lab for part in group for lab in part["labels"]["all"]}))
    junit = tree / "junit.xml"
    run(["ctest", "--preset", preset, "-j", str(jobs), "--timeout", "300", "--output-junit", str(junit),
         "-L", f"^({labels_regex})$"], src, logs / f"{group[0]['key']}.ctest.log", env)
    results = junit_results(junit)
    listed = listed_tests(build)
    for key, errors in build_logs.items():
        results[f"__build__{key}"] = {"passed": not errors, "output": errors}
    log(f"  {name}: built and tested in {time.time() - started:.0f} s")
    return results, listed, warnings


def score(level: str, results: dict, listed: dict, manifest: dict | None) -> tuple[list[dict], list[dict]]:
    """Gradescope tests and a per-part summary."""
    tests_out, summary = [], []
    for part in parts_at(level):
        key = part["key"]
        if manifest is not None:
            names = manifest[level][key]
        else:  # every test with the part's labels (to write the manifest)
            names = sorted(n for n, labs in listed.items() if label_match(labs, part["labels"]))
        build_error = results.get(f"__build__{key}", {}).get("output", "")
        each = part["points"][level] / max(1, len(names))
        passed = 0
        failures = []
        for name in names:
            result = results.get(name)
            if result is None:
                why = ("did not build:\n" + build_error) if build_error else "not run: the test is not in this build"
                result = {"passed": False, "output": why}
            ok = result["passed"]
            passed += ok
            message = "" if ok else failure_message(result["output"])
            if not ok:
                failures.append({"name": name, "message": message})
            tests_out.append({"name": f"{part['title']}: {name}", "score": round(each if ok else 0.0, 4),
                              "max_score": round(each, 4), "output": message, "visibility": "visible"})
        summary.append({"key": key, "title": part["title"], "points": part["points"][level],
                        "score": round(each * passed, 2), "passed": passed, "tests": len(names),
                        "failures": failures, "build_error": build_error})
    return tests_out, summary


def gpu_results(results: dict, listed: dict) -> dict[str, list[str]]:
    """The GPU tests that ran (preset default on a machine with a GPU): not scored, reported."""
    found: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for name, labels in listed.items():
        if "gpu" not in labels or name not in results:
            continue
        r = results[name]
        found["skipped" if r.get("skipped") else "passed" if r["passed"] else "failed"].append(name)
    return found


def write_report(out: Path, submission: dict, summary: list[dict], files: dict[str, bytes], warnings: list[str],
                 seconds: float, gpu: dict[str, list[str]] | None = None) -> str:
    level = submission["level"]
    total = sum(s["score"] for s in summary)
    lines = [f"# Grade report ({level} kit)", "",
             f"Autograded code: **{total:.2f} / {PARTS['code_points']}** points, from {len(summary)} parts "
             f"graded independently ({seconds:.0f} s on this machine).", "",
             "| part | points | tests passed |", "|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['title']} | {s['score']:.2f} / {s['points']} | {s['passed']} / {s['tests']} |")
    for s in summary:
        if not s["failures"]:
            continue
        lines += ["", f"## {s['title']}: {len(s['failures'])} failing test(s)"]
        if s["build_error"]:
            lines += ["", "Its code did not compile; the compiler said:", "", "```", s["build_error"], "```"]
        for failure in s["failures"]:
            lines += ["", f"- **{failure['name']}**"]
            if failure["message"] and not s["build_error"]:
                lines += ["", "  ```", *("  " + x for x in failure["message"].splitlines()[:15]), "  ```"]
    if gpu and any(gpu.values()):
        lines += ["", "## GPU tests (preset default; reported, not scored)", "",
                  f"{len(gpu['passed'])} passed, {len(gpu['failed'])} failed, {len(gpu['skipped'])} skipped "
                  "(no GPU).", ""] + [f"- failed: {name}" for name in gpu["failed"]]
    lines += ["", "## Graded by hand", ""]
    answers = files.get("answers.md")
    lines.append(f"- written answers: {'answers.md, ' + str(len(answers)) + ' bytes' if answers else 'none submitted'}")
    measured = sorted(name for name in files if name.startswith("measurements/"))
    lines.append(f"- measurements: {', '.join(measured) if measured else 'none submitted'}")
    lines.append("- code quality (INSTRUCTOR.md, rubric)")
    if warnings:
        lines += ["", "## Notes on the submission", ""] + [f"- {w}" for w in warnings]
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text, encoding="utf-8")
    return text


def grade(submission_path: Path, out: Path, preset: str, jobs: int, write_manifest: bool = False) -> dict:
    started = time.time()
    prepare_output(out)
    manifest_info, regions, files = kit.read_submission(submission_path)
    level = manifest_info["level"]
    check_parts_cover_every_region(level)
    for name, data in files.items():
        target = out / "submission" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (out / "logs").mkdir()
    manifest = None if write_manifest else json.loads(MANIFEST.read_text())
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", str(out / "work"))
    env["CCACHE_NOHASHDIR"] = "1"
    log(f"grading a {level} submission ({manifest_info.get('regions', '?')} regions) with preset {preset}")
    results: dict = {}
    listed: dict = {}
    warnings: list[str] = []
    for group_keys in PARTS["groups"]:
        group = [p for p in parts_at(level) if p["key"] in group_keys]
        if not group:
            continue
        r, lst, w = grade_group(group, level, regions, out, preset, jobs, env)
        results.update(r)
        listed.update(lst)
        warnings += w
    tests, summary = score(level, results, listed, manifest)
    seconds = time.time() - started
    total = round(sum(s["score"] for s in summary), 2)
    gradescope = {"score": total, "execution_time": round(seconds),
                  "output": f"Autograded code of a {level} kit: {total} / {PARTS['code_points']}. "
                            "The written answers, the measurements and the code quality are graded by hand.",
                  "tests": tests}
    (out / "results.json").write_text(json.dumps(gradescope, indent=2), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(
        {"level": level, "score": total, "max_score": PARTS["code_points"], "seconds": round(seconds),
         "parts": {s["key"]: {"score": s["score"], "max_score": s["points"], "passed": s["passed"], "tests": s["tests"],
                              "failing": [f["name"] for f in s["failures"]]} for s in summary}}, indent=1),
        encoding="utf-8")
    (out / "all_tests.json").write_text(json.dumps(
        {name: {"passed": r["passed"], "labels": listed.get(name, [])} for name, r in results.items()
         if not name.startswith("__build__")}, indent=1), encoding="utf-8")
    write_report(out, manifest_info, summary, files, warnings, seconds, gpu_results(results, listed))
    for s in summary:
        log(f"  {s['title']}: {s['score']:.2f} / {s['points']} ({s['passed']} / {s['tests']} tests)")
    log(f"total {total} / {PARTS['code_points']} in {seconds:.0f} s; {out / 'report.md'}, {out / 'results.json'}")
    return {"level": level, "total": total, "summary": summary, "seconds": seconds, "results": results,
            "listed": listed}


def update_manifest(out: Path, preset: str, jobs: int) -> None:
    """Grades the solution and the unsolved kit of every level with every labelled test, and keeps,
    per level and part, the tests that pass on the solution and fail unsolved."""
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {}
    for level in kit.LEVELS:
        kit_dir = out / f"kit-{level}"
        if kit_dir.exists():
            shutil.rmtree(kit_dir)
        kit.generate(ROOT, kit_dir, level, quiet=True)
        unsolved = out / f"unsolved-{level}.tar.gz"
        if unsolved.exists():
            unsolved.unlink()
        kit.make_submission(kit_dir, unsolved, None, None, code_only=True)
        solved_dir = out / f"solved-{level}"
        if solved_dir.exists():
            shutil.rmtree(solved_dir)
        kit.generate(ROOT, solved_dir, level, quiet=True)
        kit.restore(ROOT, solved_dir)
        solved = out / f"solved-{level}.tar.gz"
        if solved.exists():
            solved.unlink()
        kit.make_submission(solved_dir, solved, None, None, code_only=True)
        a = grade(unsolved, out / f"grade-unsolved-{level}", preset, jobs, write_manifest=True)
        b = grade(solved, out / f"grade-solved-{level}", preset, jobs, write_manifest=True)
        manifest[level] = {}
        for part in parts_at(level):
            names = sorted(n for n, labs in b["listed"].items() if label_match(labs, part["labels"]))
            broken = [n for n in names if not b["results"].get(n, {}).get("passed")]
            if broken:
                raise GradeError(f"{level}, {part['key']}: these tests fail on the solution: {broken}")
            manifest[level][part["key"]] = [n for n in names if not a["results"].get(n, {}).get("passed")]
            dropped = len(names) - len(manifest[level][part["key"]])
            log(f"{level} {part['key']}: {len(manifest[level][part['key']])} tests graded "
                f"({dropped} pass without the student's code)")
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {MANIFEST}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grade.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu-only", help="cpu-only (host path, default) or default (GPU tests too)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--update-manifest", action="store_true",
                        help="maintainers: recompute manifest.json (OUT is a scratch folder; SUBMISSION is not used)")
    parser.add_argument("submission", nargs="?")
    parser.add_argument("out")
    args = parser.parse_args(argv)
    if args.preset not in ("cpu-only", "default"):
        parser.error(f"--preset: {args.preset!r}, allowed: cpu-only, default")
    if args.jobs < 1:
        parser.error(f"--jobs: {args.jobs}, must be at least 1")
    try:
        if args.update_manifest:
            update_manifest(Path(args.out).resolve(), args.preset, args.jobs)
            return 0
        if not args.submission:
            parser.error("name the submission (a .tar.gz from make_submission.sh, or its unpacked folder) and OUT")
        submission = Path(args.submission).resolve()
        if not submission.exists():
            raise GradeError(f"{submission} does not exist")
        grade(submission, Path(args.out).resolve(), args.preset, args.jobs)
    except (GradeError, kit.KitError) as error:
        print(f"grade.sh: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
