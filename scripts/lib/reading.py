#!/usr/bin/env python3
"""The course's required reading, counted in words per part.

`scripts/lib/reading.json` says, for each part of the course (setup, step 1, ... the GPU part), which
sections of which Markdown files a student must read. Everything else is optional reading: step 7's
GUIDE.md and APPENDIX.md whole, and the sections of the required files that carry the note
"*Optional reading: ...*" under their heading. No question of HANDOUT.md needs optional reading.

reading.json maps a part's name to a list of entries {"path": FILE, "sections": [...]} with an
optional "except": [...]. FILE is relative to the repository (or starter kit). A section is named by
its heading's text, without the #'s; it runs from its heading to the next heading of the same or a
higher level. "*" is the whole file. A heading text that occurs more than once in a file is named
with its parent heading: "The backward pass > Commands" (or grandparent too: "A > B > C"). "except" lists sections inside the entry's
sections that the entry leaves out (an optional section, or one that another part reads). Two parts
that claim the same line are an error, so the total counts every word once.

What a word is, once for all: a whitespace-separated token that contains at least one letter or
digit, in prose, headings, lists, tables and inline code. Punctuation alone (a table's `|`, `---`,
a list's `-`) is not a word; a link counts by its visible text and its target adds nothing, as it is
part of the same token. HTML comments and images (`![...](...)`) are not counted: a reader does not
read them as text. Fenced code blocks (``` or ~~~, commands and printed output alike) are counted
apart, as their non-blank lines. A solution region of a Markdown file
(`<!-- BEGIN SOLUTION ... -->`) counts as the one line a standard or full starter kit puts in its
place (scripts/lib/kit.py), so the counts are the same in this repository and in those kits (a
guided kit shows step 6's diffs instead of that line: there step 6 counts a few words fewer and some
lines of code more).

Usage: python3 scripts/lib/reading.py [--root DIR] [--markdown] [--check]
  (no option)  a table of words and code lines per part, and the total
  --markdown   the table of HANDOUT.md's "Getting started" (what to read, words per part)
  --check      also fail (exit 1) when a section that is not required has no optional-reading note,
               or a required one has it
A file, a heading or an "except" that does not exist is an error that names it (exit 1).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kit  # noqa: E402  (the region parser, for the starter kit's view of Markdown)

READING_JSON = "scripts/lib/reading.json"
KIT_VIEW_LEVEL = "standard"  # the kit whose Markdown the counts describe (standard and full read the same)
OPTIONAL_NOTE = "*Optional reading"
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
WORD = re.compile(r"[A-Za-z0-9]")
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")


class ReadingError(Exception):
    """A file, heading or entry of reading.json that does not exist or does not fit."""


@dataclass
class Heading:
    line: int  # 0-based index in the file's lines
    level: int
    text: str
    end: int = 0  # the section's end: the next heading of the same or a higher level, or the file's end
    parent: "Heading | None" = None


@dataclass
class Doc:
    path: str
    lines: list[str]
    in_fence: list[bool]  # a line inside a fenced block (the fence lines themselves count as inside)
    headings: list[Heading]


def load_doc(root: Path, rel: str) -> Doc:
    file = root / rel
    if not file.is_file():
        raise ReadingError(f"{rel}: no such file under {root}")
    text = file.read_text(encoding="utf-8")
    lines = [line.rstrip("\n") for line in kit.project(kit.parse(text, rel), KIT_VIEW_LEVEL)]
    in_fence, headings, stack = [], [], []
    fence = None
    for number, line in enumerate(lines):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            in_fence.append(True)
            continue
        if fence is not None:
            in_fence.append(True)
            if line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
                fence = None
            continue
        in_fence.append(False)
        match = HEADING.match(line)
        if match:
            heading = Heading(number, len(match.group(1)), match.group(2))
            while stack and stack[-1].level >= heading.level:
                stack.pop().end = number
            heading.parent = stack[-1] if stack else None
            stack.append(heading)
            headings.append(heading)
    for heading in stack:
        heading.end = len(lines)
    return Doc(rel, lines, in_fence, headings)


def find_section(doc: Doc, name: str) -> range:
    """The lines of the section named `name` ("*", "Heading" or "Parent > Heading")."""
    if name == "*":
        return range(0, len(doc.lines))
    path = [part.strip() for part in name.split(" > ")]
    found = []
    for heading in doc.headings:
        if heading.text != path[-1]:
            continue
        parent, fits = heading.parent, True
        for name_of_parent in reversed(path[:-1]):  # "A > B > C": C's parent is B, B's parent is A
            if parent is None or parent.text != name_of_parent:
                fits = False
                break
            parent = parent.parent
        if fits:
            found.append(heading)
    if not found:
        raise ReadingError(f"{doc.path}: no heading '{name}'")
    if len(found) > 1:
        where = ", ".join(str(h.line + 1) for h in found)
        raise ReadingError(f"{doc.path}: the heading '{name}' occurs {len(found)} times (lines {where}); "
                           f"name it with its parent, as 'Parent > {path[-1]}'")
    return range(found[0].line, found[0].end)


def entry_lines(doc: Doc, entry: dict, part: str) -> set[int]:
    sections = entry.get("sections")
    if not isinstance(sections, list) or not sections:
        raise ReadingError(f"{READING_JSON}: part '{part}', {doc.path}: 'sections' must be a non-empty list")
    lines: set[int] = set()
    for name in sections:
        lines.update(find_section(doc, name))
    for name in entry.get("except", []):
        left_out = set(find_section(doc, name))
        if not left_out <= lines:
            raise ReadingError(f"{READING_JSON}: part '{part}', {doc.path}: except '{name}' is not inside "
                               f"the entry's sections")
        lines -= left_out
    return lines


def count(doc: Doc, lines: set[int]) -> tuple[int, int]:
    """(words, code lines) of the given lines of a document, by the module's definition."""
    words = code = 0
    in_comment = False
    for number in sorted(lines):
        line = doc.lines[number]
        if doc.in_fence[number]:
            if line.strip() and not FENCE.match(line):
                code += 1
            continue
        visible = []
        rest = line
        while rest:  # drop HTML comments, which may span lines
            if in_comment:
                end = rest.find("-->")
                if end < 0:
                    rest = ""
                else:
                    rest, in_comment = rest[end + 3:], False
            else:
                start = rest.find("<!--")
                if start < 0:
                    visible.append(rest)
                    rest = ""
                else:
                    visible.append(rest[:start])
                    rest, in_comment = rest[start + 4:], True
        text = IMAGE.sub(" ", " ".join(visible))
        words += sum(1 for token in text.split() if WORD.search(token))
    return words, code


