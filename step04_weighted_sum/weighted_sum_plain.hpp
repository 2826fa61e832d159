// The plain-CUDA weighted_sum_fwd (weighted_sum_plain.cuh) from host code: run by the host
// emulation of CUDA (no GPU, no CUDA toolkit needed). The GPU runs are in weighted_sum_cuda.hpp
// (host tensors) and weighted_sum_launch.cuh (device pointers).
//
//   auto out = weighted_sum_plain_host<16, 64>(x, weight);   // x (NUM_ROWS, D), weight (D,) -> (NUM_ROWS,) float32
//
// Same arguments, checks and output as weighted_sum_host (weighted_sum.hpp); only the kernel differs.
#pragma once

#include "common/tensor.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"

namespace fa2 {

// Launches cdiv(NUM_ROWS, ROWS_TILE_SIZE) blocks of ROWS_TILE_SIZE emulated threads, after validate(p).
// Whatever a thread of the kernel throws (fa2::todo's NotImplemented in a starter kit) comes out here.
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>
void weighted_sum_plain_fwd_host(const WeightedSumParams<T>& p);

// Host tensors: writes output (NUM_ROWS,), which may be strided.
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>
void weighted_sum_plain_host(TensorView<const T, 2> x, TensorView<const T, 1> weight, TensorView<float, 1> output);

// Host tensors in, a new float32 output out (NaN before the run, so an unwritten row shows).
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE> Tensor<float, 1> weighted_sum_plain_host(
    TensorView<const T, 2> x, TensorView<const T, 1> weight);

}  // namespace fa2
