#!/usr/bin/env bash
# Quick start, command 2: build everything and run every test (configure, build, ctest, and the
# Python tests when python3 has PyTorch), then count what passed, was skipped (and why) or failed,
# and say in its last two lines what happened to the GPU tests and to the Python tests here.
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
source scripts/lib/test_summary.sh  # fa2_test_summary: the closing lines and the exit status
fa2_ensure_dependencies

preset="${FA2_PRESET:-default}"
build_dir="build/$preset"
mkdir -p "$build_dir"
cmake --preset "$preset" 2>&1 | tee "$build_dir/configure.log"
cmake --build --preset "$preset" 2>&1 | tee "$build_dir/build.log"

ctest_status=0
ctest --preset "$preset" -j "$(nproc)" 2>&1 | tee "$build_dir/ctest.log" || ctest_status=$?

# The Python tests (python/tests) when CMake found PyTorch and built the operators: with the
# python3 that has that PyTorch, on this build's library. Otherwise the configure line says why.
ops="$build_dir/python/libfa2_torch_ops.so"
python_status=0
if [ -f "$ops" ] && python3 -c 'import pytest' > /dev/null 2>&1; then
  FA2_TORCH_OPS="$PWD/$ops" python3 -m pytest python/tests -q -rs -p no:cacheprovider 2>&1 |
    tee "$build_dir/pytest.log" || python_status=1
  python_line="Python tests (pytest python/tests): $(tail -n 1 "$build_dir/pytest.log" | tr -d '=' | sed 's/^ *//;s/ *$//')"
elif [ -f "$ops" ]; then
  python_line="Python tests not run: python3 has PyTorch but not pytest (python3 -m pip install pytest)"
else
  why=$(grep -o 'fa2_torch_ops (PyTorch operators, python/): not built, .*' "$build_dir/configure.log" | head -n 1 |
    sed 's/^fa2_torch_ops (PyTorch operators, python\/): not built, //' || true)
  python_line="Python tests not run: the PyTorch operators are not built (${why:-see configure.log})"
fi

# The closing lines (scripts/lib/test_summary.sh, tested on recorded logs by
# scripts/tests/test_test_summary.sh): how many tests passed, were skipped and failed, the failed
# ones by name; then one line about the GPU tests and the skipped ones, each skip with its reason
# (GPU tests apart, the lab-only check in a build without the lab, any other); then the Python
# line. A skip is not a failure: the exit status is 0 exactly when no test failed.
status=0
fa2_test_summary "$build_dir" "$ctest_status" "$python_status" "$python_line" || status=$?
exit "$status"
