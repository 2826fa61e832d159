#!/usr/bin/env python3
"""The numbers HANDOUT.md and INSTRUCTOR.md give that the repository can compute, generated from
their sources and checked against them: regions and lines per level (scripts/lib/kit.py), points
per part and per idea and graded tests per idea (course.json, manifest.json), the required
reading per part (scripts/lib/reading.py), the hours per part (from those counts and the paces of
course.json's "load"), and the answers.md template (scripts/lib/answers.py).

Each generated passage sits between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`.

    python3 scripts/lib/grading/numbers.py --check    exit 1, naming each passage that differs
    python3 scripts/lib/grading/numbers.py --write    rewrite the passages (and answers.md)
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import answers  # noqa: E402
import kit  # noqa: E402
import reading  # noqa: E402

ROOT = HERE.parents[2]
COURSE = json.loads((HERE / "course.json").read_text(encoding="utf-8"))
MANIFEST = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated: (?P=name) -->)", re.S)
LEVELS = kit.LEVELS

# The course's parts as HANDOUT.md and reading.json name them, and the autograded part each one
# holds (setup, measurement and the GPU part have none).
PARTS = [("setup", None), ("step 1", "step01"), ("step 2 forward", "step02_forward"),
         ("step 2 backward", "step02_backward"), ("step 3", "step03"), ("step 4", "step04"),
         ("step 5 forward", "step05_forward"), ("step 5 backward", "step05_backward"), ("step 6", "step06"),
         ("step 7", "step07"), ("measurement", None), ("the GPU part", None)]


def fmt(x: float) -> str:
    return f"{x:g}"


def hours_text(x: float) -> str:
    return f"{fmt(x)} hour" + ("" if x == 1 else "s")


def lines_per_part() -> dict[str, dict[str, dict[str, int]]]:
    """{level: {part key: {"written": lines, "pasted": lines}}}: the lines of code of the part's
    regions (those the build fills excluded); in a region that re-pastes the student's own step 5
    (course.json's "rebase"), only the lines that differ from that step 5 count as written, the
    rest as pasted."""
    sys.path.insert(0, str(HERE))
    import rebase  # noqa: E402
    files = {(r["file"], s): p for p in COURSE["parts"] for r in p["regions"] for s in r["steps"]}
    out: dict[str, dict[str, dict[str, int]]] = {}
    for level in LEVELS:
        counts: dict[str, dict[str, int]] = {}
        for rel, region in kit.student_regions(ROOT, level):
            part = files.get((rel, region.step))
            if part is None:
                continue
            lines = kit.code_lines(region.body_lines())
            written = lines
            spec = part.get("rebase")
            if spec and level in spec["levels"]:
                source = {r.level: r for r in kit.applied_regions(
                    kit.parse((ROOT / spec["from"]).read_text(encoding="utf-8"), spec["from"]), level)}.get(region.level)
                if source is not None:
                    edit = rebase.edit_lines("".join(source.body_lines()), "".join(region.body_lines()), limit=10**6)
                    written = sum(1 for line in edit if line.startswith("+") and line[1:].strip()
                                  and not line[1:].strip().startswith("//"))
            row = counts.setdefault(part["key"], {"written": 0, "pasted": 0})
            row["written"] += written
            row["pasted"] += lines - written
        out[level] = counts
    return out


def points_of(question: dict, with_gpu: bool) -> float:
    """A question's points: "1.25 points; 2.5 without the GPU part" gives 1.25 (2.5 without)."""
    numbers = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", question["points"])]
    return numbers[0] if with_gpu or len(numbers) < 2 else numbers[1]


def questions_per_part() -> dict[str, list[dict]]:
    """{part name: [question]} by the HANDOUT section each question is asked in."""
    text = (ROOT / "HANDOUT.md").read_text(encoding="utf-8")
    sections = {"## Step 1": "step 1", "## Step 2": "step 2 forward", "## Step 3": "step 3", "## Step 4": "step 4",
                "## Step 5": "step 5 forward", "## The backward pass": "step 5 backward", "## Step 6": "step 6",
                "## Step 7": "step 7", "## Measurement": "measurement", "## The GPU part": "the GPU part",
                "## Bonus": "bonus", "## Without a GPU": "bonus"}
    out: dict[str, list[dict]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = next((name for prefix, name in sections.items() if line.startswith(prefix)), None)
        found = answers.QUESTION.match(line)
        if found and current is not None:
            points = found.group("points")
            out.setdefault(current, []).append({"label": found.group("label"), "points": points,
                                                "bonus": "bonus" in points or points.strip().startswith("+")})
    return out


def graded_tests(part: dict, level: str) -> dict[str, int]:
    sys.path.insert(0, str(HERE))
    import grade  # noqa: E402  (idea_of)
    counts: dict[str, int] = {}
    for name in MANIFEST.get(level, {}).get(part["key"], []):
        idea = grade.idea_of(part, name)
        if idea is not None:
            counts[idea["key"]] = counts.get(idea["key"], 0) + 1
    return counts


# ---- the passages -------------------------------------------------------------------------------


def level_counts(level: str) -> tuple[int, int, int]:
    """(regions, lines to write, lines pasted from the student's own step 5) of a level."""
    rows = lines_per_part()[level].values()
    return (kit.stats(ROOT)[level]["regions"], sum(r["written"] for r in rows), sum(r["pasted"] for r in rows))


def levels_block() -> str:
    what = {"guided": "small pieces, a few lines each, inside code that is given",
            "standard": "whole function bodies and loop bodies",
            "full": "each step's kernel from its signature"}
    out = []
    for level in LEVELS:
        regions, written, pasted = level_counts(level)
        out.append(f"- **{level}**: {what[level]} ({regions} regions, {written} lines of code to write"
                   + (f", plus {pasted} lines pasted from your own step 5 into steps 6 and 7" if pasted else "") + ");\n")
    return "".join(out)


def code_points_block() -> str:
    rows = ["| part | guided | standard | full |", "|---|---|---|---|"]
    for part in COURSE["parts"]:
        cells = []
        for level in LEVELS:
            points = sum(i["points"].get(level, 0) for i in part["ideas"])
            cells.append(fmt(points) if points else "-")
        rows.append(f"| {part['title']} | {' | '.join(cells)} |")
    rows.append(f"| **total** | {' | '.join(['**' + fmt(COURSE['code_points']) + '**'] * 3)} |")
    return "\n".join(rows) + "\n"


def ideas_block() -> str:
    out = []
    for part in COURSE["parts"]:
        out += ["", f"**{part['title']}**", "", "| idea | points (guided / standard / full) | graded tests |",
                "|---|---|---|"]
        tests = {level: graded_tests(part, level) for level in LEVELS}
        for idea in part["ideas"]:
            points = " / ".join(fmt(idea["points"].get(level, 0)) if idea["points"].get(level, 0) else "-"
                                for level in LEVELS)
            counts = " / ".join(str(tests[level].get(idea["key"], 0)) if idea["points"].get(level, 0) else "-"
                                for level in LEVELS)
            needs = ""
            if idea.get("needs"):
                titles = {i["key"]: i["key"].replace("_", " ") for i in part["ideas"]}
                needs = f" (not charged when {', '.join(titles[n] for n in idea['needs'])} failed)"
            out.append(f"| {idea['title']}{needs} | {points} | {counts} |")
    return "\n".join(out[1:]) + "\n"


def points_block() -> str:
    hand = COURSE["hand_graded"]
    rows = ["| part | points | without a GPU | how it is graded |", "|---|---|---|---|",
            f"| code, autograded | {fmt(COURSE['code_points'])} | {fmt(COURSE['code_points'])} | the tests of each "
            "step, by idea |"]
    total, total_cpu = COURSE["code_points"], COURSE["code_points"]
    for item in hand["items"]:
        rows.append(f"| {item['title']} | {fmt(item['points'])} | {fmt(item['without_gpu'])} | {item['how']} |")
        total += item["points"]
        total_cpu += item["without_gpu"]
    rows.append(f"| **total** | **{fmt(total)}** | **{fmt(total_cpu)}** | |")
    rows.append(f"| bonus | up to +{fmt(hand['bonus_points'])} | up to +{fmt(hand['bonus_points_without_gpu'])} | "
                f"{hand['bonus_how']} |")
    return "\n".join(rows) + "\n"


def hours() -> dict[str, dict[str, float]]:
    """{part name: {level: hours}} from the counts and course.json's paces."""
    load = COURSE["load"]
    words = reading.words_per_part(ROOT)
    lines = lines_per_part()
    asked = questions_per_part()
    out: dict[str, dict[str, float]] = {}
    for name, key in PARTS:
        row = {}
        for level in LEVELS:
            h = words.get(name, 0) / load["words_per_hour"]
            if key is not None:
                h += lines[level].get(key, {}).get("written", 0) / load["lines_per_hour"]
            h += sum(load["hours_per_point"] * points_of(q, with_gpu=True) for q in asked.get(name, []) if not q["bonus"])
            h += load["setup_hours"] if name == "setup" else 0
            row[level] = h
        out[name] = row
    return out


def hours_block() -> str:
    load = COURSE["load"]
    table = hours()
    words = reading.words_per_part(ROOT)
    lines = lines_per_part()
    rows = ["| part | reading (words) | code (lines: guided / standard / full) | guided | standard | full |",
            "|---|---|---|---|---|---|"]
    totals = {level: 0.0 for level in LEVELS}
    for name, key in PARTS:
        code = " / ".join(str(lines[level].get(key, {}).get("written", 0)) for level in LEVELS) if key else "-"
        cells = []
        for level in LEVELS:
            totals[level] += table[name][level]
            cells.append(f"{table[name][level]:.1f}")
        rows.append(f"| {name} | {words.get(name, 0):,} | {code} | {' | '.join(cells)} |")
    rows.append(f"| **total** | **{sum(words.values()):,}** | | "
                + " | ".join(f"**{totals[level]:.0f}**" for level in LEVELS) + " |")
    note = (f"\nThe hours are computed, not guessed: reading at {load['words_per_hour']:,} words an hour, code at "
            f"{load['lines_per_hour']} lines an hour (written, compiled and debugged against the tests; the lines "
            "you paste from your own step 5 into steps 6 and 7 do not count, the ones you change there do), "
            f"{fmt(load['hours_per_point'])} hours per point of a required question (with the GPU part), and {hours_text(load['setup_hours'])} "
            "to set up the machine and build once.\n")
    return "\n".join(rows) + "\n" + note


def instructor_levels_block() -> str:
    table = hours()
    out = []
    for level in LEVELS:
        regions, written, pasted = level_counts(level)
        out.append(f"- **{level}**: {regions} regions, {written} lines of code to write"
                   + (f" (and {pasted} pasted from the student's step 5 into steps 6 and 7)" if pasted else "")
                   + f", about {sum(table[name][level] for name, _ in PARTS):.0f} hours (HANDOUT.md, \"Time\");\n")
    return "".join(out)


def blocks() -> dict[str, str]:
    out = {"levels": levels_block(), "code-points": code_points_block(), "ideas": ideas_block(),
           "points": points_block(), "hours": hours_block(), "instructor-levels": instructor_levels_block()}
    out["reading"] = reading_block()
    return out


def reading_block() -> str:
    import io
    from contextlib import redirect_stdout
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        reading.main(["--root", str(ROOT), "--markdown"])
    return buffer.getvalue()


FILES = ("HANDOUT.md", "INSTRUCTOR.md")


def run(write: bool) -> list[str]:
    wanted = blocks()
    problems: list[str] = []
    seen: set[str] = set()
    for rel in FILES:
        path = ROOT / rel
        text = path.read_text(encoding="utf-8")

        def replace(m: re.Match) -> str:
            name = m.group("name")
            seen.add(name)
            if name not in wanted:
                problems.append(f"{rel}: a generated passage named '{name}', which numbers.py does not make")
                return m.group(0)
            if m.group("body") != wanted[name]:
                problems.append(f"{rel}: the passage '{name}' differs from what the repository computes")
            return m.group(1) + wanted[name] + m.group(4)

        new = BLOCK.sub(replace, text)
        if write and new != text:
            path.write_text(new, encoding="utf-8")
    problems += [f"no file holds the generated passage '{name}'" for name in wanted if name not in seen]
    words = sum(reading.words_per_part(ROOT).values())
    if words > COURSE["load"]["max_required_words"]:
        problems.append(f"the required reading is {words:,} words, more than course.json's load.max_required_words "
                        f"({COURSE['load']['max_required_words']:,}): mark more of it optional (scripts/lib/reading.json)")
    template = answers.template(ROOT / "HANDOUT.md")
    if (ROOT / "answers.md").read_text(encoding="utf-8") != template:
        problems.append("answers.md is not the template of HANDOUT.md's questions")
        if write:
            (ROOT / "answers.md").write_text(template, encoding="utf-8")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="numbers.py", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 when a passage differs from the repository")
    mode.add_argument("--write", action="store_true", help="rewrite the passages and answers.md")
    args = parser.parse_args(argv)
    problems = run(write=args.write)
    # The reading and hours tables sit in sections whose words they count: rewrite until the counts
    # include the tables themselves.
    for _ in range(5):
        if not args.write or not run(write=True):
            break
    for problem in problems:
        print(f"numbers.py: {problem}" + (" (rewritten)" if args.write else ""))
    if args.check:
        print(f"numbers.py: {'FAIL' if problems else 'PASS'}: {len(problems)} passage(s) differ")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
