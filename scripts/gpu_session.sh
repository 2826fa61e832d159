#!/usr/bin/env bash
# Build, test, sanitize and benchmark on one GPU machine, in one command per phase, with every
# log written to one folder (and packed into OUT/session.tgz, one file to copy off a remote
# machine). Uses preset sm90 (Hopper); set FA2_PRESET for another, e.g. default.
#
#   scripts/gpu_session.sh test     [OUT]  configure (with PyTorch when python3 has it), build
#                                          everything, every test with FA2_REQUIRE_GPU=1, the SASS
#                                          of the fast kernels (no local memory allowed), and the
#                                          PyTorch operators' pytest suite and example when built
#   scripts/gpu_session.sh sanitize [OUT]  compute-sanitizer (memcheck, racecheck; synccheck on the
#                                          fast kernels) on the GPU suites, racecheck on step05's
#                                          kernel without its barrier (it must report the race), and
#                                          memcheck over python/tests when the operators are built
#                                          (PYTORCH_NO_CUDA_MEMORY_CACHING=1: each tensor its own
#                                          allocation; PYTEST_SANITIZE_SECONDS, default 1800)
#   scripts/gpu_session.sh bench    [OUT]  step07_bench (BENCH_ARGS, default: the full sweep),
#                                          then ncu on the step05, ladder and fast kernels (NCU=0:
#                                          no ncu)
#   scripts/gpu_session.sh profile  [OUT]  ncu on each step of v5 -> v6 (PROFILE_STEPS, default the
#                                          steps of step07's APPENDIX.md, E.4) at N = 4096 without a mask, head
#                                          dims 64 and 128: pipe utilisation (tensor, MUFU, FMA, ALU),
#                                          issue slots and stall reasons, tabulated by
#                                          scripts/ncu_table.py into OUT/ncu_steps.md
#   scripts/gpu_session.sh bench-repeat [OUT]  step07_bench in rotating rounds with the GPU's clocks
#                                          read after every timing (REPEAT_ARGS, default: v6, the
#                                          configurations it chooses among, SDPA's FA2 and cuDNN,
#                                          10 rounds, the --decide tables), then the reconciliation
#                                          of ncu and the sweep (RECONCILE=0: skip it): v6.11 at head
#                                          dim 128, N = 4096 and 16384, timed the sweep's way, as
#                                          isolated launches after 50 ms and 1 s of idle GPU, and by
#                                          ncu; OUT/reconcile/reconcile.md puts the three side by side
#   scripts/gpu_session.sh package  [OUT]  what a Python user does: pip install ./python against
#                                          python3's PyTorch (--no-build-isolation; CUDAARCHS,
#                                          default 90), python/tests from OUT on the installed
#                                          package (FA2_REQUIRE_GPU=1), then python/benchmarks
#                                          (PACKAGE_BENCH, default "dtypes gqa window"; each
#                                          script's table in OUT/<name>.md, its times in .csv;
#                                          ARGS_<name> its options; "peers": the sweep beside SDPA
#                                          and FlashAttention-4, "varlen": packed batches and decoding)
#   scripts/gpu_session.sh backward [OUT]  the sm90 backward's rows in one call (the lab built): the
#                                          GPU tests of every fast backward, memcheck and synccheck
#                                          on small ragged shapes, test_varlen.py and test_window.py,
#                                          then step07_bench in rotating rounds on v6b.3 to v6b.19,
#                                          some deterministic twins, v6b, v5 and SDPA's FA2 and
#                                          cuDNN (BWD_ARGS replaces the bench's arguments); every
#                                          step under a timeout, so that a hang costs minutes only;
#                                          BWD_PARTS picks some of "build tests sanitize pytest
#                                          bench" (all by default); BWD_TEST_SECONDS,
#                                          BWD_SANITIZE_SECONDS and BWD_BENCH_SECONDS are the
#                                          timeouts of the tests, of each sanitizer and of the bench;
#                                          BWD_TEST_CASES the doctest filter of the tests,
#                                          FA2_TEST_ROWS (e.g. v6b.10,v6b.11) the rows they run
#   scripts/gpu_session.sh decode   [OUT]  the varlen kernels in one call (the decoding kernel, v6's
#                                          packed forward, v6b's packed backward), in parts that
#                                          DECODE_PARTS picks from "build tests pytest bench train
#                                          sanitize" (all by default): the build; their GPU tests;
#                                          test_varlen.py; step07_decode_bench (packed, and in pages of
#                                          64), ncu on the product's decoding kernel at B 8, cache 32768
#                                          (OUT/ncu_decode.txt; NCU=0: no ncu) and
#                                          python/benchmarks/varlen.py --mode decode (DECODE_ARGS);
#                                          varlen.py --mode train (TRAIN_ARGS); memcheck, racecheck and
#                                          synccheck on the decoding kernel's float16 case, memcheck on
#                                          its index arrays of broken values, memcheck
#                                          and synccheck on the packed forward's case and on the packed
#                                          backward's shorter case, and memcheck over test_varlen.py's
#                                          CUDA decoding, paged and packed cases (each tensor its own
#                                          allocation)
#   scripts/gpu_session.sh all      [OUT]  test, sanitize, then bench
#
# OUT defaults to ./gpu_session. Exit status: non-zero when a test, a sanitizer, a benchmark or
# the install failed. Leaves the GPU's clocks and settings alone (ncu runs with --clock-control none).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

