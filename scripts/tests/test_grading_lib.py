#!/usr/bin/env python3
"""Unit tests of the grader's pieces on made-up input (the instructor's, not in a kit): the rebase
of a re-pasted region (scripts/lib/grading/rebase.py), the scores by idea of grade.py (a bug
charged once, a TODO always charged), the checks of course.json, and the written answers
(scripts/lib/answers.py). Run by ctest (label starter_kit):  python3 scripts/tests/test_grading_lib.py"""
from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"
sys.path.insert(0, str(LIB))
sys.path.insert(0, str(LIB / "grading"))
import answers  # noqa: E402
import grade  # noqa: E402
import kit  # noqa: E402
import rebase  # noqa: E402

BASE = """    load(Q);  // the reference
    for (int j = 0; j < n; ++j) {
      keep = k_pos <= q_pos;
      P = exp(S - m);
      O = dot(P.to<T>(), V);
    }
    store(O.to<T>());
"""


class Rebase(unittest.TestCase):
    def test_the_students_edit_lands_on_the_reference(self):
        # The student's step 5 has a mask bug (<); their paste keeps it and drops the cast of P.
        mine = BASE.replace("k_pos <= q_pos", "k_pos < q_pos").replace("// the reference", "// mine")
        theirs = mine.replace("dot(P.to<T>(), V)", "dot(P, V)")
        out = rebase.rebase(mine, theirs, BASE)
        self.assertTrue(rebase.same_code(out, BASE.replace("dot(P.to<T>(), V)", "dot(P, V)")))
        self.assertIn("k_pos <= q_pos", out)  # the reference's mask, not the student's bug

    def test_layout_and_comments_are_not_edits(self):
        mine = BASE
        theirs = "\n".join("\t" + line.strip() + "  // why" for line in BASE.replace("(S - m)", "(\n  S - m)")
                           .splitlines()) + "\n"
        self.assertTrue(rebase.same_code(rebase.rebase(mine, theirs, BASE), BASE))

    def test_a_paste_without_change_gives_the_reference(self):
        mine = BASE.replace("exp(S - m)", "exp(S - m_i)")
        self.assertEqual(rebase.rebase(mine, mine, BASE), BASE)

    def test_where_the_students_code_differs_at_their_change_their_text_is_taken(self):
        mine = BASE.replace("exp(S - m)", "exp(S - m_i)")  # their own name...
        theirs = mine.replace("exp(S - m_i)", "exp(S - m_i2)")  # ... which their edit changes again
        out = rebase.rebase(mine, theirs, BASE)
        self.assertIn("exp(S - m_i2)", out)
        self.assertIn("k_pos <= q_pos", out)
        # A change next to their own name, not on it, goes onto the reference's text; an edit away
        # from it leaves the reference's text there.
        self.assertIn("exp(S - m * 2)", rebase.rebase(mine, mine.replace("m_i)", "m_i * 2)"), BASE))
        self.assertIn("exp(S - m)", rebase.rebase(mine, mine.replace("store(O.to<T>())", "store(O)"), BASE))

    def test_their_own_code_inside_a_block_they_restructured_goes_back_to_the_reference(self):
        # Their step 5 keeps every key; their paste wraps the mask in a condition: the condition
        # stays, the mask is the reference's.
        mine = BASE.replace("keep = k_pos <= q_pos;", "keep = true;")
        theirs = mine.replace("      keep = true;\n", "      if (needs_mask) {\n        keep = true;\n      }\n")
        out = rebase.rebase(mine, theirs, BASE)
        self.assertTrue(rebase.same_code(out, BASE.replace("      keep = k_pos <= q_pos;\n",
                                                           "      if (needs_mask) { keep = k_pos <= q_pos; }\n")), out)

    def test_a_todo_stays_a_todo_and_markers_are_dropped(self):
        todo = '      fa2::todo("TODO(step06): plant bug 1", prog);\n'
        self.assertEqual(rebase.rebase(BASE, todo, BASE), todo)
        marked = "    // BEGIN SOLUTION step05: the mask\n" + BASE + "    // END SOLUTION step05\n"
        out = rebase.rebase(marked, marked.replace("<= q_pos", "< q_pos"), marked)
        self.assertNotIn("SOLUTION", out)
        self.assertIn("k_pos < q_pos", out)

    def test_tokens_skip_comments_but_keep_literals(self):
        texts = [t.text for t in rebase.code_tokens('f("a // b", \'/\'); // gone\n/* gone */ g();')]
        self.assertEqual(texts, ["f", "(", '"a // b"', ",", "'/'", ")", ";", "g", "(", ")", ";"])


def at_every_level(points: float) -> dict[str, float]:
    return {"guided": points, "standard": points, "full": points}


PART = {"key": "p", "title": "Part", "ideas": [
    {"key": "base", "title": "base", "points": at_every_level(2), "tests": ["^base: "], "needs": []},
    {"key": "mask", "title": "mask", "points": at_every_level(2), "tests": ["^mask: "], "needs": ["base"]},
    {"key": "cast", "title": "cast", "points": at_every_level(2), "tests": ["^cast: "], "needs": ["base"]},
    {"key": "all", "title": "all", "points": at_every_level(1), "tests": [".*"], "needs": ["base", "mask", "cast"]}]}
