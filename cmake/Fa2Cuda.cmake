# CUDA is optional: with nvcc every GPU target builds, without it the host paths still do.
#
# The default architectures are the tensor-core generations a reader is likely to own:
# Ampere (80), Ada (89) and Hopper (90), the last one also as PTX so that newer GPUs can
# JIT-compile it. Override with -DCMAKE_CUDA_ARCHITECTURES=90 or the CUDAARCHS variable.
include_guard(GLOBAL)
include(CheckLanguage)

set(FA2_HAS_CUDA OFF)
if(FA2_ENABLE_CUDA)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND "$ENV{CUDAARCHS}" STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES 80-real 89-real 90 CACHE STRING
          "CUDA architectures to build for (Ampere, Ada, Hopper)")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(FA2_HAS_CUDA ON)
    set(FA2_CUDA_SUMMARY "GPU tests built with CUDA ${CMAKE_CUDA_COMPILER_VERSION} for architectures ${CMAKE_CUDA_ARCHITECTURES}")
  else()
    set(FA2_CUDA_SUMMARY "GPU tests not built: no CUDA compiler (nvcc) found, so only the host paths were built")
  endif()
else()
  set(FA2_CUDA_SUMMARY "GPU tests not built: FA2_ENABLE_CUDA=OFF (for example the cpu-only preset), host paths only")
endif()
message(STATUS "${FA2_CUDA_SUMMARY}")
# scripts/test.sh prints this line after the tests, beside the GPU tests that skipped.
file(WRITE "${PROJECT_BINARY_DIR}/fa2_cuda_summary.txt" "${FA2_CUDA_SUMMARY}\n")
