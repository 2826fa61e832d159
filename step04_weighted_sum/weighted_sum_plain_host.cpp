// The plain-CUDA weighted_sum_fwd on the host: g++ compiles weighted_sum_plain.cuh with the host
// emulation of CUDA (cuda_primer/cuda_emulation.hpp), and this file launches it like the GPU does.
//   cmake --build --preset cpu-only --target step04_host_tests && ctest --preset cpu-only -L step04
#include <limits>

#include "step04_weighted_sum/cuda_primer/cuda_emulation.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"
#include "step04_weighted_sum/weighted_sum_plain.cuh"
#include "step04_weighted_sum/weighted_sum_plain.hpp"

namespace fa2 {

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>
void weighted_sum_plain_fwd_host(const WeightedSumParams<T>& p) {
  validate(p);
  using Shape = PlainWeightedSumShape<ROWS_TILE_SIZE, D_TILE_SIZE>;
  const auto blocks = static_cast<unsigned>(weighted_sum_programs(p.NUM_ROWS, ROWS_TILE_SIZE));
  cuda_emulation::launch(cuda_emulation::Dim3(blocks), cuda_emulation::Dim3(Shape::threads_per_block),
                         weighted_sum_fwd_plain<T, ROWS_TILE_SIZE, D_TILE_SIZE>, p);
}

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>
void weighted_sum_plain_host(TensorView<const T, 2> x, TensorView<const T, 1> weight, TensorView<float, 1> output) {
  weighted_sum_plain_fwd_host<ROWS_TILE_SIZE, D_TILE_SIZE, T>(make_weighted_sum_params<T>(x, weight, output));
}

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE> Tensor<float, 1> weighted_sum_plain_host(
    TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  Tensor<float, 1> output(Extents<1>{x.size(0)}, std::numeric_limits<float>::quiet_NaN());
  weighted_sum_plain_host<ROWS_TILE_SIZE, D_TILE_SIZE, T>(x, weight, output.view());
  return output;
}

#define FA2_WEIGHTED_SUM_PLAIN_HOST(T, R, C)                                                     \
  template void weighted_sum_plain_fwd_host<R, C, T>(const WeightedSumParams<T>&);               \
  template void weighted_sum_plain_host<R, C, T>(TensorView<const T, 2>, TensorView<const T, 1>, \
                                                 TensorView<float, 1>);                          \
  template Tensor<float, 1> weighted_sum_plain_host<R, C, T>(TensorView<const T, 2>, TensorView<const T, 1>);
FA2_WEIGHTED_SUM_PLAIN_HOST(float, 2, 4)
FA2_WEIGHTED_SUM_PLAIN_HOST(float, 16, 64)
FA2_WEIGHTED_SUM_PLAIN_HOST(bf16, 2, 4)
FA2_WEIGHTED_SUM_PLAIN_HOST(bf16, 16, 64)
#undef FA2_WEIGHTED_SUM_PLAIN_HOST

}  // namespace fa2
