#!/usr/bin/env python3
"""The submissions scripts/tests/test_grading.sh grades (the instructor's, not in a kit): bugs
planted in a solved starter kit the way students make them, and correct submissions reformatted
the way students write.

    grading_cases.py plant KIT BUG...        plants each bug in the kit's files, in step 5 and, for the
                                             step 5 bugs, in every region that re-pastes step 5
    grading_cases.py reformat IN OUT STYLE   writes submission OUT: IN's regions reformatted

Bugs: rescale (step 1: l is not rescaled), barrier (step 4's plain kernel without its first
__syncthreads), causal (step 5: key k visible from query q only when k < q), padded (step 5:
every key of a tile kept, padded keys included), compile (step 2's backward does not compile).
Styles: bare (every comment removed, indentation in tabs, every call with more than one argument
split over lines at its commas), chatty (a comment after every statement, a blank line and a
comment line after every third one, the barrier written `prog.sync();  // ...`), mixed (the two in
turns, region by region: step 5's forward chatty, so its barrier carries a comment, and the
regions that re-paste it bare).
"""
from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tarfile
import time
from pathlib import Path

STEP5_COPIES = ["step05_fa2_kernel/flash_fwd_kernel.hpp", "step06_tests_bugs/kernels/flash_fwd_kernel_original.hpp",
                "step06_tests_bugs/kernels/flash_fwd_kernel_bug1.hpp",
                "step06_tests_bugs/kernels/flash_fwd_kernel_bug2.hpp",
                "step07_benchmark/kernels/lab/ladder/ladder_kernel.hpp"]
BUGS = {  # name: (files, text, replacement, how many times at least)
    "rescale": (["step01_online_softmax/online_softmax.hpp"], "l = alpha * l + std::exp(x - m_new);",
                "l = l + std::exp(x - m_new);", 1),
    "barrier": (["step04_weighted_sum/weighted_sum_plain.cuh"],
                "    __syncthreads();  // the tiles are complete: every thread may read what the others wrote\n", "", 1),
    "causal": (STEP5_COPIES, "keep = keep & (k_pos <= q_pos);", "keep = keep & (k_pos < q_pos);", 5),
    "padded": (STEP5_COPIES, "auto keep = broadcast<Scores>(k_pos < p.N_KEYS);",
               "auto keep = Frag<bool, Scores>::filled(true);", 3),
}
COMPILE_ERROR = "    const auto oops = a_name_nobody_declared;  // planted: this region does not compile\n"
MARKER = re.compile(r"^\s*// (BEGIN|END) SOLUTION step\d\d\b")
COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def plant(kit: Path, bugs: list[str]) -> None:
    for bug in bugs:
        if bug == "compile":  # a line that cannot compile, first in step 2's backward region (standard)
            path = kit / "step02_tiled_cpu/tiled_backward.cpp"
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            at = next(i for i, line in enumerate(lines) if "// BEGIN SOLUTION step02 standard" in line)
            path.write_text("".join(lines[:at + 1] + [COMPILE_ERROR] + lines[at + 1:]), encoding="utf-8")
            continue
        files, old, new, at_least = BUGS[bug]
        found = 0
        for rel in files:
            path = kit / rel
            text = path.read_text(encoding="utf-8")
            found += text.count(old)
            path.write_text(text.replace(old, new), encoding="utf-8")
        if found < at_least:
            sys.exit(f"grading_cases.py: bug {bug}: found '{old.strip()}' {found} time(s), expected {at_least} or more")


def strip_comments(line: str) -> str:
    return COMMENT_OR_LITERAL.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else "", line).rstrip()


def split_at_commas(line: str, indent: str) -> str:
    """The line with a line break after every comma outside literals and angle brackets' lists."""
    out, quote, depth_angle = [], "", 0
    for i, c in enumerate(line):
        out.append(c)
        if quote:
            if c == quote and line[i - 1] != "\\":
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "<" and i > 0 and (line[i - 1].isalnum() or line[i - 1] == "_"):
            depth_angle += 1
        elif c == ">" and depth_angle:
            depth_angle -= 1
        elif c == "," and depth_angle == 0 and i + 1 < len(line) and line[i + 1] == " ":
            out.append("\n" + indent + "\t\t")
    return "".join(out).replace(",\n" + indent + "\t\t ", ",\n" + indent + "\t\t")


def bare(body: str) -> str:
    lines = []
    for line in body.splitlines():
        if MARKER.match(line):
            lines.append(line)
            continue
        if line.lstrip().startswith("#"):
            lines.append(line)
            continue
        code = strip_comments(line)
        if not code.strip():
            continue
        stripped = code.lstrip(" ")
        indent = "\t" * ((len(code) - len(stripped)) // 2)
        lines.append(split_at_commas(indent + stripped, indent))
    return "\n".join(lines) + "\n"


def chatty(body: str) -> str:
    lines, statements = [], 0
    for line in body.splitlines():
        if MARKER.match(line) or line.lstrip().startswith("#") or not line.strip():
            lines.append(line)
            continue
        code = line.rstrip()
        if code.endswith((";", "{", "}")) and "//" not in code:
            lines.append(code + "  // a comment of mine on this line")
        else:
            lines.append(code)
        if code.endswith(";"):
            statements += 1
            if statements % 3 == 0:
                indent = code[:len(code) - len(code.lstrip())]
                lines += ["", indent + "// a note of mine between two statements"]
    return "\n".join(lines) + "\n"


def reformat(src: Path, dst: Path, style: str) -> None:
    with tarfile.open(src, "r:gz") as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}
    regions = json.loads(members["submission/regions.json"])
    n = 0
    for rel, file_regions in sorted(regions.items()):
        for region in file_regions:
            if "fa2::todo(" in region["body"]:
                continue
            if style == "mixed":
                pick = chatty if rel.startswith("step05_fa2_kernel/flash_fwd") else bare if (
                    rel.startswith(("step06_", "step07_"))) else (chatty if n % 2 else bare)
                n += 1
            else:
                pick = {"bare": bare, "chatty": chatty}[style]
            region["body"] = pick(region["body"])
    members["submission/regions.json"] = json.dumps(regions, indent=1).encode()
    with tarfile.open(dst, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = int(time.time())
            archive.addfile(info, io.BytesIO(data))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grading_cases.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plant", help="plant bugs in a solved kit")
    p.add_argument("kit")
    p.add_argument("bugs", nargs="+", choices=sorted([*BUGS, "compile"]))
    r = sub.add_parser("reformat", help="write a submission with its regions reformatted")
    r.add_argument("src")
    r.add_argument("dst")
    r.add_argument("style", choices=["bare", "chatty", "mixed"])
    args = parser.parse_args(argv)
    if args.command == "plant":
        plant(Path(args.kit), args.bugs)
    else:
        reformat(Path(args.src), Path(args.dst), args.style)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