usage() { sed -n '2,/^set -uo pipefail/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
phase="${1:-}"
case "$phase" in
  -h | --help) usage; exit 0 ;;
  test | sanitize | bench | bench-repeat | profile | package | backward | decode | all) ;;
  *)
    echo "gpu_session.sh: the phase must be test, sanitize, bench, bench-repeat, profile, package, backward, decode" \
      "or all," \
      "got '${phase}'" >&2
    usage >&2
    exit 2
    ;;
esac
out="${2:-./gpu_session}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
preset="${FA2_PRESET:-sm90}"
build="build/$preset"
status=0
started=$(date +%s)
log() { echo "[gpu_session +$(($(date +%s) - started))s] $*"; }

# configure_and_build [target...]: everything, or only the targets named. FA2_TORCH=0 leaves
# PyTorch out even when python3 has it (no SDPA columns, a shorter build); FA2_ABLATIONS=1 builds
# the lab's variants too (FA2_BUILD_ABLATIONS), which bench-repeat times.
configure_and_build() {
  local args=(--preset "$preset")
  local torch_prefix
  [ "${FA2_ABLATIONS:-0}" = 0 ] || args+=(-DFA2_BUILD_ABLATIONS=ON)
  if [ "${FA2_TORCH:-1}" = 0 ]; then
    args+=(-DFA2_WITH_TORCH=OFF)
    log "FA2_TORCH=0: step07_bench is built without the PyTorch SDPA columns"
  elif torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2> /dev/null); then
    args+=("-DCMAKE_PREFIX_PATH=$torch_prefix")
  else
    log "python3 cannot import torch: step07_bench is built without the PyTorch SDPA columns"
  fi
  log "configure: cmake ${args[*]}"
  cmake "${args[@]}" > "$out/configure.log" 2>&1 || { tail -n 40 "$out/configure.log"; exit 1; }
  grep -E "step07_bench:|GPU tests" "$out/configure.log" || true
  local targets=()
  [ "$#" -eq 0 ] || targets=(--target "$@")
  log "build ${*:-everything} (-j $(nproc))"
  cmake --build "$build" -j "$(nproc)" "${targets[@]}" > "$out/build.log" 2>&1 ||
    { grep -E "error|FAILED" -A5 "$out/build.log" | head -n 60; exit 1; }
}

# sanitize <name> <tool> <seconds> <test binary> [doctest filters...]: one compute-sanitizer run.
sanitize() {
  local name=$1 tool=$2 secs=$3 bin=$4
  shift 4
  local rc=0
  FA2_REQUIRE_GPU=1 timeout "$secs" compute-sanitizer --tool "$tool" --error-exitcode 99 "$build/$bin" "$@" \
    > "$out/sanitizer_${name}.log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || status=1
  echo "  $name ($tool): exit $rc | $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer_${name}.log" | tail -n 1)" \
    "| $(grep -E "test cases:" "$out/sanitizer_${name}.log" | tail -n 1)"
}

