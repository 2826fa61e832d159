#!/usr/bin/env python3
"""Unit tests of scripts/lib/kit.py on small made-up files: nested regions at three levels, the
kit's text at each level, the exact round trip, a kit edited outside its regions, the grader's
fill of one step's regions, a submission's round trip, and the leak check (a comment, a README and
a CSV holding solution code are all caught; the kit's own context and the library's idioms are
not). Run by ctest (label starter_kit):  python3 scripts/tests/test_kit.py"""
from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import kit  # noqa: E402

SOURCE = """#include "common/todo.hpp"
int twice(int x) {
  // BEGIN SOLUTION step01 standard: the whole function uses(x)
  const int y = x;
  // BEGIN SOLUTION step01: double it uses(y)
  return y + y;
  // END SOLUTION step01
  // END SOLUTION step01 standard
}
int keep(int x) {
  // BEGIN SOLUTION step02 full: return x uses(x)
  return x;
  // END SOLUTION step02 full
}
"""

ANSWER = ("const double weight_of_row = std::exp(score_of_row - running_max_of_row) * value_of_row_for_each_key;\n"
          "total_of_row += weight_of_row;\n")


class Regions(unittest.TestCase):
    def test_levels_blank_the_outermost_applied_region(self):
        nodes = kit.parse(SOURCE, "x.cpp")
        guided = "".join(kit.project(nodes, "guided"))
        self.assertIn('fa2::todo("TODO(step01): double it", y);', guided)
        self.assertIn("const int y = x;", guided)
        self.assertNotIn("standard", guided)  # the deeper levels' markers are dropped
        self.assertIn("return x;", guided)
        standard = "".join(kit.project(nodes, "standard"))
        self.assertIn('fa2::todo("TODO(step01): the whole function", x);', standard)
        self.assertNotIn("const int y", standard)
        self.assertNotIn("double it", standard)
        self.assertIn("return x;", standard)
        full = "".join(kit.project(nodes, "full"))
        self.assertNotIn("return x;", full)

    def test_round_trip_is_exact_at_every_level(self):
        nodes = kit.parse(SOURCE, "x.cpp")
        for level in kit.LEVELS:
            projected = kit.project(nodes, level)
            self.assertEqual("".join(kit.merge(nodes, projected, level, "x.cpp", bodies="repo")), SOURCE)

    def test_a_kit_edited_outside_its_regions_is_refused_with_the_line(self):
        nodes = kit.parse(SOURCE, "x.cpp")
        projected = kit.project(nodes, "guided")
        projected[1] = "int twice(long x) {\n"
        with self.assertRaisesRegex(kit.KitError, r"x\.cpp:2: the kit reads 'int twice\(long x\) \{'"):
            kit.merge(nodes, projected, "guided", "x.cpp", bodies="repo")

    def test_malformed_markers_are_named(self):
        with self.assertRaisesRegex(kit.KitError, "without an END"):
            kit.parse("// BEGIN SOLUTION step01: a\nx\n", "y.cpp")
        with self.assertRaisesRegex(kit.KitError, "y.cpp:3: .* closes the region opened at line 1"):
            kit.parse("// BEGIN SOLUTION step01 standard: a\nx\n// END SOLUTION step01\n", "y.cpp")
        with self.assertRaisesRegex(kit.KitError, "malformed marker"):
            kit.parse("  // BEGIN SOLUTION stepX: a\n", "y.cpp")

    def test_fill_takes_the_student_bodies_of_one_step_only(self):
        nodes = kit.parse(SOURCE, "x.cpp")
        bodies = [("// BEGIN SOLUTION step01 standard: the whole function uses(x)", ["  return 3 * x;\n"]),
                  ("// BEGIN SOLUTION step02 full: return x uses(x)", ["  return -x;\n"])]
        lines, warnings = kit.fill(nodes, "full", bodies, steps={"step01"})
        text = "".join(lines)
        self.assertIn("return 3 * x;", text)
        self.assertIn("  return x;\n", text)  # step02 keeps the solution
        self.assertNotIn("return -x;", text)
        self.assertEqual(len(warnings), 1)  # the step02 body was not taken
        lines, warnings = kit.fill(nodes, "standard", [], steps={"step01"})
        self.assertIn("TODO(step01): the whole function", "".join(lines))
        self.assertIn("no body submitted", warnings[0])


