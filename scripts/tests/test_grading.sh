#!/usr/bin/env bash
# The autograder, tested the way an instructor uses it (CI runs this): on a standard starter kit
#   1. solved (the kit with the solutions put back), packed by make_submission.sh: full marks;
#   2. unsolved, as students get it: zero on every coding part;
#   3. solved, then the article's bug 1 planted in step 5's region and one test file of step 1
#      deleted by the student: partial marks, the bug-1 catchers named among the failing tests,
#      and the deleted test still run (and passed, since step 1 is right);
# and the leak check:
#   4. a copy of this repository with one solution region pasted into a README as text: the kit
#      generator refuses it, naming the file;
# and the other two levels:
#   5. guided and full kits, solved and unsolved: full marks and zero on every part;
# and Gradescope's side:
#   6. the autograder zip (make_autograder_zip.sh) unpacked as Gradescope does, its run_autograder
#      run on the solved submission: results.json with full marks.
#   scripts/tests/test_grading.sh <work dir>
# Ends with one line per check ("grading: PASS ..."); exits non-zero when any fails.
set -uo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
[ $# -eq 1 ] || { echo "usage: $0 <work dir>" >&2; exit 2; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
mkdir -p "$1"
work="$(cd "$1" && pwd -P)"
summary=()
status=0
check() {  # check <name> <condition command...>
  local name="$1"
  shift
  if "$@"; then summary+=("grading: PASS $name"); else summary+=("grading: FAIL $name"); status=1; fi
}
score_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["score"])' "$1"; }
# parts <grade dir> <python condition on p (a part's summary) and key>: true when every part meets it
parts() {
  python3 - "$1/summary.json" "$2" << 'PY'
import json, sys
parts = json.load(open(sys.argv[1]))["parts"]
sys.exit(not all(eval(sys.argv[2], {}, {"p": p, "key": key}) for key, p in parts.items()))
PY
}

