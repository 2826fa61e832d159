#!/usr/bin/env bash
# The autograder (INSTRUCTOR.md, "Grading"): grades a submission made by make_submission.sh.
#   scripts/grade.sh [--preset cpu-only|default] [--jobs N] [--seed S] SUBMISSION OUT
# SUBMISSION is the student's .tar.gz (or its unpacked folder); OUT a new or empty folder (or one
# grade.sh wrote before). Only the student's solution regions are used. Each part is graded on its
# own, in one copy of this repository where every other part's regions hold the solution, with the
# tests the kits do not ship; within a part, by idea (scripts/lib/grading/course.json). Every test
# uses one seed, derived from the submission's code unless --seed gives it.
# Writes OUT/results.json (Gradescope's format), OUT/report.md (the student's), OUT/report_instructor.md
# (the same with the hidden tests named) and OUT/summary.json; the logs go to OUT/logs/. The host
# path (preset cpu-only, the default) needs no GPU; with --preset default on a machine with a GPU the
# GPU tests run too (reported, not scored).
#   scripts/grade.sh --update-manifest SCRATCH     (maintainers: after adding or renaming tests)
set -euo pipefail
case "${1:-}" in
  -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
[ ! -f "$root/.starter-kit" ] ||
  { echo "grade.sh: $root is a starter kit; grade from the instructor's repository" >&2; exit 1; }
command -v python3 > /dev/null 2>&1 || { echo "grade.sh: python3 is needed" >&2; exit 1; }
exec python3 "$root/scripts/lib/grading/grade.py" "$@"