COURSE = {"code_points": 7, "parts": [PART]}
NAMES = ["base: a", "mask: a", "mask: b", "cast: a", "mixed"]


def scores(failing: dict[str, str]) -> dict[str, float]:
    results = {n: {"passed": n not in failing, "output": failing.get(n, "")} for n in NAMES}
    summary = grade.score(COURSE, "standard", results, {n: [] for n in NAMES}, {"standard": {"p": NAMES}})
    return {i["key"]: i["score"] for i in summary[0]["ideas"]}


class Scores(unittest.TestCase):
    def test_all_pass_is_full_marks(self):
        self.assertEqual(scores({}), {"base": 2, "mask": 2, "cast": 2, "all": 1})

    def test_a_bug_costs_its_idea_once(self):
        # A mask bug fails its own tests and the mixed one: only the mask pays.
        self.assertEqual(scores({"mask: a": "O differs", "mask: b": "O differs", "mixed": "O differs"}),
                         {"base": 2, "mask": 0, "cast": 2, "all": 1})
        # Half of an idea's tests failing costs half its points.
        self.assertEqual(scores({"mask: b": "O differs"})["mask"], 1)

    def test_an_idea_is_not_charged_when_what_it_builds_on_failed(self):
        failing = {n: "O differs" for n in NAMES}
        self.assertEqual(scores(failing), {"base": 0, "mask": 2, "cast": 2, "all": 1})

    def test_a_todo_or_a_test_that_did_not_run_is_always_charged(self):
        failing = {n: "TODO(step05): the kernel" for n in NAMES}
        self.assertEqual(scores(failing), {"base": 0, "mask": 0, "cast": 0, "all": 0})
        results = {n: {"passed": n == "base: a", "output": "did not build", "not_run": n != "base: a"} for n in NAMES}
        summary = grade.score(COURSE, "standard", results, {n: [] for n in NAMES}, {"standard": {"p": NAMES}})
        self.assertEqual(summary[0]["score"], 2)

    def test_a_failure_no_idea_explains_costs_all_together(self):
        self.assertEqual(scores({"mixed": "O differs"}), {"base": 2, "mask": 2, "cast": 2, "all": 0})

    def test_the_course_file_is_checked(self):
        grade.check_course(COURSE)
        bad = {"code_points": 7, "parts": [dict(PART, ideas=PART["ideas"][:1] + [
            dict(PART["ideas"][1], needs=["cast"])] + PART["ideas"][2:])]}  # cast comes after mask
        with self.assertRaisesRegex(grade.GradeError, "needs 'cast'"):
            grade.check_course(bad)
        with self.assertRaisesRegex(grade.GradeError, "add up to 7, not code_points .6."):
            grade.check_course({"code_points": 6, "parts": [PART]})
        with self.assertRaisesRegex(grade.GradeError, "no idea takes"):
            grade.check_manifest_ideas({"code_points": 7, "parts": [dict(PART, ideas=PART["ideas"][:3])]},
                                       {"guided": {"p": NAMES}, "standard": {"p": NAMES}, "full": {"p": NAMES}})

    def test_the_seed_depends_on_the_code_only(self):
        a = grade.derive_seed({"f": [{"begin": "b", "body": "x"}]}, "salt")
        self.assertEqual(a, grade.derive_seed({"f": [{"begin": "b", "body": "x"}]}, "salt"))
        self.assertNotEqual(a, grade.derive_seed({"f": [{"begin": "b", "body": "y"}]}, "salt"))


HANDOUT = """# H

- **Q1 (1 point).** Why?
- **M1 (1 point; 2 without the GPU part).** Measure.
- **B2 (+2 points).** Bonus.
"""


class Answers(unittest.TestCase):
    def test_template_and_check(self):
        with tempfile.TemporaryDirectory() as tmp:
            handout = Path(tmp) / "HANDOUT.md"
            handout.write_text(HANDOUT)
            template = answers.template(handout)
            for label in ("## Q1", "## M1", "## B2 (bonus)", "## Hours"):
                self.assertIn(label, template)
            empty = answers.check(template.encode(), handout)
            self.assertEqual((empty["answered"], empty["required"], empty["missing"]), (0, 2, ["Q1", "M1"]))
            filled = template.replace("## Q1\n\n_Your answer._", "## Q1\n\nBecause the maximum moves by two units.")
            got = answers.check(filled.encode(), handout)
            self.assertEqual((got["answered"], got["missing"], got["bonus"]), (1, ["M1"], []))
            self.assertFalse(answers.check(None, handout)["present"])



class MovedFiles(unittest.TestCase):
    def test_a_submission_made_before_a_file_moved_is_read_under_its_new_path(self):
        old, new = next(iter(kit.MOVED_REGION_FILES.items()))
        body = [{"begin": "// BEGIN SOLUTION step07", "body": "x\n"}]
        self.assertEqual(kit.current_paths({old: body, "other.hpp": []}), {new: body, "other.hpp": []})
        self.assertTrue((LIB.parents[1] / new).is_file(), new)
        self.assertFalse((LIB.parents[1] / old).exists(), old)


if __name__ == "__main__":
    unittest.main(verbosity=2)
