// The GPU launches of step06's variants (see variants.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step06_tests_bugs/variants.hpp"

namespace fa2::variants {

void original_cuda(const FlashFwdArgs& args, cudaStream_t stream);
void bug1_cuda(const FlashFwdArgs& args, cudaStream_t stream);
void bug2_cuda(const FlashFwdArgs& args, cudaStream_t stream);

inline CudaLaunchFn cuda_launcher(Variant v) {
  switch (v) {
    case Variant::original:
      return &original_cuda;
    case Variant::bug1:
      return &bug1_cuda;
    case Variant::bug2:
      return &bug2_cuda;
    case Variant::fixed:
      break;
  }
  return &flash_fwd_cuda;
}

}  // namespace fa2::variants
