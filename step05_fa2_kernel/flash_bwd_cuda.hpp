// The step05 backward on the GPU: the launch API for device pointers (like a Triton launch, so a
// PyTorch extension or a benchmark can call it on its own buffers), and a convenience function
// for host tensors. Tests: ctest -L backward (tests/test_flash_bwd_gpu.cu; skipped without a GPU).
#pragma once

#include <cuda_runtime_api.h>

#include <optional>

#include "step05_fa2_kernel/flash_bwd.hpp"

namespace fa2 {

// Validates, then launches the three phases on `stream` (asynchronously, in order). Pointers in
// `args` are device memory.
void flash_bwd_cuda(const FlashBwdArgs& args, cudaStream_t stream = nullptr);

// Copies Q, K, V, O, L, dO (host tensors, any strides) to the GPU, runs `launch` (a backward
// with flash_bwd_cuda's signature, e.g. step07's fast one) into NaN-poisoned gradients and
// workspaces, waits, and returns dQ, dK, dV on the host. deterministic: with
// args.deterministic set and dq_semaphores allocated (poisoned too: the backward must clear them).
// The launch runs on the legacy default stream.
template <class T>
FlashGradients<T> run_backward_with_device_tensors(CudaBwdLaunchFn launch, TensorView<const T, 3> Q,
                                                   TensorView<const T, 3> K, TensorView<const T, 3> V,
                                                   TensorView<const T, 3> O, TensorView<const float, 2> L,
                                                   TensorView<const T, 3> dO, bool causal,
                                                   std::optional<float> scale = std::nullopt,
                                                   bool deterministic = false, Window window = {});

// The same with this backward (flash_bwd_cuda).
template <class T>
FlashGradients<T> flash_attention_backward_cuda(TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                                TensorView<const T, 3> V, TensorView<const T, 3> O,
                                                TensorView<const float, 2> L, TensorView<const T, 3> dO, bool causal,
                                                std::optional<float> scale = std::nullopt, bool deterministic = false);

}  // namespace fa2
