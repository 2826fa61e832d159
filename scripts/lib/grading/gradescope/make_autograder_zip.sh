#!/usr/bin/env bash
# Writes the zip to upload as a Gradescope programming assignment's autograder: this repository
# (the solution, with the grader's tests) at the top of the zip, which Gradescope unpacks into
# /autograder/source, with setup.sh and run_autograder beside it.
#   scripts/lib/grading/gradescope/make_autograder_zip.sh <out.zip>
set -euo pipefail
case "${1:-}" in
  -h | --help | "") echo "usage: $0 <out.zip>"; [ -n "${1:-}" ]; exit ;;
esac
out="$(realpath -m -- "$1")"
[ ! -e "$out" ] || { echo "make_autograder_zip.sh: $out exists: choose a new name" >&2; exit 1; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd -P)"
[ ! -f "$root/.starter-kit" ] || { echo "make_autograder_zip.sh: run it in the instructor's repository, not a kit" >&2; exit 1; }
here="$root/scripts/lib/grading/gradescope"
stage="$(mktemp -d)"
trap 'rm -rf -- "$stage"' EXIT
cp "$here/setup.sh" "$here/run_autograder" "$stage/"
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$stage/")
python3 - "$stage" "$out" << 'PY'
import os, sys, zipfile
stage, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
    for folder, _, files in os.walk(stage):
        for name in files:
            path = os.path.join(folder, name)
            info = zipfile.ZipInfo.from_file(path, os.path.relpath(path, stage))
            with open(path, "rb") as data:
                archive.writestr(info, data.read())
PY
echo "wrote $out: upload it as the assignment's autograder (INSTRUCTOR.md, Grading on Gradescope)"
