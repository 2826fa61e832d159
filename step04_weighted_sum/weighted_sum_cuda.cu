// Step 4 on the GPU for host tensors: upload with the same strides, launch the body chosen by
// `style` or the plain-CUDA kernel (weighted_sum_launch.cuh), download. The kernel bodies are the
// host path's bodies; the plain kernel is the one the host emulation runs.
//   cmake --build --preset default --target step04_gpu_tests && ctest --preset default -L gpu
#include <limits>

#include "common/cuda/device_buffer.hpp"
#include "step04_weighted_sum/weighted_sum_cuda.hpp"
#include "step04_weighted_sum/weighted_sum_launch.cuh"

namespace fa2 {

namespace {

// A device copy of a host view that keeps its layout (a transposed x stays transposed).
template <class T, int Rank>
cuda::DeviceTensor<T, Rank> upload(TensorView<const T, Rank> view) {
  auto staged = Tensor<T, Rank>::strided(view.shape(), view.strides());
  copy_convert<T, T, Rank>(view, staged.view());
  return cuda::DeviceTensor<T, Rank>(staged);
}

// Uploads x and weight, runs `launch(params)` into a NaN-poisoned device output, downloads it.
template <class T, class Launch>
Tensor<float, 1> run_on_device(TensorView<const T, 2> x, TensorView<const T, 1> weight, const Launch& launch) {
  auto d_x = upload<T, 2>(x);
  auto d_weight = upload<T, 1>(weight);
  Tensor<float, 1> output(Extents<1>{x.size(0)}, std::numeric_limits<float>::quiet_NaN());
  cuda::DeviceTensor<float, 1> d_output(output);  // the NaN poison travels too
  launch(make_weighted_sum_params<T>(d_x.view(), d_weight.view(), d_output.view()));
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  d_output.download_to(output);
  return output;
}

}  // namespace

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires CudaBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE> Tensor<float, 1> weighted_sum_cuda(WeightedSumStyle style,
                                                                                        TensorView<const T, 2> x,
                                                                                        TensorView<const T, 1> weight) {
  return run_on_device<T>(x, weight, [style](const WeightedSumParams<T>& p) {
    weighted_sum_fwd_cuda<ROWS_TILE_SIZE, D_TILE_SIZE>(style, p, nullptr);
  });
}

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires CudaBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE> Tensor<float, 1> weighted_sum_plain_cuda(
    TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  return run_on_device<T>(x, weight, [](const WeightedSumParams<T>& p) {
    weighted_sum_plain_fwd_cuda<ROWS_TILE_SIZE, D_TILE_SIZE>(p, nullptr);
  });
}

template Tensor<float, 1> weighted_sum_cuda<2, 4, float>(WeightedSumStyle, TensorView<const float, 2>,
                                                         TensorView<const float, 1>);
template Tensor<float, 1> weighted_sum_cuda<16, 64, float>(WeightedSumStyle, TensorView<const float, 2>,
                                                           TensorView<const float, 1>);
template Tensor<float, 1> weighted_sum_cuda<2, 4, bf16>(WeightedSumStyle, TensorView<const bf16, 2>,
                                                        TensorView<const bf16, 1>);
template Tensor<float, 1> weighted_sum_cuda<16, 64, bf16>(WeightedSumStyle, TensorView<const bf16, 2>,
                                                          TensorView<const bf16, 1>);
template Tensor<float, 1> weighted_sum_plain_cuda<2, 4, float>(TensorView<const float, 2>, TensorView<const float, 1>);
template Tensor<float, 1> weighted_sum_plain_cuda<16, 64, float>(TensorView<const float, 2>,
                                                                 TensorView<const float, 1>);
template Tensor<float, 1> weighted_sum_plain_cuda<2, 4, bf16>(TensorView<const bf16, 2>, TensorView<const bf16, 1>);
template Tensor<float, 1> weighted_sum_plain_cuda<16, 64, bf16>(TensorView<const bf16, 2>, TensorView<const bf16, 1>);

}  // namespace fa2
