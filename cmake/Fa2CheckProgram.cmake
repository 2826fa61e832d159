# Runs one program and checks its exit code and what it printed: the command-line tests that
# fa2_add_cli_test (Fa2Testing.cmake) registers. By hand:
#   cmake -D EXPECT_EXIT=2 -D "EXPECT_STDERR=--no-such-flag" -D EXPECT_STDOUT_EMPTY=ON \
#         -P cmake/Fa2CheckProgram.cmake -- build/default/step01_online_softmax/step01_demo --no-such-flag
#
#   EXPECT_EXIT          the exit code the program must return
#   EXPECT_STDOUT        a regex its standard output must match (optional)
#   EXPECT_STDERR        a regex its standard error must match (optional)
#   EXPECT_STDOUT_EMPTY  ON: it must print nothing on standard output (an error goes to stderr)
#   EXPECT_STDERR_EMPTY  ON: it must print nothing on standard error (--help goes to stdout)
# Everything after `--` is the command. A mismatch fails with the command, both streams and
# each expectation that was not met, so ctest --output-on-failure says exactly what went wrong.
cmake_minimum_required(VERSION 3.25)

set(command)
set(in_command OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(in_command)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(in_command ON)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "Fa2CheckProgram: no command after --")
endif()
if(NOT DEFINED EXPECT_EXIT)
  message(FATAL_ERROR "Fa2CheckProgram: set EXPECT_EXIT")
endif()

execute_process(COMMAND ${command}
  RESULT_VARIABLE exit_code OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)

set(failures)
if(NOT exit_code STREQUAL EXPECT_EXIT)
  list(APPEND failures "exit code ${exit_code}, expected ${EXPECT_EXIT}")
endif()
foreach(stream IN ITEMS stdout stderr)
  string(TOUPPER "${stream}" STREAM)
  if(DEFINED EXPECT_${STREAM} AND NOT "${${stream}}" MATCHES "${EXPECT_${STREAM}}")
    list(APPEND failures "${stream} does not match the regex '${EXPECT_${STREAM}}'")
  endif()
  if(EXPECT_${STREAM}_EMPTY AND NOT "${${stream}}" STREQUAL "")
    list(APPEND failures "${stream} is not empty")
  endif()
endforeach()

string(REPLACE ";" " " shown "${command}")
if(failures)
  string(REPLACE ";" "\n  " failures "${failures}")
  message(NOTICE "${shown}\n--- stdout:\n${stdout}--- stderr:\n${stderr}---")
  message(FATAL_ERROR "not as expected:\n  ${failures}")
endif()
message(STATUS "${shown}: exit code ${exit_code} as expected\n${stdout}${stderr}")
