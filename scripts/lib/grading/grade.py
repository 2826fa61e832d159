#!/usr/bin/env python3
"""The autograder behind scripts/grade.sh: a student's submission in, scores and a report out.

Each part (course.json) is graded on its own. The grader copies this repository, which is the
solution and holds tests the kits do not ship, configures it once, and then takes the parts in
turn: it puts that part's solution regions from the submission into the copy (every other region
holds the reference solution), builds the part's test targets with `-k 0`, runs the part's tests
and puts the reference back. So a bug costs the part it is in and no other, and a part whose code
does not compile costs that part only. Tests come from the repository: a student's edits to tests
change nothing.

A region that re-pastes another part's code (step 6's three copies of the step 5 kernel, step 7's
ladder, at the standard and full levels) is graded on what it adds: the student's edit of their
own step 5 code, applied to the reference step 5 (rebase.py).

Within a part, the tests are grouped into the ideas the part teaches, and each idea has its
points. An idea scores its points times the fraction of its tests that pass. An idea that names
other ideas under "needs" (its tests run through their code) is not charged for failures when
one of those ideas failed too: the bug is charged once, to the idea it is in. Failures that reach
a TODO, or tests that did not build, are always charged.

Every test run uses one seed (FA2_SEED), derived from the submission's code unless --seed names
one: a regrade of the same submission sees the same inputs. Writes, in the output folder:
results.json (Gradescope's autograder format, hidden tests with the visibility course.json
gives), report.md (for the student: points per part and idea, the first failure of each failed
idea, the written answers found), report_instructor.md (the same with the hidden tests named),
summary.json, all_tests.json and the logs.
"""
from __future__ import annotations

import argparse
import hashlib
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
sys.path.insert(0, str(HERE))
import kit  # noqa: E402  (scripts/lib/kit.py)
import rebase  # noqa: E402  (scripts/lib/grading/rebase.py)
import answers as answers_md  # noqa: E402  (scripts/lib/answers.py)

ROOT = HERE.parents[2]
COURSE_FILE = HERE / "course.json"
MANIFEST = HERE / "manifest.json"
OUT_MARKER = ".fa2-grade"
TODO_MARK = "TODO(step"
HIDDEN_LABEL = "grading"  # the label of the grader's own tests (each step's tests/grading/)


class GradeError(Exception):
    pass


def log(message: str) -> None:
    print(message, flush=True)


# ---- the course's configuration -------------------------------------------------------------


def load_course(path: Path = COURSE_FILE) -> dict:
    course = json.loads(path.read_text(encoding="utf-8"))
    check_course(course)
    return course


def check_course(course: dict) -> None:
    """What the rest of the grader relies on: every idea names its points per level, tests and
    needs well; a part's points are its ideas' points."""
    for part in course["parts"]:
        keys = [idea["key"] for idea in part["ideas"]]
        if len(set(keys)) != len(keys):
            raise GradeError(f"course.json, {part['key']}: two ideas share a key")
        for idea in part["ideas"]:
            for level, points in idea["points"].items():
                if level not in kit.LEVELS or not isinstance(points, (int, float)) or points < 0:
                    raise GradeError(f"course.json, {part['key']}.{idea['key']}: points: {level}: {points!r}, "
                                     f"allowed a number >= 0 for each of {', '.join(kit.LEVELS)}")
            for need in idea.get("needs", []):
                if need not in keys or keys.index(need) >= keys.index(idea["key"]):
                    raise GradeError(f"course.json, {part['key']}.{idea['key']}: needs '{need}', which is not an "
                                     "idea listed before it in the same part")
            for pattern in idea["tests"]:
                re.compile(pattern)
    total = {level: sum(part_points(part, level) for part in course["parts"]) for level in kit.LEVELS}
    for level, points in total.items():
        if abs(points - course["code_points"]) > 1e-9:
            raise GradeError(f"course.json: the ideas' points at {level} add up to {points}, not code_points "
                             f"({course['code_points']})")


