#!/usr/bin/env python3
"""The written answers: the questions HANDOUT.md asks, the answers.md template every kit holds, and
the check the grader makes of a student's answers.md.

A question is a bold label at the start of a list item in HANDOUT.md: `**Q13 (1.5 points).**`,
`**M2 (2.5 points).**`, `**G1 (5 points).**`, `**B4 (+2 points).**`. A label whose points say "bonus"
or "+" is a bonus question. answers.md holds one heading per question (`## Q13`), with a
placeholder line under it; a question counts as answered when its section holds at least
MIN_WORDS words other than the placeholder and HTML comments.

    python3 scripts/lib/answers.py template            prints the template for this HANDOUT.md
    python3 scripts/lib/answers.py check ANSWERS.md    says which questions it answers
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUESTION = re.compile(r"^\s*-\s+\*\*(?P<label>[A-Z][A-Z0-9]*) \((?P<points>[^)]*)\)\.\*\*", re.M)
HEADING = re.compile(r"^#{1,6}\s*\**\s*(?P<label>[A-Z][A-Z0-9]*)\b", re.M)
PLACEHOLDER = "_Your answer._"
COMMENT = re.compile(r"<!--.*?-->", re.S)
MIN_WORDS = 5


def questions(handout: Path) -> list[dict]:
    """[{label, points, bonus}] in the order HANDOUT.md asks them."""
    found = []
    for m in QUESTION.finditer(handout.read_text(encoding="utf-8")):
        points = m.group("points")
        found.append({"label": m.group("label"), "points": points,
                      "bonus": "bonus" in points or points.strip().startswith("+")})
    return found


def template(handout: Path) -> str:
    lines = ["# Answers", "",
             "<!-- One heading per question of HANDOUT.md. Write each answer under its heading, in place of the",
             "     placeholder line; keep the headings (the grader finds your answers by them). Bonus questions",
             "     are optional: leave their placeholder if you skip one. At the end, the hours each part took you. -->",
             ""]
    for q in questions(handout):
        lines += [f"## {q['label']}" + (" (bonus)" if q["bonus"] else ""), "", PLACEHOLDER, ""]
    lines += ["## Hours", "", PLACEHOLDER, ""]
    return "\n".join(lines)


def sections(text: str) -> dict[str, str]:
    """{label: text under its heading} of an answers file."""
    found: dict[str, str] = {}
    marks = list(HEADING.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[text.index("\n", m.start()) + 1 if "\n" in text[m.start():] else len(text):end]
        found.setdefault(m.group("label"), body)
    return found


def words(body: str) -> int:
    body = COMMENT.sub(" ", body).replace(PLACEHOLDER, " ")
    return len(re.findall(r"\S+", body))


def check(data: bytes | None, handout: Path) -> dict:
    """What the grader reports of a submission's answers.md."""
    asked = questions(handout)
    required = [q["label"] for q in asked if not q["bonus"]]
    if data is None:
        return {"present": False, "required": len(required), "answered": 0, "missing": required, "bonus": [],
                "words": 0, "per_question": {}}
    text = data.decode("utf-8", errors="replace")
    found = sections(text)
    per_question = {q["label"]: words(found.get(q["label"], "")) for q in asked}
    missing = [label for label in required if per_question[label] < MIN_WORDS]
    bonus = [q["label"] for q in asked if q["bonus"] and per_question[q["label"]] >= MIN_WORDS]
    return {"present": True, "required": len(required), "answered": len(required) - len(missing), "missing": missing,
            "bonus": bonus, "words": words(text), "per_question": per_question}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="answers.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--handout", default=str(ROOT / "HANDOUT.md"))
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("template", help="print the answers.md template for the handout")
    c = sub.add_parser("check", help="say which questions an answers file answers")
    c.add_argument("answers")
    args = parser.parse_args(argv)
    handout = Path(args.handout)
    if not handout.is_file():
        print(f"answers.py: --handout: {handout} is not a file", file=sys.stderr)
        return 2
    if args.command == "template":
        sys.stdout.write(template(handout))
        return 0
    path = Path(args.answers)
    if not path.is_file():
        print(f"answers.py: {path} is not a file", file=sys.stderr)
        return 2
    result = check(path.read_bytes(), handout)
    print(f"{result['answered']} of {result['required']} required questions answered ({result['words']} words)")
    for label, n in result["per_question"].items():
        print(f"  {label}: {n} words")
    if result["missing"]:
        print(f"no answer (fewer than {MIN_WORDS} words) for: {', '.join(result['missing'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
