#!/usr/bin/env bash
# step07 on an H200 in one call: configure (preset sm90, with Torch when python3 has it), build
# step07_bench, run the full sweep, write CSV, SVG and logs to OUT_DIR, print the tables last.
#   step07_benchmark/run_h200.sh [OUT_DIR]                  (default ./bench_out)
#   STEP07_ARGS="--quick" step07_benchmark/run_h200.sh out  (extra step07_bench options)
#   STEP07_CMAKE_ARGS="-DFA2_EIGEN_INCLUDE_DIR=/path/eigen3" ...  (extra configure options)
set -euo pipefail

out="${1:-./bench_out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=build/sm90
started=$(date +%s)
say() { echo "[step07 +$(( $(date +%s) - started ))s] $*"; }

# --- configure -------------------------------------------------------------------------------
cmake_args=(--preset sm90)
if torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null); then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$torch_prefix")
else
  say "python3 cannot import torch: building without the PyTorch SDPA columns"
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  # A fresh tree on a machine without internet: no downloads (fail fast with the message that
  # names what is missing), and no test suites unless doctest is installed (the bench needs none).
  cmake_args+=(-DFA2_ALLOW_DOWNLOADS=OFF)
  [ -f /usr/include/doctest/doctest.h ] || [ -f /usr/local/include/doctest/doctest.h ] || cmake_args+=(-DFA2_BUILD_TESTS=OFF)
  if [ ! -f /usr/include/eigen3/Eigen/Core ] && [ ! -f /usr/local/include/eigen3/Eigen/Core ] &&
     [ -f .device_carry/eigen3/Eigen/Core ]; then
    cmake_args+=("-DFA2_EIGEN_INCLUDE_DIR=$PWD/.device_carry/eigen3")
  fi
fi
# shellcheck disable=SC2206
cmake_args+=(${STEP07_CMAKE_ARGS:-})
say "configure: cmake ${cmake_args[*]}"
if ! cmake "${cmake_args[@]}" > "$out/step07_configure.txt" 2>&1; then
  tail -n 40 "$out/step07_configure.txt"
  exit 1
fi
grep -E "step07_bench:|CUDA [0-9]" "$out/step07_configure.txt" || true

# --- build -----------------------------------------------------------------------------------
say "build step07_bench (-j $(nproc))"
if ! cmake --build "$build" --target step07_bench -j "$(nproc)" > "$out/step07_build.txt" 2>&1; then
  grep -E "error|FAILED" -A5 "$out/step07_build.txt" | head -n 60
  exit 1
fi

# --- run -------------------------------------------------------------------------------------
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv 2>&1 || true
} > "$out/step07_gpu_state.txt"
say "run: step07_bench --out $out ${STEP07_ARGS:-}"
set +e
# shellcheck disable=SC2086
"$build/step07_benchmark/step07_bench" --out "$out" ${STEP07_ARGS:-} > "$out/step07_log.txt" 2>&1
rc=$?
set -e
say "step07_bench exit code $rc; full log: $out/step07_log.txt"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$out/step07_gpu_state.txt" 2>&1 || true
ls -1 "$out"

# The header, what did not run, then the TFLOP/s table and the article's (last); the end of
# the log instead if the run stopped early. Everything else is in the log and the CSV.
sed -n '1,/^ceilings:/p' "$out/step07_log.txt" | head -n 20
if grep -q "^TFLOP/s (" "$out/step07_log.txt"; then
  sed -n '/^not timed:/,/^$/p' "$out/step07_log.txt" | head -n 20
  sed -n '/^TFLOP\/s (/,$p' "$out/step07_log.txt"
else
  tail -n 60 "$out/step07_log.txt"
fi
exit $rc