def part_points(part: dict, level: str) -> float:
    return sum(idea["points"].get(level, 0) for idea in part["ideas"])


def parts_at(course: dict, level: str) -> list[dict]:
    return [p for p in course["parts"] if part_points(p, level) > 0]


def idea_of(part: dict, test: str) -> dict | None:
    """The first idea whose patterns match the test's name."""
    for idea in part["ideas"]:
        if any(re.search(pattern, test) for pattern in idea["tests"]):
            return idea
    return None


def check_parts_cover_every_region(course: dict, level: str) -> None:
    """Every region a student writes at this level belongs to a part, or its work would go ungraded."""
    selected = {(r["file"], step) for p in parts_at(course, level) for r in p["regions"] for step in r["steps"]}
    missing = [f"{rel}:{region.line} ({region.step})" for rel, region in kit.student_regions(ROOT, level)
               if (rel, region.step) not in selected and not kit.is_markdown(rel)]
    if missing:
        raise GradeError(f"course.json grades no part with these {level} regions: {', '.join(missing)}")


def check_manifest_ideas(course: dict, manifest: dict) -> None:
    """Every graded test belongs to an idea, and every idea with points has tests, at every level."""
    for level in kit.LEVELS:
        for part in parts_at(course, level):
            names = manifest.get(level, {}).get(part["key"], [])
            orphans = [n for n in names if idea_of(part, n) is None]
            if orphans:
                raise GradeError(f"course.json, {part['key']} ({level}): no idea takes these tests: {orphans}")
            for idea in part["ideas"]:
                if idea["points"].get(level, 0) > 0 and not any(idea_of(part, n) is idea for n in names):
                    raise GradeError(f"course.json, {part['key']}.{idea['key']} has points at {level} but no graded "
                                     "test there")


def label_match(labels: list[str], rule: dict) -> bool:
    return all(x in labels for x in rule.get("all", [])) and not any(x in labels for x in rule.get("none", []))


# ---- the work tree --------------------------------------------------------------------------


def prepare_output(out: Path) -> None:
    """A new or empty folder, or one this grader wrote before (then only its own content goes)."""
    if out.exists() and not out.is_dir():
        raise GradeError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not (out / OUT_MARKER).is_file():
            raise GradeError(f"{out} is not empty and was not written by grade.sh (no {OUT_MARKER}): "
                             "choose a new or empty folder")
        for name in ("work", "logs", "submission", "results.json", "report.md", "report_instructor.md",
                     "summary.json", "all_tests.json", OUT_MARKER):
            target = out / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / OUT_MARKER).write_text("written by scripts/grade.sh; it replaces this folder's work/, logs/, submission/, "
                                  "results.json, report.md, report_instructor.md, summary.json and all_tests.json "
                                  "when it grades again\n")


def copy_repository(dst: Path) -> None:
    for rel in kit.repository_files(ROOT):
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)


def student_region(regions: dict, rel: str, level: str, key: str) -> str | None:
    """The student's body of the region of `rel` whose BEGIN line is `key` (kit.align_bodies)."""
    nodes = kit.parse((ROOT / rel).read_text(encoding="utf-8"), rel)
    steps = {kit.region_kind(key)[0]}
    bodies, _ = kit.align_bodies(nodes, level, regions.get(rel, []), steps)
    return next(("".join(body) for begin, body in bodies if begin.strip() == key), None)


