// The options of the product's sm80 rows (kernels.def), for the generated units of instances/sm80.cuh.
#pragma once

#include "step07_benchmark/kernels/instances/sm80.cuh"

namespace fa2::flash {

template <>
struct Sm80Options<ProductRows> {
  static constexpr V5Options forward[] = {
#define FA2_SM80_FORWARD(key, head_dims, warp_m, num_warps, block_n, ...) {warp_m, num_warps, block_n, __VA_ARGS__},
#include "step07_benchmark/kernels/product/kernels.def"
  };
  static constexpr FastBwdOptions backward[] = {
#define FA2_SM80_BACKWARD(key, head_dims, ...) __VA_ARGS__,
#include "step07_benchmark/kernels/product/kernels.def"
  };
};

}  // namespace fa2::flash
