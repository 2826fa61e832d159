# Test, demo and compile-fail helpers shared by every step.
#
#   fa2_add_doctest(<target> LABEL <stepNN> SOURCES ... [LINK ...])
#       A doctest executable. Each TEST_CASE becomes its own ctest test, labelled with the
#       step and with its TEST_SUITE name (e.g. "gpu"; "gpu+bug2" gives two labels), so
#       `ctest -L step05` or `ctest -L gpu` select what they say. Exit code 77 means
#       "skipped" (no GPU here).
#
#   fa2_add_demo(<target> TITLE "<heading>" SOURCES ... [LINK ...] [ARGS ...] [MALFORMED <argument> <flag>])
#       A demo executable, run in registration order by the `walkthrough` target, with the
#       command-line tests of fa2_add_cli_tests (MALFORMED: for a demo that takes values, one
#       malformed argument and the flag its error must name).
#
#   fa2_add_cli_tests(<target> [MALFORMED <argument> <flag>])
#       What every program's command line must do (common/cli.hpp), as ctest tests labelled `cli`
#       and with the step of the name (step07_plot: step07): --help and -h exit 0 with the usage
#       on stdout; --no-such-flag exits 2 and stderr names it; with MALFORMED, <argument> (e.g.
#       --rows=abc) exits 2 and stderr names <flag>.
#
#   fa2_add_cli_test(<name> LABELS ... EXIT <code> [STDOUT <regex>] [STDERR <regex>] COMMAND <program> <args>...)
#       One run of <program> (a target or a path), checked by cmake/Fa2CheckProgram.cmake: the exit
#       code and what it printed where. A zero exit must leave stderr empty, any other stdout.
#
#   fa2_add_compile_fail_test(<name> SOURCE <file> EXPECT <regex> LABELS ... [LINK ...] [TODO_IN <file>...])
#       Proves that <file> does NOT compile, and that the diagnostic matches <regex>. TODO_IN names
#       files (relative to the repository) that may hold a starter kit's TODO: when <file>
#       compiles because one of them still does, the failure says so with the TODO's message.
include_guard(GLOBAL)

set(FA2_SKIP_RETURN_CODE 77)

function(fa2_add_doctest target)
  cmake_parse_arguments(arg "" "LABEL;TIMEOUT" "SOURCES;LINK;LABELS" ${ARGN})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 600)
  endif()
  add_executable(${target} ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE fa2::testing ${arg_LINK})
  set(labels ${arg_LABEL} ${arg_LABELS})
  string(REPLACE ";" "|" labels_arg "${labels}")
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_ctest.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}"
            -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "TEST_TARGET=${target}"
            -D "TEST_LABELS=${labels_arg}"
            -D "TEST_TIMEOUT=${arg_TIMEOUT}"
            -D "TEST_SKIP_CODE=${FA2_SKIP_RETURN_CODE}"
            -D "CTEST_FILE=${ctest_file}"
            -P "${PROJECT_SOURCE_DIR}/cmake/Fa2DiscoverTests.cmake"
    BYPRODUCTS "${ctest_file}"
    COMMENT "Listing the test cases of ${target}"
    VERBATIM)
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${include_file}"
    "if(EXISTS \"${ctest_file}\")\n"
    "  include(\"${ctest_file}\")\n"
    "else()\n"
    "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
  # `cmake --build --preset default --target stepNN_tests` builds one step's tests: the test
  # executable itself when a step has one, otherwise a target that depends on all of them.
  if(arg_LABEL AND NOT target STREQUAL "${arg_LABEL}_tests")
    if(NOT TARGET ${arg_LABEL}_tests)
      add_custom_target(${arg_LABEL}_tests)
    endif()
    add_dependencies(${arg_LABEL}_tests ${target})
  endif()
endfunction()

function(fa2_add_demo target)
  cmake_parse_arguments(arg "" "TITLE" "SOURCES;LINK;ARGS;MALFORMED" ${ARGN})
  add_executable(${target} ${arg_SOURCES})
  # fa2::common for common/cli.hpp, which every demo's main() parses its command line with.
  target_link_libraries(${target} PRIVATE fa2::common ${arg_LINK})
  set_property(GLOBAL APPEND PROPERTY FA2_DEMOS ${target})
  set_property(TARGET ${target} PROPERTY FA2_DEMO_TITLE "${arg_TITLE}")
  set_property(TARGET ${target} PROPERTY FA2_DEMO_ARGS "${arg_ARGS}")
  if(FA2_BUILD_TESTS)
    fa2_add_cli_tests(${target} MALFORMED ${arg_MALFORMED})
  endif()
endfunction()

