#!/usr/bin/env bash
# ctest starter_kit_generator_refuses_to_overwrite_what_it_did_not_write: runs a copy of
# make_starter_kit.sh inside a sandbox (a tiny repository in <work dir>/outer/repo, with a
# neighbour file beside it) and checks that every dangerous output directory is refused with a
# message and leaves every file of the sandbox exactly as it was, and that regenerating a kit
# removes only what the generator wrote.
#   scripts/tests/test_make_starter_kit_refusals.sh <work dir>
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
[ $# -eq 1 ] || { echo "usage: $0 <work dir>" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
mkdir -p "$1"
work="$(cd "$1" && pwd -P)/sandbox"
# Only this test's own sandbox is ever removed.
if [ -d "$work" ]; then rm -rf -- "$work"; fi
outer="$work/outer"
repo="$outer/repo"
mkdir -p "$repo/scripts/lib" "$repo/src" "$work/users_folder"
cp "$here/scripts/make_starter_kit.sh" "$repo/scripts/"
cp "$here/scripts/lib/kit.py" "$repo/scripts/lib/"
cat > "$repo/src/exercise.cpp" << 'EOF'
#include "common/todo.hpp"
int answer() {
  // BEGIN SOLUTION step01: return the answer
  return 42;
  // END SOLUTION step01
}
EOF
echo "notes" > "$repo/README.md"
echo "a neighbour's file" > "$outer/neighbour.txt"
echo "a user's own work" > "$work/users_folder/thesis.txt"
ln -s "$outer" "$work/link_to_outer"
generate="$repo/scripts/make_starter_kit.sh"

failures=0
snapshot() {
  (cd "$work" && find . -type f -print0 | sort -z | xargs -0 sha1sum && find . -type l -printf '%p -> %l\n' | sort)
}

# refuses <description> <expected message regex> <output dir>
refuses() {
  local what="$1" expect="$2" dir="$3" before after rc=0
  before="$(snapshot)"
  "$generate" "$dir" > "$work/../out.log" 2>&1 || rc=$?
  after="$(snapshot)"
  if [ "$rc" -eq 0 ]; then
    echo "FAIL: $what: the generator accepted $dir"
    failures=$((failures + 1))
  elif ! grep -q -E "$expect" "$work/../out.log"; then
    echo "FAIL: $what: refused, but the message does not match '$expect':"
    cat "$work/../out.log"
    failures=$((failures + 1))
  elif [ "$before" != "$after" ]; then
    echo "FAIL: $what: refused, but files changed:"
    diff <(echo "$before") <(echo "$after") || true
    failures=$((failures + 1))
  else
    echo "ok: $what: refused ($(head -n 1 "$work/../out.log")), every file in place"
  fi
}

refuses "the folder that contains the repository" "contains this repository" "$outer"
refuses "the repository itself" "contains this repository" "$repo"
refuses "the repository through a path with .." "contains this repository" "$repo/src/.."
refuses "a symbolic link to the folder containing the repository" "contains this repository" "$work/link_to_outer"
refuses "the root directory" "over /" "/"
refuses "a non-empty folder that is not a kit" "not empty and is not a starter kit" "$work/users_folder"
refuses "an existing file" "is not a directory" "$work/users_folder/thesis.txt"

# A kit generated here, then regenerated with a user's file inside: only the kit's files go.
"$generate" "$work/kit" > /dev/null
grep -q 'fa2::todo("TODO(step01): return the answer");' "$work/kit/src/exercise.cpp" ||
  { echo "FAIL: the kit's exercise is not a TODO"; failures=$((failures + 1)); }
if grep -q "return 42" "$work/kit/src/exercise.cpp"; then
  echo "FAIL: the solution survived in the kit"
  failures=$((failures + 1))
fi
mkdir -p "$work/kit/build" && echo "student's build" > "$work/kit/build/keep.txt"
echo "student's notes" > "$work/kit/src/my_notes.txt"
if "$generate" "$work/kit" > "$work/../out.log" 2>&1 && [ -f "$work/kit/build/keep.txt" ] &&
  [ -f "$work/kit/src/my_notes.txt" ] && [ -f "$work/kit/src/exercise.cpp" ]; then
  echo "ok: regenerating a kit replaces its own files and keeps the others ($(head -n 1 "$work/../out.log"))"
else
  echo "FAIL: regenerating a kit lost a file it did not write, or did not regenerate"
  cat "$work/../out.log"
  failures=$((failures + 1))
fi

# A marker that names a path outside the kit is refused before anything is removed.
echo "../outer/neighbour.txt" >> "$work/kit/.starter-kit"
refuses "a kit whose marker names a file outside it" "unsafe path" "$work/kit"

# A kit cannot generate a kit of itself (the kit carries the generator, like every file).
generate="$work/kit/scripts/make_starter_kit.sh"
refuses "the generator of a kit" "is itself a starter kit" "$work/another_kit"

# Usage: --help answers 0, a missing or unknown argument 2.
generate="$repo/scripts/make_starter_kit.sh"
for args in "--help:0" ":2" "--frobnicate:2" "a b:2"; do
  rc=0
  # shellcheck disable=SC2086
  "$generate" ${args%%:*} > /dev/null 2>&1 || rc=$?
  if [ "$rc" -eq "${args##*:}" ]; then
    echo "ok: make_starter_kit.sh ${args%%:*} exits $rc"
  else
    echo "FAIL: make_starter_kit.sh ${args%%:*} exits $rc, expected ${args##*:}"
    failures=$((failures + 1))
  fi
done

[ "$failures" -eq 0 ] && echo "all refusals hold" || echo "$failures failure(s)"
exit $((failures > 0))
