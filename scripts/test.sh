#!/usr/bin/env bash
# Quick start, command 2: build everything and run every test (configure, build, ctest).
# Usage: scripts/test.sh                   (preset "default"; FA2_PRESET=cpu-only to skip CUDA)
# GPU tests skip with a reason when no GPU is present; FA2_REQUIRE_GPU=1 makes that a failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/deps.sh
fa2_ensure_dependencies

preset="${FA2_PRESET:-default}"
cmake --workflow --preset "$preset"
