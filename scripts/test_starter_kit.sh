#!/usr/bin/env bash
# Checks the students' starter kit end to end, the way students and instructors use it:
#   1. generates it from this repository (make_starter_kit.sh) into <work dir>/kit;
#   2. no line of any solution region survives anywhere in the kit;
#   3. the round trip: a second kit with the solutions put back (restore_solutions.sh) is
#      identical to this repository, file for file;
# and, unless --no-build:
#   4. the kit, built and tested with scripts/test.sh as a student would: the build prints no
#      warning, every failing test fails with a TODO(stepNN) message, steps 01-05 each fail, and
#      HANDOUT.md's grading commands, run as written, fail;
#   5. the round-trip kit, built and tested the same way: every test passes, no warning.
#
#   scripts/test_starter_kit.sh [--no-build] [--preset P] [--solved-preset P] <work dir>
#   (presets: P for the kit, default cpu-only; the round-trip kit uses P too unless given)
set -euo pipefail

usage() { sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
build=1
preset=cpu-only
solved_preset=""
work=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --no-build) build=0 ;;
    --preset) [ $# -ge 2 ] || { echo "--preset needs a value" >&2; exit 2; }; preset="$2"; shift ;;
    --preset=*) preset="${1#--preset=}" ;;
    --solved-preset) [ $# -ge 2 ] || { echo "--solved-preset needs a value" >&2; exit 2; }; solved_preset="$2"; shift ;;
    --solved-preset=*) solved_preset="${1#--solved-preset=}" ;;
    -*) echo "test_starter_kit.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$work" ] || { echo "test_starter_kit.sh: one work directory only" >&2; exit 2; }; work="$1" ;;
  esac
  shift
done
[ -n "$work" ] || { usage >&2; exit 2; }
solved_preset="${solved_preset:-$preset}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
mkdir -p "$work"
work="$(cd "$work" && pwd -P)"
kit="$work/kit"
solved="$work/kit-solved"
status=0
fail() {  # counts failures; the script exits non-zero when there is any
  echo "FAIL: $*"
  status=$((status + 1))
}

echo "== 1. generate the kit"
"$root/scripts/make_starter_kit.sh" "$kit" > "$work/generate.log"
tail -n 1 "$work/generate.log"

echo "== 2. no solution line survives in the kit"
# Every line inside a solution region of this repository (trimmed; comments and lines of 16
# characters or fewer, such as "}", "prog.sync();" or "index_t off = 0;", are too common to be
# evidence), then every line of every kit file that matches one of them.
mapfile -t region_files < <(grep -v '^#' "$kit/.starter-kit" | grep -E '\.(hpp|cpp|cuh|cu|h)$' |
  while IFS= read -r rel; do grep -q '// BEGIN SOLUTION step' "$root/$rel" && echo "$root/$rel"; done)
