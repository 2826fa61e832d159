#!/usr/bin/env python3
"""Solution regions and starter kits: generation at three depths, the round trip, the leak check.

A solution region is the code between two marker lines:

    // BEGIN SOLUTION step05 standard: <what to implement> uses(<names>)
    ...
    // END SOLUTION step05 standard

The level word says from which depth of starter kit on the region is the student's: none means
`guided` (every kit), `standard` (standard and full kits), `full` (full kits only). Regions nest:
a standard region may enclose guided ones, and a blanked region swallows everything inside it.
In a kit of level L, each outermost region whose level is at most L keeps its two marker lines
and its body becomes one `fa2::todo("TODO(stepNN): <what to implement>", <names>);` call; the
markers of regions of deeper levels are dropped and their bodies kept. Markdown files may hold
regions too, as HTML comments (`<!-- BEGIN SOLUTION step06 standard: what it shows -->`): in a kit
their text is replaced by one line saying that the passage is left out.

Used by the scripts next to it (make_starter_kit.sh, restore_solutions.sh, make_submission.sh,
grade.sh, test_starter_kit.sh); run `python3 scripts/lib/kit.py --help` for the commands.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

LEVELS = ("guided", "standard", "full")
CODE_SUFFIXES = (".hpp", ".cpp", ".cuh", ".cu", ".h")
MARKDOWN_SUFFIXES = (".md",)
MARKER_FILE = ".starter-kit"
# The file whose regions step06's twins and step07's ladder copy at build time
# (cmake/Fa2SolutionRegions.cmake): a region elsewhere with one of its BEGIN lines is filled by
# the build, not written by the student.
FILL_SOURCE = "step05_fa2_kernel/flash_fwd_kernel.hpp"
# Paths an instructor keeps: never copied into a kit (shell-style patterns, one per line).
INSTRUCTOR_ONLY = "scripts/lib/instructor_only.txt"
# The library a kit hands out whole, whose idioms are not answers (the leak check).
LIBRARY_DIRS = ("common/", "step03_tile_pointer/")
LEAK_RUN = int(os.environ.get("FA2_LEAK_RUN", "12"))  # tokens in a row that give an answer away

_LEVEL = r"(?: (?P<level>guided|standard|full))?"
CODE_BEGIN = re.compile(r"^(?P<indent>[ \t]*)// BEGIN SOLUTION (?P<step>step\d\d)" + _LEVEL + r"(?P<rest>:.*)?\s*$")
CODE_END = re.compile(r"^[ \t]*// END SOLUTION (?P<step>step\d\d)" + _LEVEL + r"\s*$")
MD_BEGIN = re.compile(r"^(?P<indent>)<!-- BEGIN SOLUTION (?P<step>step\d\d)" + _LEVEL + r"(?P<rest>:.*?)? -->\s*$")
MD_END = re.compile(r"^<!-- END SOLUTION (?P<step>step\d\d)" + _LEVEL + r" -->\s*$")


class KitError(Exception):
    """A malformed region, a kit that does not match its repository, a refused path."""


# ---- regions ------------------------------------------------------------------------------


@dataclass
class Region:
    begin: str  # the BEGIN line, as written (with its newline)
    end: str = ""  # the END line
    step: str = ""
    level: str = "guided"
    hint: str = ""
    uses: str = ""  # "a, b" from uses(a, b), or ""
    indent: str = ""
    markdown: bool = False
    line: int = 0  # 1-based line of BEGIN in its file
    children: list = field(default_factory=list)  # str lines and nested Regions

    @property
    def key(self) -> str:
        return self.begin.strip()

    def body_lines(self) -> list[str]:
        """The body as written, nested markers included."""
        out: list[str] = []
        for child in self.children:
            if isinstance(child, Region):
                out.append(child.begin)
                out.extend(child.body_lines())
                out.append(child.end)
            else:
                out.append(child)
        return out

    def applies(self, level: str) -> bool:
        return LEVELS.index(self.level) <= LEVELS.index(level)

    def todo_lines(self) -> list[str]:
        if self.markdown:
            what = f": {self.hint}" if self.hint else ""
            return [f"*Left out of your starter kit, because it shows code that you write{what}.*\n"]
        hint = (self.hint or "implement this part").replace('"', "'")
        uses = f", {self.uses}" if self.uses else ""
        return [f'{self.indent}fa2::todo("TODO({self.step}): {hint}"{uses});\n']


def is_code(path: str) -> bool:
    return path.endswith(CODE_SUFFIXES)


def is_markdown(path: str) -> bool:
    return path.endswith(MARKDOWN_SUFFIXES)


def may_hold_regions(path: str) -> bool:
    return is_code(path) or is_markdown(path)


def parse(text: str, path: str) -> list:
    """The file as a list of lines (str) and Regions, nested as written."""
    markdown = is_markdown(path)
    begin_re, end_re = (MD_BEGIN, MD_END) if markdown else (CODE_BEGIN, CODE_END)
    root: list = []
    stack: list[Region] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        begin, end = begin_re.match(line), end_re.match(line)
        if begin:
            rest = (begin.group("rest") or "")[1:].strip()
            uses = ""
            found = re.search(r"\s*\buses\(([^)]*)\)$", rest)
            if found and not markdown:
                uses, rest = found.group(1).strip(), rest[: found.start()].strip()
            region = Region(begin=line, step=begin.group("step"), level=begin.group("level") or "guided",
                            hint=rest, uses=uses, indent=begin.group("indent"), markdown=markdown, line=number)
            (stack[-1].children if stack else root).append(region)
            stack.append(region)
        elif end:
            if not stack:
                raise KitError(f"{path}:{number}: END SOLUTION without a BEGIN")
            region = stack.pop()
            level = end.group("level") or "guided"
            if end.group("step") != region.step or level != region.level:
                raise KitError(f"{path}:{number}: '{line.strip()}' closes the region opened at line {region.line} "
                               f"('{region.key}'); write END SOLUTION {region.step}"
                               f"{'' if region.level == 'guided' else ' ' + region.level}")
            region.end = line
        elif line.lstrip().startswith(("<!-- BEGIN SOLUTION", "<!-- END SOLUTION") if markdown else
                                      ("// BEGIN SOLUTION", "// END SOLUTION")):
            raise KitError(f"{path}:{number}: a malformed marker line: {line.strip()}")
        else:
            (stack[-1].children if stack else root).append(line)
    if stack:
        raise KitError(f"{path}:{stack[-1].line}: BEGIN SOLUTION without an END SOLUTION")
    return root


def regions_of(nodes: list):
    """Every region, outer ones first."""
    for node in nodes:
        if isinstance(node, Region):
            yield node
            yield from regions_of(node.children)


def applied_regions(nodes: list, level: str):
    """The outermost regions a kit of this level blanks, in file order."""
    for node in nodes:
        if isinstance(node, Region):
            if node.applies(level):
                yield node
            else:
                yield from applied_regions(node.children, level)


def project(nodes: list, level: str) -> list[str]:
    """The kit's lines: applied regions blanked, the markers of deeper levels dropped."""
    out: list[str] = []
    for node in nodes:
        if not isinstance(node, Region):
            out.append(node)
        elif node.applies(level):
            out += [node.begin, *node.todo_lines(), node.end]
        else:
            out += project(node.children, level)
    return out


