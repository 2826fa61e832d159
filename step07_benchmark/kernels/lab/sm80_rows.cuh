// The options of the lab's sm80 rows (variants.def), for the lab's generated units of instances/sm80.cuh.
#pragma once

#include "step07_benchmark/kernels/instances/sm80.cuh"
#include "step07_benchmark/kernels/lab/rows.hpp"

namespace fa2::flash {

template <>
struct Sm80Options<lab::LabRows> {
  static constexpr V5Options forward[] = {
#define FA2_V5(key, label, adds, head_dims, warp_m, num_warps, block_n, ...) {warp_m, num_warps, block_n, __VA_ARGS__},
#include "step07_benchmark/kernels/lab/variants.def"
  };
  static constexpr FastBwdOptions backward[] = {
#define FA2_V5B(key, label, adds, head_dims, ...) __VA_ARGS__,
#include "step07_benchmark/kernels/lab/variants.def"
  };
};

}  // namespace fa2::flash