awk '
  /^[ \t]*\/\/ END SOLUTION/ { inside = 0; next }
  inside { line = $0; gsub(/^[ \t]+|[ \t]+$/, "", line); if (length(line) > 16 && line !~ /^\/\//) print line }
  /^[ \t]*\/\/ BEGIN SOLUTION step/ { inside = 1 }
' "${region_files[@]}" | sort -u > "$work/solution_lines.txt"
grep -v '^#' "$kit/.starter-kit" | grep -E '\.(hpp|cpp|cuh|cu|h|in|md)$' | while IFS= read -r rel; do
  awk -v file="$rel" 'NR == FNR { want[$0] = 1; next }
    { line = $0; gsub(/^[ \t]+|[ \t]+$/, "", line); if (line in want) print file ":" FNR ": " line }' \
    "$work/solution_lines.txt" "$kit/$rel"
done > "$work/leaks.txt"
if [ -s "$work/leaks.txt" ]; then
  fail "solution lines survive in the kit:"
  sed 's/^/    /' "$work/leaks.txt"
else
  echo "ok: none of the $(wc -l < "$work/solution_lines.txt") solution lines appears in the kit"
fi

kit_status=$((status > 0))
failures_before_round_trip=$status
echo "== 3. the round trip: the kit with its solutions put back is this repository"
"$root/scripts/make_starter_kit.sh" "$solved" > /dev/null
"$root/scripts/restore_solutions.sh" "$solved"
differing=0
while IFS= read -r rel; do
  case "$rel" in "" | "#"*) continue ;; esac
  if ! cmp -s "$root/$rel" "$solved/$rel"; then
    fail "$rel differs from the repository after the round trip"
    diff -u "$root/$rel" "$solved/$rel" | head -n 20 || true
    differing=$((differing + 1))
  fi
done < "$solved/.starter-kit"
[ "$differing" -eq 0 ] && echo "ok: all $(grep -vc '^#' "$solved/.starter-kit") files identical to the repository"

solved_status=$((status > failures_before_round_trip))
if [ "$build" -eq 0 ]; then
  exit $((status > 0))
fi

# Runs scripts/test.sh in a kit; its logs land in <kit>/build/<preset>/.
run_tests() {
  local dir="$1" p="$2"
  (cd "$dir" && FA2_PRESET="$p" scripts/test.sh) > "$work/$(basename "$dir")_test.log" 2>&1
}
no_warnings() {
  local log="$1" what="$2"
  if grep -E -n '(warning|Warning)[ :#]' "$log" > "$work/warnings.txt"; then
    fail "$what: the build printed warnings"
    head -n 20 "$work/warnings.txt"
  else
    echo "ok: $what builds without a warning"
  fi
}

before=$status
echo "== 4. the kit, as students get it (preset $preset)"
if run_tests "$kit" "$preset"; then
  fail "every test of the kit passes, but its solution regions are TODOs"
fi
kit_build="$kit/build/$preset"
[ -f "$kit_build/ctest.log" ] || { fail "the kit did not build"; tail -n 40 "$work/kit_test.log"; exit 1; }
no_warnings "$kit_build/build.log" "the kit"
# Each failed test's output (ctest prints it after the test's result line) must carry a TODO.
awk '
  function finish() { if (name != "" && !todo) print name; name = "" }
  /Test +#[0-9]+: / {
    finish()
    if ($0 ~ /\*\*\*(Failed|Exception|Timeout)|Not Run/) { name = $0; sub(/^.*Test +#[0-9]+: /, "", name); sub(/ \.+.*$/, "", name); todo = 0 }
    next
  }
  /[0-9]+% tests passed/ { finish() }
  name != "" && /TODO\(step[0-9][0-9]\)/ { todo = 1 }
  END { finish() }
' "$kit_build/ctest.log" > "$work/failed_without_todo.txt"
failed=$(grep -c -E 'Test +#[0-9]+: .*(\*\*\*(Failed|Exception|Timeout)|Not Run)' "$kit_build/ctest.log" || true)
if [ -s "$work/failed_without_todo.txt" ]; then
  fail "these tests fail in the kit without a TODO message:"
  sed 's/^/    /' "$work/failed_without_todo.txt"
else
  echo "ok: $failed tests fail in the kit, each with a TODO(stepNN) message"
fi
# Each exercise step fails, with its own TODO or an earlier step's (step04 uses step03's code).
for step in step01 step02 step03 step04 step05; do
  if ctest --test-dir "$kit_build" -L "^${step}$" -LE "compile_fail|cli" --output-on-failure > "$work/kit_${step}.log" 2>&1; then
    fail "the kit's $step tests pass, but its solution regions are TODOs"
  elif grep -q "TODO(step" "$work/kit_${step}.log"; then
    echo "ok: $step fails in the kit with $(grep -o 'TODO(step[0-9]*)' "$work/kit_${step}.log" | sort -u | tr '\n' ' ')"
  else
    fail "the kit's $step tests fail, but not with a TODO message"
  fi
done
"$root/scripts/check_handout_commands.sh" --expect todo "$kit" > "$work/kit_handout.log" 2>&1 ||
  { fail "HANDOUT.md's grading commands, in the kit"; tail -n 20 "$work/kit_handout.log"; }
tail -n 1 "$work/kit_handout.log"
[ "$status" -eq "$before" ] || kit_status=1
kit_summary="$failed tests fail, all with a TODO message; $(grep -E 'tests passed' "$kit_build/ctest.log" | sed 's/^ *//' || true)"

before=$status
echo "== 5. the kit with the solutions put back (preset $solved_preset)"
if run_tests "$solved" "$solved_preset"; then
  echo "ok: $(grep -E 'tests passed' "$solved/build/$solved_preset/ctest.log")"
else
  fail "the round-trip kit does not pass all its tests"
  grep -E 'tests passed|Failed|\*\*\*' "$solved/build/$solved_preset/ctest.log" | head -n 20 || tail -n 30 "$work/kit-solved_test.log"
fi
[ -f "$solved/build/$solved_preset/build.log" ] && no_warnings "$solved/build/$solved_preset/build.log" "the round-trip kit"
[ "$status" -eq "$before" ] || solved_status=1
solved_summary="identical to the repository; $(grep -E 'tests passed' "$solved/build/$solved_preset/ctest.log" 2> /dev/null || echo 'did not run')"

verdict() { [ "$1" -eq 0 ] && echo PASS || echo FAIL; }
echo "starter kit, unsolved (preset $preset): $(verdict "$kit_status") $kit_summary"
echo "starter kit, solutions put back (preset $solved_preset): $(verdict "$solved_status") $solved_summary"
exit $((status > 0))