def merge(nodes: list, kit_lines: list[str], level: str, path: str, bodies: str) -> list[str]:
    """The repository's file with the kit's region bodies (bodies="kit") or its own (bodies="repo").

    Walks the repository's regions and the kit's lines together: outside the applied regions the
    kit must read exactly as the repository projected to `level`, or this raises KitError naming
    the first line that differs. The markers of deeper levels come back from the repository."""
    out: list[str] = []
    position = 0

    def expect(line: str, what: str) -> None:
        nonlocal position
        if position >= len(kit_lines):
            raise KitError(f"{path}: the kit's file ends where the repository has {what}: {line.strip()!r}")
        if kit_lines[position].rstrip("\r\n") != line.rstrip("\r\n"):
            raise KitError(f"{path}:{position + 1}: the kit reads {kit_lines[position].strip()!r} where the "
                           f"repository has {what} {line.strip()!r}")
        position += 1

    def walk(items: list) -> None:
        nonlocal position
        for node in items:
            if not isinstance(node, Region):
                expect(node, "the line")
                out.append(node)
            elif node.applies(level):
                expect(node.begin, "the marker")
                end = position
                end_re = MD_END if node.markdown else CODE_END
                while end < len(kit_lines) and not end_re.match(kit_lines[end]):
                    end += 1
                if end == len(kit_lines):
                    raise KitError(f"{path}: the region '{node.key}' has no END line in the kit")
                body = kit_lines[position:end]
                position = end
                expect(node.end, "the marker")
                out.extend([node.begin, *(body if bodies == "kit" else node.body_lines()), node.end])
            else:
                out.append(node.begin)
                walk(node.children)
                out.append(node.end)

    walk(nodes)
    if position != len(kit_lines):
        raise KitError(f"{path}:{position + 1}: the kit has lines after the repository's end: "
                       f"{kit_lines[position].strip()!r}")
    return out


