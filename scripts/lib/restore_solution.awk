# Prints a file (second argument) with the body of each of its solution regions taken from
# another file (first argument): the region with the same BEGIN line (indentation aside), the
# n-th such region for the n-th occurrence. Used two ways:
#   restore_solutions.sh   solution file -> starter-kit file: the round trip (-v exact=1 also
#                          requires both files to have the same regions, in the same order)
#   Fa2FillRegions.cmake   step05's kernel -> a copy of it (a step06 twin, step07's ladder), so
#                          that the copies compile with whatever step05's regions hold
#   awk -f restore_solution.awk -v file=<name for messages> [-v exact=1] <from> <into>
function trim(s) {
  sub(/^[ \t]+/, "", s)
  sub(/[ \t]+$/, "", s)
  return s
}
function is_begin(line) { return line ~ /^[ \t]*\/\/ BEGIN SOLUTION step[0-9][0-9]/ }
function is_end(line) { return line ~ /^[ \t]*\/\/ END SOLUTION/ }
function fail(message) {
  print file ": " message > "/dev/stderr"
  failed = 1
  exit 1
}

FNR == NR {  # the file the bodies come from
  if (in_region) {
    if (is_end($0)) in_region = 0
    else body[key, seen[key]] = body[key, seen[key]] $0 "\n"
  } else if (is_begin($0)) {
    key = trim($0)
    seen[key]++
    order[++n] = key
    body[key, seen[key]] = ""
    in_region = 1
  }
  next
}

inside {  # drop the body here, print the other file's before END
  if (is_end($0)) {
    printf "%s", body[key, used[key]]
    print
    inside = 0
  }
  next
}

{ print }

is_begin($0) {
  key = trim($0)
  used[key]++
  ++k
  if (!((key, used[key]) in body)) fail("no region '" key "' (occurrence " used[key] ") in the file the code comes from")
  if (exact && order[k] != key) fail("region " k " is '" key "' here but '" order[k] "' in the solution")
  inside = 1
}

END {
  if (failed) exit 1
  if (exact && k != n) fail("this file has " k " solution region(s), the solution " n)
}
