# Prints a file (second argument) with the body of each of its solution regions taken from
# another file (first argument): the region with the same BEGIN line (indentation aside), the
# n-th such region for the n-th occurrence. Used two ways:
#   restore_solutions.sh   solution file -> starter-kit file: the round trip (-v exact=1 also
#                          requires both files to have the same regions, in the same order)
#   Fa2FillRegions.cmake   step05's kernel -> a copy of it (a step06 twin, step07's ladder), so
#                          that the copies compile with whatever step05's regions hold; a region
#                          of the copy that step05 does not have keeps its own body, and a body
#                          moves to the copy's indentation
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

function indent_of(line) {
  match(line, /^[ \t]*/)
  return substr(line, 1, RLENGTH)
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
    indent[key, seen[key]] = indent_of($0)
    in_region = 1
  }
  next
}

inside {  # replace the body here by the other file's, printed before END
  if (is_end($0)) {
    nlines = split(body[key, used[key]], lines, "\n")
    from = indent[key, used[key]]
    for (i = 1; i < nlines; ++i) {
      line = lines[i]
      if (substr(line, 1, length(from)) == from) line = here substr(line, length(from) + 1)
      print line
    }
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
  if (!((key, used[key]) in body)) {
    if (exact) fail("no region '" key "' (occurrence " used[key] ") in the solution")
    next  # a region of this file's own: its body stays
  }
  if (exact && order[k] != key) fail("region " k " is '" key "' here but '" order[k] "' in the solution")
  here = indent_of($0)
  inside = 1
}

END {
  if (failed) exit 1
  if (exact && k != n) fail("this file has " k " solution region(s), the solution " n)
}
