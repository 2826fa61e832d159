# One place for the project's compile options. Third-party headers (Eigen, doctest, CUDA)
# come in as SYSTEM includes, so these flags judge only the project's own code.
include_guard(GLOBAL)

add_library(fa2_options INTERFACE)
add_library(fa2::options ALIAS fa2_options)
target_compile_features(fa2_options INTERFACE cxx_std_20)
target_include_directories(fa2_options INTERFACE "${PROJECT_SOURCE_DIR}")

set(_fa2_cxx_warnings
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
  -Wnull-dereference -Wdouble-promotion -Wimplicit-fallthrough)
# GCC 12 reports false -Wrestrict warnings inside libstdc++'s std::string at -O2/-O3
# (GCC bug 105329, fixed in GCC 13); they are not about our code.
set(_fa2_gcc12 $<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>)
target_compile_options(fa2_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:${_fa2_cxx_warnings}>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,${_fa2_gcc12}>:-Wno-restrict>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,${_fa2_gcc12}>:-Xcompiler=-Wno-restrict>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${FA2_WARNINGS_AS_ERRORS}>>:-Werror>)

if(FA2_HAS_CUDA)
  if(DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    target_compile_features(fa2_options INTERFACE cuda_std_20)
  else()
    # CMake 3.25's tables stop at C++17 for nvcc; nvcc itself has C++20 since 12.0.
    target_compile_options(fa2_options INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>)
  endif()
  # nvcc's front end warns on its own; the host compiler sees the host half of each .cu.
  # -Wshadow and -Wconversion are left to the .cpp files: nvcc's generated stubs trip them.
  target_compile_options(fa2_options INTERFACE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${FA2_WARNINGS_AS_ERRORS}>>:--Werror=all-warnings -Xcompiler=-Werror>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${FA2_CUDA_LINEINFO}>>:-lineinfo>)
endif()
