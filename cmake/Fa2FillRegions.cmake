# Build-time helper of fa2_compile_with_step05_regions (Fa2SolutionRegions.cmake): writes OUTPUT,
# the file INTO with the body of each solution region taken from FROM.
#   cmake -D AWK=awk -D SCRIPT=restore_solution.awk -D FROM=<file> -D INTO=<file> -D OUTPUT=<file> -P Fa2FillRegions.cmake
cmake_minimum_required(VERSION 3.25)
get_filename_component(dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
execute_process(COMMAND "${AWK}" -f "${SCRIPT}" -v "file=${INTO}" "${FROM}" "${INTO}"
  OUTPUT_FILE "${OUTPUT}.tmp" ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${OUTPUT}.tmp")
  message(FATAL_ERROR "filling the solution regions of ${INTO} from ${FROM} failed:\n${err}")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