# sanitize_pytest <name> <seconds> <operators library> [pytest arguments...]: memcheck over the
# PyTorch operators' tests, each tensor its own allocation (PYTORCH_NO_CUDA_MEMORY_CACHING=1), so
# that a read past a tensor's end lands outside every allocation instead of in the caching
# allocator's pool.
sanitize_pytest() {
  local name=$1 secs=$2 ops=$3
  shift 3
  local rc=0
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 FA2_TORCH_OPS="$ops" FA2_REQUIRE_GPU=1 timeout "$secs" \
    compute-sanitizer --tool memcheck --error-exitcode 99 python3 -m pytest -q -p no:cacheprovider "$@" \
    > "$out/sanitizer_${name}.log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || status=1
  echo "  $name (memcheck): exit $rc | $(grep -E "ERROR SUMMARY" "$out/sanitizer_${name}.log" | tail -n 1)" \
    "| $(grep -E "passed|failed" "$out/sanitizer_${name}.log" | tail -n 1)"
}

phase_test() {
  {
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv
    nvcc --version | tail -n 2
    cmake --version | head -n 1
    python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' 2>&1
  } > "$out/env.txt" 2>&1
  cat "$out/env.txt"
  configure_and_build
  log "every test, FA2_REQUIRE_GPU=1"
  FA2_REQUIRE_GPU=1 ctest --test-dir "$build" -j 8 --timeout 900 --output-on-failure > "$out/ctest.log" 2>&1 || status=1
  grep -E "tests passed|\*\*\*Failed|\*\*\*Skipped|\*\*\*Timeout" "$out/ctest.log" | tail -n 20

  log "SASS of the fast kernels: tensor-core (mma.sync, wgmma), ldmatrix, cp.async and local-memory instructions"
  cuobjdump -sass "$build/step07_benchmark/step07_bench" 2> /dev/null | awk '
    /Function :/ { name = $3 }
    /HMMA/ { hmma[name]++; seen[name] = 1 } /HGMMA/ { hgmma[name]++; seen[name] = 1 }
    /LDSM/ { ldsm[name]++ } /LDGSTS/ { ldgsts[name]++ } /LDL|STL/ { local[name]++ }
    END { for (n in seen) printf "%6d HMMA %5d HGMMA %5d LDSM %5d LDGSTS %4d LDL/STL  %s\n", hmma[n], hgmma[n], ldsm[n], ldgsts[n], local[n], substr(n, 1, 150) }
  ' | sort -k11 > "$out/sass_counts.txt"
  echo "  $(wc -l < "$out/sass_counts.txt") kernels; with local memory: $(awk '$9 > 0' "$out/sass_counts.txt" | wc -l)"

  if [ ! -f "$build/python/libfa2_torch_ops.so" ]; then
    log "PyTorch operators: not built (python3 cannot import torch), their tests not run"
    return 0
  fi
  log "PyTorch operators (python/): pytest with FA2_REQUIRE_GPU=1, then python/example.py"
  FA2_TORCH_OPS="$build/python/libfa2_torch_ops.so" FA2_REQUIRE_GPU=1 python3 -m pytest python/tests -q -rs \
    -p no:cacheprovider > "$out/pytest.log" 2>&1 || status=1
  tail -n 3 "$out/pytest.log"
  FA2_TORCH_OPS="$build/python/libfa2_torch_ops.so" python3 python/example.py > "$out/example.txt" 2>&1 || status=1
  cat "$out/example.txt"
}

