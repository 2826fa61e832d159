#!/usr/bin/env bash
# Runs the commands HANDOUT.md gives students and instructors, exactly as written, from the top
# of a repository or starter kit: first the build commands of its code blocks, then every ctest
# command it quotes. Also proves that none of them can pass by accident: each ctest command,
# with its label replaced by one that no test carries, must fail.
#   scripts/check_handout_commands.sh [--expect pass|todo] [<dir>]      (<dir>: this repository)
#     --expect pass   the solution: every command exits 0
#     --expect todo   a starter kit: every ctest command fails, with a TODO message (each one grades
#                     or runs code the student has still to write)
# Commands that need a GPU (FA2_REQUIRE_GPU=1) run only where nvidia-smi sees one; commands
# written with a placeholder (stepNN) are templates and are listed, not run.
set -euo pipefail

expect=pass
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --expect) [ $# -ge 2 ] || { echo "--expect needs pass or todo" >&2; exit 2; }; expect="$2"; shift ;;
    --expect=*) expect="${1#--expect=}" ;;
    -*) echo "check_handout_commands.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) dir="$1" ;;
  esac
  shift
done
case "$expect" in pass | todo) ;; *) echo "--expect: '$expect', allowed: pass, todo" >&2; exit 2 ;; esac
dir="$(cd "${dir:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd -P)"
handout="$dir/HANDOUT.md"
[ -f "$handout" ] || { echo "no HANDOUT.md in $dir" >&2; exit 1; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# Build commands: lines of fenced code blocks that start with cmake (comments dropped).
mapfile -t builds < <(awk '/^```/ { block = !block; next } block && /^cmake / { sub(/[ \t]+#.*$/, ""); print }' "$handout")
# Test commands: ctest commands in code blocks and in `inline code`, in order, each once.
mapfile -t tests < <({
  awk '/^```/ { block = !block; next } block && /^(FA2_[A-Z_]+=[^ ]+ )?ctest / { sub(/[ \t]+#.*$/, ""); print }' "$handout"
  grep -o '`[^`]*`' "$handout" | tr -d '`' | grep -E '^(FA2_[A-Z_]+=[^ ]+ )?ctest '
} | awk '!seen[$0]++')

have_gpu=0
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then have_gpu=1; fi
status=0
ran=0

for cmd in "${builds[@]}"; do
  if (cd "$dir" && bash -c "$cmd") > "$log" 2>&1; then
    echo "ok: $cmd"
    ran=$((ran + 1))
  else
    echo "FAIL: $cmd"
    tail -n 20 "$log"
    status=1
  fi
done

for cmd in "${tests[@]}"; do
  if [[ "$cmd" == *stepNN* ]]; then
    echo "template, not run: $cmd"
    continue
  fi
  if [[ "$cmd" == FA2_REQUIRE_GPU=1* ]] && [ "$have_gpu" -eq 0 ]; then
    echo "not run here (no GPU): $cmd"
    continue
  fi
  rc=0
  (cd "$dir" && bash -c "$cmd") > "$log" 2>&1 || rc=$?
  ran=$((ran + 1))
  if [ "$expect" = pass ]; then
    if [ "$rc" -eq 0 ]; then
      echo "ok: $cmd ($(grep -E 'tests passed' "$log" | head -n 1))"
    else
      echo "FAIL: $cmd exits $rc"
      tail -n 20 "$log"
      status=1
    fi
  elif [ "$rc" -ne 0 ] && grep -q 'TODO(step' "$log"; then
    echo "ok: $cmd fails in the kit with $(grep -o 'TODO(step[0-9]*)' "$log" | sort -u | tr '\n' ' ')"
  else
    echo "FAIL: $cmd should fail in the kit with a TODO message (exit $rc)"
    tail -n 20 "$log"
    status=1
  fi
  # The same command matching no test must fail, not pass on zero tests.
  if [[ "$cmd" == *" -L "* ]]; then
    empty="$(sed -E 's/ -L [^ ]+/ -L no_test_carries_this_label/' <<< "$cmd")"
    if (cd "$dir" && bash -c "$empty") > "$log" 2>&1; then
      echo "FAIL: '$empty' passes on zero tests"
      status=1
    fi
  fi
done
echo "HANDOUT.md: $ran command(s) run as written (expect $expect), $([ "$status" -eq 0 ] && echo "all as expected" || echo "some NOT as expected"); each ctest command fails when it matches no test"
exit "$status"
