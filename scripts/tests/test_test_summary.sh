#!/usr/bin/env bash
# scripts/test.sh's closing lines (fa2_test_summary, scripts/lib/test_summary.sh) on ctest logs
# recorded on an H200 and on machines without a GPU (scripts/tests/fixtures/test_summary/; its
# README.md says where each comes from): the exit status, and the closing lines with the counts,
# the failed tests by name and each skip's reason. Runs the function as test.sh does (sourced,
# under set -euo pipefail), once with each awk installed (mawk, gawk, busybox, original-awk).
# Then scripts/test.sh itself, with cmake and ctest replaced by stand-ins that replay a fixture.
# Prints one line per check; exits 1 on a miss.
#   scripts/tests/test_test_summary.sh
set -uo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
fixtures="scripts/tests/fixtures/test_summary"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
checked=0

# The fixtures as build folders, in $work/<name>/, their logs unpacked as ctest wrote them.
for fixture in "$fixtures"/*/; do
  name="$(basename "$fixture")"
  cp -R "$fixture" "$work/$name"
  find "$work/$name" -name '*.gz' -exec gzip -d {} +
done
# Made from them: a run whose LastTest.log was not kept (the H200 sessions kept ctest's output
# only), a run stopped before ctest's last lines, and a build folder where ctest never ran.
cp -R "$work/a_h200_2026-12-02_lab_only_skipped" "$work/a_without_lasttest"
rm -rf "$work/a_without_lasttest/Testing"
cp -R "$work/b_nogpu_ci_2026-12-04_gpu_skipped" "$work/b_interrupted"
head -n 400 "$work/b_nogpu_ci_2026-12-04_gpu_skipped/ctest.log" > "$work/b_interrupted/ctest.log"
mkdir -p "$work/no_ctest_log"

lab="v5.1 is an ablation: its kernels are in the lab library, which this build leaves out (configure with -DFA2_BUILD_ABLATIONS=ON, as the sm90 preset does)"
gpu_ran="GPU tests: none skipped, they ran on this machine's GPU"
# The Python lines test.sh printed on those machines (.ci/run's log; the H200's pytest.log).
py_ci="Python tests not run: the PyTorch operators are not built (Torch not found: /root/.pyenv/shims/python3 cannot import torch; for another Python's PyTorch give -DCMAKE_PREFIX_PATH (see python/README.md))"
py_h200="Python tests (pytest python/tests): 572 passed, 1 skipped, 15 warnings in 50.56s"

# check NAME DIR CTEST_STATUS PYTHON_STATUS PYTHON_LINE EXPECTED_EXIT EXPECTED_LINE...: runs
# fa2_test_summary on DIR as scripts/test.sh does (`... || status=$?`, then exit "$status"), and
# as a plain last command under set -e, and compares the exit status and every line of each.
check() {
  local label="$1" dir="$work/$2" ctest_status="$3" python_status="$4" python_line="$5" want_exit="$6"
  shift 6
  local want way out got_exit ok=1 report=""
  want="$(printf '%s\n' "$@")"
  # shellcheck disable=SC2016 # each way is bash code, expanded by the bash it is given to
  for way in 'status=0; fa2_test_summary "$@" || status=$?; exit "$status"' 'fa2_test_summary "$@"'; do
    out="$(bash -c "set -euo pipefail; source scripts/lib/test_summary.sh; $way" _ \
      "$dir" "$ctest_status" "$python_status" "$python_line" 2>&1)"
    got_exit=$?
    if [ "$got_exit" != "$want_exit" ] || [ "$out" != "$want" ]; then
      ok=0
      report+="    called as: $way: want exit $want_exit, got $got_exit"$'\n'
      report+="$(diff <(echo "$want") <(echo "$out") | sed 's/^/      /')"$'\n'
    fi
  done
  checked=$((checked + 1))
  if [ "$ok" = 1 ]; then
    echo "test_summary: PASS [$awk_name] $label: exit $want_exit; $(head -n 1 <<< "$want")"
  else
    echo "test_summary: FAIL [$awk_name] $label"
    printf '%s' "$report"
    status=1
  fi
}

run_checks() {
  # (a) On an H200, every test passed and the only skip was the lab-only check: exit 0, and the
  # closing lines (the run that once ended with exit 1 and without them).
  check "(a) H200, the lab-only check skipped" a_h200_2026-12-02_lab_only_skipped 0 0 "$py_h200" 0 \
    "ctest: 145 tests: 144 passed, 1 skipped, 0 failed" \
    "1 test skipped (lab-only: $lab); $gpu_ran" \
    "$py_h200"
  # (b) No GPU (no driver), nvcc present: the GPU tests skipped, with their reason; exit 0.
  check "(b) no GPU, the GPU tests skipped" b_nogpu_ci_2026-12-04_gpu_skipped 0 0 "$py_ci" 0 \
    "ctest: 692 tests: 580 passed, 112 skipped, 0 failed" \
    "112 tests skipped (GPU tests: no NVIDIA driver on this machine; lab-only: $lab)" \
    "$py_ci"
  # (c) A failure: ctest's exit status, the failed test named, the skips still reported.
  check "(c) no GPU, one test failed" c_nogpu_ci_2026-12-04_one_failed 8 0 "$py_ci" 8 \
    "ctest: 692 tests: 579 passed, 112 skipped, 1 failed: scripts_answer_help_with_their_usage" \
    "112 tests skipped (GPU tests: no NVIDIA driver on this machine; lab-only: $lab)" \
    "$py_ci"
  # ... decided from the log too, whatever status the caller passes.
  check "(c) the failure found in the log alone" c_nogpu_ci_2026-12-04_one_failed 0 0 "" 1 \
    "ctest: 692 tests: 579 passed, 112 skipped, 1 failed: scripts_answer_help_with_their_usage" \
    "112 tests skipped (GPU tests: no NVIDIA driver on this machine; lab-only: $lab)"
  # ... on an H200 with newer ctest (labels after the status), 13 failed, 4 of them not built.
  check "(c) H200, 13 failed" c_h200_2026-12-01_thirteen_failed 8 0 "$py_h200" 8 \
    "ctest: 511 tests: 498 passed, 0 skipped, 13 failed: step07_tests_NOT_BUILT (Not Run); step07_variant_host_tests_NOT_BUILT (Not Run); step07_gpu_tests_NOT_BUILT (Not Run); step07_variant_gpu_tests_NOT_BUILT (Not Run); step07_demo_cli_help; and 8 more ($work/c_h200_2026-12-01_thirteen_failed/ctest.log)" \
    "$gpu_ran" \
    "$py_h200"
  # (d) Everything passed, nothing skipped: on an H200, and in a cpu-only build on this machine.
  check "(d) H200, all passed" d_h200_2026-11-29_all_passed 0 0 "$py_h200" 0 \
    "ctest: 215 tests: 215 passed, 0 skipped, 0 failed" \
    "$gpu_ran" \
    "$py_h200"
  check "(d) cpu-only, all passed" d_cpu_only_here_step01_all_passed 0 0 "$py_ci" 0 \
    "ctest: 40 tests: 40 passed, 0 skipped, 0 failed" \
    "GPU tests not built: FA2_ENABLE_CUDA=OFF (for example the cpu-only preset), host paths only" \
    "$py_ci"
  # pytest failed while every ctest test passed: exit 1, as test.sh always did.
  check "(d) all passed, pytest failed" d_h200_2026-11-29_all_passed 0 1 "Python tests (pytest python/tests): 1 failed, 571 passed, 1 skipped in 50.00s" 1 \
    "ctest: 215 tests: 215 passed, 0 skipped, 0 failed" \
    "$gpu_ran" \
    "Python tests (pytest python/tests): 1 failed, 571 passed, 1 skipped in 50.00s"
  # ctest failed with no failed test in its log: its status, and the line says so.
  check "ctest status 8, no failed test in the log" d_cpu_only_here_step01_all_passed 8 0 "" 8 \
    "ctest: 40 tests: 40 passed, 0 skipped, 0 failed, but ctest exited with status 8 (see $work/d_cpu_only_here_step01_all_passed/ctest.log)" \
    "GPU tests not built: FA2_ENABLE_CUDA=OFF (for example the cpu-only preset), host paths only"
  # A skip whose reason cannot be read is still a skip: exit 0, the test named.
  check "(a) without LastTest.log" a_without_lasttest 0 0 "" 0 \
    "ctest: 145 tests: 144 passed, 1 skipped, 0 failed" \
    "1 test skipped (other: no Testing/Temporary/LastTest.log for a configuration built for head dim 64 only refuses 128 rather than launching nothing; see ctest --test-dir $work/a_without_lasttest -V)"
  # ctest stopped (Ctrl-C) before its last lines: the progress lines counted, its status kept.
  check "ctest interrupted" b_interrupted 130 0 "" 130 \
    "ctest: 199 tests: 197 passed, 2 skipped, 0 failed, but ctest exited with status 130 (see $work/b_interrupted/ctest.log)" \
    "2 tests skipped (GPU tests: no NVIDIA driver on this machine)"
  check "no ctest.log" no_ctest_log 8 0 "" 8 \
    "ctest: no test results in $work/no_ctest_log/ctest.log (ctest exit status 8)" \
    "GPU tests: no test results"
}

# Once with each awk found: PATH starts with a folder whose only program is that awk as "awk".
awks=0
for awk_name in mawk gawk original-awk busybox; do
  command -v "$awk_name" > /dev/null 2>&1 || continue
  mkdir -p "$work/bin_$awk_name"
  if [ "$awk_name" = busybox ]; then
    busybox awk 'BEGIN { exit 0 }' 2> /dev/null || continue
    printf '#!/bin/sh\nexec busybox awk "$@"\n' > "$work/bin_$awk_name/awk"
    chmod +x "$work/bin_$awk_name/awk"
  else
    ln -sf "$(command -v "$awk_name")" "$work/bin_$awk_name/awk"
  fi
  PATH="$work/bin_$awk_name:$PATH" run_checks
  awks=$((awks + 1))
done
if [ "$awks" -eq 0 ]; then
  awk_name="awk"
  run_checks
fi

# scripts/test.sh itself, in a copy of scripts/ where cmake and ctest are stand-ins that replay a
# fixture (ctest.log, LastTest.log, fa2_cuda_summary.txt and the Python line of the CI machine's
# configure) and deps.sh checks nothing: its last lines and its exit status.
mkdir -p "$work/repo/scripts/lib" "$work/stubs"
cp scripts/test.sh "$work/repo/scripts/"
cp scripts/lib/test_summary.sh "$work/repo/scripts/lib/"
echo 'fa2_ensure_dependencies() { :; }' > "$work/repo/scripts/lib/deps.sh"
cat > "$work/stubs/cmake" << 'STUB'
#!/bin/sh
case "$1" in
  --preset)
    mkdir -p "build/$2"
    cp "$FA2_STUB_FIXTURE/fa2_cuda_summary.txt" "build/$2/"
    echo "-- fa2_torch_ops (PyTorch operators, python/): not built, Torch not found: /root/.pyenv/shims/python3 cannot import torch; for another Python's PyTorch give -DCMAKE_PREFIX_PATH (see python/README.md)"
    ;;
  --build) echo "ninja: no work to do." ;;
esac
STUB
cat > "$work/stubs/ctest" << 'STUB'
#!/bin/sh
rm -rf "build/$2/Testing"
if [ -d "$FA2_STUB_FIXTURE/Testing" ]; then cp -R "$FA2_STUB_FIXTURE/Testing" "build/$2/"; fi
cat "$FA2_STUB_FIXTURE/ctest.log"
exit "$FA2_STUB_CTEST_STATUS"
STUB
chmod +x "$work/stubs/cmake" "$work/stubs/ctest"
# check_test_sh FIXTURE CTEST_STATUS EXPECTED_EXIT EXPECTED_LAST_LINE...
check_test_sh() {
  local fixture="$1" ctest_status="$2" want_exit="$3" out got_exit want got
  shift 3
  out="$(cd "$work/repo" && PATH="$work/stubs:$PATH" FA2_PRESET=default FA2_STUB_FIXTURE="$work/$fixture" \
    FA2_STUB_CTEST_STATUS="$ctest_status" bash scripts/test.sh 2>&1)"
  got_exit=$?
  want="$(printf '%s\n' "$@")"
  got="$(tail -n $# <<< "$out")"
  checked=$((checked + 1))
  if [ "$got_exit" = "$want_exit" ] && [ "$got" = "$want" ] &&
    cmp -s "$work/$fixture/ctest.log" "$work/repo/build/default/ctest.log"; then
    echo "test_summary: PASS scripts/test.sh on $fixture: exit $want_exit; $(head -n 1 <<< "$want")"
  else
    echo "test_summary: FAIL scripts/test.sh on $fixture: want exit $want_exit, got $got_exit"
    diff <(echo "$want") <(echo "$got") | sed 's/^/    /'
    status=1
  fi
}
check_test_sh a_h200_2026-12-02_lab_only_skipped 0 0 \
  "ctest: 145 tests: 144 passed, 1 skipped, 0 failed" \
  "1 test skipped (lab-only: $lab); $gpu_ran" \
  "$py_ci"
check_test_sh c_nogpu_ci_2026-12-04_one_failed 8 8 \
  "ctest: 692 tests: 579 passed, 112 skipped, 1 failed: scripts_answer_help_with_their_usage" \
  "112 tests skipped (GPU tests: no NVIDIA driver on this machine; lab-only: $lab)" \
  "$py_ci"
check_test_sh d_cpu_only_here_step01_all_passed 0 0 \
  "ctest: 40 tests: 40 passed, 0 skipped, 0 failed" \
  "GPU tests not built: FA2_ENABLE_CUDA=OFF (for example the cpu-only preset), host paths only" \
  "$py_ci"
echo "test_summary: $checked checks"
exit "$status"