def fill(nodes: list, level: str, bodies: list[tuple[str, list[str]]],
         steps: set[str] | None = None) -> tuple[list[str], list[str]]:
    """The repository's file with each applied region's body taken from `bodies`, a list of
    (BEGIN line, body lines) matched in order by BEGIN line. A region that `bodies` lacks gets
    its TODO. With `steps`, only regions of those steps are taken; the others keep the
    repository's body. Returns the lines and a list of warnings (regions missing or unknown)."""
    out: list[str] = []
    warnings: list[str] = []
    pending = list(bodies)

    def take(region: Region) -> list[str] | None:
        for i, (key, body) in enumerate(pending):
            if key.strip() == region.key:
                del pending[i]
                return body
        return None

    def walk(items: list) -> None:
        for node in items:
            if not isinstance(node, Region):
                out.append(node)
            elif node.applies(level) and steps is not None and node.step not in steps:
                out.extend([node.begin, *node.body_lines(), node.end])
            elif node.applies(level):
                body = take(node)
                if body is None:
                    warnings.append(f"line {node.line}: no body submitted for '{node.key}': graded as its TODO")
                    body = node.todo_lines()
                out.extend([node.begin, *body, node.end])
            else:
                out.append(node.begin)
                walk(node.children)
                out.append(node.end)

    walk(nodes)
    warnings += [f"a submitted region that the repository does not have at this level: '{key.strip()}'"
                 for key, _ in pending]
    return out, warnings


def region_kind(begin: str) -> tuple[str, str]:
    """(step, level) of a BEGIN line."""
    found = CODE_BEGIN.match(begin.strip())
    return (found.group("step"), found.group("level") or "guided") if found else ("", "")


def align_bodies(nodes: list, level: str, submitted: list[dict], steps: set[str]) -> tuple[list[tuple[str, list[str]]], str]:
    """The submission's regions of `steps` as fill() takes them, (BEGIN line, body lines), and a note.
    When their BEGIN lines differ from the repository's (a kit made before a marker's wording
    changed) but they are the same steps and levels in the same order, they are matched by
    position, and the note says so; otherwise by BEGIN line, as fill() does."""
    wanted = [r for r in applied_regions(nodes, level) if r.step in steps]
    mine = [r for r in submitted if region_kind(r["begin"])[0] in steps]
    keys = {r.key for r in wanted}
    note = ""
    if (any(r["begin"].strip() not in keys for r in mine) and len(mine) == len(wanted)
            and [region_kind(r["begin"]) for r in mine] == [(r.step, r.level) for r in wanted]):
        mine = [{"begin": w.key, "body": r["body"]} for r, w in zip(mine, wanted)]
        note = (f"the submission's BEGIN lines differ from this repository's; its {len(mine)} region(s) were "
                "matched by position (same steps and levels, same order)")
    return [(r["begin"], r["body"].splitlines(keepends=True)) for r in mine], note


# ---- the repository's files ---------------------------------------------------------------


def repository_files(root: Path) -> list[str]:
    """git's view when root is the top of its own work tree, else every file outside build/ and .git/."""
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        top = ""
    if top and Path(top).resolve() == root.resolve():
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
                                capture_output=True, check=True).stdout.decode()
        files = [f for f in listed.split("\0") if f and (root / f).is_file()]
    else:
        files = [str(p.relative_to(root)) for p in root.rglob("*")
                 if p.is_file() and not str(p.relative_to(root)).startswith(("build/", ".git/"))]
    return sorted(files)


