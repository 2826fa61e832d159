// The GPU half of flash_test_support.hpp: a runner for any launcher with flash_fwd_cuda's
// signature (step05, step06's variants, step07's kernels), on host tensors.
#pragma once

#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"

namespace fa2::testing {

template <class T>
FlashRunner<T> gpu_runner(CudaLaunchFn launch) {
  return [launch](TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V, bool causal) {
    return run_with_device_tensors<T>(launch, Q, K, V, causal);
  };
}

}  // namespace fa2::testing
