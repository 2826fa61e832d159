#!/usr/bin/env bash
# ctest starter_kit_is_generated_builds_and_fails_with_todos: generates the students' copy,
# configures and builds it (host paths only, for speed), and checks that
#   - every step with solution regions (01-05) now FAILS its tests with a "TODO(stepNN)" message,
#   - the solution's own host tests of those steps pass.
#   scripts/test_starter_kit.sh <solution build dir> <scratch dir>
set -euo pipefail
solution_build="$1"
work="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="$work/kit"
mkdir -p "$work"

echo "== generate"
"$root/scripts/make_starter_kit.sh" "$kit"

echo "== configure and build the kit (host paths only)"
cmake -S "$kit" -B "$kit/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFA2_ENABLE_CUDA=OFF \
  -DFA2_ALLOW_DOWNLOADS=OFF > "$work/kit_configure.log" 2>&1 || { tail -n 30 "$work/kit_configure.log"; exit 1; }
cmake --build "$kit/build" > "$work/kit_build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$work/kit_build.log" | head -n 40; exit 1; }
echo "kit builds"

status=0
for step in step01 step02 step03 step04 step05; do
  if ctest --test-dir "$kit/build" -L "^${step}$" -LE "compile_fail|gpu" --output-on-failure > "$work/kit_${step}.log" 2>&1; then
    echo "FAIL: the starter kit's $step tests pass, but its solution regions are TODOs"
    status=1
  elif grep -q "TODO(${step})" "$work/kit_${step}.log"; then
    echo "ok: $step tests fail in the kit with $(grep -o "TODO(${step})[^\"]*" "$work/kit_${step}.log" | sort | uniq | head -n 1 | cut -c1-90)"
  elif grep -q "TODO(step" "$work/kit_${step}.log"; then
    echo "ok: $step tests fail in the kit with an earlier step's TODO: $(grep -o "TODO(step[0-9]*)" "$work/kit_${step}.log" | sort -u | tr '\n' ' ')"
  else
    echo "FAIL: the kit's $step tests fail, but not with a TODO message"
    tail -n 20 "$work/kit_${step}.log"
    status=1
  fi
  if ! ctest --test-dir "$solution_build" -L "^${step}$" -LE "compile_fail|gpu|starter_kit" > "$work/solution_${step}.log" 2>&1; then
    echo "FAIL: the solution's $step tests do not pass"
    tail -n 20 "$work/solution_${step}.log"
    status=1
  else
    echo "ok: the solution's $step tests pass ($(grep -E "tests passed" "$work/solution_${step}.log"))"
  fi
done
exit $status