def instructor_only_patterns(root: Path, level: str = "guided") -> list[str]:
    """The patterns of INSTRUCTOR_ONLY that apply to a kit of this level ("standard: <pattern>"
    applies from standard on)."""
    listing = root / INSTRUCTOR_ONLY
    if not listing.is_file():
        return []
    patterns = []
    for line in listing.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        found = re.match(r"^(guided|standard|full):\s*(.+)$", line)
        if found:
            if LEVELS.index(found.group(1)) <= LEVELS.index(level):
                patterns.append(found.group(2))
        else:
            patterns.append(line)
    return patterns


def is_instructor_only(rel: str, patterns: list[str]) -> bool:
    from fnmatch import fnmatch
    return any(fnmatch(rel, p) or rel.startswith(p.rstrip("*").rstrip("/") + "/") and p.endswith("/**")
               for p in patterns)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def kit_level(kit: Path) -> str:
    marker = kit / MARKER_FILE
    if not marker.is_file():
        raise KitError(f"{kit} is not a starter kit (no {MARKER_FILE})")
    for line in marker.read_text().splitlines():
        found = re.match(r"^# level: (\w+)$", line)
        if found and found.group(1) in LEVELS:
            return found.group(1)
    return "guided"  # kits written before levels existed


def kit_files(kit: Path) -> list[str]:
    return [line for line in (kit / MARKER_FILE).read_text().splitlines() if line and not line.startswith("#")]


# ---- generating a kit ---------------------------------------------------------------------


def check_output_dir(root: Path, out: Path) -> None:
    """Refuses / and any folder that contains the repository; a non-empty folder must be a kit."""
    if out == Path("/"):
        raise KitError("refusing to write a starter kit over /")
    if root == out or out in root.parents:
        raise KitError(f"refusing to write into {out}: it contains this repository ({root})")
    if out.exists() and not out.is_dir():
        raise KitError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER_FILE).is_file():
        raise KitError(f"{out} is not empty and is not a starter kit made by this script (no {MARKER_FILE}): "
                       "choose a new or empty directory")


def remove_previous_kit(out: Path) -> int:
    """Removes the files a previous kit listed (and only those), after checking every path."""
    listed = kit_files(out)
    for rel in listed:
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise KitError(f"{out / MARKER_FILE} lists an unsafe path, {rel}: nothing was removed")
    removed = 0
    for rel in listed:
        target = out / rel
        if target.is_file() and not target.is_symlink():
            target.unlink()
            removed += 1
            parent = target.parent
            while parent != out:
                try:
                    parent.rmdir()
                except OSError:
                    break
                parent = parent.parent
    (out / MARKER_FILE).unlink()
    return removed


def generate(root: Path, out: Path, level: str, quiet: bool = False) -> dict:
    root, out = root.resolve(), Path(os.path.realpath(out))
    if (root / MARKER_FILE).exists():
        raise KitError(f"{root} is itself a starter kit: generate kits from the solution repository")
    check_output_dir(root, out)
    if out.is_dir() and (out / MARKER_FILE).is_file():
        removed = remove_previous_kit(out)
        if not quiet:
            print(f"removed the {removed} file(s) of the previous kit in {out}")
    out.mkdir(parents=True, exist_ok=True)
    inside = str(out.relative_to(root)) + "/" if root in out.parents else None
    patterns = instructor_only_patterns(root, level)
    written: list[str] = []
    counts: dict[str, int] = {}
    for rel in repository_files(root):
        if rel == MARKER_FILE or (inside and rel.startswith(inside)) or is_instructor_only(rel, patterns):
            continue
        source, target = root / rel, out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        written.append(rel)
        text = read_text(source) if may_hold_regions(rel) else None
        if text is None or "BEGIN SOLUTION step" not in text:
            shutil.copy2(source, target)
            continue
        nodes = parse(text, rel)
        applied = list(applied_regions(nodes, level))
        if applied and is_code(rel) and '#include "common/todo.hpp"' not in text:
            raise KitError(f'{rel} has solution regions but does not include "common/todo.hpp", which declares fa2::todo')
        target.write_text("".join(project(nodes, level)), encoding="utf-8")
        shutil.copystat(source, target)
        if applied:
            counts[rel] = len(applied)
    commit = ""
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    with open(out / MARKER_FILE, "w", encoding="utf-8") as marker:
        marker.write("# A starter kit generated by scripts/make_starter_kit.sh.\n")
        marker.write(f"# level: {level}\n")
        if commit:
            marker.write(f"# from commit: {commit}\n")
        marker.write("# Regenerating it removes the files listed below, and nothing else.\n")
        marker.writelines(rel + "\n" for rel in written)
    if not quiet:
        for rel, n in counts.items():
            print(f"  {rel}: {n} region(s)")
        print(f"starter kit ({level}) written to {out}: {sum(counts.values())} solution region(s) replaced")
    return counts