def load_plan(root: Path) -> dict:
    file = root / READING_JSON
    if not file.is_file():
        raise ReadingError(f"{READING_JSON}: no such file under {root}")
    try:
        plan = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ReadingError(f"{READING_JSON}: not valid JSON: {error}") from None
    if not isinstance(plan, dict) or not all(isinstance(v, list) for v in plan.values()):
        raise ReadingError(f"{READING_JSON}: must map each part's name to a list of entries")
    return plan


def required_lines(root: Path) -> tuple[dict[str, dict[str, set[int]]], dict[str, Doc]]:
    """Per part, per file, the required lines; and the parsed files. Raises ReadingError."""
    plan = load_plan(root)
    docs: dict[str, Doc] = {}
    per_part: dict[str, dict[str, set[int]]] = {}
    owner: dict[tuple[str, int], str] = {}
    for part, entries in plan.items():
        per_part[part] = {}
        for entry in entries:
            rel = entry.get("path") if isinstance(entry, dict) else None
            if not isinstance(rel, str):
                raise ReadingError(f"{READING_JSON}: part '{part}': every entry needs a 'path'")
            doc = docs.get(rel) or docs.setdefault(rel, load_doc(root, rel))
            lines = entry_lines(doc, entry, part)
            for number in lines:
                other = owner.setdefault((rel, number), part)
                if other != part:
                    raise ReadingError(f"{READING_JSON}: {rel}:{number + 1} is required by two parts, "
                                       f"'{other}' and '{part}'")
            per_part[part].setdefault(rel, set()).update(lines)
    return per_part, docs


