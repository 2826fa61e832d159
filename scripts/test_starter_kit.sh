#!/usr/bin/env bash
# Checks the students' starter kits end to end, the way students and instructors use them. For
# each level asked for (guided, standard, full):
#   1. generates the kit (make_starter_kit.sh) into <work dir>/<level>/kit; the generator itself
#      fails when the kit shows solution code (its token-run leak check);
#   2. the round trip: a second kit with the solutions put back (restore_solutions.sh) is
#      identical to this repository, file for file;
# and, unless --no-build:
#   3. the kit, built and tested with scripts/test.sh as a student would: the build prints no
#      warning, every failing test fails with a TODO(stepNN) message, each step that has work at
#      this level fails, and HANDOUT.md's grading commands, run as written, fail;
#   4. for the levels in --solved (default: standard; "none" for none), the round-trip kit built and tested the
#      same way: every test passes, no warning.
#
#   scripts/test_starter_kit.sh [--no-build] [--levels guided,standard,full] [--solved standard]
#                               [--preset P] [--solved-preset P] <work dir>
#   (presets: P for the unsolved kits, default cpu-only; the solved ones use P too unless given)
# Ends with one line per kit checked: "starter kit, <level> unsolved: PASS ..." and so on.
set -euo pipefail

usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
build=1
preset=cpu-only
solved_preset=""
levels="guided,standard,full"
solved_levels="standard"
work=""
value() { [ $# -ge 2 ] || { echo "test_starter_kit.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --no-build) build=0 ;;
    --preset) value "$@"; preset="$2"; shift ;;
    --preset=*) preset="${1#--preset=}" ;;
    --solved-preset) value "$@"; solved_preset="$2"; shift ;;
    --solved-preset=*) solved_preset="${1#--solved-preset=}" ;;
    --levels) value "$@"; levels="$2"; shift ;;
    --levels=*) levels="${1#--levels=}" ;;
    --solved) value "$@"; solved_levels="$2"; shift ;;
    --solved=*) solved_levels="${1#--solved=}" ;;
    -*) echo "test_starter_kit.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$work" ] || { echo "test_starter_kit.sh: one work directory only" >&2; exit 2; }; work="$1" ;;
  esac
  shift
done
[ -n "$work" ] || { usage >&2; exit 2; }
solved_preset="${solved_preset:-$preset}"
[ "$solved_levels" != none ] || solved_levels=""
for level in ${levels//,/ } ${solved_levels//,/ }; do
  case "$level" in guided | standard | full) ;; *)
    echo "test_starter_kit.sh: level '$level': allowed guided, standard, full" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
mkdir -p "$work"
work="$(cd "$work" && pwd -P)"
status=0
summary=()
fail() {  # counts failures; the script exits non-zero when there is any
  echo "FAIL: $*"
  status=$((status + 1))
}

