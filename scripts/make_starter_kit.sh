#!/usr/bin/env bash
# Generates the students' copy of this repository (HANDOUT.md) at one of three depths:
#   guided     the smallest pieces: a few lines each, inside code that is given
#   standard   whole function and loop bodies (the default)
#   full       each step's kernel from its signature, its README and its tests
# Every solution region of that depth (scripts/lib/kit.py explains the markers) keeps its two
# marker lines and its body becomes one fa2::todo("TODO(stepNN): ...") call, which fails loudly
# when it runs (common/todo.hpp). The instructor's files (scripts/lib/instructor_only.txt) are
# left out; everything else, every test included, is copied. The kit is then searched for
# solution code (any 12 tokens in a row of a region, comments and Markdown included), and the
# script fails when it finds some.
#
#   scripts/make_starter_kit.sh [--level guided|standard|full] <output dir>
#   cmake --build --preset default --target starter_kit      (standard, into build/<preset>/starter_kit)
#
# Safety: the output directory must be new, empty, or a kit this script generated earlier (it
# holds the marker file .starter-kit, which lists every file the script wrote). Regenerating
# removes only the files that list names; anything else in the directory (a build folder,
# notes) stays. The repository itself, any folder that contains it, and / are refused.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/make_starter_kit.sh [--level guided|standard|full] <output dir>

Writes the students' copy of this repository to <output dir>: every solution region of the
level (default standard) becomes a fa2::todo("TODO(stepNN): ...") call, and the kit is checked
for leaked solution code. <output dir> must be new, empty, or a starter kit generated earlier by
this script (it then holds .starter-kit); the repository itself and any folder containing it
are refused.
USAGE
}

level=standard
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --level) [ $# -ge 2 ] || { echo "make_starter_kit.sh: --level needs a value: guided, standard or full" >&2; exit 2; }
      level="$2"; shift ;;
    --level=*) level="${1#--level=}" ;;
    -*) echo "make_starter_kit.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "make_starter_kit.sh: expected one output directory, got more (see --help)" >&2; exit 2; }
      out="$1" ;;
  esac
  shift
done
case "$level" in guided | standard | full) ;; *)
  echo "make_starter_kit.sh: --level: '$level', allowed: guided, standard, full" >&2; exit 2 ;;
esac
[ -n "$out" ] || { usage >&2; exit 2; }
command -v python3 > /dev/null 2>&1 ||
  { echo "make_starter_kit.sh: python3 is needed (sudo apt-get install python3)" >&2; exit 1; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
exec python3 "$root/scripts/lib/kit.py" --as make_starter_kit.sh generate --level "$level" -- "$out"
