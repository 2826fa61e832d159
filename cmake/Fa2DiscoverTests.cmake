# Build-time helper for fa2_add_doctest: asks a doctest binary for its test suites and test
# cases and writes one add_test() per test case, labelled with the step and with the suite.
#
# Why not doctest's own doctest_discover_tests(... ADD_LABELS 1)? In doctest 2.4 (Debian 12's
# package) it lacks three things this project uses:
#   - ADD_LABELS writes the suite's name as the test's LABELS after the PROPERTIES given to it,
#     so a test cannot carry both its step ("step05") and its suite ("gpu"): the step is lost;
#   - one label per suite, where ours splits "gpu+bug2" into the labels gpu and bug2;
#   - test names are passed to --test-case unescaped apart from commas, so a name with * or ?
#     would also run other tests; here such a name stops the build with a message.
# It also starts the binary once per test case to ask for its suite; this starts it once per suite.
cmake_minimum_required(VERSION 3.25)

function(_fa2_doctest_list out)
  execute_process(COMMAND "${TEST_EXECUTABLE}" ${ARGN}
    OUTPUT_VARIABLE output RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "Listing tests of ${TEST_EXECUTABLE} failed (${result}):\n${output}")
  endif()
  if(output MATCHES ";")
    message(FATAL_ERROR "A test case or suite name of ${TEST_EXECUTABLE} has a ';', which CMake lists cannot hold")
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

# Appends to `script` the ctest lines of one test case.
function(_fa2_add_case case labels)
  if(case MATCHES "[]*?[]")
    message(FATAL_ERROR "Test case name '${case}' has a character that doctest filters treat as a wildcard (* ? [ ])")
  endif()
  string(REPLACE "," "\\," filter "${case}")  # doctest splits filters at unescaped commas
  set(script "${script}add_test([==[${case}]==] \"${TEST_EXECUTABLE}\" [==[--test-case=${filter}]==] --no-version)\n")
  string(APPEND script "set_tests_properties([==[${case}]==] PROPERTIES LABELS \"${labels}\""
                       " SKIP_RETURN_CODE ${TEST_SKIP_CODE} TIMEOUT ${TEST_TIMEOUT})\n")
  set(script "${script}" PARENT_SCOPE)
endfunction()

string(REPLACE "|" ";" step_labels "${TEST_LABELS}")
_fa2_doctest_list(suites --list-test-suites --no-version)
set(script "")
set(seen)
foreach(suite IN LISTS suites)
  _fa2_doctest_list(cases --list-test-cases --no-version "--test-suite=${suite}")
  # A suite named "gpu+bug2" gives both labels, "gpu" and "bug2".
  string(REPLACE "+" ";" suite_labels "${suite}")
  foreach(case IN LISTS cases)
    list(APPEND seen "${case}")
    _fa2_add_case("${case}" "${step_labels};${suite_labels}")
  endforeach()
endforeach()
# Test cases outside any TEST_SUITE are listed under the empty suite name, which the loop
# above cannot ask for by name: pick them up from the full list.
_fa2_doctest_list(all_cases --list-test-cases --no-version)
foreach(case IN LISTS all_cases)
  if(NOT case IN_LIST seen)
    _fa2_add_case("${case}" "${step_labels}")
  endif()
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
