#!/usr/bin/env bash
# Quick start, command 1: build everything and run every step's demo, in order.
# Usage: scripts/walkthrough.sh            (preset "default"; FA2_PRESET=cpu-only to skip CUDA)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/deps.sh
fa2_ensure_dependencies

preset="${FA2_PRESET:-default}"
cmake --preset "$preset"
cmake --build --preset "$preset"
cmake --build --preset "$preset" --target walkthrough
