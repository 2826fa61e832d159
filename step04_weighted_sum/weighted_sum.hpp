// The public API of step 4's weighted_sum_fwd (host side; no CUDA headers needed).
//
//   auto out = weighted_sum_host<2, 4>(WeightedSumStyle::tile_pointer, x, weight);   // x (N, D), weight (D,)
//   weighted_sum_fwd_cuda<16, 64>(style, params, stream);   // device pointers: weighted_sum_launch.cuh
//   auto out = weighted_sum_cuda<16, 64>(style, x, weight);  // host tensors through the GPU: weighted_sum_cuda.hpp
//
// output[r] = sum over c of x[r, c] * weight[c], accumulated in float32. x and weight are float32
// or bfloat16 (the same type), with any non-negative strides; the output is always float32:
// the accumulator is float32 and rounding it back to bf16 would only throw precision away.
// The tile sizes are template arguments (powers of two, as Triton's tl.constexpr block sizes);
// the host library is compiled for the article's 2 x 4 and for 16 x 64, the GPU header for any.
#pragma once

#include <cstdint>
#include <string>

#include "common/bf16.hpp"
#include "common/numeric.hpp"
#include "common/tensor.hpp"

namespace fa2 {

// The two ways the article writes the same kernel.
enum class WeightedSumStyle {
  pointer_math,  // index vectors, an address grid and masks built by hand
  tile_pointer,  // make_tile_ptr, load with boundary_check, advance, store
};
const char* to_string(WeightedSumStyle style);

// The kernel's arguments, named as in the Triton signature. Pointers are host memory for the
// host path and device memory for the GPU path; strides count elements.
template <class T>
struct WeightedSumParams {
  const T* x_ptr = nullptr;       // (NUM_ROWS, D)
  const T* weight_ptr = nullptr;  // (D,)
  float* output_ptr = nullptr;    // (NUM_ROWS,)
  index_t x_stride_row = 0, x_stride_dim = 0;
  index_t weight_stride_dim = 0;
  index_t output_stride_row = 0;
  index_t NUM_ROWS = 0, D = 0;
};

// Throws std::invalid_argument naming the first bad argument: a null pointer, NUM_ROWS or D
// below 1, a negative stride, or an output stride of 0 with several rows (every row would
// write the same element).
template <class T>
void validate(const WeightedSumParams<T>& p);

// The arguments for views of x, weight and output (host or device memory: only shapes,
// strides and addresses are read). Checks that the shapes fit together, then validate().
template <class T>
WeightedSumParams<T> make_weighted_sum_params(TensorView<const T, 2> x, TensorView<const T, 1> weight,
                                              TensorView<float, 1> output);

// The launch grid: one program per band of ROWS_TILE_SIZE rows, cdiv(NUM_ROWS, ROWS_TILE_SIZE).
// Throws when that is more programs than a grid can hold.
int weighted_sum_programs(index_t NUM_ROWS, int ROWS_TILE_SIZE);

// The tile sizes the host library is compiled for: the article's example and a realistic size.
template <int ROWS_TILE_SIZE, int D_TILE_SIZE>
concept HostBuiltTiles = (ROWS_TILE_SIZE == 2 && D_TILE_SIZE == 4) || (ROWS_TILE_SIZE == 16 && D_TILE_SIZE == 64);

// Runs the kernel body on the host, one program after another (Triton's interpreter mode).
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>
void weighted_sum_fwd_host(WeightedSumStyle style, const WeightedSumParams<T>& p);

// Host tensors: writes output (NUM_ROWS,), which may be strided.
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>
void weighted_sum_host(WeightedSumStyle style, TensorView<const T, 2> x, TensorView<const T, 1> weight,
                       TensorView<float, 1> output);

// Host tensors in, a new float32 output out (filled with NaN before the run, so a row the
// kernel fails to write cannot pass a comparison).
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE> Tensor<float, 1> weighted_sum_host(WeightedSumStyle style,
                                                                                        TensorView<const T, 2> x,
                                                                                        TensorView<const T, 1> weight);

}  // namespace fa2
