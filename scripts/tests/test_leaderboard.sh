#!/usr/bin/env bash
# The leaderboard (scripts/leaderboard.sh), tested on the host path the way an instructor uses it,
# without a GPU (preset cpu-only): a standard starter kit is generated, its solutions put back and
# its code packed by make_submission.sh --code-only; then
#   1. that submission gets a ranked row;
#   2. the same submission with the checker's self-test 'replay' (step07_leaderboard wraps the kernel
#      in a runner that copies its first output into every later call: a planted cached-output
#      cheat, not a student's entry) gets a rejected row that names the cached output;
# and the command line: --help, an unknown flag, a ladder rung asked of a standard kit, its absence
# from a kit, the CSV appended to (never truncated) with one header, and --rank.
#   scripts/tests/test_leaderboard.sh <work dir>
# The build folder (<work dir>/build) is kept between runs: with ccache, a second run takes about a
# minute. Ends with one line per check ("leaderboard: PASS ..."); exits non-zero when any fails.
set -uo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
[ $# -eq 1 ] || { echo "usage: $0 <work dir>" >&2; exit 2; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
mkdir -p "$1"
work="$(cd "$1" && pwd -P)"
summary=()
status=0
check() {  # check <name> <condition command...>
  local name="$1"
  shift
  if "$@"; then summary+=("leaderboard: PASS $name"); else summary+=("leaderboard: FAIL $name"); status=1; fi
}
csv="$work/leaderboard-test.csv"
# field <row number, 1 = first data row> <column>: one field of the test's CSV
field() {
  python3 - "$csv" "$1" "$2" << 'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
n = int(sys.argv[2])
print(rows[n - 1][sys.argv[3]] if len(rows) >= n else "")
PY
}
started=$SECONDS

kit="$work/kit-solved"
"$root/scripts/make_starter_kit.sh" --level standard "$kit" > "$work/generate.log" || { cat "$work/generate.log"; exit 1; }
"$root/scripts/restore_solutions.sh" "$kit" > /dev/null || exit 1
(cd "$kit" && scripts/make_submission.sh --code-only "$work/solved.tar.gz") || exit 1
rm -f -- "$csv"  # this test's own CSV from an earlier run
board=("$root/scripts/leaderboard.sh" --host --preset cpu-only --work "$work/build" --csv "$csv")

echo "== the command line"
"$root/scripts/leaderboard.sh" --help > "$work/help.txt" 2>&1
check "--help exits 0 with the usage" test $? -eq 0 -a -s "$work/help.txt"
"$root/scripts/leaderboard.sh" --no-such-flag "$work/solved.tar.gz" > /dev/null 2> "$work/unknown.txt"
code=$?
check "an unknown flag exits 2 and names it (exit $code)" test $code -eq 2
check "  ... its message names --no-such-flag" grep -q -- "--no-such-flag" "$work/unknown.txt"
"${board[@]}" --kernel v3 "$work/solved.tar.gz" > /dev/null 2> "$work/rung.txt"
code=$?
check "a ladder rung from a standard kit is refused with exit 2 naming --kernel (exit $code)" \
  bash -c "test $code -eq 2 && grep -q -- '--kernel v3: a rung of the ladder is an entry of a full kit only' '$work/rung.txt'"
check "a starter kit does not hold it (scripts/lib/instructor_only.txt)" test ! -e "$kit/scripts/leaderboard.sh"
check "  ... and nothing so far wrote a row" test ! -e "$csv"

echo "== 1. the solved standard kit: a ranked row"
"${board[@]}" --student solved-kit "$work/solved.tar.gz" 2>&1 | tee "$work/honest.log" | tail -n 8
code=${PIPESTATUS[0]}
check "the honest entry: exit 0 (exit $code)" test "$code" -eq 0
check "  ... row 1 is ranked: $(field 1 status) $(field 1 reason)" test "$(field 1 status)" = ranked
check "  ... for step5 on the host path, student solved-kit" \
  test "$(field 1 kernel)/$(field 1 path)/$(field 1 student)/$(field 1 level)" = "step5/host/solved-kit/standard"
calls="$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["leaderboard"]["host"]; print(c["warmup_calls"]+c["calls"])' \
  "$root/scripts/lib/grading/course.json")"
check "  ... every call checked: $(field 1 checked_calls) of $calls" test "$(field 1 checked_calls)" = "$calls"
check "  ... with a median time ($(field 1 median_ms) ms) and a rate ($(field 1 tflops) TFLOP/s)" \
  python3 -c 'import sys; sys.exit(not (float(sys.argv[1]) > 0 and float(sys.argv[2]) > 0))' \
  "$(field 1 median_ms)" "$(field 1 tflops)"
no_sdpa() { [ -z "$(field 1 speed_vs_sdpa)" ] && [[ "$(field 1 notes)" == *"no SDPA on the host path"* ]]; }
check "  ... no SDPA ratio on the host path, and the notes say why" no_sdpa

echo "== 2. the same submission with a planted cached-output cheat: a rejected row"
"${board[@]}" --student cheat --self-test replay "$work/solved.tar.gz" 2>&1 | tee "$work/cheat.log" | tail -n 8
code=${PIPESTATUS[0]}
check "the cheat: exit 0, the row is the verdict (exit $code)" test "$code" -eq 0
check "  ... row 2 is rejected: $(field 2 status)" test "$(field 2 status)" = rejected
names_cache() { [[ "$(field 2 reason)" == "call 1: "*"bit for bit those of call 0"*"returned a cached output"* ]]; }
check "  ... its reason names the cached output: $(field 2 reason | cut -c1-100)..." names_cache
check "  ... its kernel column says it is a self-test: $(field 2 kernel)" test "$(field 2 kernel)" = "step5+self-test:replay"
check "  ... and it has no time" test -z "$(field 2 median_ms)"

echo "== the CSV and the ranking"
check "the CSV holds one header and both rows (appended, not truncated)" \
  bash -c "test \$(wc -l < '$csv') -eq 3 && test \$(grep -c '^student,level,kernel,' '$csv') -eq 1"
"$root/scripts/leaderboard.sh" --rank "$csv" > "$work/rank.md"
check "--rank lists solved-kit as rank 1 and the cheat as rejected" \
  bash -c "grep -q '^| 1 | solved-kit | step5 |' '$work/rank.md' && grep -q '^- rejected: cheat' '$work/rank.md'"

echo
printf '%s\n' "${summary[@]}"
echo "leaderboard: $((SECONDS - started)) s"
exit $status
