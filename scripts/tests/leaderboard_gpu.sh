#!/usr/bin/env bash
# The leaderboard on a GPU, for the maintainers (CI has no GPU; scripts/tests/test_leaderboard.sh
# tests the host path): builds preset default (or --preset sm90) and runs scripts/leaderboard.sh on
#   1. this repository's solution (--solution): step 5's kernel, then the ladder's v4;
#   2. a solved standard kit (make_starter_kit.sh, restore_solutions.sh, make_submission.sh
#      --code-only): step 5's kernel;
#   3. the same submission with the checker's self-tests on the device, 'replay' (a planted
#      cached-output cheat) and 'unwritten' (the last query of each head never written): both rejected;
# then prints the CSV rows and the ranking.
#   scripts/tests/leaderboard_gpu.sh <work dir> [--preset default|sm90]
# Needs an NVIDIA GPU (sm_80 or newer) and nvcc; with PyTorch in the python3 on PATH the rows get
# SDPA's time (otherwise their notes say why). CUDAARCHS=90 before the first run builds the CUDA
# code for Hopper only, which is faster. The build folder (<work dir>/build) is kept between runs.
# Ends with one line per check ("leaderboard-gpu: PASS ..."); exits non-zero when any fails.
set -uo pipefail
usage() { sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
preset=default
work_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --preset) [ $# -ge 2 ] || { echo "leaderboard_gpu.sh: --preset needs a value" >&2; exit 2; }; preset="$2"; shift ;;
    --preset=*) preset="${1#*=}" ;;
    -*) echo "leaderboard_gpu.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$work_arg" ] || { echo "leaderboard_gpu.sh: one work dir only" >&2; exit 2; }; work_arg="$1" ;;
  esac
  shift
done
[ -n "$work_arg" ] || { echo "usage: $0 <work dir> [--preset default|sm90]" >&2; exit 2; }
case "$preset" in
  default | sm90) ;;
  *) echo "leaderboard_gpu.sh: --preset: got '$preset', must be default or sm90" >&2; exit 2 ;;
esac
command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1 ||
  { echo "leaderboard_gpu.sh: no NVIDIA GPU here (nvidia-smi -L failed); test_leaderboard.sh tests the host path" >&2; exit 1; }
command -v nvcc > /dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "leaderboard_gpu.sh: nvcc not found: the GPU path needs the CUDA toolkit" >&2; exit 1; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
mkdir -p "$work_arg"
work="$(cd "$work_arg" && pwd -P)"
summary=()
status=0
check() {  # check <name> <condition command...>
  local name="$1"
  shift
  if "$@"; then summary+=("leaderboard-gpu: PASS $name"); else summary+=("leaderboard-gpu: FAIL $name"); status=1; fi
}
csv="$work/leaderboard-gpu.csv"
field() {  # field <row number, 1 = first data row> <column>
  python3 - "$csv" "$1" "$2" << 'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
n = int(sys.argv[2])
print(rows[n - 1][sys.argv[3]] if len(rows) >= n else "")
PY
}
positive() { python3 -c 'import sys; sys.exit(not float(sys.argv[1] or 0) > 0)' "$1"; }
started=$SECONDS
nvidia-smi -L

kit="$work/kit-solved"
"$root/scripts/make_starter_kit.sh" --level standard "$kit" > "$work/generate.log" || { cat "$work/generate.log"; exit 1; }
"$root/scripts/restore_solutions.sh" "$kit" > /dev/null || exit 1
(cd "$kit" && scripts/make_submission.sh --code-only "$work/solved.tar.gz") || exit 1
rm -f -- "$csv"  # this script's own CSV from an earlier run
board=("$root/scripts/leaderboard.sh" --preset "$preset" --work "$work/build" --csv "$csv")

echo "== 1. the repository's solution: step 5's kernel and the ladder's v4"
"${board[@]}" --solution 2>&1 | tee "$work/solution-step5.log"
check "solution, step5: ranked ($(field 1 status): $(field 1 reason))" test "$(field 1 status)" = ranked
on_gpu() { [ "$(field 1 path)" = gpu ] && positive "$(field 1 median_ms)"; }
check "  ... timed on the GPU: $(field 1 device), $(field 1 median_ms) ms, $(field 1 tflops) TFLOP/s" on_gpu
check "  ... SM clock read: $(field 1 sm_mhz_min)..$(field 1 sm_mhz_max) MHz" positive "$(field 1 sm_mhz_min)"
sdpa_or_why() { [ -n "$(field 1 sdpa_ms)" ] || [[ "$(field 1 notes)" == *"PyTorch SDPA columns absent"* ]]; }
check "  ... SDPA timed ($(field 1 sdpa_ms) ms, $(field 1 sdpa_backend), speed vs SDPA $(field 1 speed_vs_sdpa)) or the notes say why" \
  sdpa_or_why
"${board[@]}" --solution --kernel v4 2>&1 | tee "$work/solution-v4.log"
check "solution, v4: ranked ($(field 2 status): $(field 2 reason))" test "$(field 2 status)" = ranked
v4_faster() { python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$(field 2 median_ms)" "$(field 1 median_ms)"; }
check "  ... faster than step 5's kernel, as the record has it: $(field 2 median_ms) ms < $(field 1 median_ms) ms" v4_faster

echo "== 2. the solved standard kit's submission"
"${board[@]}" --student solved-kit "$work/solved.tar.gz" 2>&1 | tee "$work/solved.log"
check "solved standard kit, step5: ranked ($(field 3 status): $(field 3 reason))" test "$(field 3 status)" = ranked

echo "== 3. the checker's self-tests on the device"
"${board[@]}" --student cheat-replay --self-test replay "$work/solved.tar.gz" 2>&1 | tee "$work/replay.log"
replayed() { [ "$(field 4 status)" = rejected ] && [[ "$(field 4 reason)" == "call 1: "*"returned a cached output"* ]]; }
check "replay: rejected as a cached output ($(field 4 reason | cut -c1-100))" replayed
"${board[@]}" --student cheat-unwritten --self-test unwritten "$work/solved.tar.gz" 2>&1 | tee "$work/unwritten.log"
unwritten() { [ "$(field 5 status)" = rejected ] && [[ "$(field 5 reason)" == "call 0: "*"still hold the NaN poison"* ]]; }
check "unwritten: rejected, the poison found ($(field 5 reason | cut -c1-100))" unwritten

echo "== the CSV"
cat "$csv"
echo
"$root/scripts/leaderboard.sh" --rank "$csv"
printf '%s\n' "${summary[@]}"
echo "leaderboard-gpu: $((SECONDS - started)) s"
exit $status
