// The step05 kernel on the GPU: the launch API for device pointers (like the Triton launch,
// so a PyTorch extension or a benchmark can call it on its own buffers), and a convenience
// function for host tensors.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>

#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2 {

// Validates, then launches on `stream` (asynchronously). Pointers in `args` are device memory.
void flash_fwd_cuda(const FlashFwdArgs& args, cudaStream_t stream = nullptr);

// Copies Q, K, V (host tensors, any strides) to the GPU, runs the kernel into NaN-poisoned
// outputs, waits, and returns O and L on the host.
template <class T>
FlashOutputs<T> flash_attention_cuda(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                     bool causal, std::optional<float> scale = std::nullopt);

// The same for any launcher with flash_fwd_cuda's signature (CudaLaunchFn, flash_fwd.hpp):
// step06's variants, step07's kernels.
template <class T>
FlashOutputs<T> run_with_device_tensors(CudaLaunchFn launch, TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                        TensorView<const T, 3> V, bool causal,
                                        std::optional<float> scale = std::nullopt, Window window = {});

}  // namespace fa2