class KitOnDisk(unittest.TestCase):
    def make_repo(self, root: Path, extra: dict[str, str]) -> None:
        files = {
            "common/todo.hpp": "// todo\n",
            "common/library.hpp": "// load(prog, ptr, tile, boundary_check<0, 1>, Padding::zero);\n",
            "step05/kernel.cpp": ('#include "common/todo.hpp"\nvoid f() {\n'
                                  "  // BEGIN SOLUTION step05: the weighted row\n" + ANSWER +
                                  "  // END SOLUTION step05\n"
                                  "  load(prog, ptr, tile, boundary_check<0, 1>, Padding::zero);\n}\n"),
            "README.md": "# a repository\n",
            **extra,
        }
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)

    def leaks_with(self, extra: dict[str, str]) -> list[kit.Leak]:
        with tempfile.TemporaryDirectory() as tmp:
            root, out = Path(tmp) / "repo", Path(tmp) / "kit"
            self.make_repo(root, extra)
            kit.generate(root, out, "guided", quiet=True)
            return kit.find_leaks(root, out, "guided")

    def test_a_clean_kit_has_no_leak(self):
        self.assertEqual(self.leaks_with({}), [])

    def test_code_in_a_comment_a_readme_or_a_csv_is_a_leak(self):
        spaced = "\n".join("//   " + line.replace(" ", "  ") + "   // a trailing comment" for line in ANSWER.splitlines())
        for rel, text in {"step07/other.cpp": spaced + "\n", "step07/README.md": "```\n" + ANSWER + "```\n",
                          "step07/results.csv": 'key,text\n1,"' + ANSWER.replace("\n", " ") + '"\n',
                          "step07/strings.cpp": 'const char* s = "' + ANSWER.replace("\n", " ") + '";\n'}.items():
            with self.subTest(rel=rel):
                leaks = self.leaks_with({rel: text})
                self.assertTrue(leaks, f"no leak found in {rel}")
                self.assertEqual(leaks[0].file, rel)
                self.assertEqual(leaks[0].region_file, "step05/kernel.cpp")

    def test_library_idioms_are_not_leaks(self):
        self.assertEqual(self.leaks_with({"step07/x.cpp": "load(prog, ptr, tile, boundary_check<0, 1>, Padding::zero);\n"}),
                         [])

    def test_a_submission_round_trip(self):
        with tempfile.TemporaryDirectory() as tmp:
            root, out = Path(tmp) / "repo", Path(tmp) / "kit"
            self.make_repo(root, {})
            kit.generate(root, out, "guided", quiet=True)
            (out / "answers.md").write_text("1. because\n")
            archive = Path(tmp) / "s.tar.gz"
            manifest = kit.make_submission(out, archive, None, None, code_only=False)
            self.assertEqual(manifest["level"], "guided")
            self.assertEqual(manifest["regions_still_todo"], 1)
            got_manifest, regions, files = kit.read_submission(archive)
            self.assertEqual(got_manifest["regions"], 1)
            self.assertIn("TODO(step05)", regions["step05/kernel.cpp"][0]["body"])
            self.assertEqual(files["answers.md"], b"1. because\n")
            (Path(tmp) / "other.tar.gz").write_text("not an archive")
            with self.assertRaisesRegex(kit.KitError, "not a submission archive"):
                kit.make_submission(out, Path(tmp) / "other.tar.gz", None, None, code_only=True)

    def test_a_link_to_a_file_the_kit_leaves_out_is_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            root, out = Path(tmp) / "repo", Path(tmp) / "kit"
            self.make_repo(root, {"scripts/lib/instructor_only.txt": "SECRET.md\n", "SECRET.md": "# answers\n",
                                  "step05/README.md": ("See [the kernel](kernel.cpp), [the top](../README.md#a), "
                                                       "[the web](https://example.org) and [the key](../SECRET.md).\n"
                                                       "```\n[in a code block](../SECRET.md)\n```\n")})
            kit.generate(root, out, "guided", quiet=True)
            self.assertFalse((out / "SECRET.md").exists())
            self.assertEqual(kit.broken_links(out), ["step05/README.md:1: ../SECRET.md"])
            (out / "SECRET.md").write_text("# now here\n")
            self.assertEqual(kit.broken_links(out), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
