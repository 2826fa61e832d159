# Copies of step05's code follow step05's solution regions.
#
# step06's buggy twins and step07's ladder repeat step05's kernel, solution regions included
# (// BEGIN SOLUTION step05 ... // END SOLUTION step05). In the students' starter kit every
# region is a TODO, and a student fills in step05's only. So these copies are never compiled
# as they stand: the build compiles a copy of each whose regions hold what step05's kernel
# holds (scripts/lib/restore_solution.awk, matching regions by their BEGIN line). In this
# repository the result is the file itself; in a student's kit it is the file with the student's
# own step 5 code, so that step 6's bug stories and step 7's ladder run once step 5 is done.
#
#   fa2_compile_with_step05_regions(<target> HEADERS <header>...)
#       <target> sees, for each <header> (given relative to the repository), a copy in
#       <build dir>/with_step05_regions/<same path>, ahead of the source tree on its include path.
include_guard(GLOBAL)

find_program(FA2_AWK NAMES awk gawk mawk REQUIRED)
set(FA2_STEP05_REGIONS_SOURCE "${PROJECT_SOURCE_DIR}/step05_fa2_kernel/flash_fwd_kernel.hpp")

function(fa2_compile_with_step05_regions target)
  cmake_parse_arguments(arg "" "" "HEADERS" ${ARGN})
  set(root "${CMAKE_CURRENT_BINARY_DIR}/with_step05_regions")
  foreach(header IN LISTS arg_HEADERS)
    set(copy "${root}/${header}")
    get_property(done DIRECTORY PROPERTY FA2_REGION_COPIES)
    if(copy IN_LIST done)  # a second target of this directory shares the copy
      target_sources(${target} PRIVATE "${copy}")
      continue()
    endif()
    set_property(DIRECTORY APPEND PROPERTY FA2_REGION_COPIES "${copy}")
    add_custom_command(OUTPUT "${copy}"
      COMMAND "${CMAKE_COMMAND}" -D "AWK=${FA2_AWK}"
              -D "SCRIPT=${PROJECT_SOURCE_DIR}/scripts/lib/restore_solution.awk"
              -D "FROM=${FA2_STEP05_REGIONS_SOURCE}" -D "INTO=${PROJECT_SOURCE_DIR}/${header}"
              -D "OUTPUT=${copy}" -P "${PROJECT_SOURCE_DIR}/cmake/Fa2FillRegions.cmake"
      DEPENDS "${PROJECT_SOURCE_DIR}/${header}" "${FA2_STEP05_REGIONS_SOURCE}"
              "${PROJECT_SOURCE_DIR}/scripts/lib/restore_solution.awk" "${PROJECT_SOURCE_DIR}/cmake/Fa2FillRegions.cmake"
      COMMENT "${header}, with step05's solution regions"
      VERBATIM)
    target_sources(${target} PRIVATE "${copy}")
  endforeach()
  target_include_directories(${target} BEFORE PRIVATE "${root}")
endfunction()
