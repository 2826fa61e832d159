#!/usr/bin/env bash
# The autograder, tested the way an instructor uses it (CI runs this). On a standard starter kit:
#   1. solved (the kit with the solutions put back), packed by make_submission.sh: full marks on
#      every part and idea;
#   2. unsolved, as students get it: zero on every coding part;
#   3. solved, then bugs planted as students make them: step 1's rescale, step 4's plain-kernel
#      barrier, step 5's causal mask and padded-key mask (both pasted into step 6's three variants
#      and step 7's ladder too, as a standard student pastes their step 5), a region of step 2's
#      backward that does not compile; one test file deleted: each bug costs its part's idea and
#      nothing else (step 5 its two ideas, step 2's backward the whole part, steps 6 and 7 nothing),
#      the compiler's message in the report, the deleted tests still run from the repository;
#   4. the solved submission reformatted, region by region in turn: every comment removed, tabs,
#      calls split over lines; or a comment after every statement (the barrier's included) and
#      comment lines between them: full marks;
#   5. the report and results.json: the seed recorded, hidden tests named only in the instructor's
#      report and after publishing on Gradescope, the written answers (check 1's answers.md answers
#      Q1 only) counted per question;
# and the leak check:
#   6. a copy of this repository with one solution region pasted into a README as text: the kit
#      generator refuses it, naming the file;
# and the other two levels:
#   7. guided and full kits, solved and unsolved: full marks and zero on every part;
# and Gradescope's side:
#   8. the autograder zip (make_autograder_zip.sh) unpacked as Gradescope does, its run_autograder
#      run on the solved submission: results.json with full marks, the seed and the score of check 1
#      (a regrade draws the same inputs).
#   scripts/tests/test_grading.sh <work dir>
# Ends with one line per check ("grading: PASS ..."); exits non-zero when any fails.
set -uo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
[ $# -eq 1 ] || { echo "usage: $0 <work dir>" >&2; exit 2; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
mkdir -p "$1"
work="$(cd "$1" && pwd -P)"
cases="$root/scripts/tests/grading_cases.py"
summary=()
status=0
check() {  # check <name> <condition command...>
  local name="$1"
  shift
  if "$@"; then summary+=("grading: PASS $name"); else summary+=("grading: FAIL $name"); status=1; fi
}
score_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["score"])' "$1"; }
# parts <grade dir> <python condition on p (a part's summary), key, lost (the ideas that lost points)>:
# true when every part meets it; prints the parts that do not
parts() {
  python3 - "$1/summary.json" "$2" << 'PY'
import json, sys
parts = json.load(open(sys.argv[1]))["parts"]
bad = []
for key, p in parts.items():
    lost = sorted(k for k, i in p["ideas"].items() if i["score"] < i["max_score"] - 1e-9)
    if not eval("(" + sys.argv[2] + ")", {}, {"p": p, "key": key, "lost": lost}):
        bad.append(f"{key}: {p['score']}/{p['max_score']}, ideas that lost points: {lost}")
print("\n".join("  not as expected: " + b for b in bad))
sys.exit(1 if bad else 0)
PY
}
full_marks='lost == [] and p["passed"] == p["tests"] > 0'
grade() {  # grade <archive> <out dir name>
  "$root/scripts/grade.sh" "$1" "$work/$2" > "$work/$2.log" 2>&1
  tail -n 11 "$work/$2.log"
}
pack() {  # pack <kit> <archive>
  rm -f -- "$2"
  (cd "$1" && scripts/make_submission.sh --code-only "$2")
}

