// The options of the lab's sm90 rows (variants.def), for the lab's generated units of
// instances/sm90.cuh, with v6.1-v6.5's cp.async kernel that only the lab's rows launch.
#pragma once

#include "step07_benchmark/kernels/instances/sm90.cuh"
#include "step07_benchmark/kernels/lab/rows.hpp"
#include "step07_benchmark/kernels/lab/sm90_cp_async.cuh"

namespace fa2::flash {

template <>
struct Sm90Options<lab::LabRows> {
  static constexpr AtHeadDims<HopperOptions> forward[] = {
#define FA2_V6(key, label, adds, head_dims, ...) {__VA_ARGS__},
#include "step07_benchmark/kernels/lab/variants.def"
  };
  static constexpr AtHeadDims<HopperBwdOptions> backward[] = {
#define FA2_V6B(key, label, adds, head_dims, ...) {__VA_ARGS__},
#include "step07_benchmark/kernels/lab/variants.def"
  };
};

}  // namespace fa2::flash
