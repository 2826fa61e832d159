// The lead's fast FlashAttention-2 kernels, registered for step07_bench in fast_variants.cpp.
// Each is a launcher with flash_fwd_cuda's signature, wrapped by flash_implementation().
#pragma once

#include <vector>

#include "step07_benchmark/implementation.hpp"

namespace fa2::bench {

// In the order they should appear in tables and plots (after our step05 kernel and its tile
// variants, before PyTorch and cuBLAS).
std::vector<Implementation> fast_variant_implementations();

}  // namespace fa2::bench
