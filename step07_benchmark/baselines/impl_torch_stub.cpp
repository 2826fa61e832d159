// The Torch entry points when step07_bench is built without Torch: no SDPA columns, and the
// reason printed in the header. Configure with Torch to get them (see README.md).
#include "step07_benchmark/baselines/impl_torch.hpp"

namespace fa2::bench {

TorchStatus torch_status() {
  TorchStatus s;
  s.built = false;
#if defined(FA2_STEP07_TORCH_DISABLED)
  s.detail = "PyTorch SDPA columns absent: Torch support was switched off (-DFA2_WITH_TORCH=OFF).";
#else
  s.detail =
      "PyTorch SDPA columns absent: CMake did not find Torch (the python3 on PATH cannot import torch). "
      "Install PyTorch for it, or configure with "
      "-DCMAKE_PREFIX_PATH=$(python -c 'import torch; print(torch.utils.cmake_prefix_path)')";
#endif
  return s;
}

std::vector<Implementation> torch_implementations() {
  return {};
}

}  // namespace fa2::bench