def restore(root: Path, kit: Path) -> int:
    """Puts the repository's solutions back into a kit; the kit must match outside its regions."""
    level = kit_level(kit)
    restored = 0
    for rel in kit_files(kit):
        if not may_hold_regions(rel):
            continue
        text = read_text(root / rel)
        if text is None or "BEGIN SOLUTION step" not in text:
            continue
        kit_text = (kit / rel).read_text(encoding="utf-8")
        merged = merge(parse(text, rel), kit_text.splitlines(keepends=True), level, rel, bodies="repo")
        (kit / rel).write_text("".join(merged), encoding="utf-8")
        restored += 1
    return restored


# ---- what students write ------------------------------------------------------------------


def fill_keys(root: Path) -> set[str]:
    text = read_text(root / FILL_SOURCE)
    return {r.key for r in regions_of(parse(text, FILL_SOURCE))} if text else set()


def student_regions(root: Path, level: str) -> list[tuple[str, Region]]:
    """(file, region) for every region a student of this level writes (not those the build fills)."""
    filled = fill_keys(root)
    found = []
    for rel in repository_files(root):
        if not may_hold_regions(rel) or is_markdown(rel):
            continue
        text = read_text(root / rel)
        if text is None or "BEGIN SOLUTION step" not in text:
            continue
        for region in applied_regions(parse(text, rel), level):
            if rel != FILL_SOURCE and region.key in filled:
                continue
            found.append((rel, region))
    return found


def code_lines(lines: list[str]) -> int:
    """Lines that hold code: not blank, not only a comment, not a marker."""
    count = 0
    in_block = False
    for line in lines:
        s = line.strip()
        if in_block:
            if "*/" in s:
                in_block = False
            continue
        if not s or s.startswith("//"):
            continue
        if s.startswith("/*"):
            in_block = "*/" not in s
            continue
        count += 1
    return count


def stats(root: Path) -> dict:
    result = {}
    for level in LEVELS:
        regions = student_regions(root, level)
        by_step: dict[str, int] = {}
        for _, region in regions:
            by_step[region.step] = by_step.get(region.step, 0) + code_lines(region.body_lines())
        result[level] = {"regions": len(regions), "lines": sum(by_step.values()), "by_step": by_step}
    return result


# ---- the leak check -----------------------------------------------------------------------

