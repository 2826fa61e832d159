#!/usr/bin/env bash
# Quick start, command 1: build everything and run every step's demo, in order.
#   scripts/walkthrough.sh                      preset "default": CUDA when nvcc is found
#   FA2_PRESET=cpu-only scripts/walkthrough.sh  host paths only (also: debug, sm90)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
case "${1:-}" in
  -h | --help) sed -n '2,4p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "walkthrough.sh: unknown argument '$1' (it takes none; see --help)" >&2; exit 2 ;;
esac
source scripts/lib/deps.sh
fa2_ensure_dependencies

preset="${FA2_PRESET:-default}"
cmake --preset "$preset"
cmake --build --preset "$preset"
cmake --build --preset "$preset" --target walkthrough
