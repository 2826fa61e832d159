# scripts/test.sh's closing lines, apart so that they can be tested on recorded logs
# (scripts/tests/test_test_summary.sh, on scripts/tests/fixtures/test_summary/). Sourced, like
# deps.sh; needs bash and any awk (mawk, gawk or busybox).
#
#   fa2_test_summary BUILD_DIR CTEST_STATUS [PYTHON_STATUS [PYTHON_LINE]]
#
# Reads what ctest left in BUILD_DIR: ctest.log (its output, as scripts/test.sh tees it),
# Testing/Temporary/LastTest.log (every test's output, where the skip reasons are) and
# fa2_cuda_summary.txt (CMake's line about the GPU tests). Prints the closing lines:
#   ctest: 145 tests: 144 passed, 1 skipped, 0 failed     (the failed tests named after a colon)
#   one line about the GPU tests and the skipped tests, each skip with its reason: GPU tests
#     ("GPU tests: no NVIDIA driver on this machine"), the lab-only check in a build without the
#     lab ("lab-only: ..."), any other ("other: needs ~17 GB of free GPU memory")
#   PYTHON_LINE, when given (what happened to the Python tests)
# The last two lines are the ones .ci/run quotes. Returns 0 exactly when no test failed: 1 when
# pytest failed (PYTHON_STATUS not 0), else CTEST_STATUS when it is not 0, else 1 when ctest's
# log names a failed test or holds no result at all, else 0. A skip is never a failure. The
# lines are printed whatever the logs hold: nothing in here stops on a missing file or a
# search that finds nothing, even when the caller runs under set -euo pipefail.
fa2_test_summary() (
  set +e +o pipefail
  dir="$1"
  ctest_status="${2:-0}"
  python_status="${3:-0}"
  python_line="${4:-}"
  ctest_log="$dir/ctest.log"
  last_test="$dir/Testing/Temporary/LastTest.log"
  cuda=""
  [ -f "$dir/fa2_cuda_summary.txt" ] && cuda="$(head -n 1 "$dir/fa2_cuda_summary.txt")"
  [ -f "$ctest_log" ] || ctest_log=/dev/null
  have_last_test=1
  [ -f "$last_test" ] || { last_test=/dev/null; have_last_test=0; }
  FA2_DIR="$dir" FA2_CTEST_STATUS="$ctest_status" FA2_CUDA="$cuda" FA2_HAVE_LAST_TEST="$have_last_test" \
    awk "$_FA2_TEST_SUMMARY_AWK" "$ctest_log" "$last_test"
  ctest_failed=$?
  [ -n "$python_line" ] && printf '%s\n' "$python_line"
  if [ "$python_status" != 0 ]; then return 1; fi
  if [ "$ctest_status" != 0 ]; then return "$ctest_status"; fi
  if [ "$ctest_failed" != 0 ]; then return 1; fi
  return 0
)

