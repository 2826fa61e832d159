"""A student's edit of their own code, applied to the reference: how the grader grades a region
that re-pastes another part's code (step 6's three copies of the step 5 kernel, step 7's ladder).

A student at the standard level writes step 6's region by pasting their own step 5 code and
planting one bug in it. If their step 5 had a bug of its own, the paste carries it, and step 6
would pay for step 5's mistake a second time. So the grader grades what the region adds:

    mine     the student's step 5 region (what they pasted)
    theirs   the student's step 6 region (the paste, with the bug planted)
    base     the reference step 5 region

    rebase(mine, theirs, base) = base, with the changes that turn mine into theirs

The three are compared as C++ tokens, so comments, blank lines, indentation and line breaks never
count as changes. A change whose surroundings read the same in mine and in base is applied there;
where the student's own step 5 differs from the reference around a change, the student's text of
that stretch is taken whole (their code, graded as written). A region still holding its TODO is
returned as it is, so an unsolved region stays unsolved.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

# Identifiers, numbers, two- and three-character operators, and every other character alone (the
# same split as kit.py's leak check).
TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.']*|::|->|<<=|>>=|<=|>=|==|!=|&&|\|\||\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=|\S")
# Comments and literals, found in one left-to-right pass so that "//" inside a string stays code.
COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
MARKER_LINE = re.compile(r"^[ \t]*// (BEGIN|END) SOLUTION step\d\d\b.*\n?", re.M)
TODO_CALL = "fa2::todo("


@dataclass
class Token:
    text: str
    start: int  # offsets into the source text
    end: int


def code_tokens(source: str) -> list[Token]:
    """The C++ tokens of `source` with their offsets; comments are skipped, string and character
    literals are one token each."""
    found: list[Token] = []
    position = 0
    for match in COMMENT_OR_LITERAL.finditer(source):
        found += [Token(m.group(0), position + m.start(), position + m.end())
                  for m in TOKEN.finditer(source[position:match.start()])]
        if not match.group(0).startswith("/"):  # a literal
            found.append(Token(match.group(0), match.start(), match.end()))
        position = match.end()
    found += [Token(m.group(0), position + m.start(), position + m.end()) for m in TOKEN.finditer(source[position:])]
    return found


def without_markers(source: str) -> str:
    """The text without its BEGIN/END SOLUTION lines (comments: the code is the same)."""
    return MARKER_LINE.sub("", source)


def same_code(a: str, b: str) -> bool:
    return [t.text for t in code_tokens(a)] == [t.text for t in code_tokens(b)]


def _equal_map(a: list[str], b: list[str]) -> dict[int, int]:
    """index in a -> index in b for the tokens that the longest matching blocks pair up."""
    mapping: dict[int, int] = {}
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            mapping[block.a + k] = block.b + k
    return mapping


def rebase(mine: str, theirs: str, base: str) -> str:
    """`base` with the edit that turns `mine` into `theirs` (see the module's docstring).
    Solution markers are dropped from the result (and from `base` before anything else)."""
    if TODO_CALL in theirs:
        return without_markers(theirs)
    base = without_markers(base)
    theirs_clean = without_markers(theirs)
    m_tok, t_tok, b_tok = code_tokens(mine), code_tokens(theirs_clean), code_tokens(base)
    m_txt, t_txt, b_txt = [t.text for t in m_tok], [t.text for t in t_tok], [t.text for t in b_tok]
    to_theirs, to_base = _equal_map(m_txt, t_txt), _equal_map(m_txt, b_txt)
    # Anchors: tokens of mine that the student kept and that the reference has too.
    anchors = [i for i in range(len(m_txt)) if i in to_theirs and i in to_base]
    changed = [i for i in range(len(m_txt)) if i not in to_theirs]
    # Insertions in theirs: tokens of theirs that no token of mine maps to, located by the token of
    # mine they follow.
    mapped_theirs = set(to_theirs.values())
    inserted_after: set[int] = set()
    previous = -1
    mine_of = {j: i for i, j in to_theirs.items()}
    for j in range(len(t_txt)):
        if j in mapped_theirs:
            previous = mine_of[j]
        else:
            inserted_after.add(previous)
    # Each change becomes a stretch of mine between two anchors: (left anchor, right anchor), with
    # -1 and len(mine) for the two ends.
    def around(i_left: int, i_right: int) -> tuple[int, int]:
        left = max((a for a in anchors if a <= i_left), default=-1)
        right = min((a for a in anchors if a >= i_right), default=len(m_txt))
        return left, right

    stretches = [around(i - 1, i + 1) for i in changed]
    stretches += [around(i, i + 1) for i in inserted_after]
    if not stretches:
        return base
    stretches.sort()
    merged: list[list[int]] = []
    for left, right in stretches:
        if merged and left < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], right)
        else:
            merged.append([left, right])

    def cut(tokens: list[Token], text: str, left: int | None, right: int | None) -> tuple[int, int]:
        """The offsets between token `left` (its end) and token `right` (its start)."""
        start = tokens[left].end if left is not None else 0
        end = tokens[right].start if right is not None else len(text)
        return start, end

    out: list[str] = []
    position = 0
    for left, right in merged:
        b_left = to_base[left] if left >= 0 else None
        b_right = to_base[right] if right < len(m_txt) else None
        t_left = to_theirs[left] if left >= 0 else None
        t_right = to_theirs[right] if right < len(m_txt) else None
        b_start, b_end = cut(b_tok, base, b_left, b_right)
        t_start, t_end = cut(t_tok, theirs_clean, t_left, t_right)
        out.append(base[position:b_start])
        out.append(theirs_clean[t_start:t_end])
        position = b_end
    out.append(base[position:])
    return "".join(out)


def edit_lines(mine: str, theirs: str, limit: int = 24) -> list[str]:
    """The student's edit as lines of their own code ('-' from mine, '+' from theirs), for the
    report: it shows nothing of the reference."""
    a = [line.rstrip() for line in without_markers(mine).splitlines() if line.strip()]
    b = [line.rstrip() for line in without_markers(theirs).splitlines() if line.strip()]
    lines = [line for line in difflib.unified_diff(a, b, lineterm="", n=0)
             if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    return lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else [])