function(fa2_add_cli_test name)
  cmake_parse_arguments(arg "" "EXIT;STDOUT;STDERR" "LABELS;COMMAND" ${ARGN})
  list(POP_FRONT arg_COMMAND program)
  if(TARGET ${program})
    set(program "$<TARGET_FILE:${program}>")
  endif()
  set(expect -D "EXPECT_EXIT=${arg_EXIT}")
  if(arg_EXIT EQUAL 0)
    list(APPEND expect -D EXPECT_STDERR_EMPTY=ON)
  else()
    list(APPEND expect -D EXPECT_STDOUT_EMPTY=ON)
  endif()
  foreach(stream IN ITEMS STDOUT STDERR)
    if(DEFINED arg_${stream})
      list(APPEND expect -D "EXPECT_${stream}=${arg_${stream}}")
    endif()
  endforeach()
  add_test(NAME ${name}
    COMMAND "${CMAKE_COMMAND}" ${expect} -P "${PROJECT_SOURCE_DIR}/cmake/Fa2CheckProgram.cmake"
            -- "${program}" ${arg_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS "cli;${arg_LABELS}" TIMEOUT 60)
endfunction()

function(fa2_add_cli_tests target)
  cmake_parse_arguments(arg "" "" "MALFORMED" ${ARGN})
  string(REGEX MATCH "^step[0-9]+" step "${target}")
  fa2_add_cli_test(${target}_cli_help LABELS ${step} EXIT 0 STDOUT "^usage: ${target} " COMMAND ${target} --help)
  fa2_add_cli_test(${target}_cli_h LABELS ${step} EXIT 0 STDOUT "^usage: ${target} " COMMAND ${target} -h)
  fa2_add_cli_test(${target}_cli_unknown_flag LABELS ${step} EXIT 2 STDERR "--no-such-flag: unknown option"
    COMMAND ${target} --no-such-flag)
  if(arg_MALFORMED)
    list(GET arg_MALFORMED 0 argument)
    list(GET arg_MALFORMED 1 flag)
    fa2_add_cli_test(${target}_cli_malformed_value LABELS ${step} EXIT 2 STDERR "${target}: ${flag}: "
      COMMAND ${target} ${argument})
  endif()
endfunction()

# Called once, at the end of the top-level CMakeLists.txt, when every demo is known.
function(fa2_add_walkthrough_target)
  get_property(demos GLOBAL PROPERTY FA2_DEMOS)
  if(NOT demos)
    return()
  endif()
  set(commands)
  foreach(demo IN LISTS demos)
    get_property(title TARGET ${demo} PROPERTY FA2_DEMO_TITLE)
    get_property(demo_args TARGET ${demo} PROPERTY FA2_DEMO_ARGS)
    list(APPEND commands
      COMMAND "${CMAKE_COMMAND}" -D "TITLE=${title}" -D "DEMO=${demo}"
              -P "${PROJECT_SOURCE_DIR}/cmake/Fa2Banner.cmake"
      COMMAND $<TARGET_FILE:${demo}> ${demo_args})
  endforeach()
  add_custom_target(walkthrough ${commands}
    DEPENDS ${demos}
    COMMENT "The tutorial, one step after another"
    USES_TERMINAL VERBATIM)
endfunction()

function(fa2_add_compile_fail_test name)
  cmake_parse_arguments(arg "" "SOURCE;EXPECT" "LINK;LABELS;DEFINITIONS;COMPILE_OPTIONS;TODO_IN" ${ARGN})
  list(TRANSFORM arg_TODO_IN PREPEND "${PROJECT_SOURCE_DIR}/")
  string(REPLACE ";" "|" todo_in "${arg_TODO_IN}")
  # An object library that is never part of `all`: only the test below builds it.
  add_library(${name} OBJECT EXCLUDE_FROM_ALL "${arg_SOURCE}")
  set_target_properties(${name} PROPERTIES EXCLUDE_FROM_DEFAULT_BUILD ON)
  target_link_libraries(${name} PRIVATE fa2::options ${arg_LINK})
  if(arg_DEFINITIONS)
    target_compile_definitions(${name} PRIVATE ${arg_DEFINITIONS})
  endif()
  if(arg_COMPILE_OPTIONS)
    target_compile_options(${name} PRIVATE ${arg_COMPILE_OPTIONS})
  endif()
  add_test(NAME ${name}
    COMMAND "${CMAKE_COMMAND}"
            -D "BUILD_DIR=${PROJECT_BINARY_DIR}"
            -D "TARGET=${name}"
            -D "EXPECT=${arg_EXPECT}"
            -D "TODO_IN=${todo_in}"
            -P "${PROJECT_SOURCE_DIR}/cmake/Fa2CompileFail.cmake")
  # Several builds in one build tree at once would step on each other's lock files.
  set_tests_properties(${name} PROPERTIES
    LABELS "compile_fail;${arg_LABELS}" RESOURCE_LOCK fa2_build_tree TIMEOUT 600)
endfunction()
