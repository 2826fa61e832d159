// v5's kernels as the variants table (kernels/variants.def) describes them: each row's options,
// and the kernels of one translation unit per head dim, mask and part, which CMakeLists.txt
// generates (build/<preset>/step07_benchmark/instances/), each one line:
//   template fa2::fast::Instances fa2::fast::v5_instances<64, true, fa2::fast::Part::lab>();
// A unit holds the rows its part owns at its head dim and mask (part_of, variant_rows.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <utility>

#include "step07_benchmark/kernels/fast/fa2_fast_launch.cuh"
#include "step07_benchmark/kernels/fast/launch_plan.hpp"
#include "step07_benchmark/kernels/fast/variant_rows.hpp"

namespace fa2::fast {

// A forward row: the block's shape (16-row tiles per warp, warps, keys per tile) and its options.
struct V5Options {
  int warp_m = 1;
  int num_warps = 8;
  int block_n = 64;
  FastOptions options;
};

inline constexpr V5Options kV5Options[] = {
#define FA2_V5(key, label, adds, head_dims, warp_m, num_warps, block_n, ...) {warp_m, num_warps, block_n, __VA_ARGS__},
#include "step07_benchmark/kernels/variants.def"
};
inline constexpr FastBwdOptions kV5bOptions[] = {
#define FA2_V5B(key, label, adds, head_dims, ...) __VA_ARGS__,
#include "step07_benchmark/kernels/variants.def"
};
static_assert(std::size(kV5Options) == std::size(kV5Rows) && std::size(kV5bOptions) == std::size(kV5bRows));

template <int ROW, int D, bool CAUSAL>
void launch_v5_row(const ForwardPlan& plan, cudaStream_t stream) {
  constexpr V5Options o = kV5Options[ROW];
  launch_fast<FastConfig<D, o.warp_m, o.num_warps, o.block_n, CAUSAL, o.options>>(plan, stream);
}

template <int ROW, int D, bool CAUSAL>
void launch_v5b_row(const BackwardPlan& plan, cudaStream_t stream) {
  launch_fast_bwd<FastBwdConfig<D, CAUSAL, kV5bOptions[ROW]>>(plan, stream);
}

// The unit's tables: each row's launch where part P holds it at (D, CAUSAL), null elsewhere.
template <int D, bool CAUSAL, Part P>
Instances v5_instances() {
  static constexpr auto forward = launch_table<Family::v5, P, D, CAUSAL, ForwardLaunch>(
      []<int ROW>(std::integral_constant<int, ROW>) { return &launch_v5_row<ROW, D, CAUSAL>; });
  static constexpr auto backward = launch_table<Family::v5b, P, D, CAUSAL, BackwardLaunch>(
      []<int ROW>(std::integral_constant<int, ROW>) { return &launch_v5b_row<ROW, D, CAUSAL>; });
  return {forward.data(), backward.data()};
}

}  // namespace fa2::fast