kit="$work/kit"
solved="$work/kit-solved"
rm -rf -- "$kit" "$solved" "$work"/*.tar.gz
"$root/scripts/make_starter_kit.sh" --level standard "$kit" > "$work/generate.log" || { cat "$work/generate.log"; exit 1; }
"$root/scripts/make_starter_kit.sh" --level standard "$solved" > /dev/null
"$root/scripts/restore_solutions.sh" "$solved" > /dev/null

echo "== 1. the solved kit gets full marks"
(cd "$solved" && scripts/make_submission.sh --code-only "$work/solved.tar.gz")
"$root/scripts/grade.sh" "$work/solved.tar.gz" "$work/grade-solved" > "$work/grade-solved.log" 2>&1
tail -n 12 "$work/grade-solved.log"
full() { parts "$work/grade-solved" 'p["passed"] == p["tests"] > 0 and abs(p["score"] - p["max_score"]) < 1e-6'; }
check "solved standard kit: $(score_of "$work/grade-solved/results.json" 2> /dev/null) / 60" full

echo "== 2. the unsolved kit gets zero on every coding part"
(cd "$kit" && scripts/make_submission.sh --code-only "$work/unsolved.tar.gz")
"$root/scripts/grade.sh" "$work/unsolved.tar.gz" "$work/grade-unsolved" > "$work/grade-unsolved.log" 2>&1
tail -n 12 "$work/grade-unsolved.log"
zero_everywhere() { parts "$work/grade-unsolved" 'p["passed"] == 0 and p["score"] == 0'; }
check "unsolved standard kit: $(score_of "$work/grade-unsolved/results.json" 2> /dev/null) / 60, every part 0" zero_everywhere

echo "== 3. bug 1 planted in step 5, a test file deleted: partial marks"
planted="$work/kit-bug1"
rm -rf -- "$planted"
cp -r "$solved" "$planted"
python3 - "$planted/step05_fa2_kernel/flash_fwd_kernel.hpp" << 'PY'
import sys
path = sys.argv[1]
text = open(path).read()
fixed = ("      const auto P_ij_v = P_ij.template to<T>();  // keep the cast: to<T>() returns a new tile\n"
         "      O_acc = dot(prog, P_ij_v, smem.V_j, alpha * O_acc, smem.stage);\n")
buggy = ("      P_ij.template to<T>();  // cast P to V's dtype before the dot\n"
         "      O_acc = dot(prog, P_ij, smem.V_j, alpha * O_acc, smem.stage);\n")
assert text.count(fixed) == 1, "the line to plant bug 1 in is not in step 5's kernel"
open(path, "w").write(text.replace(fixed, buggy))
PY
rm "$planted/step01_online_softmax/tests/test_online_softmax.cpp"
(cd "$planted" && scripts/make_submission.sh --code-only "$work/bug1.tar.gz")
"$root/scripts/grade.sh" "$work/bug1.tar.gz" "$work/grade-bug1" > "$work/grade-bug1.log" 2>&1
tail -n 12 "$work/grade-bug1.log"
bug1_score="$(score_of "$work/grade-bug1/results.json" 2> /dev/null)"
partial() { python3 -c 'import sys; s = float(sys.argv[1]); sys.exit(not 0 < s < 60)' "${bug1_score:-0}"; }
check "bug 1 planted: partial marks, $bug1_score / 60" partial
step05_zero() { parts "$work/grade-bug1" 'key != "step05_forward" or p["passed"] == 0'; }
check "bug 1 planted: step 5's forward does not compile in bfloat16, so it scores 0" step05_zero
bug1_named() { grep -q 'bug 1 catcher' "$work/grade-bug1/report.md" && grep -q 'dot: both operands must have the same element type' "$work/grade-bug1/report.md"; }
check "bug 1 planted: the report names the bug-1 catchers and the compiler's message" bug1_named
deleted_test_ran() {
  python3 - "$work/grade-bug1/results.json" << 'PY'
import json, sys
tests = json.load(open(sys.argv[1]))["tests"]
ran = [t for t in tests if t["name"].startswith("Step 1:") and "online softmax" in t["name"]]
sys.exit(not ran or not all(t["score"] == t["max_score"] for t in ran))
PY
}
check "the deleted step 1 test file still ran from the repository, and passed" deleted_test_ran
other_parts_full() { parts "$work/grade-bug1" 'key == "step05_forward" or p["passed"] == p["tests"]'; }
check "bug 1 costs step 5's forward only: every other part keeps full marks" other_parts_full

echo "== 4. a planted leak stops the generator"
copy="$work/leaky-repo"
rm -rf -- "$copy"
mkdir -p "$copy"
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$copy/")
python3 - "$copy" << 'PY'
import re, sys
root = sys.argv[1]
text = open(f"{root}/step01_online_softmax/online_softmax.hpp").read()
body = re.search(r"// BEGIN SOLUTION step01: the online update[^\n]*\n(.*?)// END SOLUTION step01\n", text, re.S).group(1)
with open(f"{root}/step07_benchmark/README.md", "a") as readme:
    readme.write("\nA note in passing:\n\n" + "\n".join("    " + line.strip() + "  // see step 1" for line in body.splitlines()) + "\n")
PY
if "$copy/scripts/make_starter_kit.sh" --level guided "$work/leaky-kit" > "$work/leak.log" 2>&1; then
  check "a planted leak is refused" false
else
  refused() { grep -q 'step07_benchmark/README.md:.*solution code of step01_online_softmax/online_softmax.hpp' "$work/leak.log"; }
  check "a planted leak is refused, naming the README and the region" refused
fi
grep 'README.md' "$work/leak.log" | head -n 2

echo "== 5. the guided and full kits, solved and unsolved"
for level in guided full; do
  rm -rf -- "$work/kit-$level" "$work/kit-$level-solved" "$work/$level"-*.tar.gz
  "$root/scripts/make_starter_kit.sh" --level "$level" "$work/kit-$level" > /dev/null
  "$root/scripts/make_starter_kit.sh" --level "$level" "$work/kit-$level-solved" > /dev/null
  "$root/scripts/restore_solutions.sh" "$work/kit-$level-solved" > /dev/null
  (cd "$work/kit-$level" && scripts/make_submission.sh --code-only "$work/$level-unsolved.tar.gz")
  (cd "$work/kit-$level-solved" && scripts/make_submission.sh --code-only "$work/$level-solved.tar.gz")
  "$root/scripts/grade.sh" "$work/$level-solved.tar.gz" "$work/grade-$level-solved" > "$work/grade-$level-solved.log" 2>&1
  "$root/scripts/grade.sh" "$work/$level-unsolved.tar.gz" "$work/grade-$level-unsolved" > "$work/grade-$level-unsolved.log" 2>&1
  tail -n 1 "$work/grade-$level-solved.log" "$work/grade-$level-unsolved.log"
  level_full() { parts "$work/grade-$level-solved" 'p["passed"] == p["tests"] > 0 and abs(p["score"] - p["max_score"]) < 1e-6'; }
  level_zero() { parts "$work/grade-$level-unsolved" 'p["passed"] == 0 and p["score"] == 0'; }
  check "$level kit: solved $(score_of "$work/grade-$level-solved/results.json" 2> /dev/null) / 60, every part full" level_full
  check "$level kit: unsolved $(score_of "$work/grade-$level-unsolved/results.json" 2> /dev/null) / 60, every part 0" level_zero
done

echo "== 6. Gradescope: the autograder zip and its run_autograder"
fake="$work/gradescope"
rm -rf -- "$fake" "$work/autograder.zip"
mkdir -p "$fake/source" "$fake/submission"
"$root/scripts/lib/grading/gradescope/make_autograder_zip.sh" "$work/autograder.zip"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$work/autograder.zip" "$fake/source"
chmod +x "$fake/source/run_autograder" "$fake/source/scripts/"*.sh "$fake/source/scripts/lib/grading/gradescope/"*
cp "$work/solved.tar.gz" "$fake/submission/"
AUTOGRADER_ROOT="$fake" "$fake/source/run_autograder" > "$work/gradescope.log" 2>&1
gradescope_full() { [ -f "$fake/results/results.json" ] && python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(abs(r["score"] - 60) > 1e-6 or not r["tests"])' "$fake/results/results.json"; }
check "Gradescope: run_autograder from the zip gives the solved submission $(score_of "$fake/results/results.json" 2> /dev/null) / 60" gradescope_full

printf '%s\n' "${summary[@]}"
exit "$status"