phase_sanitize() {
  [ -x "$build/step05_fa2_kernel/step05_gpu_tests" ] || configure_and_build
  log "compute-sanitizer"
  sanitize step04_memcheck memcheck 300 step04_weighted_sum/step04_gpu_tests
  sanitize step04_racecheck racecheck 300 step04_weighted_sum/step04_gpu_tests
  sanitize step05_memcheck memcheck 300 step05_fa2_kernel/step05_gpu_tests "-tce=*2^31*,*without its barrier*"
  sanitize step05_racecheck racecheck 300 step05_fa2_kernel/step05_gpu_tests "-tc=GPU and host paths*,GPU: strided*"
  sanitize step06_memcheck memcheck 300 step06_tests_bugs/step06_gpu_tests
  sanitize step07_memcheck memcheck 300 step07_benchmark/step07_gpu_tests
  sanitize step07_variants_memcheck memcheck 300 step07_benchmark/step07_variant_gpu_tests "-tc=*small ragged*"
  sanitize step07_variants_racecheck racecheck 300 step07_benchmark/step07_variant_gpu_tests "-tc=*small ragged*"
  sanitize step07_variants_synccheck synccheck 300 step07_benchmark/step07_variant_gpu_tests "-tc=*small ragged*"
  sanitize common_memcheck memcheck 60 common/common_gpu_tests "-tce=*failing CUDA call*"
  sanitize step05_backward_memcheck memcheck 300 step05_fa2_kernel/step05_backward_gpu_tests "-tce=*2^31*"
  sanitize step05_backward_racecheck racecheck 300 step05_fa2_kernel/step05_backward_gpu_tests "-tce=*2^31*"

  # The host's race checks say step05's kernel needs its barrier; racecheck must agree on the GPU.
  local rc=0
  timeout 300 compute-sanitizer --tool racecheck --error-exitcode 99 "$build/step05_fa2_kernel/step05_gpu_tests" \
    "-tc=*without its barrier*" > "$out/sanitizer_step05_without_barrier.log" 2>&1 || rc=$?
  if [ "$rc" -eq 99 ] && grep -q -E "Race reported|hazard" "$out/sanitizer_step05_without_barrier.log"; then
    echo "  step05 without its barrier (racecheck): the race is reported, as on the host" \
      "| $(grep -E "RACECHECK SUMMARY" "$out/sanitizer_step05_without_barrier.log" | tail -n 1)"
  else
    echo "  step05 without its barrier (racecheck): exit $rc, no race reported: the GPU and the host disagree"
    status=1
  fi

  # The PyTorch operators' tests under memcheck.
  local ops="$PWD/$build/python/libfa2_torch_ops.so"
  if [ ! -f "$ops" ]; then
    log "PyTorch operators: not built (python3 cannot import torch), their tests not sanitized"
    return 0
  fi
  log "memcheck over python/tests (PYTORCH_NO_CUDA_MEMORY_CACHING=1)"
  sanitize_pytest pytest "${PYTEST_SANITIZE_SECONDS:-1800}" "$ops" python/tests
}

phase_bench() {
  [ -x "$build/step07_benchmark/step07_bench" ] || configure_and_build
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv > "$out/gpu_state.txt" 2>&1 || true
  log "step07_bench --out $out ${BENCH_ARGS:-}"
  # shellcheck disable=SC2086
  "$build/step07_benchmark/step07_bench" --out "$out" ${BENCH_ARGS:-} > "$out/step07_log.txt" 2>&1 || status=1
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader \
    >> "$out/gpu_state.txt" 2>&1 || true
  sed -n '/^not timed:/,/^$/p' "$out/step07_log.txt" | head -n 20
  sed -n '/^TFLOP\/s (/,/^$/p' "$out/step07_log.txt"

  [ "${NCU:-1}" != 0 ] || return 0
  log "ncu (clocks left alone)"
  profile() {  # name kernel-regex bench-args...
    local name=$1 kernel=$2
    shift 2
    timeout 200 ncu --clock-control none --kernel-name-base demangled -k "regex:$kernel" --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis_Tables \
      --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
      "$build/step07_benchmark/step07_bench" --n=4096 --d=64 --causal=no --quick --no-ceilings "$@" \
      > "$out/ncu_${name}.txt" 2>&1
    echo "  ncu $name: exit $?"
  }
  profile step05_16x16 "FlashFwdKernel" --impl=ours16
  profile ladder_v4 "LadderKernel" --impl=v4
  profile fast_v5 "fast_fwd_kernel" --impl=v5
}

