#!/usr/bin/env bash
# Gradescope's setup.sh (INSTRUCTOR.md, "Grading on Gradescope"): runs once, when Gradescope builds
# the autograder's image from the zip that make_autograder_zip.sh writes. It installs what the
# host path needs and grades the solution once, so that the compiler cache (ccache) holds every
# translation unit a student's submission does not change: a student's run then rebuilds only
# their own files.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
source_dir="${AUTOGRADER_ROOT:-/autograder}/source"
cd "$source_dir"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $(grep -v '^#' scripts/lib/apt-packages.txt) python3 ccache git > /dev/null
work="$(mktemp -d)"
scripts/make_starter_kit.sh --level standard "$work/kit" > /dev/null
scripts/restore_solutions.sh "$work/kit" > /dev/null
(cd "$work/kit" && scripts/make_submission.sh --code-only "$work/solution.tar.gz")
scripts/grade.sh "$work/solution.tar.gz" "$work/grade" | tail -n 1
