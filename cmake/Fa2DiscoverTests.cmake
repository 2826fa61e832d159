# Build-time helper for fa2_add_doctest: asks a doctest binary for its test suites and
# test cases and writes one add_test() per test case, labelled with the step and suite.
cmake_minimum_required(VERSION 3.25)

function(_fa2_doctest_list out)
  execute_process(COMMAND "${TEST_EXECUTABLE}" ${ARGN}
    OUTPUT_VARIABLE output RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "Listing tests of ${TEST_EXECUTABLE} failed (${result}):\n${output}")
  endif()
  string(REPLACE "\n" ";" lines "${output}")
  set(names)
  foreach(line IN LISTS lines)
    if(line STREQUAL "" OR line MATCHES "^=+$" OR line MATCHES "^\\[doctest\\]")
      continue()
    endif()
    list(APPEND names "${line}")
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

string(REPLACE "|" ";" step_labels "${TEST_LABELS}")
_fa2_doctest_list(suites --list-test-suites --no-version)
set(script "")
set(seen)
foreach(suite IN LISTS suites)
  _fa2_doctest_list(cases --list-test-cases --no-version "--test-suite=${suite}")
  foreach(case IN LISTS cases)
    list(APPEND seen "${case}")
    if(case MATCHES "[],*?[]")
      message(FATAL_ERROR "Test case name '${case}' has a character that doctest filters treat specially")
    endif()
    # A suite named "gpu+bug2" gives both labels, "gpu" and "bug2".
    string(REPLACE "+" ";" suite_labels "${suite}")
    set(labels ${step_labels} ${suite_labels})
    string(APPEND script
      "add_test([==[${case}]==] \"${TEST_EXECUTABLE}\" [==[--test-case=${case}]==] --no-version)\n"
      "set_tests_properties([==[${case}]==] PROPERTIES LABELS \"${labels}\""
      " SKIP_RETURN_CODE ${TEST_SKIP_CODE} TIMEOUT ${TEST_TIMEOUT})\n")
  endforeach()
endforeach()
# Test cases outside any TEST_SUITE are listed under the empty suite name, which the loop
# above cannot ask for by name: pick them up from the full list.
_fa2_doctest_list(all_cases --list-test-cases --no-version)
foreach(case IN LISTS all_cases)
  if(NOT case IN_LIST seen)
    string(APPEND script
      "add_test([==[${case}]==] \"${TEST_EXECUTABLE}\" [==[--test-case=${case}]==] --no-version)\n"
      "set_tests_properties([==[${case}]==] PROPERTIES LABELS \"${step_labels}\""
      " SKIP_RETURN_CODE ${TEST_SKIP_CODE} TIMEOUT ${TEST_TIMEOUT})\n")
  endif()
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