# ncu on each step: one profiled launch per (step, head dim), raw metrics as CSV. The metric list
# is what this ncu offers among the ones wanted (names differ between versions): the busy cycles
# of the tensor (wgmma and mma.sync), special-function (MUFU: ex2), FMA and ALU pipes, issue-slot
# use, and every stall reason in cycles per issued instruction.
phase_profile() {
  [ -x "$build/step07_benchmark/step07_bench" ] || configure_and_build
  log "ncu on each step (clocks left alone)"
  local available wanted=() m
  available=$(ncu --query-metrics --chip gh100 2> /dev/null | awk '{print $1}')
  for m in sm__pipe_tensor_op_gmma_cycles_active sm__pipe_tensor_op_hmma_cycles_active sm__pipe_xu_cycles_active \
    sm__pipe_fma_cycles_active sm__pipe_alu_cycles_active sm__pipe_shared_cycles_active \
    sm__inst_executed_pipe_xu sm__inst_executed_pipe_fma sm__inst_executed_pipe_alu; do
    if grep -qx "$m" <<< "$available"; then
      case $m in *cycles_active) wanted+=("$m.avg.pct_of_peak_sustained_active") ;; *) wanted+=("$m.sum") ;; esac
    fi
  done
  while read -r m; do wanted+=("$m.ratio"); done < <(grep -E '^smsp__average_warps_issue_stalled_.*_per_issue_active$' <<< "$available")
  wanted+=(gpu__time_duration.sum sm__cycles_active.avg smsp__issue_active.avg.pct_of_peak_sustained_active
    launch__registers_per_thread
    smsp__inst_executed.sum sm__warps_active.avg.pct_of_peak_sustained_active)
  local metrics
  metrics=$(IFS=,; echo "${wanted[*]}")
  local steps="${PROFILE_STEPS:-v5 v6.1 v6.2 v6.4 v6.6 v6.8 v6.9 v6.10 v6.11 v6.12 v6.13 v6.14 v6.15 v6.16 v6.17}"
  local d impl
  mkdir -p "$out/ncu"
  for d in 64 128; do
    for impl in $steps; do
      timeout 120 ncu --clock-control none --kernel-name-base demangled -k "regex:hopper|fast_fwd" --launch-count 1 \
        --csv --page raw --metrics "$metrics" \
        "$build/step07_benchmark/step07_bench" --n=4096 --d="$d" --causal=no --impl="$impl" --no-ceilings \
        --warmup-ms=0 --rep-ms=0.001 --min-reps=1 --max-reps=1 > "$out/ncu/${impl}_d${d}.csv" 2>&1
      echo "  ncu $impl d$d: exit $?"
    done
  done
  python3 scripts/ncu_table.py "$out/ncu" > "$out/ncu_steps.md" || status=1
  cat "$out/ncu_steps.md"
}

# The GPU's state as nvidia-smi reads it, one line per call, appended to OUT/gpu_state.txt.
gpu_state() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu \
    --format=csv,noheader >> "$out/gpu_state.txt" 2>&1 || echo "nvidia-smi failed" >> "$out/gpu_state.txt"
}

# step07_bench in rounds: the tuned points with their clocks, then the reconciliation.
phase_bench_repeat() {
  FA2_ABLATIONS="${FA2_ABLATIONS:-1}" configure_and_build step07_bench step07_gpu_tests
  local bench="$build/step07_benchmark/step07_bench"
  log "the GPU tests of isolated launches and of rounds, FA2_REQUIRE_GPU=1"
  FA2_REQUIRE_GPU=1 "$build/step07_benchmark/step07_gpu_tests" "-tc=*isolated launches*,*in rounds*" \
    > "$out/gpu_tests.log" 2>&1 || status=1
  grep -E "test cases:" "$out/gpu_tests.log" || tail -n 20 "$out/gpu_tests.log"
  echo "timestamp, clocks.sm, clocks.max.sm, clocks.mem, power.draw, power.limit, temperature.gpu" > "$out/gpu_state.txt"
  gpu_state
  local repeat_args="${REPEAT_ARGS:---n=512,1024,2048,4096,8192,16384 --d=64,128 --pass=fwd --impl=v6,v6.8,v6.11,v6.12,v6.14,v6.17,sdpa-fa2,sdpa-cudnn --baseline=v6 --decide=v6.17,v6.11 --decide=v6.12,v6.17 --decide=v6.8,v6.17 --decide=v6.14,v6.17 --repeat=10 --warmup-ms=10 --rep-ms=40 --no-ceilings}"
  mkdir -p "$out/tuned"
  log "step07_bench $repeat_args --out $out/tuned"
  # shellcheck disable=SC2086
  "$bench" $repeat_args --out "$out/tuned" > "$out/tuned/step07_log.txt" 2>&1 || status=1
  gpu_state
  [ "${RECONCILE:-1}" != 0 ] && reconcile
  gpu_state
  sed -n '/^not timed:/,/^$/p' "$out/tuned/step07_log.txt" | head -n 20
  sed -n '/^pairs over /,/^$/p' "$out/tuned/step07_log.txt"
  sed -n '/^decide /,$p' "$out/tuned/step07_log.txt" | sed '/^The article/,$d'
  [ "${RECONCILE:-1}" = 0 ] || cat "$out/reconcile/reconcile.md"
}

