# Prints a file (second argument) with the body of each of its solution regions taken from
# another file (first argument): the region with the same BEGIN line (indentation aside), the
# n-th such region for the n-th occurrence. Fa2FillRegions.cmake uses it at build time to compile
# step06's twins and step07's ladder with whatever step05's kernel holds (the solution here, the
# student's code in a starter kit). Regions may nest (scripts/lib/kit.py): a region of the copy
# that the first file has is replaced whole, nested regions and all; one it does not have keeps
# its own markers and body, and the regions nested in it are filled in turn. A body moves to the
# copy's indentation.
#   awk -f restore_solution.awk -v file=<name for messages> <from> <into>
function trim(s) {
  sub(/^[ \t]+/, "", s)
  sub(/[ \t]+$/, "", s)
  return s
}
function is_begin(line) { return line ~ /^[ \t]*\/\/ BEGIN SOLUTION step[0-9][0-9]/ }
function is_end(line) { return line ~ /^[ \t]*\/\/ END SOLUTION step[0-9][0-9]/ }
function fail(message) {
  print file ": " message > "/dev/stderr"
  failed = 1
  exit 1
}
function indent_of(line) {
  match(line, /^[ \t]*/)
  return substr(line, 1, RLENGTH)
}

FNR == NR {  # the file the bodies come from: every region at every depth, nested markers kept
  if (is_end($0)) {
    if (depth == 0) fail("END SOLUTION without BEGIN in the source, line " FNR)
    --depth
  }
  for (d = 1; d <= depth; ++d) body[open_key[d], open_n[d]] = body[open_key[d], open_n[d]] $0 "\n"
  if (is_begin($0)) {
    key = trim($0)
    seen[key]++
    ++depth
    open_key[depth] = key
    open_n[depth] = seen[key]
    body[key, seen[key]] = ""
    indent[key, seen[key]] = indent_of($0)
  }
  next
}

skipping {  # inside a region being replaced: wait for its own END, then print the source's body
  if (is_begin($0)) ++skipping
  else if (is_end($0) && --skipping == 0) {
    nlines = split(body[rkey, rn], lines, "\n")
    from = indent[rkey, rn]
    for (i = 1; i < nlines; ++i) {
      line = lines[i]
      if (substr(line, 1, length(from)) == from) line = here substr(line, length(from) + 1)
      print line
    }
    print
  }
  next
}

{ print }

is_begin($0) {
  key = trim($0)
  used[key]++
  if ((key, used[key]) in body) {
    rkey = key
    rn = used[key]
    here = indent_of($0)
    skipping = 1
  }
}

END {
  if (failed) exit 1
  if (skipping) fail("a BEGIN SOLUTION without its END SOLUTION")
}
