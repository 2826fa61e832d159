# Every step draws its own figures from its own code, and the committed copies must be what the
# code draws today.
#
#   fa2_add_figures(<stepNN_figures> SOURCES <file>... [LINK <target>...])
#       The program <stepNN_figures> (its main() calls fa2::figures::run_figures_program,
#       common/figures.hpp) writes the step's figures into the directory it is given. The committed
#       ones live in the step's figures/ folder. Registers the ctest
#       <stepNN_figures>_match_the_committed_ones (labels stepNN, figures): the program writes into
#       the build tree and every SVG must equal the committed one byte for byte, with no file missing
#       or extra on either side; a difference names the file and its first differing line.
#
#   fa2_add_figures_target()      (once, at the end of the top-level CMakeLists.txt)
#       The target `figures`: every registered program writes into its step's figures/ folder in the
#       source tree (scripts/make_figures.sh runs it).
include_guard(GLOBAL)

function(fa2_add_figures target)
  cmake_parse_arguments(arg "" "" "SOURCES;LINK" ${ARGN})
  string(REGEX MATCH "^step[0-9]+" step "${target}")
  add_executable(${target} ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE fa2::common ${arg_LINK})
  set(committed "${CMAKE_CURRENT_SOURCE_DIR}/figures")
  set_property(GLOBAL APPEND PROPERTY FA2_FIGURE_PROGRAMS ${target})
  set_property(TARGET ${target} PROPERTY FA2_FIGURES_DIR "${committed}")
  if(FA2_BUILD_TESTS)
    set(fresh "${CMAKE_CURRENT_BINARY_DIR}/figures_now")
    add_test(NAME ${target}_match_the_committed_ones
      COMMAND "${CMAKE_COMMAND}" -D "PROGRAM=$<TARGET_FILE:${target}>" -D "FRESH=${fresh}" -D "COMMITTED=${committed}"
              -P "${PROJECT_SOURCE_DIR}/cmake/Fa2CompareFigures.cmake")
    set_tests_properties(${target}_match_the_committed_ones PROPERTIES LABELS "${step};figures" TIMEOUT 120)
    fa2_add_cli_tests(${target})
  endif()
endfunction()

function(fa2_add_figures_target)
  get_property(programs GLOBAL PROPERTY FA2_FIGURE_PROGRAMS)
  if(NOT programs)
    return()
  endif()
  set(commands)
  foreach(program IN LISTS programs)
    get_property(dir TARGET ${program} PROPERTY FA2_FIGURES_DIR)
    list(APPEND commands COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}" COMMAND $<TARGET_FILE:${program}> "${dir}")
  endforeach()
  add_custom_target(figures ${commands} DEPENDS ${programs} COMMENT "Every step's figures, redrawn into the source tree"
    VERBATIM)
endfunction()
