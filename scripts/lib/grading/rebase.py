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


def _hunks(a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
    """The changes that turn token list a into b: (i1, i2, j1, j2), a[i1:i2] -> b[j1:j2]."""
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in
            difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if tag != "equal"]


def _overlap(x: tuple[int, int], y: tuple[int, int]) -> bool:
    """Whether two changes of the same token list touch the same tokens (an insertion overlaps a
    change around its point, and another insertion at its point)."""
    (a1, a2), (b1, b2) = x, y
    if a1 == a2 and b1 == b2:
        return a1 == b1
    if a1 == a2:
        return b1 < a1 < b2
    if b1 == b2:
        return a1 < b1 < a2
    return a1 < b2 and b1 < a2


def rebase(mine: str, theirs: str, base: str) -> str:
    """`base` with the edit that turns `mine` into `theirs` (see the module's docstring): a
    three-way merge of token lists. A change of theirs that touches no token where mine differs from
    base is applied to base; where mine differs from base and theirs kept mine, base's text is
    taken (the reference, not the student's own step 5); where both touch the same tokens, theirs is
    taken. Solution markers are dropped from the result (and from `base` before anything else)."""
    if TODO_CALL in theirs:
        return without_markers(theirs)
    base, theirs = without_markers(base), without_markers(theirs)
    m_tok, t_tok, b_tok = code_tokens(mine), code_tokens(theirs), code_tokens(base)
    m_txt, t_txt, b_txt = [t.text for t in m_tok], [t.text for t in t_tok], [t.text for t in b_tok]
    edits = _hunks(m_txt, t_txt)   # the student's edit
    carried = _hunks(m_txt, b_txt)  # where their own step 5 differs from the reference
    # Group the changes of both lists that overlap, transitively, into conflicts.
    changes = sorted([(i1, i2, "theirs", (j1, j2)) for i1, i2, j1, j2 in edits] +
                     [(i1, i2, "base", (k1, k2)) for i1, i2, k1, k2 in carried])
    groups: list[list[tuple]] = []
    for change in changes:
        if groups and any(_overlap((c[0], c[1]), (change[0], change[1])) for c in groups[-1]):
            groups[-1].append(change)
        else:
            groups.append([change])
    # Each piece of the result: (source tokens, first, end) in order along mine.
    pieces: list[tuple[list[Token], str, int, int]] = []
    to_theirs = {i: j for block in difflib.SequenceMatcher(None, m_txt, t_txt, autojunk=False).get_matching_blocks()
                 for i, j in zip(range(block.a, block.a + block.size), range(block.b, block.b + block.size))}
    to_base = {i: k for block in difflib.SequenceMatcher(None, m_txt, b_txt, autojunk=False).get_matching_blocks()
               for i, k in zip(range(block.a, block.a + block.size), range(block.b, block.b + block.size))}

    def theirs_range(i1: int, i2: int) -> tuple[int, int]:
        """The tokens of theirs between the images of mine's tokens i1 - 1 and i2 (both unchanged)."""
        left = max((to_theirs[i] for i in range(i1 - 1, -1, -1) if i in to_theirs), default=-1)
        right = min((to_theirs[i] for i in range(i2, len(m_txt)) if i in to_theirs), default=len(t_txt))
        return left + 1, right

    def base_range(i1: int, i2: int) -> tuple[int, int]:
        left = max((to_base[i] for i in range(i1 - 1, -1, -1) if i in to_base), default=-1)
        right = min((to_base[i] for i in range(i2, len(m_txt)) if i in to_base), default=len(b_txt))
        return left + 1, right

    position = 0  # in mine
    for group in groups:
        g1, g2 = min(c[0] for c in group), max(c[1] for c in group)
        # Tokens before the group, unchanged in all three: the reference's text.
        if position < g1:
            k1, k2 = to_base[position], to_base[g1 - 1] + 1
            pieces.append((b_tok, base, k1, k2))
        sources = {c[2] for c in group}
        if sources == {"base"}:
            pieces.append((b_tok, base, *base_range(g1, g2)))
        else:  # the student's edit, alone or where it meets their own step 5's differences
            pieces.append((t_tok, theirs, *theirs_range(g1, g2)))
        position = g2
    if position < len(m_txt):
        pieces.append((b_tok, base, to_base[position], to_base[len(m_txt) - 1] + 1))
    if not m_txt:
        return theirs
    out: list[str] = []
    for n, (tokens, text, first, end) in enumerate(pieces):
        if first >= end:
            continue
        gap_start = tokens[first - 1].end if first > 0 else 0
        # The whitespace and comments before the piece in its own text (the file's start for the first).
        out.append(text[gap_start if out else 0:tokens[first].start])
        out.append(text[tokens[first].start:tokens[end - 1].end])
    last_tokens, last_text, _, last_end = next(((tk, tx, f, e) for tk, tx, f, e in reversed(pieces) if f < e),
                                               (b_tok, base, 0, 0))
    out.append(last_text[last_tokens[last_end - 1].end:] if last_end else "")
    return "".join(out)


def edit_lines(mine: str, theirs: str, limit: int = 24) -> list[str]:
    """The student's edit as lines of their own code ('-' from mine, '+' from theirs), for the
    report: it shows nothing of the reference."""
    a = [line.rstrip() for line in without_markers(mine).splitlines() if line.strip()]
    b = [line.rstrip() for line in without_markers(theirs).splitlines() if line.strip()]
    lines = [line for line in difflib.unified_diff(a, b, lineterm="", n=0)
             if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    return lines[:limit] + ([f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else [])