def rebased_bodies(part: dict, level: str, rel: str, bodies: list[tuple[str, list[str]]], regions: dict,
                   notes: list[str]) -> list[tuple[str, list[str]]]:
    """The part's bodies, those that re-paste the rebase source replaced by the student's edit
    applied to the reference (rebase.py)."""
    spec = part.get("rebase")
    if not spec or level not in spec["levels"]:
        return bodies
    source_nodes = kit.parse((ROOT / spec["from"]).read_text(encoding="utf-8"), spec["from"])
    source_regions = {r.level: r for r in kit.applied_regions(source_nodes, level)}
    own_nodes = kit.parse((ROOT / rel).read_text(encoding="utf-8"), rel)
    own_levels = {r.key: r.level for r in kit.applied_regions(own_nodes, level)}
    out = []
    for begin, body in bodies:
        source = source_regions.get(own_levels.get(begin.strip(), ""))
        mine = student_region(regions, spec["from"], level, source.key) if source else None
        if source is None or mine is None:
            out.append((begin, body))
            continue
        theirs = "".join(body)
        rebased = rebase.rebase(mine, theirs, "".join(source.body_lines()))
        out.append((begin, rebased.splitlines(keepends=True)))
        edit = rebase.edit_lines(mine, theirs)
        notes.append(f"{rel}: graded as the reference {spec['from']} with your edit of your own code applied "
                     f"({len(edit)} changed line(s)" + (": " + "; ".join(x.strip() for x in edit[:6]) if edit else "")
                     + ")")
    return out


def part_files(part: dict, level: str, regions: dict, notes: list[str], as_written: bool = False) -> dict[str, str]:
    """{file: text} of the part's region files with the student's bodies (re-pasted regions
    rebased on the reference, unless as_written)."""
    files: dict[str, str] = {}
    for selection in part["regions"]:
        rel = selection["file"]
        steps = set(selection["steps"])
        nodes = kit.parse((ROOT / rel).read_text(encoding="utf-8"), rel)
        bodies, note = kit.align_bodies(nodes, level, regions.get(rel, []), steps)
        if note and not as_written:
            notes.append(f"{rel}: {note}")
        if not as_written:
            bodies = rebased_bodies(part, level, rel, bodies, regions, notes)
        lines, warnings = kit.fill(nodes, level, bodies, steps)
        files[rel] = "".join(lines)
        if not as_written:
            notes += [f"{rel}: {w}" for w in warnings]
    return files


def differs_as_written(part: dict, level: str, regions: dict) -> bool:
    """Whether rebasing changed the code of one of the part's re-pasted regions: then the part is
    graded both ways (score)."""
    if not part.get("rebase"):
        return False
    rebased, written = part_files(part, level, regions, []), part_files(part, level, regions, [], as_written=True)
    return any(not rebase.same_code(rebased[rel], written[rel]) for rel in rebased)


