#!/usr/bin/env bash
# Checks that every C++ and CUDA source of the repository is formatted by its .clang-format
# (CI runs it with Debian 12's clang-format 14). Prints each file that is not, and how to fix it.
#   scripts/check_format.sh           check
#   scripts/check_format.sh --fix     reformat those files in place
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fix=0
case "${1:-}" in
  -h | --help) sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --fix) fix=1 ;;
  "") ;;
  *) echo "check_format.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
command -v clang-format > /dev/null || { echo "check_format.sh: clang-format is not installed (apt-get install clang-format)" >&2; exit 1; }
if [ "$(git rev-parse --show-toplevel 2> /dev/null || true)" = "$(pwd -P)" ]; then
  mapfile -t files < <(git ls-files -co --exclude-standard -- '*.hpp' '*.cpp' '*.cuh' '*.cu' '*.h' | grep -v '^build/')
else
  mapfile -t files < <(find . \( -name build -o -name .git \) -prune -o -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cuh' -o -name '*.cu' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! clang-format --dry-run --Werror "$f" > /dev/null 2>&1; then bad+=("$f"); fi
done
if [ "${#bad[@]}" -eq 0 ]; then
  echo "formatting: all ${#files[@]} C++/CUDA files match .clang-format ($(clang-format --version | head -n1))"
  exit 0
fi
if [ "$fix" -eq 1 ]; then
  clang-format -i "${bad[@]}"
  echo "reformatted ${#bad[@]} file(s)"
  exit 0
fi
printf 'not formatted: %s\n' "${bad[@]}"
echo "formatting: ${#bad[@]} of ${#files[@]} files differ from .clang-format; run scripts/check_format.sh --fix"
exit 1
