#!/usr/bin/env bash
# Redraws every step's figures into the source tree (each step's figures/ folder) and rewrites the
# trace viewer's shipped traces (common/viewer/traces/), from the code: the one command after a
# change that moves a figure or a trace. ctest -L figures then checks them all.
#   scripts/make_figures.sh              (preset cpu-only: the figures need no GPU)
#   FA2_PRESET=default scripts/make_figures.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
case "${1:-}" in
  -h | --help) sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "make_figures.sh: unknown argument '$1' (it takes none; see --help)" >&2; exit 2 ;;
esac
preset="${FA2_PRESET:-cpu-only}"
cmake --preset "$preset" > /dev/null
cmake --build --preset "$preset" --target figures viewer_traces
git status --short -- '*/figures/*.svg' 'common/viewer/traces/*' 2> /dev/null || true
