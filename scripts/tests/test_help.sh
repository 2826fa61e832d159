#!/usr/bin/env bash
# Every script a user or an instructor runs answers --help with its usage and exit 0, and never
# with lines of its own code: the shell scripts of scripts/ and .ci/, and the Python programs of
# scripts/ (modules without a command line, such as rebase.py, excepted). In a starter kit the
# instructor's scripts are absent and not checked. Prints one line per script; exits 1 on a miss.
#   scripts/tests/test_help.sh
set -uo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
status=0
checked=0
while IFS= read -r script; do
  case "$script" in
    *.py) grep -q '__main__' "$script" || continue; cmd=(python3 "$script" --help) ;;
    *) cmd=(bash "$script" --help) ;;
  esac
  out="$(timeout 60 "${cmd[@]}" 2>&1)"
  rc=$?
  checked=$((checked + 1))
  # Lines of code that a help text never holds: shell settings, case arms, assignments from $1.
  code="$(grep -nE '^(set -[euo]|case "\$|  -h \| --help\)|[a-z_]+="\$\{?1)' <<< "$out" | head -n 1)"
  if [ "$rc" -ne 0 ] || [ -z "$out" ] || [ -n "$code" ]; then
    echo "help: FAIL $script (exit $rc${code:+; prints its code: $code})"
    status=1
  else
    echo "help: PASS $script: $(head -n 1 <<< "$out" | cut -c1-90)"
  fi
done < <(ls scripts/*.sh scripts/*.py scripts/lib/*.py scripts/lib/grading/*.py scripts/lib/grading/gradescope/* \
  scripts/tests/*.sh scripts/tests/*.py .ci/run .ci/without_cuda.sh 2> /dev/null | grep -v '/test_help\.sh$')
echo "help: $checked scripts checked"
exit "$status"