# One kernel at head dim 128 timed three ways, each with the clocks it ran at: the sweep's way
# (do_bench's budget, in rounds), isolated launches on a cold L2 after a short and a long idle
# gap, and ncu's own launches (clocks left alone, caches flushed by ncu; its SpeedOfLight section
# has the kernel's duration and the SM and memory clocks it ran at); reconcile_table.py puts them
# side by side.
reconcile() {
  local bench="$build/step07_benchmark/step07_bench" impl="${RECONCILE_IMPL:-v6.11}" d="${RECONCILE_D:-128}"
  local ns="${RECONCILE_N:-4096 16384}" n
  local shape=(--n="${ns// /,}" --d="$d" --causal=no --pass=fwd --impl="$impl" --no-ceilings)
  local dir="$out/reconcile"
  mkdir -p "$dir/sweep" "$dir/isolated_50ms" "$dir/isolated_1000ms"
  log "reconcile $impl at head dim $d, N = $ns: the sweep's way (do_bench, 5 rounds)"
  "$bench" "${shape[@]}" --repeat=5 --out "$dir/sweep" > "$dir/sweep/step07_log.txt" 2>&1 || status=1
  log "reconcile: isolated launches after 50 ms and after 1 s of idle GPU"
  "$bench" "${shape[@]}" --isolated=20 --gap-ms=50 --out "$dir/isolated_50ms" \
    > "$dir/isolated_50ms/step07_log.txt" 2>&1 || status=1
  "$bench" "${shape[@]}" --isolated=10 --gap-ms=1000 --out "$dir/isolated_1000ms" \
    > "$dir/isolated_1000ms/step07_log.txt" 2>&1 || status=1
  log "reconcile: ncu (--clock-control none), 5 launches per N"
  for n in $ns; do
    timeout 240 ncu --clock-control none --cache-control all --kernel-name-base demangled -k "regex:hopper|fast_fwd" \
      --launch-count 5 --csv --page raw --section SpeedOfLight \
      "$bench" --n="$n" --d="$d" --causal=no --pass=fwd --impl="$impl" --no-ceilings --warmup-ms=0 --rep-ms=0.001 \
      --min-reps=1 --max-reps=1 > "$dir/ncu_n$n.csv" 2>&1
    echo "  ncu N=$n: exit $?"
  done
  python3 scripts/reconcile_table.py "$dir" > "$dir/reconcile.md" || status=1
}

phase_package() {
  local root=$PWD name
  log "pip install --no-build-isolation ./python (CUDAARCHS=${CUDAARCHS:-90})"
  if ! CUDAARCHS="${CUDAARCHS:-90}" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    python3 -m pip install --no-build-isolation ./python > "$out/pip_install.log" 2>&1; then
    tail -n 30 "$out/pip_install.log"
    status=1
    return 0
  fi
  log "python/tests on the installed package, run from $out"
  (cd "$out" && FA2_TEST_INSTALLED=1 FA2_REQUIRE_GPU=1 python3 -m pytest "$root/python/tests" -q -rs \
    -p no:cacheprovider > "$out/pytest_installed.log" 2>&1) || status=1
  tail -n 3 "$out/pytest_installed.log"
  for name in ${PACKAGE_BENCH:-dtypes gqa window}; do
    log "python/benchmarks/$name.py"
    local extra=() args_var="ARGS_$name"
    read -r -a extra <<< "${!args_var:-}"
    (cd python/benchmarks && python3 "$name.py" "${extra[@]}" --csv "$out/$name.csv" > "$out/$name.md" 2>&1) || status=1
    cat "$out/$name.md"
  done
}

