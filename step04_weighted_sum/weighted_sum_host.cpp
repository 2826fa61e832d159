// Step 4 on the host: argument checks, and both weighted-sum bodies run by run_on_host, one
// program after another (Triton's interpreter mode). The GPU path reuses the checks.
//   cmake --build --preset default --target step04_host_tests && ctest --preset default -L step04
#include <climits>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/check_arg.hpp"
#include "step04_weighted_sum/launch.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"
#include "step04_weighted_sum/weighted_sum_kernels.hpp"

namespace fa2 {

const char* to_string(WeightedSumStyle style) {
  switch (style) {
    case WeightedSumStyle::pointer_math:
      return "pointer maths";
    case WeightedSumStyle::tile_pointer:
      return "tile pointer";
  }
  return "unknown style";
}

template <class T>
void validate(const WeightedSumParams<T>& p) {
  require_arg(p.x_ptr != nullptr, "x_ptr", "got a null pointer");
  require_arg(p.weight_ptr != nullptr, "weight_ptr", "got a null pointer");
  require_arg(p.output_ptr != nullptr, "output_ptr", "got a null pointer");
  require_arg(p.NUM_ROWS >= 1, "NUM_ROWS", got_allowed(p.NUM_ROWS, ">= 1 (x needs at least one row)"));
  require_arg(p.D >= 1, "D", got_allowed(p.D, ">= 1 (an empty row has nothing to sum; check the shape of x)"));
  require_arg(p.x_stride_row >= 0, "x_stride_row", got_allowed(p.x_stride_row, ">= 0"));
  require_arg(p.x_stride_dim >= 0, "x_stride_dim", got_allowed(p.x_stride_dim, ">= 0"));
  require_arg(p.weight_stride_dim >= 0, "weight_stride_dim", got_allowed(p.weight_stride_dim, ">= 0"));
  // Inputs may repeat an element (stride 0 broadcasts it); the output may not: every row would
  // write the same element, and on the GPU the programs would race for it.
  require_arg(p.output_stride_row >= 1 || p.NUM_ROWS == 1, "output_stride_row",
              got_allowed(p.output_stride_row, ">= 1 when NUM_ROWS > 1"));
}

template <class T>
WeightedSumParams<T> make_weighted_sum_params(TensorView<const T, 2> x, TensorView<const T, 1> weight,
                                              TensorView<float, 1> output) {
  require_arg(weight.size(0) == x.size(1), "weight",
              "shape " + fa2::to_string<1>(weight.shape()) + " does not match the D = " + std::to_string(x.size(1)) +
                  " columns of x " + fa2::to_string<2>(x.shape()));
  require_arg(output.size(0) == x.size(0), "output",
              "shape " + fa2::to_string<1>(output.shape()) + " does not match the NUM_ROWS = " +
                  std::to_string(x.size(0)) + " rows of x " + fa2::to_string<2>(x.shape()));
  WeightedSumParams<T> p;
  p.x_ptr = x.data();
  p.weight_ptr = weight.data();
  p.output_ptr = output.data();
  p.x_stride_row = x.stride(0);
  p.x_stride_dim = x.stride(1);
  p.weight_stride_dim = weight.stride(0);
  p.output_stride_row = output.stride(0);
  p.NUM_ROWS = x.size(0);
  p.D = x.size(1);
  validate(p);
  return p;
}

int weighted_sum_programs(index_t NUM_ROWS, int ROWS_TILE_SIZE) {
  require_arg(ROWS_TILE_SIZE >= 1, "ROWS_TILE_SIZE", got_allowed(ROWS_TILE_SIZE, ">= 1"));
  const index_t programs = cdiv<index_t>(NUM_ROWS, ROWS_TILE_SIZE);
  require_arg(programs <= INT_MAX, "NUM_ROWS",
              "got " + std::to_string(NUM_ROWS) + ", which needs " + std::to_string(programs) + " programs of " +
                  std::to_string(ROWS_TILE_SIZE) + " rows: more than a grid can hold");
  return static_cast<int>(programs);
}

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>
void weighted_sum_fwd_host(WeightedSumStyle style, const WeightedSumParams<T>& p) {
  validate(p);
  const Grid grid{weighted_sum_programs(p.NUM_ROWS, ROWS_TILE_SIZE), 1, 1};
  // 128 threads shape the GPU launch; on the host one thread plays each program (and the race
  // checks simulate the 128).
  launch_weighted_sum<T, ROWS_TILE_SIZE, D_TILE_SIZE, 128>(style, HostLauncher{}, grid, p);
}

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE>
void weighted_sum_host(WeightedSumStyle style, TensorView<const T, 2> x, TensorView<const T, 1> weight,
                       TensorView<float, 1> output) {
  weighted_sum_fwd_host<ROWS_TILE_SIZE, D_TILE_SIZE, T>(style, make_weighted_sum_params<T>(x, weight, output));
}

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
requires HostBuiltTiles<ROWS_TILE_SIZE, D_TILE_SIZE> Tensor<float, 1> weighted_sum_host(WeightedSumStyle style,
                                                                                        TensorView<const T, 2> x,
                                                                                        TensorView<const T, 1> weight) {
  Tensor<float, 1> output(Extents<1>{x.size(0)}, std::numeric_limits<float>::quiet_NaN());
  weighted_sum_host<ROWS_TILE_SIZE, D_TILE_SIZE, T>(style, x, weight, output.view());
  return output;
}

// ---- what the library is built for ----------------------------------------------------------
#define FA2_WEIGHTED_SUM_HOST(T, R, C)                                                                       \
  template void weighted_sum_fwd_host<R, C, T>(WeightedSumStyle, const WeightedSumParams<T>&);               \
  template void weighted_sum_host<R, C, T>(WeightedSumStyle, TensorView<const T, 2>, TensorView<const T, 1>, \
                                           TensorView<float, 1>);                                            \
  template Tensor<float, 1> weighted_sum_host<R, C, T>(WeightedSumStyle, TensorView<const T, 2>,             \
                                                       TensorView<const T, 1>);
#define FA2_WEIGHTED_SUM_DTYPE(T)                                                                           \
  template void validate<T>(const WeightedSumParams<T>&);                                                   \
  template WeightedSumParams<T> make_weighted_sum_params<T>(TensorView<const T, 2>, TensorView<const T, 1>, \
                                                            TensorView<float, 1>);                          \
  FA2_WEIGHTED_SUM_HOST(T, 2, 4)                                                                            \
  FA2_WEIGHTED_SUM_HOST(T, 16, 64)

FA2_WEIGHTED_SUM_DTYPE(float)
FA2_WEIGHTED_SUM_DTYPE(bf16)

#undef FA2_WEIGHTED_SUM_DTYPE
#undef FA2_WEIGHTED_SUM_HOST

}  // namespace fa2
