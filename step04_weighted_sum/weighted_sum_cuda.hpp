// weighted_sum_fwd through the GPU for host tensors (no CUDA headers needed: the demo and
// other .cpp files call it). For device pointers use weighted_sum_launch.cuh.
//   auto out = weighted_sum_cuda<2, 4>(WeightedSumStyle::pointer_math, x.cview(), weight.cview());
//   auto out = weighted_sum_plain_cuda<16, 64>(x.cview(), weight.cview());   // the plain-CUDA kernel
#pragma once

#include "step04_weighted_sum/weighted_sum.hpp"

namespace fa2 {

// The tile sizes this library is compiled for (the same as the host library).
template <int ROWS_TILE_SIZE, int D_TILE_SIZE>
concept CudaBuiltTiles = HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>;

// Copies x and weight (any strides) to the GPU, runs one program per band of rows into a
// NaN-poisoned output, waits, and returns the float32 output on the host.
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires CudaBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE> Tensor<float, 1> weighted_sum_cuda(WeightedSumStyle style,
                                                                                        TensorView<const T, 2> x,
                                                                                        TensorView<const T, 1> weight);

// The same for the plain-CUDA kernel (weighted_sum_plain.cuh).
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires CudaBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE> Tensor<float, 1> weighted_sum_plain_cuda(
    TensorView<const T, 2> x, TensorView<const T, 1> weight);

}  // namespace fa2
