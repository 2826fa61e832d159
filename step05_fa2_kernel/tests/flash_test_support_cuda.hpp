// The GPU half of flash_test_support.hpp: a runner for any launcher with flash_fwd_cuda's
// signature (step05, step06's variants, step07's kernels), on host tensors, and the layout
// checks a fast forward must pass beyond contiguous tensors: a head of a (B, N, H, D) tensor
// (the other heads left untouched) and batch strides past 2^31 elements.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"

namespace fa2::testing {

template <class T>
FlashRunner<T> gpu_runner(CudaLaunchFn launch, Window window = {}) {
  return [launch, window](TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V, bool causal) {
    return run_with_device_tensors<T>(launch, Q, K, V, causal, std::nullopt, window);
  };
}

// Elements of each row of `row_length` outside [first, first + D) that are no longer NaN.
template <class E>
int written_outside(const std::vector<E>& storage, index_t row_length, index_t first, index_t D) {
  int written = 0;
  for (std::size_t i = 0; i < storage.size(); ++i) {
    const index_t col = static_cast<index_t>(i) % row_length;
    if ((col < first || col >= first + D) && !std::isnan(convert<float>(storage[i]))) ++written;
  }
  return written;
}

// Q, K, V and O are head 1 of (B, N, 3, D) bf16 tensors (rows of 3 D elements, N_q != N_k, tiles
// ragged), L is strided; O and L start as NaN. O and L must match the float64 reference and the
// other heads of O must stay NaN.
inline void check_forward_head_view(CudaLaunchFn forward, bool causal, index_t D) {
  const index_t B = 2, N_q = 200, N_k = 333, heads = 3, head = 1;
  Rng rng(fresh_seed());
  INFO("seed ", rng.seed(), " causal ", causal, " D ", D);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto whole = [&](index_t N, bf16 fill) {
    return Tensor<bf16, 3>::strided({B, N, heads * D}, {N * heads * D, heads * D, 1}, fill);
  };
  const auto random_whole = [&](index_t N) {
    auto t = whole(N, bf16(0.0f));
    fill_normal<bf16, 3>(t.view(), rng);
    return t;
  };
  const auto head_of = [&](const Tensor<bf16, 3>& t) {
    return TensorView<const bf16, 3>(t.storage().data() + head * D, {B, t.shape()[1], D}, t.strides());
  };
  const auto Q = random_whole(N_q), K = random_whole(N_k), V = random_whole(N_k);
  auto O = whole(N_q, bf16(nan));
  auto L = Tensor<float, 2>::strided({B, N_q}, {2 * N_q, 2}, nan);
  cuda::DeviceTensor<bf16, 3> dev_Q(Q), dev_K(K), dev_V(V), dev_O(O);
  cuda::DeviceTensor<float, 2> dev_L(L);
  const auto dev_head = [&]<class E>(E* data, index_t N) {
    return TensorView<E, 3>(data + head * D, {B, N, D}, {N * heads * D, heads * D, 1});
  };
  const auto in_head = [&](cuda::DeviceTensor<bf16, 3>& t, index_t N) {
    return dev_head(static_cast<const bf16*>(t.data()), N);
  };
  forward(make_flash_args<bf16>(in_head(dev_Q, N_q), in_head(dev_K, N_k), in_head(dev_V, N_k),
                                dev_head(dev_O.data(), N_q), dev_L.view(), causal),
          nullptr);
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  dev_O.download_to(O);
  dev_L.download_to(L);
  const auto ref = reference_attention<bf16>(head_of(Q), head_of(K), head_of(V), causal);
  Tensor<bf16, 3> O_head({B, N_q, D});
  copy_convert<bf16, bf16, 3>(head_of(O), O_head.view());
  FA2_CHECK_CLOSE(O_head.cview(), ref.O.cview(), flash_tolerance<bf16>(), "O of head 1 of (B, N, 3, D)");
  FA2_CHECK_CLOSE(L.cview(), ref.L.cview(), flash_tolerance<bf16>(), "L (strided)");
  CHECK(written_outside(O.storage(), heads * D, head * D, D) == 0);
  CHECK(written_outside(L.storage(), 2, 0, 1) == 0);
}

// Batch element 1 of Q, K, V and O starts 2^31 + 64 elements after element 0, so a 32-bit
// offset would wrap; O and L start as NaN. Skipped (marked) without ~17 GB of free GPU memory.
inline void check_forward_batch_stride_past_2_31(CudaLaunchFn forward, bool causal, index_t D = 64) {
  const index_t B = 2, N = 100, stride_b = (index_t{1} << 31) + 64;
  const auto elements = static_cast<std::size_t>(stride_b + N * D);
  std::size_t free_bytes = 0, total_bytes = 0;
  FA2_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < 4 * elements * sizeof(bf16) + (std::size_t{1} << 30)) {
    mark_skipped("needs ~17 GB of free GPU memory");
    return;
  }
  Rng rng(fresh_seed());
  INFO("seed ", rng.seed(), " causal ", causal, " D ", D);
  const auto Q = random_normal<bf16, 3>({B, N, D}, rng), K = random_normal<bf16, 3>({B, N, D}, rng),
             V = random_normal<bf16, 3>({B, N, D}, rng);
  cuda::DeviceBuffer<bf16> dQ(elements), dK(elements), dV(elements), dO(elements);
  dO.fill_bytes(0xFF);
  const auto per_batch = static_cast<std::size_t>(N * D);
  for (index_t b = 0; b < B; ++b) {
    const auto off = static_cast<std::size_t>(b * stride_b);
    FA2_CUDA_CHECK(cudaMemcpy(dQ.data() + off, &Q(b, 0, 0), per_batch * 2, cudaMemcpyHostToDevice));
    FA2_CUDA_CHECK(cudaMemcpy(dK.data() + off, &K(b, 0, 0), per_batch * 2, cudaMemcpyHostToDevice));
    FA2_CUDA_CHECK(cudaMemcpy(dV.data() + off, &V(b, 0, 0), per_batch * 2, cudaMemcpyHostToDevice));
  }
  cuda::DeviceBuffer<float> dL(static_cast<std::size_t>(B * N));
  dL.fill_bytes(0xFF);
  const Extents<3> shape{B, N, D}, strides{stride_b, D, 1};
  forward(make_flash_args<bf16>(TensorView<const bf16, 3>(dQ.data(), shape, strides),
                                TensorView<const bf16, 3>(dK.data(), shape, strides),
                                TensorView<const bf16, 3>(dV.data(), shape, strides),
                                TensorView<bf16, 3>(dO.data(), shape, strides), TensorView<float, 2>(dL.data(), {B, N}),
                                causal),
          nullptr);
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  Tensor<bf16, 3> O({B, N, D});
  Tensor<float, 2> L({B, N});
  for (index_t b = 0; b < B; ++b) {
    FA2_CUDA_CHECK(cudaMemcpy(&O(b, 0, 0), dO.data() + static_cast<std::size_t>(b * stride_b), per_batch * 2,
                              cudaMemcpyDeviceToHost));
  }
  FA2_CUDA_CHECK(cudaMemcpy(L.storage().data(), dL.data(), static_cast<std::size_t>(B * N) * sizeof(float),
                            cudaMemcpyDeviceToHost));
  const auto ref = reference_attention<bf16>(Q.cview(), K.cview(), V.cview(), causal);
  FA2_CHECK_CLOSE(O.cview(), ref.O.cview(), flash_tolerance<bf16>(), "O, batch stride 2^31 + 64");
  FA2_CHECK_CLOSE(L.cview(), ref.L.cview(), flash_tolerance<bf16>(), "L, batch stride 2^31 + 64");
}

}  // namespace fa2::testing