def words_per_part(root: Path) -> dict[str, int]:
    """Words of required reading per part, in reading.json's order (raises ReadingError)."""
    per_part, docs = required_lines(Path(root))
    return {part: sum(count(docs[rel], lines)[0] for rel, lines in files.items())
            for part, files in per_part.items()}


def code_lines_per_part(root: Path) -> dict[str, int]:
    """Lines of fenced code in the required reading per part."""
    per_part, docs = required_lines(Path(root))
    return {part: sum(count(docs[rel], lines)[1] for rel, lines in files.items())
            for part, files in per_part.items()}


def mark_problems(root: Path) -> list[str]:
    """Sections whose optional-reading note disagrees with reading.json, in the files it names."""
    per_part, docs = required_lines(Path(root))
    required: dict[str, set[int]] = {}
    for files in per_part.values():
        for rel, lines in files.items():
            required.setdefault(rel, set()).update(lines)
    problems = []
    for rel, doc in docs.items():
        for heading in doc.headings:
            section = set(range(heading.line, heading.end))
            marked = next((line.strip() for line in doc.lines[heading.line + 1:heading.end] if line.strip()),
                          "").startswith(OPTIONAL_NOTE)
            parent_optional = heading.parent is not None and not (
                set(range(heading.parent.line, heading.parent.end)) & required[rel])
            if section & required[rel]:
                if marked:
                    problems.append(f"{rel}:{heading.line + 1}: '{heading.text}' is required reading but is "
                                    f"marked optional")
            elif not marked and not parent_optional:
                problems.append(f"{rel}:{heading.line + 1}: '{heading.text}' is not required reading: put "
                                f"'{OPTIONAL_NOTE}: ...*' under its heading, or require it in {READING_JSON}")
    return problems


def describe(part: str, plan: dict) -> str:
    """What a part reads besides HANDOUT.md, in a few words, for HANDOUT.md's table: the files, the
    sections when not the whole file, and the sections left to other parts."""
    out = []
    for entry in plan[part]:
        rel = entry["path"]
        if rel == "HANDOUT.md":
            continue
        elsewhere = {name for other, entries in plan.items() if other != part
                     for e in entries if e["path"] == rel for name in e["sections"]}
        sections = [name.split(" > ")[-1] for name in entry["sections"] if name != "*"]
        text = ", ".join([f"`{rel}`"] + [f'"{name}"' for name in sections])
        left = [name.split(" > ")[-1] for name in entry.get("except", []) if name in elsewhere]
        if left:
            text += " but " + " and ".join(f'"{name}"' for name in left)
        out.append(text)
    return "; ".join(out) or "nothing more"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="reading.py", description="Words of required reading per part of the course (scripts/lib/reading.json).",
        epilog="A word: a whitespace-separated token with a letter or a digit, outside fenced code blocks, HTML "
               "comments and images; fenced code is counted in lines. The module's docstring says it in full.")
    parser.add_argument("--root", type=Path, default=HERE.parent.parent,
                        help="the repository or starter kit (default: the one holding this script)")
    parser.add_argument("--markdown", action="store_true", help="print HANDOUT.md's table of what to read")
    parser.add_argument("--check", action="store_true",
                        help="fail when an optional-reading note disagrees with reading.json")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        words = words_per_part(root)
        code = code_lines_per_part(root)
        problems = mark_problems(root)
        plan = load_plan(root)
    except (ReadingError, kit.KitError) as error:
        print(f"reading.py: {error}", file=sys.stderr)
        return 1
    if args.markdown:
        print("| part | required reading besides the handout's own section (optional sections excepted) | words |")
        print("|---|---|---|")
        for part in plan:
            print(f"| {part} | {describe(part, plan)} | {words[part]:,} |")
        print(f"| **total** | | **{sum(words.values()):,}** |")
    else:
        width = max(len(part) for part in words)
        print(f"{'part':<{width}}  {'words':>7}  {'code lines':>10}")
        for part in words:
            print(f"{part:<{width}}  {words[part]:>7,}  {code[part]:>10,}")
        print(f"{'total':<{width}}  {sum(words.values()):>7,}  {sum(code.values()):>10,}")
    for problem in problems:
        print(f"{'error' if args.check else 'note'}: {problem}", file=sys.stderr)
    return 1 if args.check and problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