# Identifiers, numbers, two- and three-character operators, and every other character alone.
# Quotes are tokens of their own, so that code inside a string literal, a CSV field or Markdown
# is read as code too.
TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|::|->|<<=|>>=|<=|>=|==|!=|&&|\|\||\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=|\S")
COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def code_tokens(text: str) -> list[str]:
    """The tokens of C++ code with its comments removed (string literals kept)."""
    return tokens(COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", text))


@dataclass
class Leak:
    file: str
    line: int
    region_file: str
    region_line: int
    region: str
    text: str

    def __str__(self) -> str:
        return (f"{self.file}:{self.line}: {self.text!r} is solution code of {self.region_file}:{self.region_line} "
                f"({self.region})")


def find_leaks(root: Path, kit: Path, level: str, run: int = LEAK_RUN, shortest: int = 8) -> list[Leak]:
    """Every place in the kit where `run` consecutive tokens of a solution region appear.

    A region's tokens are taken without comments or whitespace; a region shorter than `run` tokens
    must appear whole, and one shorter than `shortest` tokens is not evidence of anything
    (`prog.sync();`). Runs that the region's own file shows outside its regions are context the
    student sees anyway, not a leak. Every file of the kit is searched as text, comments and
    Markdown included."""
    regions = [(rel, region, code_tokens("".join(region.body_lines()))) for rel, region in student_regions(root, level)]
    regions = [(rel, region, body) for rel, region, body in regions if len(body) >= shortest]
    sizes_wanted = {min(run, len(body)) for _, _, body in regions}

    def windows_of(rels, code_only: bool = False) -> set:
        found: set = set()
        for rel in rels:
            text = read_text(kit / rel)
            if text is None:
                continue
            toks = code_tokens(text) if code_only else tokens(text)
            for k in sizes_wanted:
                found.update(tuple(toks[i:i + k]) for i in range(len(toks) - k + 1))
        return found

    # The library every kit hands out whole (common/ and step03's tile pointers, their code without
    # tests or demos): its
    # idioms, such as `boundary_check<0, 1>, Padding::zero)`, are the API, not an answer.
    library_files = [rel for rel in kit_files(kit) if is_code(rel) and rel.startswith(LIBRARY_DIRS) and
                     "/tests/" not in rel and "/compile_fail/" not in rel and not rel.endswith("demo.cpp")]
    # Its code, not its comments: a comment that names m_new does not make m_new the library's.
    library = windows_of(library_files, code_only=True)
    # Its names too: a run made only of them (two loads in a row, `boundary_check<0, 1>,
    # Padding::zero); load(prog`) names nothing that belongs to one answer.
    vocabulary = {t for rel in library_files for t in code_tokens(read_text(kit / rel) or "") if t[0].isalpha() or t[0] == "_"}
    own_file_context: dict[str, set] = {}
    windows: dict[tuple, tuple[str, Region]] = {}
    for rel, region, body in regions:
        n = min(run, len(body))
        if rel not in own_file_context:
            own_file_context[rel] = windows_of([rel])
        for i in range(len(body) - n + 1):
            window = tuple(body[i:i + n])
            specific = any((t[0].isalpha() or t[0] == "_") and t not in vocabulary for t in window)
            if specific and window not in own_file_context[rel] and window not in library:
                windows.setdefault(window, (rel, region))
    sizes = sorted({len(w) for w in windows})
    leaks: list[Leak] = []
    for rel in kit_files(kit):
        text = read_text(kit / rel)
        if text is None:
            continue
        found = tokens(text)
        # token index -> line number
        starts = [m.start() for m in TOKEN.finditer(text)]
        reported: set = set()
        for n in sizes:
            for i in range(len(found) - n + 1):
                window = tuple(found[i:i + n])
                hit = windows.get(window)
                if hit is None:
                    continue
                region_file, region = hit
                if (region_file, region.line) in reported:
                    continue
                reported.add((region_file, region.line))
                line = text.count("\n", 0, starts[i]) + 1
                leaks.append(Leak(rel, line, region_file, region.line, region.hint[:60], " ".join(window)))
    return leaks


# ---- the kit's links ----------------------------------------------------------------------

MD_LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
MD_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.S | re.M)


def broken_links(kit: Path, files: list[str] | None = None) -> list[str]:
    """"FILE:LINE: TARGET" for every relative link of the kit's Markdown (code blocks aside) whose
    file is not in the kit: a student would follow it to nothing (INSTRUCTOR.md, say). `files`:
    the tree's files when it is no kit (repository_files), else the kit's own list."""
    found = []
    for rel in kit_files(kit) if files is None else files:
        if not is_markdown(rel):
            continue
        text = read_text(kit / rel) or ""
        text = MD_FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for m in MD_LINK.finditer(text):
            target = m.group("target").split("#")[0]
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
                continue
            if not (kit / rel).parent.joinpath(target).exists():
                found.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {m.group('target')}")
    return found


# ---- a student's submission ---------------------------------------------------------------

SUBMISSION_LIMIT = 8 << 20  # bytes of answers and measurements together
MEASUREMENT_SUFFIXES = (".csv", ".svg", ".png", ".md", ".txt", ".json")


# Files of solution regions that moved since kits were handed out: {old path: new path}. A kit or a
# submission made before the move keeps the old path; its regions are read under the new one.
MOVED_REGION_FILES = {
    "step07_benchmark/kernels/ladder/ladder_kernel.hpp": "step07_benchmark/kernels/lab/ladder/ladder_kernel.hpp",
}