# Runs scripts/test.sh in a kit; its logs land in <kit>/build/<preset>/.
run_tests() {
  local dir="$1" p="$2"
  (cd "$dir" && FA2_PRESET="$p" scripts/test.sh) > "$dir.test.log" 2>&1
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

# The steps with work for the student at a level (the regions it blanks, by their step tag).
steps_at() {
  python3 - "$root" "$1" << 'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/scripts/lib")
import kit
from pathlib import Path
steps = sorted({region.step for _, region in kit.student_regions(Path(sys.argv[1]), sys.argv[2])})
print(" ".join(steps))
PY
}

for level in ${levels//,/ }; do
  dir="$work/$level"
  mkdir -p "$dir"
  kit="$dir/kit"
  solved="$dir/kit-solved"
  before=$status
  echo "== $level: 1. generate the kit (with its leak check)"
  if "$root/scripts/make_starter_kit.sh" --level "$level" "$kit" > "$dir/generate.log" 2>&1; then
    tail -n 2 "$dir/generate.log"
  else
    fail "the $level kit: make_starter_kit.sh failed"
    tail -n 30 "$dir/generate.log"
    summary+=("starter kit, $level unsolved: FAIL the generator failed (see above)")
    continue
  fi

  echo "== $level: 2. the round trip: the kit with its solutions put back is this repository"
  "$root/scripts/make_starter_kit.sh" --level "$level" "$solved" > /dev/null
  if "$root/scripts/restore_solutions.sh" "$solved" > "$dir/restore.log" 2>&1; then
    differing=0
    while IFS= read -r rel; do
      case "$rel" in "" | "#"*) continue ;; esac
      if ! cmp -s "$root/$rel" "$solved/$rel"; then
        fail "$rel differs from the repository after the round trip ($level)"
        diff -u "$root/$rel" "$solved/$rel" | head -n 20 || true
        differing=$((differing + 1))
      fi
    done < "$solved/.starter-kit"
    [ "$differing" -eq 0 ] && echo "ok: all $(grep -vc '^#' "$solved/.starter-kit") files identical to the repository"
  else
    fail "restore_solutions.sh refused the $level kit"
    cat "$dir/restore.log"
  fi
  round_trip="$([ "$status" -eq "$before" ] && echo "round trip identical" || echo "round trip FAILED")"
  if [ "$build" -eq 0 ]; then
    summary+=("starter kit, $level: $([ "$status" -eq "$before" ] && echo PASS || echo FAIL) generated without a leak; $round_trip")
    continue
  fi

  echo "== $level: 3. the kit, as students get it (preset $preset)"
  if run_tests "$kit" "$preset"; then
    fail "every test of the $level kit passes, but its solution regions are TODOs"
  fi
  kit_build="$kit/build/$preset"
  if [ ! -f "$kit_build/ctest.log" ]; then
    fail "the $level kit did not build"
    tail -n 40 "$kit.test.log"
    summary+=("starter kit, $level unsolved: FAIL the kit did not build")
    continue
  fi
  no_warnings "$kit_build/build.log" "the $level kit"
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
  ' "$kit_build/ctest.log" > "$dir/failed_without_todo.txt"
  failed=$(grep -c -E 'Test +#[0-9]+: .*(\*\*\*(Failed|Exception|Timeout)|Not Run)' "$kit_build/ctest.log" || true)
  if [ -s "$dir/failed_without_todo.txt" ]; then
    fail "these tests fail in the $level kit without a TODO message:"
    sed 's/^/    /' "$dir/failed_without_todo.txt"
  else
    echo "ok: $failed tests fail in the $level kit, each with a TODO(stepNN) message"
  fi
  # Each step with work at this level fails, with its own TODO or an earlier step's.
  for step in $(steps_at "$level"); do
    if ctest --test-dir "$kit_build" -L "^${step}$" -LE "cli" --output-on-failure > "$dir/kit_${step}.log" 2>&1; then
      fail "the $level kit's $step tests pass, but its solution regions are TODOs"
    elif grep -q "TODO(step" "$dir/kit_${step}.log"; then
      echo "ok: $step fails in the $level kit with $(grep -o 'TODO(step[0-9]*)' "$dir/kit_${step}.log" | sort -u | tr '\n' ' ')"
    else
      fail "the $level kit's $step tests fail, but not with a TODO message"
    fi
  done
  "$root/scripts/check_handout_commands.sh" --expect todo "$kit" > "$dir/kit_handout.log" 2>&1 ||
    { fail "HANDOUT.md's grading commands, in the $level kit"; tail -n 20 "$dir/kit_handout.log"; }
  tail -n 1 "$dir/kit_handout.log"
  summary+=("starter kit, $level unsolved (preset $preset): $([ "$status" -eq "$before" ] && echo PASS || echo FAIL) no leak; $round_trip; $failed tests fail, all with a TODO message; $(grep -E 'tests passed' "$kit_build/ctest.log" | sed 's/^ *//' || true)")

  if [[ ",$solved_levels," == *",$level,"* ]]; then
    before=$status
    echo "== $level: 4. the kit with the solutions put back (preset $solved_preset)"
    if run_tests "$solved" "$solved_preset"; then
      echo "ok: $(grep -E 'tests passed' "$solved/build/$solved_preset/ctest.log")"
    else
      fail "the $level round-trip kit does not pass all its tests"
      grep -E 'tests passed|Failed|\*\*\*' "$solved/build/$solved_preset/ctest.log" | head -n 20 || tail -n 30 "$solved.test.log"
    fi
    [ -f "$solved/build/$solved_preset/build.log" ] && no_warnings "$solved/build/$solved_preset/build.log" "the $level round-trip kit"
    summary+=("starter kit, $level solved (preset $solved_preset): $([ "$status" -eq "$before" ] && echo PASS || echo FAIL) identical to the repository; $(grep -E 'tests passed' "$solved/build/$solved_preset/ctest.log" 2> /dev/null || echo 'did not run')")
  fi
done

printf '%s\n' "${summary[@]}"
exit $((status > 0))
