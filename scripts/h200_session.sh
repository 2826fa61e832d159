#!/usr/bin/env bash
# Developer tool: what we run on the lent H200 (device tool), in as few calls as possible.
#   scripts/h200_session.sh build-test [OUT]   configure (sm90 + Torch), build all, every test with
#                                              FA2_REQUIRE_GPU=1, compute-sanitizer memcheck/racecheck
#   scripts/h200_session.sh bench [OUT]        step07_bench full sweep, ncu on the key kernels, SASS check
#   scripts/h200_session.sh sanitize [OUT]     build, every test, then compute-sanitizer over whole GPU suites
#   scripts/h200_session.sh round [OUT]        one tuning round: build, GPU tests of steps 5-7, sanitizers
#                                              on the new kernels, a focused benchmark (STEP07_ARGS)
# Logs and results land in OUT (default ./h200_out). Needs a GPU; not part of CI.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
phase="${1:?usage: h200_session.sh build-test|bench [OUT]}"
out="${2:-./h200_out}"
mkdir -p "$out"
build=build/sm90
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)

log() { echo "[$(date +%H:%M:%S)] $*"; }
configure_and_build() {
  log "configure + build"
  cmake --preset sm90 -DCMAKE_PREFIX_PATH="$torch_prefix" > "$out/configure.log" 2>&1 || { tail -n 40 "$out/configure.log"; exit 1; }
  cmake --build --preset sm90 -j "$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error|FAILED" -A5 "$out/build.log" | head -n 60; exit 1; }
}
gpu_ctest() {  # extra ctest arguments
  log "ctest (FA2_REQUIRE_GPU=1) $*"
  FA2_REQUIRE_GPU=1 ctest --preset sm90 -j 8 --timeout 900 "$@" > "$out/ctest.log" 2>&1
  ctest_rc=$?
  grep -E "tests passed|Failed|\*\*\*" "$out/ctest.log" | tail -n 20
}
san() {  # name tool seconds binary [doctest filters...]
  local name=$1 tool=$2 secs=$3 bin=$4; shift 4
  FA2_REQUIRE_GPU=1 timeout "$secs" compute-sanitizer --tool "$tool" --error-exitcode 99 "$build/$bin" "$@" > "$out/san_${name}.log" 2>&1
  echo "  $name ($tool): rc=$? | $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/san_${name}.log" | tail -n 1) | $(grep -E "test cases:" "$out/san_${name}.log" | tail -n 1)"
}
# The device tool brings back at most 8 files: everything goes into one archive, and the few
# files worth reading at once stay beside it.
pack() {  # archive-name keep-file...
  local name=$1; shift
  local keep=("$@")
  tar czf "/tmp/$name.tgz" -C "$out" . && mv "/tmp/$name.tgz" "$out/"
  for f in "$out"/*; do
    local base; base=$(basename "$f")
    [ "$base" = "$name.tgz" ] && continue
    local k; local wanted=0
    for k in "${keep[@]}"; do [ "$base" = "$k" ] && wanted=1; done
    [ $wanted = 1 ] || rm -rf "$f"
  done
}

if [ "$phase" = "build-test" ]; then
  {
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv
    nvcc --version | tail -n 2
    cmake --version | head -n 1
    python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' 2>&1
  } > "$out/env.txt" 2>&1
  cat "$out/env.txt"
  configure_and_build
  gpu_ctest
  log "compute-sanitizer"
  san step04_memcheck memcheck 300 step04_weighted_sum/step04_gpu_tests
  san step05_memcheck memcheck 300 step05_fa2_kernel/step05_gpu_tests "-tce=*2^31*"
  san step06_memcheck memcheck 300 step06_tests_bugs/step06_gpu_tests "-tc=*padded keys vote*,*harness*"
  san step07_memcheck memcheck 300 step07_benchmark/step07_gpu_tests
  san step07v_memcheck memcheck 300 step07_benchmark/step07_variant_gpu_tests "-tc=*small ragged*,GPU: ladder variants handle*"
  san step04_racecheck racecheck 300 step04_weighted_sum/step04_gpu_tests
  san step05_racecheck racecheck 300 step05_fa2_kernel/step05_gpu_tests "-tc=GPU and host paths*"
  san step07v_racecheck racecheck 300 step07_benchmark/step07_variant_gpu_tests "-tc=*small ragged*"
  pack build_test ctest.log env.txt
  exit $ctest_rc
fi

if [ "$phase" = "bench" ]; then
  [ -x "$build/step07_benchmark/step07_bench" ] || { echo "build first (phase build-test)"; exit 1; }
  log "SASS: tensor-core, ldmatrix and cp.async instructions per kernel"
  cuobjdump -sass "$build/step07_benchmark/step07_bench" 2>/dev/null | awk '
    /Function :/ { name = $3 }
    /HMMA/ { hmma[name]++ } /LDSM/ { ldsm[name]++ } /LDGSTS/ { ldgsts[name]++ } /LDL|STL/ { local[name]++ }
    END { for (n in hmma) printf "%6d HMMA %5d LDSM %5d LDGSTS %4d LDL/STL  %s\n", hmma[n], ldsm[n], ldgsts[n], local[n], substr(n, 1, 150) }
  ' | sort -k9 > "$out/sass_counts.txt"
  head -n 40 "$out/sass_counts.txt" | cut -c1-200
  log "benchmark"
  bash step07_benchmark/run_h200.sh "$out" > "$out/bench_console.log" 2>&1
  bench_rc=$?
  tail -n 80 "$out/bench_console.log"
  log "ncu (clocks left alone)"
  prof() {  # name kernel-regex bench-args...
    local name=$1 kre=$2; shift 2
    timeout 200 ncu --clock-control none --kernel-name-base demangled -k "regex:$kre" --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis_Tables \
      --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum,smsp__inst_executed_op_ldsm.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
      "$build/step07_benchmark/step07_bench" --n=4096 --d=64 --causal=no --quick --no-ceilings "$@" > "$out/ncu_${name}.txt" 2>&1
    echo "  ncu $name: rc=$?"
    grep -E "Duration|hmma_cycles_active|bank_conflicts|wavefronts_mem_shared_op_ldsm|inst_executed_op_ldsm|warps_active|Registers Per|Achieved Occupancy|Compute \(SM\) Throughput|Memory Throughput" "$out/ncu_${name}.txt" | head -n 14
  }
  prof step05_16x16 "FlashFwdKernel" --impl=ours16
  prof ladder_v4 "LadderKernel" --impl=v4
  prof fast_v5 "fast_fwd_kernel" --impl=v5
  pack bench step07_log.txt step07_results.csv step07_tflops_d64.svg step07_tflops_d128.svg sass_counts.txt
  exit $bench_rc
fi
if [ "$phase" = "sanitize" ]; then
  configure_and_build
  gpu_ctest
  log "compute-sanitizer over whole suites"
  san step05_race racecheck 120 step05_fa2_kernel/step05_gpu_tests "-tce=*2^31*"
  san step06_mem memcheck 100 step06_tests_bugs/step06_gpu_tests
  san step07v_mem memcheck 120 step07_benchmark/step07_variant_gpu_tests
  san common_mem memcheck 30 common/common_gpu_tests
  pack sanitize ctest.log
  exit $ctest_rc
fi

if [ "$phase" = "round" ]; then
  configure_and_build
  gpu_ctest -L "step05|step06|step07"
  log "compute-sanitizer on the changed kernels"
  for tool in memcheck racecheck; do
    san "fast_$tool" $tool 240 step07_benchmark/step07_variant_gpu_tests "-tc=*small ragged*"
    san "step05_$tool" $tool 240 step05_fa2_kernel/step05_gpu_tests "-tc=GPU and host paths*,GPU: strided*"
  done
  log "benchmark: ${STEP07_ARGS:-}"
  # shellcheck disable=SC2086
  "$build/step07_benchmark/step07_bench" --out "$out" ${STEP07_ARGS:-} > "$out/step07_log.txt" 2>&1
  bench_rc=$?
  sed -n '/^not timed:/,/^$/p' "$out/step07_log.txt" | head -n 20
  sed -n '/^TFLOP\/s (/,/^$/p' "$out/step07_log.txt"
  pack round step07_log.txt ctest.log
  exit $(( ctest_rc != 0 ? ctest_rc : bench_rc ))
fi
echo "unknown phase $phase"; exit 2