phase_decode() {
  local parts="${DECODE_PARTS:-build tests pytest bench train sanitize}"
  local bin=step07_benchmark/step07_decode_gpu_tests rc=0 ops="$PWD/$build/python/libfa2_torch_ops.so"
  has() { [[ " $parts " == *" $1 "* ]]; }
  if has build; then
    local targets=(step07_decode_gpu_tests step07_decode_bench)
    if python3 -c 'import torch' 2> /dev/null; then targets+=(fa2_torch_ops); fi
    configure_and_build "${targets[@]}"
  fi
  if has tests; then
    log "GPU tests of the decoding kernel and the packed forward and backward"
    FA2_REQUIRE_GPU=1 timeout 400 "$build/$bin" --duration=true > "$out/decode_tests.log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || status=1
    echo "  exit $rc | $(grep -E "test cases:" "$out/decode_tests.log" | tail -n 1)" \
      "| $(grep -E "assertions:" "$out/decode_tests.log" | tail -n 1)"
    grep -E "ERROR|FAILED|timed out" "$out/decode_tests.log" | head -n 20
  fi
  if has pytest && [ -f "$ops" ]; then
    log "pytest: test_varlen.py"
    FA2_TORCH_OPS="$ops" FA2_REQUIRE_GPU=1 timeout 600 python3 -m pytest python/tests/test_varlen.py -q -rs \
      -p no:cacheprovider > "$out/pytest_varlen.log" 2>&1 || status=1
    tail -n 3 "$out/pytest_varlen.log"
  fi
  if has bench; then
    for pages in 0 64; do
      log "step07_decode_bench --page-size=$pages"
      timeout 300 "$build/step07_benchmark/step07_decode_bench" "--page-size=$pages" \
        --csv="$out/decode_bench_p$pages.csv" > "$out/decode_bench_p$pages.md" 2>&1 || status=1
      cat "$out/decode_bench_p$pages.md"
    done
    if [ "${NCU:-1}" != 0 ]; then
      log "ncu on the product's decoding kernel (its first launch), B 8, cache 32768"
      timeout 300 ncu --clock-control none --kernel-name regex:decode_kernel --launch-count 1 --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
        "$build/step07_benchmark/step07_decode_bench" --points=8x32768 --rounds=1 > "$out/ncu_decode.txt" 2>&1 ||
        status=1
      grep -E "DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Warp Cycles Per Issued|L2 Hit|L1/TEX Hit" \
        "$out/ncu_decode.txt" | head -n 12
    fi
    if [ -f "$ops" ]; then
      log "python/benchmarks/varlen.py --mode decode ${DECODE_ARGS:-}"
      # shellcheck disable=SC2086
      (cd python/benchmarks && FA2_TORCH_OPS="$ops" PYTHONPATH="$PWD/..:${PYTHONPATH:-}" timeout 600 python3 \
        varlen.py --mode decode ${DECODE_ARGS:-} --csv "$out/decode.csv" > "$out/decode.md" 2>&1) || status=1
      cat "$out/decode.md"
    fi
  fi
  if has train && [ -f "$ops" ]; then
    log "python/benchmarks/varlen.py --mode train ${TRAIN_ARGS:-}"
    # shellcheck disable=SC2086
    (cd python/benchmarks && FA2_TORCH_OPS="$ops" PYTHONPATH="$PWD/..:${PYTHONPATH:-}" timeout 600 python3 varlen.py \
      --mode train ${TRAIN_ARGS:-} --csv "$out/train.csv" > "$out/train.md" 2>&1) || status=1
    cat "$out/train.md"
  fi
  if has sanitize; then
    for tool in memcheck racecheck synccheck; do
      sanitize "decode_$tool" "$tool" 300 "$bin" "-tc=*float16*"
    done
    sanitize decode_bounds_memcheck memcheck 300 "$bin" "-tc=*whatever the index arrays hold*"
    for tool in memcheck synccheck; do
      sanitize "packed_$tool" "$tool" 300 "$bin" "-tc=*packed forward*"
      sanitize "packed_backward_$tool" "$tool" 300 "$bin" "-tc=*packed backward in float16*"
    done
    if [ -f "$ops" ]; then
      log "memcheck over test_varlen.py's decoding, paged and packed cases (PYTORCH_NO_CUDA_MEMORY_CACHING=1)"
      sanitize_pytest decode_pytest 600 "$ops" python/tests/test_varlen.py -k "decod or paged or packed"
    fi
  fi
}

