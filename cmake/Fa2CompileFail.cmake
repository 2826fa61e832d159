# ctest helper for fa2_add_compile_fail_test: the build of TARGET must fail, and the
# compiler's diagnostic must match EXPECT. A build that succeeds, or fails for another
# reason, fails the test and prints what the compiler said.
cmake_minimum_required(VERSION 3.25)
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE result)
set(log "${out}${err}")
if(result EQUAL 0 AND TODO_IN)
  # In a starter kit the code this test is about may not be written yet: say so, with its TODO.
  string(REPLACE "|" ";" todo_files "${TODO_IN}")
  foreach(file IN LISTS todo_files)
    file(STRINGS "${file}" todos REGEX "fa2::todo\\(\"TODO\\(step[0-9][0-9]\\)")
    if(todos)
      list(GET todos 0 todo)
      string(STRIP "${todo}" todo)
      message(FATAL_ERROR "${TARGET} compiled, because ${file} still holds a TODO:\n  ${todo}")
    endif()
  endforeach()
endif()
if(result EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but it must be rejected at compile time.\n${log}")
endif()
if(NOT log MATCHES "${EXPECT}")
  message(FATAL_ERROR "${TARGET} failed to compile, but not with the expected diagnostic\n"
                      "  expected (regex): ${EXPECT}\n--- compiler output ---\n${log}")
endif()
string(REGEX MATCH "[^\n]*${EXPECT}[^\n]*" line "${log}")
message(STATUS "rejected as expected: ${line}")