def current_paths(regions: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The regions {file: [...]} with every moved file under its current path."""
    return {MOVED_REGION_FILES.get(rel, rel): found for rel, found in regions.items()}


def kit_regions(kit: Path) -> dict[str, list[dict]]:
    """Every solution region of the kit's code at its level, as the student left it:
    {file: [{begin, body}]}. (A kit whose solutions were put back also holds the markers of the
    other levels; only the regions of its own level count.)"""
    level = kit_level(kit)
    found: dict[str, list[dict]] = {}
    for rel in kit_files(kit):
        if not is_code(rel) or not (kit / rel).is_file():
            continue
        text = read_text(kit / rel)
        if text is None or "BEGIN SOLUTION step" not in text:
            continue
        nodes = parse(text, rel)
        found[rel] = [{"begin": region.key, "body": "".join(region.body_lines())}
                      for region in applied_regions(nodes, level)]
    return current_paths(found)


def is_submission_archive(path: Path) -> bool:
    import tarfile
    try:
        with tarfile.open(path, "r:gz") as archive:
            return "submission/manifest.json" in archive.getnames()
    except (OSError, tarfile.TarError):
        return False


def make_submission(kit: Path, out: Path, answers: Path | None, measurements: Path | None, code_only: bool) -> dict:
    """Packs the kit's solution regions, the answers and the measurements into one .tar.gz."""
    import io
    import tarfile
    import time
    level = kit_level(kit)
    if out.exists() and not (out.is_file() and is_submission_archive(out)):
        raise KitError(f"{out} exists and is not a submission archive made by this script: choose another name")
    if not str(out).endswith((".tar.gz", ".tgz")):
        raise KitError(f"{out}: the archive's name must end in .tar.gz")
    regions = kit_regions(kit)
    todo = sum("fa2::todo(\"TODO(" in r["body"] for regs in regions.values() for r in regs)
    extra: list[tuple[str, Path]] = []
    if not code_only:
        answers = answers or kit / "answers.md"
        if not answers.is_file():
            raise KitError(f"no answers file at {answers}: write your answers there (HANDOUT.md, 'What to hand in'), "
                           "name another with --answers FILE, or pack the code alone with --code-only")
        extra.append(("answers.md", answers))
        measurements = measurements or kit / "measurements"
        if measurements.is_dir():
            for path in sorted(measurements.rglob("*")):
                if path.is_file() and path.suffix in MEASUREMENT_SUFFIXES:
                    extra.append((f"measurements/{path.relative_to(measurements)}", path))
        elif measurements.exists():
            raise KitError(f"{measurements} is not a directory")
        size = sum(path.stat().st_size for _, path in extra)
        if size > SUBMISSION_LIMIT:
            raise KitError(f"the answers and measurements weigh {size} bytes, more than {SUBMISSION_LIMIT}: "
                           "keep the tables and plots the handout asks for")
    manifest = {
        "format": 1,
        "level": level,
        "kit_commit": next((line.split(": ", 1)[1] for line in (kit / MARKER_FILE).read_text().splitlines()
                            if line.startswith("# from commit: ")), ""),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "regions": sum(len(r) for r in regions.values()),
        "regions_still_todo": todo,
        "files": [name for name, _ in extra],
    }
    tmp = out.with_name(out.name + ".partial")
    with tarfile.open(tmp, "w:gz") as archive:
        def add_bytes(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"submission/{name}")
            info.size = len(data)
            info.mtime = int(time.time())
            archive.addfile(info, io.BytesIO(data))
        add_bytes("manifest.json", json.dumps(manifest, indent=2).encode())
        add_bytes("regions.json", json.dumps(regions, indent=1).encode())
        for name, path in extra:
            add_bytes(name, path.read_bytes())
    tmp.replace(out)
    return manifest


def read_submission(path: Path) -> tuple[dict, dict, dict[str, bytes]]:
    """(manifest, regions, other files) of a submission archive or of its unpacked folder."""
    import tarfile
    files: dict[str, bytes] = {}
    if path.is_dir():
        base = path / "submission" if (path / "submission").is_dir() else path
        for item in base.rglob("*"):
            if item.is_file():
                files[str(item.relative_to(base))] = item.read_bytes()
    else:
        try:
            with tarfile.open(path, "r:gz") as archive:
                for member in archive.getmembers():
                    if not member.isfile() or not member.name.startswith("submission/"):
                        continue
                    name = member.name[len("submission/"):]
                    if name.startswith("/") or ".." in Path(name).parts:
                        raise KitError(f"{path}: the archive holds an unsafe path, {member.name}")
                    handle = archive.extractfile(member)
                    files[name] = handle.read() if handle else b""
        except (OSError, tarfile.TarError) as error:
            raise KitError(f"{path} is not a submission archive ({error})") from error
    if "manifest.json" not in files or "regions.json" not in files:
        raise KitError(f"{path} is not a submission: it has no manifest.json and regions.json "
                       "(make one with scripts/make_submission.sh)")
    manifest = json.loads(files.pop("manifest.json"))
    regions = current_paths(json.loads(files.pop("regions.json")))
    if manifest.get("level") not in LEVELS:
        raise KitError(f"{path}: the manifest names no level of kit (got {manifest.get('level')!r})")
    return manifest, regions, files


# ---- command line -------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kit.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--as", dest="name", help="the script name to print in messages")
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write a starter kit")
    g.add_argument("--level", choices=LEVELS, default="standard")
    g.add_argument("--no-leak-check", action="store_true", help="skip the leak check (tests of the generator)")
    g.add_argument("out")
    r = sub.add_parser("restore", help="put the solutions back into a kit")
    r.add_argument("kit")
    lk = sub.add_parser("leaks", help="search a kit for solution code")
    lk.add_argument("kit")
    s = sub.add_parser("stats", help="regions and lines of code students write, per level")
    s.add_argument("--json", action="store_true")
    m = sub.add_parser("submit", help="pack a kit's regions, answers and measurements into a .tar.gz")
    m.add_argument("--kit", default=".")
    m.add_argument("--answers")
    m.add_argument("--measurements")
    m.add_argument("--code-only", action="store_true")
    m.add_argument("out")
    c = sub.add_parser("check", help="parse every region of the repository (markers well formed and nested)")
    del c
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[2]
    try:
        if args.command == "generate":
            generate(root, Path(args.out), args.level)
            if not args.no_leak_check:
                leaks = find_leaks(root, Path(os.path.realpath(args.out)), args.level)
                if leaks:
                    print(f"{args.name or 'kit.py generate'}: {len(leaks)} leak(s): the kit shows solution code",
                          file=sys.stderr)
                    for leak in leaks:
                        print(f"  {leak}", file=sys.stderr)
                    return 1
                print(f"leak check: no run of {LEAK_RUN} solution tokens anywhere in the kit")
            broken = broken_links(Path(os.path.realpath(args.out)))
            if broken:
                print(f"{args.name or 'kit.py generate'}: {len(broken)} link(s) of the kit's Markdown lead to "
                      "files the kit does not hold:", file=sys.stderr)
                for link in broken:
                    print(f"  {link}", file=sys.stderr)
                return 1
            print("link check: every link of the kit's Markdown leads to a file of the kit")
        elif args.command == "restore":
            kit = Path(args.kit).resolve()
            if (root / MARKER_FILE).exists():
                raise KitError(f"{root} is a starter kit, not the solution")
            n = restore(root, kit)
            print(f"solutions restored in {n} file(s) of {kit}")
        elif args.command == "leaks":
            kit = Path(args.kit).resolve()
            leaks = find_leaks(root, kit, kit_level(kit))
            for leak in leaks:
                print(leak)
            print(f"{len(leaks)} leak(s) in {kit}")
            return 1 if leaks else 0
        elif args.command == "stats":
            result = stats(root)
            if args.json:
                print(json.dumps(result, indent=2))
            else:
                for level, s in result.items():
                    steps = ", ".join(f"{k} {v}" for k, v in sorted(s["by_step"].items()))
                    print(f"{level:9s} {s['regions']:3d} regions, {s['lines']:4d} lines ({steps})")
        elif args.command == "submit":
            kit = Path(args.kit).resolve()
            manifest = make_submission(kit, Path(args.out).resolve(), Path(args.answers) if args.answers else None,
                                       Path(args.measurements) if args.measurements else None, args.code_only)
            still = manifest["regions_still_todo"]
            print(f"wrote {args.out}: {manifest['regions']} solution region(s) of a {manifest['level']} kit"
                  f"{f', {still} of them still a TODO' if still else ''}; "
                  f"{', '.join(manifest['files']) or 'no answers or measurements (--code-only)'}")
        elif args.command == "check":
            n = 0
            for rel in repository_files(root):
                if may_hold_regions(rel):
                    text = read_text(root / rel)
                    if text and "BEGIN SOLUTION step" in text:
                        n += len(list(regions_of(parse(text, rel))))
            print(f"{n} solution regions, all well formed")
    except KitError as error:
        print(f"{args.name or 'kit.py ' + args.command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