phase_backward() {
  local parts="${BWD_PARTS:-build tests sanitize pytest bench}"
  local bin=step07_benchmark/step07_variant_gpu_tests rc=0
  if [[ " $parts " == *" build "* ]]; then
    local targets=(step07_bench step07_variant_gpu_tests)
    if python3 -c 'import torch' 2> /dev/null; then targets+=(fa2_torch_ops); fi
    FA2_ABLATIONS=1 configure_and_build "${targets[@]}"
  fi
  if [[ " $parts " == *" tests "* ]]; then
    log "GPU tests of every fast backward (timeout ${BWD_TEST_SECONDS:-900} s)"
    FA2_REQUIRE_GPU=1 timeout "${BWD_TEST_SECONDS:-900}" "$build/$bin" "-tc=${BWD_TEST_CASES:-*backward*,*deterministic*}" \
      --duration=true > "$out/backward_tests.log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || status=1
    echo "  exit $rc | $(grep -E "test cases:" "$out/backward_tests.log" | tail -n 1)" \
      "| $(grep -E "assertions:" "$out/backward_tests.log" | tail -n 1)"
    grep -E "ERROR|FAILED|timed out" "$out/backward_tests.log" | head -n 20
  fi
  if [[ " $parts " == *" sanitize "* ]]; then
    sanitize backward_memcheck memcheck "${BWD_SANITIZE_SECONDS:-300}" "$bin" "-tc=GPU: fast backwards on small ragged shapes"
    sanitize backward_synccheck synccheck "${BWD_SANITIZE_SECONDS:-300}" "$bin" "-tc=GPU: fast backwards on small ragged shapes"
  fi
  if [[ " $parts " == *" pytest "* && -f "$build/python/libfa2_torch_ops.so" ]]; then
    log "pytest: test_varlen.py, test_window.py"
    FA2_TORCH_OPS="$build/python/libfa2_torch_ops.so" FA2_REQUIRE_GPU=1 timeout 600 python3 -m pytest \
      python/tests/test_varlen.py python/tests/test_window.py -q -rs -p no:cacheprovider > "$out/pytest_backward.log" 2>&1 ||
      status=1
    tail -n 3 "$out/pytest_backward.log"
  fi
  [[ " $parts " == *" bench "* ]] || return 0
  local bench_args="${BWD_ARGS:---n=512,1024,4096,16384 --d=64,128 --pass=bwd --impl=v6b.3,v6b.4,v6b.5,v6b.6,v6b.7,v6b.8,v6b.9,v6b.10,v6b.11,v6b.12,v6b.13,v6b.14,v6b.15,v6b.17,v6b.18,v6b.19,v6b.4-det,v6b.6-det,v6b.8-det,v6b.9-det,v6b.10-det,v6b.11-det,v6b.12-det,v6b.13-det,v6b.14-det,v6b.15-det,v6b.17-det,v6b,v6b-det,v5,sdpa-fa2,sdpa-cudnn --baseline=v6b --repeat=3 --warmup-ms=10 --rep-ms=40 --no-ceilings}"
  log "step07_bench $bench_args"
  # shellcheck disable=SC2086
  timeout "${BWD_BENCH_SECONDS:-900}" "$build/step07_benchmark/step07_bench" --out "$out" $bench_args > "$out/step07_log.txt" 2>&1 || status=1
  sed -n '/^TFLOP\/s (/,/^$/p' "$out/step07_log.txt" | head -n 80
}

case "$phase" in
  test) phase_test ;;
  backward) phase_backward ;;
  decode) phase_decode ;;
  package) phase_package ;;
  bench-repeat) phase_bench_repeat ;;
  profile) phase_profile ;;
  sanitize) phase_sanitize ;;
  bench) phase_bench ;;
  all) phase_test; phase_sanitize; phase_bench ;;
esac
tar czf "/tmp/gpu_session_$$.tgz" -C "$out" --exclude=session.tgz . && mv "/tmp/gpu_session_$$.tgz" "$out/session.tgz"
log "done (status $status); logs in $out, all of them packed in $out/session.tgz"
exit "$status"
