# ctest helper: `diff -u <step05 kernel> <variant kernel>` must print exactly the committed
# patch, so a variant can never drift from step05 by more than its bug lines.
#   cmake -D SOURCE_DIR=<repo> -D VARIANT=bug1 -P check_variant_diff.cmake
cmake_minimum_required(VERSION 3.25)
set(fixed step05_fa2_kernel/flash_fwd_kernel.hpp)
set(variant step06_tests_bugs/kernels/flash_fwd_kernel_${VARIANT}.hpp)
set(expected "${SOURCE_DIR}/step06_tests_bugs/kernels/${VARIANT}.patch")
find_program(DIFF diff REQUIRED)
execute_process(
  COMMAND "${DIFF}" -u --label ${fixed} --label ${variant} ${fixed} ${variant}
  WORKING_DIRECTORY "${SOURCE_DIR}"
  OUTPUT_VARIABLE actual RESULT_VARIABLE rc)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "diff returned ${rc}: the variant should differ from step05's kernel")
endif()
file(READ "${expected}" wanted)
if(NOT actual STREQUAL wanted)
  message(FATAL_ERROR "${variant} no longer differs from ${fixed} by exactly ${VARIANT}.patch.\n"
                      "--- diff now ---\n${actual}\n--- expected (${VARIANT}.patch) ---\n${wanted}")
endif()
string(REGEX MATCHALL "\n[-+][^-+][^\n]*" changed "${actual}")
list(LENGTH changed n)
message(STATUS "${variant}: ${n} changed line(s), exactly ${VARIANT}.patch")
