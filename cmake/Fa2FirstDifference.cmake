# fa2_first_difference(<committed text> <new text> <out var>): where two texts first differ, for the
# -P scripts that compare committed files with what the code writes now (Fa2CompareFigures.cmake,
# common/viewer/check_traces.cmake): "line 12:\n  committed: ...\n  now:       ...", each line cut
# at 300 characters, or "the files have A and B lines" when one is the other's beginning.
function(fa2_first_difference committed now out_var)
  string(REPLACE "\n" ";" old_lines "${committed}")
  string(REPLACE "\n" ";" new_lines "${now}")
  list(LENGTH old_lines n_old)
  list(LENGTH new_lines n_new)
  set(i 0)
  while(i LESS n_old AND i LESS n_new)
    list(GET old_lines ${i} x)
    list(GET new_lines ${i} y)
    if(NOT x STREQUAL y)
      math(EXPR line "${i} + 1")
      string(SUBSTRING "${x}" 0 300 x)
      string(SUBSTRING "${y}" 0 300 y)
      set(${out_var} "line ${line}:\n  committed: ${x}\n  now:       ${y}" PARENT_SCOPE)
      return()
    endif()
    math(EXPR i "${i} + 1")
  endwhile()
  set(${out_var} "the files have ${n_old} and ${n_new} lines" PARENT_SCOPE)
endfunction()