# The parser: file 1 is ctest.log, file 2 LastTest.log (or /dev/null). It trusts the end of
# ctest.log, after the last "Total Test time (real)": the "did not run" and "FAILED" lists there
# are ctest's own, while a failed test's output above them (--output-on-failure) may hold the
# output of another ctest. Without that end (ctest interrupted), it counts the progress lines.
# Exits 1 when a test failed or the log holds no result.
# shellcheck disable=SC2016 # an awk program: its $ are awk's
_FA2_TEST_SUMMARY_AWK='
function sorted_unique_join(list, n, sep,    a, b, t, out, last) {
  for (a = 2; a <= n; a++) {
    t = list[a]
    for (b = a - 1; b >= 1 && list[b] > t; b--) list[b + 1] = list[b]
    list[b + 1] = t
  }
  out = ""; last = ""
  for (a = 1; a <= n; a++) {
    if (a > 1 && list[a] == last) continue
    out = out (out == "" ? "" : sep) list[a]; last = list[a]
  }
  return out
}
# "\t319 - name (Failed) step07 variants" (newer ctest adds the labels): the name and the status.
function parse_entry(entry,    rest) {
  sub(/^\t */, "", entry)
  rest = substr(entry, index(entry, " - ") + 3)
  entry_status = ""
  entry_name = rest
  if (match(rest, / \([A-Za-z][A-Za-z_ ]*\)( +[^()]*)?$/)) {
    entry_name = substr(rest, 1, RSTART - 1)
    entry_status = substr(rest, RSTART + 2)
    sub(/\).*$/, "", entry_status)
  }
}
BEGIN {
  dir = ENVIRON["FA2_DIR"]; ctest_status = ENVIRON["FA2_CTEST_STATUS"] + 0
  cuda = ENVIRON["FA2_CUDA"]; have_last_test = ENVIRON["FA2_HAVE_LAST_TEST"] + 0
  total = -1; failed_in_line = 0; nf = 0; ns = 0; section = ""
  np = 0; npf = 0; nps = 0
}
{ file = FILENAME == ARGV[1] ? 1 : 2 }
{ sub(/\r$/, "") }
file == 1 && /^Total Test time \(real\)/ { nf = 0; ns = 0; section = ""; next }
file == 1 && /^[0-9]+% tests passed/ {
  # "99% tests passed, 1 tests failed out of 383", "100% tests passed out of 145" (newer ctest)
  total = $NF + 0; failed_in_line = 0
  if (match($0, /, [0-9]+ tests? failed/)) failed_in_line = substr($0, RSTART + 2, RLENGTH - 2) + 0
  next
}
file == 1 && /^The following tests did not run:/ { section = "skip"; next }
file == 1 && /^The following tests FAILED:/ { section = "fail"; next }
file == 1 && section != "" && /^\t/ {
  parse_entry($0)
  if (section == "fail") {
    failed_name[++nf] = entry_name (entry_status == "Failed" || entry_status == "" ? "" : " (" entry_status ")")
  } else {
    skipped_name[++ns] = entry_name; skipped_status[ns] = entry_status
  }
  next
}
file == 1 && section != "" { section = "" }
file == 1 && /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
  # A progress line, for a log without its end: "  3/145 Test #460: name ....   Passed    0.01 sec"
  line = $0; sub(/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /, "", line)
  np++
  if (match(line, / \.* *\*\*\*[A-Z]/)) {
    name = substr(line, 1, RSTART - 1); st = substr(line, RSTART + RLENGTH - 1)
    sub(/ +[0-9.]+ sec.*$/, "", st); sub(/\.+$/, "", name)
    if (st ~ /^Skipped/) { p_skipped[++nps] = name } else { p_failed[++npf] = name (st ~ /^Failed/ ? "" : " (" st ")") }
  }
  next
}
# LastTest.log: "12/145 Test: name" opens a test block; its "SKIPPED: reason" lines are the reasons.
file == 2 && /^[0-9]+\/[0-9]+ Test: / { current = substr($0, index($0, " Test: ") + 7); next }
file == 2 && /^SKIPPED: / && current != "" {
  r = substr($0, 10)
  if (!((current SUBSEP r) in seen_reason)) { seen_reason[current SUBSEP r] = 1; reasons[current] = reasons[current] "\n" r }
  next
}
END {
  if (total < 0) {
    # No end of the log: the progress lines are all there is.
    total = np; nf = 0; ns = 0
    for (i = 1; i <= npf; i++) failed_name[++nf] = p_failed[i]
    for (i = 1; i <= nps; i++) { skipped_name[++ns] = p_skipped[i]; skipped_status[ns] = "Skipped" }
    if (np == 0) total = -1
  }
  failed = nf > failed_in_line ? nf : failed_in_line
  log_name = dir "/ctest.log"

  # Line 1: the counts, and the failed tests by name.
  if (total < 0) {
    print "ctest: no test results in " log_name " (ctest exit status " ctest_status ")"
  } else {
    passed = total - failed - ns; if (passed < 0) passed = 0
    line = "ctest: " total " tests: " passed " passed, " ns " skipped, " failed " failed"
    if (nf > 0) {
      names = ""
      for (i = 1; i <= nf && i <= 5; i++) names = names (i > 1 ? "; " : "") failed_name[i]
      if (nf > 5) names = names "; and " (nf - 5) " more (" log_name ")"
      line = line ": " names
    }
    if (ctest_status != 0 && failed == 0) line = line ", but ctest exited with status " ctest_status " (see " log_name ")"
    print line
  }

  # Line 2: the GPU tests and the skipped tests, each skip with its reason.
  ng = 0; nl = 0; no = 0; nu = 0; unknown_names = ""
  for (i = 1; i <= ns; i++) {
    name = skipped_name[i]
    if (skipped_status[i] == "Disabled") { other[++no] = "disabled (the DISABLED property): " name; continue }
    if (!(name in reasons)) { nu++; if (nu <= 3) unknown_names = unknown_names (nu > 1 ? "; " : "") name; continue }
    k = split(substr(reasons[name], 2), rs, "\n")
    for (j = 1; j <= k; j++) {
      r = rs[j]
      if (r ~ /^GPU test: /) { sub(/^GPU test: /, "", r); sub(/ \(set FA2_REQUIRE_GPU=1.*$/, "", r); gpu[++ng] = r }
      else if (r ~ /FA2_BUILD_ABLATIONS/ || r ~ /in the lab library/) lab[++nl] = r
      else other[++no] = r
    }
  }
  if (nu > 0) {
    why_unknown = (have_last_test ? "no SKIPPED line in Testing/Temporary/LastTest.log" : "no Testing/Temporary/LastTest.log") \
      " for " (nu > 3 ? unknown_names "; and " (nu - 3) " more" : unknown_names) "; see ctest --test-dir " dir " -V"
    other[++no] = why_unknown
  }
  why = ""
  if (ng > 0) why = "GPU tests: " sorted_unique_join(gpu, ng, ";")
  if (nl > 0) why = why (why == "" ? "" : "; ") "lab-only: " sorted_unique_join(lab, nl, ";")
  if (no > 0) why = why (why == "" ? "" : "; ") "other: " sorted_unique_join(other, no, ";")
  skipped_text = ns " test" (ns == 1 ? "" : "s") " skipped (" why ")"
  gpu_built = (cuda ~ /^GPU tests built/)
  if (cuda ~ /^GPU tests not built/) {
    line = cuda
    if (ns > 0) line = line "; " skipped_text
  } else if (ns > 0) {
    line = skipped_text
    if (gpu_built && ng == 0 && nu == 0) line = line "; GPU tests: none skipped, they ran on this machine'"'"'s GPU"
  } else if (total < 0) {
    line = cuda != "" ? cuda : "GPU tests: no test results"
  } else {
    line = "GPU tests: none skipped, they ran on this machine'"'"'s GPU"
  }
  print line
  exit (failed > 0 || total < 0) ? 1 : 0
}
'