def write_if_changed(tree: Path, rel: str, text: str) -> None:
    """Writes only a file whose content changes, so that its new time stamp rebuilds what uses it."""
    path = tree / rel
    if path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def run(cmd: list[str], cwd: Path, logfile: Path, env: dict | None = None, timeout: float | None = None) -> int:
    with open(logfile, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(cmd)}\n")
        handle.flush()
        try:
            return subprocess.run(cmd, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, env=env,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            handle.write(f"\n(stopped after {timeout:.0f} s)\n")
            return 124


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
    """{test name: {passed, skipped, output, time}} from ctest --output-junit."""
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


def listed_tests(build: Path) -> list[tuple[str, list[str]]]:
    """[(test name, labels)] of a configured and built tree, in ctest's numbering order."""
    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True)
    if listing.returncode != 0:
        return []
    return [(test["name"], next((p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"), []))
            for test in json.loads(listing.stdout).get("tests", [])]


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


def derive_seed(regions: dict, salt: str) -> int:
    """A seed that depends on the submission's code only: a regrade of it gets the same one."""
    digest = hashlib.sha256((salt + json.dumps(regions, sort_keys=True)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def grade_parts(course: dict, level: str, regions: dict, out: Path, preset: str, jobs: int, env: dict,
                manifest: dict | None) -> tuple[dict, dict, list[str]]:
    """Builds and tests each part in turn in one copy of the repository (a part that re-pastes
    step 5 twice when rebasing changed code of the student's: rebased, and as written).
    Returns ({test: result, "__alternatives__": {part: {test: result}}}, {test: labels}, notes)."""
    src = out / "work" / "src"
    logs = out / "logs"
    src.mkdir(parents=True)
    copy_repository(src)
    limits = course["grading"]
    build = src / "build" / preset
    cache = ["-DFA2_WARNINGS_AS_ERRORS=OFF"]
    if shutil.which("ccache"):
        cache.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    started = time.time()
    if run(["cmake", "--preset", preset, *cache], src, logs / "configure.log", env) != 0:
        raise GradeError(f"the repository copy did not configure: see {logs / 'configure.log'}")
    log(f"  configured in {time.time() - started:.0f} s")
    existing = ninja_targets(build)
    results: dict = {}
    listed: dict = {}
    notes: list[str] = []
    alternatives: dict[str, dict] = {}  # part key -> the results of its regions as written
    reference: dict[str, str] = {}
    def one_round(part: dict, files: dict[str, str], tag: str) -> dict:
        for rel, text in reference.items():  # the previous round's files back to the reference
            if rel not in files:
                write_if_changed(src, rel, text)
        for rel, text in files.items():
            reference.setdefault(rel, (ROOT / rel).read_text(encoding="utf-8"))
            write_if_changed(src, rel, text)
        targets = [t for t in part["targets"] if t in existing]
        # An earlier round may have built these targets with the reference's code (as what another
        # part's targets needed): remove them, so that a build that fails now leaves no program to
        # pass the tests in the student's place.
        for target in targets:
            for stale in build.rglob(target):
                if stale.is_file():
                    stale.unlink()
        part_log = logs / f"{part['key']}{tag}.build.log"
        code = run(["cmake", "--build", "--preset", preset, "--target", *targets, "--", "-k", "0", f"-j{jobs}"],
                   src, part_log, env, timeout=limits["build_timeout_seconds"])
        build_error = "" if code == 0 else first_errors(part_log.read_text(encoding="utf-8"))
        tests = listed_tests(build)
        listed.update({name: labels for name, labels in tests})
        graded = set(manifest[level][part["key"]]) if manifest is not None else \
            {n for n, labs in tests if label_match(labs, part["labels"])}
        gpu = {n for n, labs in tests if "gpu" in labs and label_match(labs, part["labels"])} \
            if preset == "default" else set()
        numbers = [str(i + 1) for i, (name, _) in enumerate(tests) if name in graded | gpu]
        part_results: dict = {}
        if numbers:
            selection = out / "work" / f"{part['key']}{tag}.tests.txt"
            selection.write_text("0,0,0," + ",".join(numbers) + "\n")
            junit = out / "work" / f"{part['key']}{tag}.junit.xml"
            run(["ctest", "-j", str(jobs), "--timeout", str(limits["test_timeout_seconds"]), "--output-junit",
                 str(junit), "-I", str(selection)], build, logs / f"{part['key']}{tag}.ctest.log", env)
            part_results = junit_results(junit)
        for name in graded - part_results.keys():  # its target did not build, or the test is gone
            why = ("did not build:\n" + build_error) if build_error else "not run: the test is not in this build"
            part_results[name] = {"passed": False, "skipped": False, "output": why, "not_run": True}
        if build_error:  # code that does not compile: its failures are never excused (score_ideas)
            for name in graded:
                if not part_results[name]["passed"]:
                    part_results[name]["not_run"] = True
        part_results[f"__build__{part['key']}"] = {"passed": not build_error, "output": build_error}
        return part_results

    for part in parts_at(course, level):
        started = time.time()
        results.update(one_round(part, part_files(part, level, regions, notes), ""))
        if differs_as_written(part, level, regions):
            written = one_round(part, part_files(part, level, regions, [], as_written=True), ".as_written")
            alternatives[part["key"]] = written
            notes.append(f"{part['title']}: your pasted regions differ from your step 5 around code of yours that "
                         "the reference replaces, so the part was also graded as you wrote it; each idea takes the "
                         "better of the two")
        log(f"  {part['key']}: built and tested in {time.time() - started:.0f} s")
    for rel, text in reference.items():
        write_if_changed(src, rel, text)
    results["__alternatives__"] = alternatives
    return results, listed, notes


# ---- scores ---------------------------------------------------------------------------------


def score_ideas(part: dict, level: str, names: list[str], results: dict, listed: dict) -> list[dict]:
    """A part's ideas, each with its points, tests, failures and the verdict, from one set of results."""
    by_idea: dict[str, list[str]] = {idea["key"]: [] for idea in part["ideas"]}
    for name in names:
        idea = idea_of(part, name)
        if idea is not None:
            by_idea[idea["key"]].append(name)
    failed_ideas: set[str] = set()
    ideas = []
    for idea in part["ideas"]:
        tests = by_idea[idea["key"]]
        points = idea["points"].get(level, 0)
        if not tests and points == 0:
            continue
        failures = []
        for name in tests:
            r = results.get(name) or {"passed": False, "output": "not run", "not_run": True}
            if not r["passed"]:
                failures.append({"name": name, "message": failure_message(r["output"]),
                                 "todo": TODO_MARK in r["output"] or r.get("not_run", False),
                                 "hidden": HIDDEN_LABEL in listed.get(name, [])})
        passed = len(tests) - len(failures)
        excused_by = [need for need in idea.get("needs", []) if need in failed_ideas]
        excused = bool(failures) and bool(excused_by) and not any(f["todo"] for f in failures)
        if failures:
            failed_ideas.add(idea["key"])
        got = points if (not failures or excused) else points * passed / max(1, len(tests))
        ideas.append({"key": idea["key"], "title": idea["title"], "points": points, "score": round(got, 2),
                      "tests": len(tests), "passed": passed, "failures": failures,
                      "excused_by": excused_by if excused else [], "as_written": False})
    return ideas


def score(course: dict, level: str, results: dict, listed: dict, manifest: dict | None) -> list[dict]:
    """Per part: its ideas, each with its points, tests, failures and the verdict. A part graded
    both ways (its re-pasted regions rebased, and as written: grade_parts) takes, per idea, the
    better of the two."""
    alternatives = results.get("__alternatives__", {})
    summary = []
    for part in parts_at(course, level):
        key = part["key"]
        if manifest is not None:
            names = manifest[level][key]
        else:
            names = sorted(n for n, labs in listed.items() if label_match(labs, part["labels"]))
        ideas = score_ideas(part, level, names, results, listed)
        build_error = results.get(f"__build__{key}", {}).get("output", "")
        if key in alternatives:
            written = score_ideas(part, level, names, alternatives[key], listed)
            for n, (a, b) in enumerate(zip(ideas, written)):
                if b["score"] > a["score"]:
                    ideas[n] = dict(b, as_written=True)
            if any(i["as_written"] for i in ideas):
                build_error = build_error and alternatives[key].get(f"__build__{key}", {}).get("output", "")
        total = sum(i["score"] for i in ideas)
        summary.append({"key": key, "title": part["title"], "points": part_points(part, level),
                        "score": round(total, 2), "ideas": ideas, "build_error": build_error})
    return summary


def gpu_results(results: dict, listed: dict) -> dict[str, list[str]]:
    """The GPU tests that ran (preset default on a machine with a GPU): not scored, reported."""
    found: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for name, labels in listed.items():
        if "gpu" not in labels or name not in results:
            continue
        r = results[name]
        found["skipped" if r.get("skipped") else "passed" if r["passed"] else "failed"].append(name)
    return found


# ---- reports --------------------------------------------------------------------------------


def idea_verdict(idea: dict) -> str:
    if not idea["failures"]:
        return "passed" + (" (your pasted code as written)" if idea.get("as_written") else "")
    if idea["excused_by"]:
        names = [k.replace("_", " ") for k in idea["excused_by"]]
        return f"not charged: its tests run through {', '.join(names)}, which failed"
    return f"{idea['passed']} of {idea['tests']} tests passed"


def shown_failure(failures: list[dict], show_hidden: bool) -> tuple[str, str]:
    """(name, message) of an idea's first failure as this report may show it: the first failing
    test the student has, else a hidden one, named only when hidden tests are shown."""
    visible = [f for f in failures if not f["hidden"]]
    first = failures[0] if show_hidden or not visible else visible[0]
    if first["hidden"] and not show_hidden:
        return ("a hidden test", "its name and output are shown once the grades are published")
    return first["name"], first["message"]


def write_report(path: Path, course: dict, info: dict, summary: list[dict], answers: dict, files: dict,
                 notes: list[str], seconds: float, gpu: dict, show_hidden: bool) -> str:
    level = info["level"]
    total = sum(s["score"] for s in summary)
    lines = [f"# Grade report ({level} kit)", "",
             f"Autograded code: **{total:.2f} / {course['code_points']}** points, from {len(summary)} parts graded "
             f"one at a time ({seconds:.0f} s on this machine). Every test ran with FA2_SEED={info['seed']}: "
             "run a failing test in your kit with that seed to see the same inputs.", "",
             "| part | points | ideas passed |", "|---|---|---|"]
    for s in summary:
        graded = [i for i in s["ideas"] if i["points"] > 0]
        ok = sum(1 for i in graded if not i["failures"] or i["excused_by"])
        lines.append(f"| {s['title']} | {s['score']:.2f} / {s['points']:g} | {ok} / {len(graded)} |")
    for s in summary:
        lines += ["", f"## {s['title']}: {s['score']:.2f} / {s['points']:g}", "",
                  "| idea | points | result |", "|---|---|---|"]
        for idea in s["ideas"]:
            if idea["points"] > 0:  # an idea without points at this level is the kit's given code
                lines.append(f"| {idea['title']} | {idea['score']:.2f} / {idea['points']:g} | {idea_verdict(idea)} |")
        if s["build_error"]:
            lines += ["", "Its code did not compile; the compiler said:", "", "```", s["build_error"], "```"]
            if show_hidden:
                lines += [""] + [f"- not passed: {f['name']}" for i in s["ideas"] for f in i["failures"]]
            continue
        for idea in s["ideas"]:
            # The student reads of the ideas that cost points; the instructor of every failure.
            if not idea["failures"] or ((idea["excused_by"] or idea["points"] == 0) and not show_hidden):
                continue
            name, message = shown_failure(idea["failures"], show_hidden)
            more = len(idea["failures"]) - 1
            lines += ["", f"- **{idea['title']}**: first failure: {name}"
                      + (f" (and {more} more failing test(s) of this idea)" if more else "")]
            if message:
                lines += ["", "  ```", *("  " + x for x in message.splitlines()[:15]), "  ```"]
            if show_hidden and more:
                lines += [f"  - also failed: {f['name']}" for f in idea["failures"][1:]]
    if gpu and any(gpu.values()):
        lines += ["", "## GPU tests (preset default; reported, not scored)", "",
                  f"{len(gpu['passed'])} passed, {len(gpu['failed'])} failed, {len(gpu['skipped'])} skipped "
                  "(no GPU).", ""] + [f"- failed: {name}" for name in gpu["failed"]]
    lines += ["", "## Graded by hand", ""]
    if answers["present"]:
        lines.append(f"- written answers: {answers['answered']} of {answers['required']} required questions "
                     f"answered in answers.md ({answers['words']} words)"
                     + (f"; no answer found for {', '.join(answers['missing'])}" if answers["missing"] else "")
                     + (f"; bonus answered: {', '.join(answers['bonus'])}" if answers["bonus"] else ""))
    else:
        lines.append("- written answers: no answers.md submitted")
    measured = sorted(name for name in files if name.startswith("measurements/"))
    lines.append(f"- measurements: {', '.join(measured) if measured else 'none submitted'}")
    lines.append("- code quality (INSTRUCTOR.md, rubric)")
    if notes:
        lines += ["", "## Notes on the submission", ""] + [f"- {n}" for n in notes]
    text = "\n".join(lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def gradescope_tests(course: dict, summary: list[dict]) -> list[dict]:
    """One entry per idea (visible, with its score), and one per failing hidden test (0 points,
    with the visibility course.json gives hidden tests)."""
    hidden_visibility = course["grading"]["visibility"]["hidden_tests"]
    tests = []
    for s in summary:
        for idea in s["ideas"]:
            if idea["points"] == 0:  # the kit's given code at this level
                continue
            if not idea["failures"]:
                output = f"passed ({idea['tests']} tests)"
            elif idea["excused_by"]:
                output = idea_verdict(idea)
            else:
                name, message = shown_failure(idea["failures"], show_hidden=False)
                output = f"{idea_verdict(idea)}; first failure: {name}\n{message}"
            tests.append({"name": f"{s['title']} · {idea['title']}", "score": idea["score"],
                          "max_score": idea["points"], "output": output, "visibility": "visible"})
            for failure in idea["failures"]:
                if failure["hidden"]:
                    tests.append({"name": f"{s['title']} · {idea['title']} · hidden test: {failure['name']}",
                                  "score": 0, "max_score": 0, "output": failure["message"],
                                  "visibility": hidden_visibility})
    return tests


def grade(submission_path: Path, out: Path, preset: str, jobs: int, seed: int | None = None,
          write_manifest: bool = False) -> dict:
    started = time.time()
    course = load_course()
    prepare_output(out)
    info, regions, files = kit.read_submission(submission_path)
    level = info["level"]
    check_parts_cover_every_region(course, level)
    manifest = None if write_manifest else json.loads(MANIFEST.read_text())
    if manifest is not None:
        check_manifest_ideas(course, manifest)
    for name, data in files.items():
        target = out / "submission" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (out / "logs").mkdir()
    info = dict(info, seed=seed if seed is not None else derive_seed(regions, course["grading"]["seed_salt"]))
    env = dict(os.environ, FA2_SEED=str(info["seed"]), CCACHE_NOHASHDIR="1")
    env.setdefault("CCACHE_BASEDIR", str(out / "work"))
    log(f"grading a {level} submission ({info.get('regions', '?')} regions) with preset {preset}, FA2_SEED={info['seed']}")
    results, listed, notes = grade_parts(course, level, regions, out, preset, jobs, env, manifest)
    summary = score(course, level, results, listed, manifest)
    seconds = time.time() - started
    total = round(sum(s["score"] for s in summary), 2)
    answers = answers_md.check(files.get("answers.md"), ROOT / "HANDOUT.md")
    gpu = gpu_results(results, listed)
    gradescope = {"score": total, "execution_time": round(seconds),
                  "output": f"Autograded code of a {level} kit: {total} / {course['code_points']} (FA2_SEED="
                            f"{info['seed']}). The written answers, the measurements and the code quality are "
                            "graded by hand.",
                  "tests": gradescope_tests(course, summary)}
    (out / "results.json").write_text(json.dumps(gradescope, indent=2), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(
        {"level": level, "score": total, "max_score": course["code_points"], "seconds": round(seconds),
         "seed": info["seed"], "answers": answers,
         "parts": {s["key"]: {"score": s["score"], "max_score": s["points"],
                              "passed": sum(i["passed"] for i in s["ideas"]),
                              "tests": sum(i["tests"] for i in s["ideas"]),
                              "ideas": {i["key"]: {"score": i["score"], "max_score": i["points"],
                                                   "failing": [f["name"] for f in i["failures"]],
                                                   "excused_by": i["excused_by"]} for i in s["ideas"]},
                              "failing": [f["name"] for i in s["ideas"] for f in i["failures"]]}
                   for s in summary}}, indent=1), encoding="utf-8")
    (out / "all_tests.json").write_text(json.dumps(
        {name: {"passed": r["passed"], "labels": listed.get(name, [])} for name, r in results.items()
         if not name.startswith("__")}, indent=1), encoding="utf-8")
    write_report(out / "report.md", course, info, summary, answers, files, notes, seconds, gpu, show_hidden=False)
    write_report(out / "report_instructor.md", course, info, summary, answers, files, notes, seconds, gpu,
                 show_hidden=True)
    for s in summary:
        lost = [f"{i['key']} {i['score']:g}/{i['points']:g}" for i in s["ideas"] if i["score"] < i["points"]]
        log(f"  {s['title']}: {s['score']:.2f} / {s['points']:g}" + (f" (lost: {', '.join(lost)})" if lost else ""))
    log(f"total {total} / {course['code_points']} in {seconds:.0f} s; {out / 'report.md'}, {out / 'results.json'}")
    return {"level": level, "total": total, "summary": summary, "seconds": seconds, "results": results,
            "listed": listed}


def update_manifest(out: Path, preset: str, jobs: int) -> None:
    """Grades the solution and the unsolved kit of every level with every labelled test, and keeps,
    per level and part, the tests that pass on the solution and fail unsolved."""
    course = load_course()
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {}
    for level in kit.LEVELS:
        for name, restore in (("unsolved", False), ("solved", True)):
            kit_dir = out / f"{name}-{level}"
            if kit_dir.exists():
                shutil.rmtree(kit_dir)
            kit.generate(ROOT, kit_dir, level, quiet=True)
            if restore:
                kit.restore(ROOT, kit_dir)
            archive = out / f"{name}-{level}.tar.gz"
            if archive.exists():
                archive.unlink()
            kit.make_submission(kit_dir, archive, None, None, code_only=True)
        a = grade(out / f"unsolved-{level}.tar.gz", out / f"grade-unsolved-{level}", preset, jobs, write_manifest=True)
        b = grade(out / f"solved-{level}.tar.gz", out / f"grade-solved-{level}", preset, jobs, write_manifest=True)
        manifest[level] = {}
        for part in parts_at(course, level):
            names = sorted(n for n, labs in b["listed"].items() if label_match(labs, part["labels"]))
            broken = [n for n in names if not b["results"].get(n, {}).get("passed")]
            if broken:
                raise GradeError(f"{level}, {part['key']}: these tests fail on the solution: {broken}")
            manifest[level][part["key"]] = [n for n in names if not a["results"].get(n, {}).get("passed")]
            dropped = len(names) - len(manifest[level][part["key"]])
            log(f"{level} {part['key']}: {len(manifest[level][part['key']])} tests graded "
                f"({dropped} pass without the student's code)")
    check_manifest_ideas(course, manifest)
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {MANIFEST}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grade.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default=None, help="cpu-only (host path) or default (GPU tests too); "
                        "course.json's grading.preset when not given")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--seed", type=int, default=None,
                        help="the FA2_SEED of every test (default: derived from the submission's code)")
    parser.add_argument("--update-manifest", action="store_true",
                        help="maintainers: recompute manifest.json (OUT is a scratch folder; SUBMISSION is not used)")
    parser.add_argument("submission", nargs="?")
    parser.add_argument("out")
    args = parser.parse_args(argv)
    try:
        course = load_course()
        preset = args.preset or course["grading"]["preset"]
        if preset not in ("cpu-only", "default"):
            parser.error(f"--preset: {preset!r}, allowed: cpu-only, default")
        if args.jobs < 1:
            parser.error(f"--jobs: {args.jobs}, must be at least 1")
        if args.seed is not None and args.seed < 0:
            parser.error(f"--seed: {args.seed}, must be a non-negative integer")
        if args.update_manifest:
            update_manifest(Path(args.out).resolve(), preset, args.jobs)
            return 0
        if not args.submission:
            parser.error("name the submission (a .tar.gz from make_submission.sh, or its unpacked folder) and OUT")
        submission = Path(args.submission).resolve()
        if not submission.exists():
            raise GradeError(f"{submission} does not exist")
        grade(submission, Path(args.out).resolve(), preset, args.jobs, args.seed)
    except (GradeError, kit.KitError) as error:
        print(f"grade.sh: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
