// PyTorch's scaled_dot_product_attention through libtorch, as benchmark entries: the default
// backend (what the article's "% of SDPA" means), and the flash (FlashAttention-2), cuDNN and
// memory-efficient backends each forced, which fail loudly instead of falling back. Built only
// when CMake finds Torch (impl_torch.cpp); otherwise impl_torch_stub.cpp says why.
#pragma once

#include <string>
#include <vector>

#include "step07_benchmark/harness/implementation.hpp"

namespace fa2::bench {

struct TorchStatus {
  bool built = false;
  std::string detail;  // versions when built, the reason (and the fix) when not
};

TorchStatus torch_status();

// Keys: sdpa (default backend), sdpa-fa2, sdpa-cudnn, sdpa-mem. Empty without Torch.
std::vector<Implementation> torch_implementations();

}  // namespace fa2::bench
