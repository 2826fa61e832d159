# PyTorch for step07_bench's SDPA columns and python/'s operators, found without flags: when the
# python3 on PATH can import torch, its CMake package (torch.utils.cmake_prefix_path) is where
# fa2_find_torch() looks, so the quick start's two commands build both wherever PyTorch is
# installed. A CMAKE_PREFIX_PATH or Torch_DIR given on the command line is searched first;
# -DFA2_WITH_TORCH=OFF and -DFA2_WITH_PYTHON_OPS=OFF leave PyTorch out.
#
# FA2_TORCH_CMAKE_PREFIX: that folder, or empty (python3 missing, or without torch), asked again
# at every configure so that installing or removing PyTorch is seen.

find_program(FA2_PYTHON3 python3)
set(_fa2_torch_python "${FA2_PYTHON3}")
if(SKBUILD AND Python3_EXECUTABLE)
  set(_fa2_torch_python "${Python3_EXECUTABLE}")  # pip install: the Python that builds the wheel
endif()
set(FA2_TORCH_CMAKE_PREFIX "")
if(_fa2_torch_python)
  execute_process(
    COMMAND "${_fa2_torch_python}" -c "import sys, torch; sys.stdout.write(torch.utils.cmake_prefix_path)"
    RESULT_VARIABLE _fa2_torch_rc
    OUTPUT_VARIABLE _fa2_torch_prefix
    ERROR_QUIET
    TIMEOUT 120)
  if(_fa2_torch_rc EQUAL 0 AND IS_DIRECTORY "${_fa2_torch_prefix}")
    set(FA2_TORCH_CMAKE_PREFIX "${_fa2_torch_prefix}")
  endif()
endif()

# find_package(Torch) in the caller's scope, python3's PyTorch as a hint. Call it inside a
# function: Torch's config rewrites the CUDA settings of the scope it runs in.
macro(fa2_find_torch)
  find_package(Torch CONFIG QUIET HINTS ${FA2_TORCH_CMAKE_PREFIX})
endmacro()

# Why Torch was not found, for the configure lines of step07_bench and fa2_torch_ops.
if(FA2_TORCH_CMAKE_PREFIX)
  set(FA2_TORCH_NOT_FOUND_WHY "python3 has PyTorch at ${FA2_TORCH_CMAKE_PREFIX}, but find_package(Torch) failed there")
elseif(_fa2_torch_python)
  set(FA2_TORCH_NOT_FOUND_WHY "${_fa2_torch_python} cannot import torch; for another Python's PyTorch give -DCMAKE_PREFIX_PATH")
else()
  set(FA2_TORCH_NOT_FOUND_WHY "no python3 on PATH; for a Python's PyTorch give -DCMAKE_PREFIX_PATH")
endif()
