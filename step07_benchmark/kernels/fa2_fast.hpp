// Launchers for variant 5, the register-resident mma.sync kernel (fa2_fast.cuh). Same
// signature as step05's flash_fwd_cuda, so the benchmark and the tests treat them alike.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::fast {

// Empty when the fast kernel can run these arguments, otherwise why not (it takes bf16,
// head dims 32/64/128, a positive scale, and 16-byte aligned rows).
std::string unsupported_reason(const FlashFwdArgs& args);

// The tuned configuration (the one the benchmark calls "v5 fast").
void flash_fwd_fast(const FlashFwdArgs& args, cudaStream_t stream = nullptr);

// Every configuration the benchmark sweeps, by name.
struct FastVariant {
  std::string name;         // e.g. "v5.4 w4x2"
  std::string description;  // what it adds to the one before
  void (*launch)(const FlashFwdArgs&, cudaStream_t);
  std::vector<int> head_dims;  // the head dims it is built for
};
const std::vector<FastVariant>& fast_variants();

}  // namespace fa2::fast
