#!/usr/bin/env bash
# Quick start, command 2: build everything and run every test (configure, build, ctest, and the
# Python tests when python3 has PyTorch), then say in its last two lines what happened to the GPU
# tests and to the Python tests on this machine.
#   scripts/test.sh                 preset "default": CUDA when nvcc is found
#   FA2_PRESET=cpu-only scripts/test.sh      host paths only (also: debug, sm90)
#   FA2_REQUIRE_GPU=1 scripts/test.sh        a missing GPU fails the GPU tests instead of skipping them
# The logs are kept in build/<preset>/: configure.log, build.log, ctest.log (and pytest.log).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
case "${1:-}" in
  -h | --help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "test.sh: unknown argument '$1' (it takes none; see --help)" >&2; exit 2 ;;
esac
source scripts/lib/deps.sh
fa2_ensure_dependencies

preset="${FA2_PRESET:-default}"
build_dir="build/$preset"
mkdir -p "$build_dir"
cmake --preset "$preset" 2>&1 | tee "$build_dir/configure.log"
cmake --build --preset "$preset" 2>&1 | tee "$build_dir/build.log"

status=0
ctest --preset "$preset" -j "$(nproc)" 2>&1 | tee "$build_dir/ctest.log" || status=$?

# The Python tests (python/tests) when CMake found PyTorch and built the operators: with the
# python3 that has that PyTorch, on this build's library. Otherwise the configure line says why.
ops="$build_dir/python/libfa2_torch_ops.so"
if [ -f "$ops" ] && python3 -c 'import pytest' > /dev/null 2>&1; then
  FA2_TORCH_OPS="$PWD/$ops" python3 -m pytest python/tests -q -rs -p no:cacheprovider 2>&1 |
    tee "$build_dir/pytest.log" || status=1
  python_line="Python tests (pytest python/tests): $(tail -n 1 "$build_dir/pytest.log" | tr -d '=' | sed 's/^ *//;s/ *$//')"
elif [ -f "$ops" ]; then
  python_line="Python tests not run: python3 has PyTorch but not pytest (python3 -m pip install pytest)"
else
  why=$(grep -o 'fa2_torch_ops (PyTorch operators, python/): not built, .*' "$build_dir/configure.log" | head -n 1 |
    sed 's/^fa2_torch_ops (PyTorch operators, python\/): not built, //' || true)
  python_line="Python tests not run: the PyTorch operators are not built (${why:-see configure.log})"
fi

# One line about the skipped tests, visible without ctest -V: how many, and why, the GPU tests'
# reasons apart from the others (a lab-only check in a build without the lab, a test that needs
# more GPU memory). A skip is not a failure: the exit status is ctest's and pytest's.
skipped=$(grep -c -E '\*\*\*Skipped' "$build_dir/ctest.log" || true)
if grep -q '^GPU tests not built' "$build_dir/fa2_cuda_summary.txt"; then
  cat "$build_dir/fa2_cuda_summary.txt"
elif [ "$skipped" -gt 0 ]; then
  reasons=$(grep -h '^SKIPPED: ' "$build_dir/Testing/Temporary/LastTest.log" 2> /dev/null | sed 's/^SKIPPED: //' | sort -u || true)
  gpu=$(grep '^GPU test: ' <<< "$reasons" | sed -e 's/^GPU test: //' -e 's/ (set FA2_REQUIRE_GPU=1.*//' | paste -sd ';' - || true)
  other=$(grep -v '^GPU test: ' <<< "$reasons" | grep -v '^$' | paste -sd ';' - || true)
  why="${gpu:+GPU tests: $gpu}${gpu:+${other:+; }}${other:+other: $other}"
  echo "$skipped tests skipped (${why:-see ctest --preset $preset -V})"
else
  echo "GPU tests: none skipped, they ran on this machine's GPU"
fi
echo "$python_line"
exit "$status"
