# Used by make_starter_kit.sh: prints a source file with the body of every solution region
# replaced by one fa2::todo(...) call; the BEGIN/END marker lines stay, so that the regions can
# be found again (restore_solutions.sh). Writes the number of regions to stderr.
#   awk -f solution_to_todo.awk -v file=<path for messages> <source file>
function trim(s) {
  sub(/^[ \t]+/, "", s)
  sub(/[ \t]+$/, "", s)
  return s
}

inside {
  if ($0 ~ /^[ \t]*\/\/ END SOLUTION/) {
    print
    inside = 0
  }
  next
}

{ print }

/^[ \t]*\/\/ BEGIN SOLUTION step[0-9][0-9]/ {
  indent = $0
  sub(/\/\/.*/, "", indent)
  spec = $0
  sub(/^[ \t]*\/\/ BEGIN SOLUTION /, "", spec)
  step = substr(spec, 1, 6)
  hint = trim(substr(spec, 7))
  sub(/^:[ ]*/, "", hint)
  # "uses(a, b)" at the end names the region's inputs, passed to todo() so that they do not
  # become unused variables while the region is still a TODO.
  uses = ""
  if (match(hint, / uses\([^)]*\)$/)) {
    uses = ", " substr(hint, RSTART + 6, RLENGTH - 7)
    hint = substr(hint, 1, RSTART - 1)
  }
  gsub(/"/, "\x27", hint)
  if (hint == "") hint = "implement this part"
  print indent "fa2::todo(\"TODO(" step "): " hint "\"" uses ");"
  inside = 1
  count++
}

END {
  if (inside) {
    print file ": BEGIN SOLUTION without END SOLUTION" > "/dev/stderr"
    exit 1
  }
  print count + 0 > "/dev/stderr"
}
