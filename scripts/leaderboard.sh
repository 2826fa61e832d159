#!/usr/bin/env bash
# The leaderboard (INSTRUCTOR.md, "The leaderboard"): builds one student's kernel and appends one row to a CSV.
#   scripts/leaderboard.sh [options] SUBMISSION          check and time one entry, append its row
#   scripts/leaderboard.sh [options] --solution          the same for this repository's kernel
#   scripts/leaderboard.sh --rank CSV [CSV...]           print the ranking of one or more CSVs
#   scripts/leaderboard.sh --merge OUT.csv CSV [CSV...]  append their rows to OUT.csv
# SUBMISSION is a student's archive from make_submission.sh (or its unpacked folder). The entry is
# their step 5 forward kernel (--kernel step5) or, from a full kit, a rung of the ladder (--kernel
# v2|v3|v4), built in a copy of this repository where only those regions are the student's. It is
# checked and timed by step07_leaderboard: fresh random inputs for every call, NaN-poisoned outputs,
# every call checked against float64; on a GPU each call after an L2 flush, with PyTorch SDPA timed
# beside it when the build has Torch. --host runs the host path (no GPU). Defaults: the key
# "leaderboard" of scripts/lib/grading/course.json. Main options: --student ID, --csv FILE
# (default leaderboard.csv), --host, --preset, --work DIR (default build/leaderboard), --batch,
# --heads, --n, --d, --causal, --dtype, --calls, --warmup-calls, --sample-rows, --atol, --rtol, --seed,
# --sdpa, --timeout, --self-test replay|unwritten (a test of the checker: the row must be rejected).
# The CSV is appended to, never truncated. Exit 0 when a row says ranked or rejected, 1 on an error.
set -euo pipefail
case "${1:-}" in
  -h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
[ ! -f "$root/.starter-kit" ] ||
  { echo "leaderboard.sh: $root is a starter kit; run the leaderboard from the instructor's repository" >&2; exit 1; }
command -v python3 > /dev/null 2>&1 || { echo "leaderboard.sh: python3 is needed" >&2; exit 1; }
exec python3 "$root/scripts/lib/grading/leaderboard.py" "$@"