kit="$work/kit"
solved="$work/kit-solved"
rm -rf -- "$kit" "$solved" "$work"/*.tar.gz
"$root/scripts/make_starter_kit.sh" --level standard "$kit" > "$work/generate.log" || { cat "$work/generate.log"; exit 1; }
"$root/scripts/make_starter_kit.sh" --level standard "$solved" > /dev/null
"$root/scripts/restore_solutions.sh" "$solved" > /dev/null

echo "== 1. the solved kit gets full marks"
# Its answers.md answers Q1 only: check 6 reads what the report says of the answers.
python3 - "$solved/answers.md" << 'PY'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace("## Q1\n\n_Your answer._", "## Q1\n\nThe first rescale factor is exp(0 - 2), so l comes out as 1 + exp(-3).", 1)
open(path, "w").write(text)
PY
rm -f -- "$work/solved.tar.gz"
(cd "$solved" && scripts/make_submission.sh "$work/solved.tar.gz")
grade "$work/solved.tar.gz" grade-solved
full() { parts "$work/grade-solved" "$full_marks"; }
check "solved standard kit: $(score_of "$work/grade-solved/results.json" 2> /dev/null) / 60, every part and idea full" full

echo "== 2. the unsolved kit gets zero on every coding part"
pack "$kit" "$work/unsolved.tar.gz"
grade "$work/unsolved.tar.gz" grade-unsolved
zero_everywhere() { parts "$work/grade-unsolved" 'p["passed"] == 0 and p["score"] == 0'; }
check "unsolved standard kit: $(score_of "$work/grade-unsolved/results.json" 2> /dev/null) / 60, every part 0" zero_everywhere

echo "== 3. bugs planted in steps 1, 2, 4 and 5 (step 5's pasted into steps 6 and 7), a test file deleted"
planted="$work/kit-bugs"
rm -rf -- "$planted"
cp -r "$solved" "$planted"
python3 "$cases" plant "$planted" rescale barrier causal padded compile
rm "$planted/step01_online_softmax/tests/test_online_softmax.cpp"
pack "$planted" "$work/bugs.tar.gz"
grade "$work/bugs.tar.gz" grade-bugs
each_bug_costs_its_idea() {
  parts "$work/grade-bugs" '(key == "step01" and lost == ["update"]) or (key == "step04" and lost == ["plain_barriers"]) or
    (key == "step05_forward" and lost == ["causal", "padded"]) or (key == "step02_backward" and p["score"] == 0) or
    (key not in ("step01", "step02_backward", "step04", "step05_forward") and lost == [])'
}
check "bugs planted: each costs its own part's idea only, a compile error its part, $(score_of "$work/grade-bugs/results.json" 2> /dev/null) / 60" each_bug_costs_its_idea
deleted_test_ran() {
  python3 - "$work/grade-bugs/all_tests.json" << 'PY'
import json, sys
tests = json.load(open(sys.argv[1]))
ran = [n for n, t in tests.items() if "step01" in t["labels"] and n.startswith("masked scores of minus infinity")]
sys.exit(not ran)
PY
}
check "the deleted step 1 test file still ran from the repository" deleted_test_ran
rebase_noted() { grep -q 'graded as the reference step05_fa2_kernel/flash_fwd_kernel.hpp with your edit' "$work/grade-bugs/report.md"; }
check "the report says how the pasted regions were graded" rebase_noted
compiler_named() { grep -q 'a_name_nobody_declared' "$work/grade-bugs/report.md"; }
check "the report quotes the compiler's error" compiler_named

echo "== 4. correct code, reformatted, gets full marks"
python3 "$cases" reformat "$work/solved.tar.gz" "$work/solved-reformatted.tar.gz" mixed
grade "$work/solved-reformatted.tar.gz" grade-reformatted
reformatted_full() { parts "$work/grade-reformatted" "$full_marks"; }
check "the solved submission reformatted (comments removed, tabs, calls over lines; comments added): $(score_of "$work/grade-reformatted/results.json" 2> /dev/null) / 60, every part and idea full" reformatted_full

echo "== 5. seeds, hidden tests and answers"
seed_recorded() {
  python3 - "$work" << 'PY'
import json, sys
w = sys.argv[1]
a, b = (json.load(open(f"{w}/{d}/summary.json"))["seed"] for d in ("grade-solved", "grade-bugs"))
report = open(f"{w}/grade-solved/report.md").read()
sys.exit(not (isinstance(a, int) and a != b and f"FA2_SEED={a}" in report))
PY
}
check "each grading records its seed, derived from the submission" seed_recorded
hidden_kept_back() {
  python3 - "$work/grade-bugs" << 'PY'
import json, re, sys
d = sys.argv[1]
results = json.load(open(f"{d}/results.json"))["tests"]
hidden = [t for t in results if "hidden test:" in t["name"]]
student, instructor = open(f"{d}/report.md").read(), open(f"{d}/report_instructor.md").read()
names = [t["name"].split("hidden test: ", 1)[1] for t in hidden]
ok = hidden and all(t["visibility"] == "after_published" and t["max_score"] == 0 for t in hidden)
ok = ok and all(n in instructor and n not in student for n in names) and "a hidden test" in student
sys.exit(not ok)
PY
}
check "hidden tests: named in report_instructor.md and, after publishing, on Gradescope; not in report.md" hidden_kept_back
answers_counted() {
  python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["answers"]; sys.exit(not (a["present"] and a["answered"] == 1 and "Q2" in a["missing"] and "Q1" not in a["missing"]))' \
    "$work/grade-solved/summary.json" && grep -q "1 of .* required questions answered" "$work/grade-solved/report.md"
}
check "answers.md: each question's section counted, the unanswered ones named" answers_counted

echo "== 6. a planted leak stops the generator"
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

echo "== 7. the guided and full kits, solved and unsolved"
for level in guided full; do
  rm -rf -- "$work/kit-$level" "$work/kit-$level-solved" "$work/$level"-*.tar.gz
  "$root/scripts/make_starter_kit.sh" --level "$level" "$work/kit-$level" > /dev/null
  "$root/scripts/make_starter_kit.sh" --level "$level" "$work/kit-$level-solved" > /dev/null
  "$root/scripts/restore_solutions.sh" "$work/kit-$level-solved" > /dev/null
  pack "$work/kit-$level" "$work/$level-unsolved.tar.gz"
  pack "$work/kit-$level-solved" "$work/$level-solved.tar.gz"
  grade "$work/$level-solved.tar.gz" "grade-$level-solved" > /dev/null
  grade "$work/$level-unsolved.tar.gz" "grade-$level-unsolved" > /dev/null
  tail -n 1 "$work/grade-$level-solved.log" "$work/grade-$level-unsolved.log"
  level_full() { parts "$work/grade-$level-solved" "$full_marks"; }
  level_zero() { parts "$work/grade-$level-unsolved" 'p["passed"] == 0 and p["score"] == 0'; }
  check "$level kit: solved $(score_of "$work/grade-$level-solved/results.json" 2> /dev/null) / 60, every part and idea full" level_full
  check "$level kit: unsolved $(score_of "$work/grade-$level-unsolved/results.json" 2> /dev/null) / 60, every part 0" level_zero
done

echo "== 8. Gradescope: the autograder zip and its run_autograder (a regrade of check 1)"
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
same_as_check_1() {
  python3 - "$fake/results/results.json" "$work/grade-solved/summary.json" << 'PY'
import json, sys
gradescope, first = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sys.exit(not (f"FA2_SEED={first['seed']}" in gradescope["output"] and abs(gradescope["score"] - first["score"]) < 1e-9))
PY
}
check "a regrade of the same archive (Gradescope's) uses check 1's seed and gives its score" same_as_check_1

printf '%s\n' "${summary[@]}"
exit "$status"
