#!/usr/bin/env bash
# Packs your work into one archive to hand in (HANDOUT.md, "What to hand in"): the body of every
# solution region of your starter kit, your answers (answers.md) and your measurements (the
# measurements/ folder: the CSV tables and SVG plots the handout asks for). Nothing else of the
# kit goes in: the grader puts your regions into a fresh copy of the repository, so changes you
# made to tests or other files neither help nor hurt.
#   scripts/make_submission.sh [--answers FILE] [--measurements DIR] [--code-only] <out.tar.gz>
# Run it from the top of your kit. It refuses to overwrite a file that is not a submission, and
# fails, naming the file and line, when a BEGIN/END SOLUTION marker was edited or deleted.
set -euo pipefail
case "${1:-}" in
  -h | --help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") sed -n '7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}/usage: /' >&2; exit 2 ;;
esac
args=()
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --answers | --measurements)
      [ $# -ge 2 ] || { echo "make_submission.sh: $1 needs a value" >&2; exit 2; }
      args+=("$1" "$2"); shift ;;
    --answers=* | --measurements=*) args+=("${1%%=*}" "${1#*=}") ;;
    --code-only) args+=("$1") ;;
    -*) echo "make_submission.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "make_submission.sh: one output archive only" >&2; exit 2; }; out="$1" ;;
  esac
  shift
done
[ -n "$out" ] || { echo "make_submission.sh: name the archive to write, e.g. submission.tar.gz" >&2; exit 2; }
kit="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
[ -f "$kit/.starter-kit" ] ||
  { echo "make_submission.sh: $kit is not a starter kit (no .starter-kit): run the script of your kit" >&2; exit 1; }
exec python3 "$kit/scripts/lib/kit.py" --as make_submission.sh submit --kit "$kit" "${args[@]}" -- "$out"
