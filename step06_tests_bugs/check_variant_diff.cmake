# ctest helper: `diff -u <step05 kernel> <variant kernel>` must show exactly the committed
# patch, so a variant can never drift from step05 by more than its bug lines.
#   cmake -D SOURCE_DIR=<repo> -D WORK_DIR=<scratch dir> -D VARIANT=bug1 -P check_variant_diff.cmake
# After changing step05's kernel and the variants together, -D UPDATE=ON rewrites the .patch file
# from the files as they are (then read the new patch: it must show the bug's lines and nothing else).
# The markers of the standard and full kits' regions (whole loop bodies and programs, which the
# variants name differently: step06 ones are the student's own in those kits) are dropped, and the
# guided regions (// BEGIN SOLUTION stepNN: ... // END SOLUTION stepNN, scripts/lib/kit.py) are
# collapsed to their first line in both files; hunk line numbers are not compared. In a guided
# starter kit those regions hold a TODO in step05 and the original code in the variant, and the
# check still holds there. Standard and full kits do not run it: the variants are the student's.
cmake_minimum_required(VERSION 3.25)
set(fixed step05_fa2_kernel/flash_fwd_kernel.hpp)
set(variant step06_tests_bugs/kernels/flash_fwd_kernel_${VARIANT}.hpp)
set(expected "${SOURCE_DIR}/step06_tests_bugs/kernels/${VARIANT}.patch")
find_program(DIFF diff REQUIRED)
find_program(AWK awk REQUIRED)
file(MAKE_DIRECTORY "${WORK_DIR}/${VARIANT}/step05_fa2_kernel" "${WORK_DIR}/${VARIANT}/step06_tests_bugs/kernels")
foreach(f IN ITEMS ${fixed} ${variant})
  execute_process(
    COMMAND "${AWK}" "/\\/\\/ (BEGIN|END) SOLUTION step[0-9][0-9] (standard|full)/ { next } /\\/\\/ END SOLUTION/ { inside = 0; next } inside { next } { print } /\\/\\/ BEGIN SOLUTION/ { inside = 1 }"
            "${SOURCE_DIR}/${f}"
    OUTPUT_FILE "${WORK_DIR}/${VARIANT}/${f}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "awk failed on ${f}")
  endif()
endforeach()
execute_process(
  COMMAND "${DIFF}" -u --label ${fixed} --label ${variant} ${fixed} ${variant}
  WORKING_DIRECTORY "${WORK_DIR}/${VARIANT}"
  OUTPUT_VARIABLE actual RESULT_VARIABLE rc)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "diff returned ${rc}: the variant should differ from step05's kernel")
endif()
if(UPDATE)
  file(WRITE "${expected}" "${actual}")
  message(STATUS "rewrote ${expected}")
  return()
endif()
file(READ "${expected}" wanted)
string(REGEX REPLACE "\n@@ [^\n]*" "\n@@" actual_hunks "${actual}")
string(REGEX REPLACE "\n@@ [^\n]*" "\n@@" wanted_hunks "${wanted}")
if(NOT actual_hunks STREQUAL wanted_hunks)
  message(FATAL_ERROR "${variant} no longer differs from ${fixed} by exactly ${VARIANT}.patch.\n"
                      "--- diff now ---\n${actual}\n--- expected (${VARIANT}.patch) ---\n${wanted}")
endif()
string(REGEX MATCHALL "\n[-+][^-+][^\n]*" changed "${actual}")
list(LENGTH changed n)
message(STATUS "${variant}: ${n} changed line(s), exactly ${VARIANT}.patch")
