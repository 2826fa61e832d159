// v6's kernels and v6b's as the variants table (kernels/variants.def) describes them: each row's
// options at head dims 64 and 128, and the kernels of one translation unit per head dim, mask and part,
// which CMakeLists.txt generates for sm_90a alone (build/<preset>/step07_benchmark/instances/):
//   template fa2::fast::Instances fa2::fast::v6_instances<128, false, fa2::fast::Part::product>();
// A unit holds the rows its part owns at its head dim and mask (part_of, variant_rows.hpp).
#pragma once

#include <array>
#include <iterator>
#include <utility>

#include "step07_benchmark/kernels/fast/fa2_hopper_launch.cuh"
#include "step07_benchmark/kernels/fast/launch_plan.hpp"
#include "step07_benchmark/kernels/fast/variant_rows.hpp"

namespace fa2::fast {

// A row's options at head dims 64 and 128 (the last two columns of its FA2_V6 or FA2_V6B row).
template <class Options>
struct AtHeadDims {
  Options at64;
  Options at128;
  constexpr const Options& at(int head_dim) const { return head_dim == 64 ? at64 : at128; }
};

inline constexpr AtHeadDims<HopperOptions> kV6Options[] = {
#define FA2_V6(key, label, adds, head_dims, ...) {__VA_ARGS__},
#include "step07_benchmark/kernels/variants.def"
};
static_assert(std::size(kV6Options) == std::size(kV6Rows));

inline constexpr AtHeadDims<HopperBwdOptions> kV6bOptions[] = {
#define FA2_V6B(key, label, adds, head_dims, ...) {__VA_ARGS__},
#include "step07_benchmark/kernels/variants.def"
};
static_assert(std::size(kV6bOptions) == std::size(kV6bRows));

// The picks that "fast" runs with a sliding window ("v6 window") must name rows built with a
// windowed twin.
constexpr bool window_picks_take_windows() {
  for (const Pick& p : kPicks) {
    if (p.tuned != "v6 window") continue;
    const int row = row_index<Family::v6>(p.row);
    if (row < 0 || !takes_window(kV6Options[row].at(p.head_dim))) return false;
  }
  return true;
}
static_assert(window_picks_take_windows(),
              "variants.def: a \"v6 window\" pick names a row of v6 that takes no window (hopper/config.cuh)");

template <int ROW, int D, bool CAUSAL>
void launch_v6_row(const ForwardPlan& plan, cudaStream_t stream) {
  launch_hopper<HopperConfig<D, CAUSAL, kV6Options[ROW].at(D)>>(plan, stream);
}

template <int ROW, int D, bool CAUSAL>
void launch_v6b_row(const BackwardPlan& plan, cudaStream_t stream) {
  launch_hopper_bwd<HopperBwdConfig<D, CAUSAL, kV6bOptions[ROW].at(D)>>(plan, stream);
}

// The unit's tables: each row's launch where part P holds it at (D, CAUSAL), null elsewhere.
template <int D, bool CAUSAL, Part P>
Instances v6_instances() {
  static constexpr auto forward = launch_table<Family::v6, P, D, CAUSAL, ForwardLaunch>(
      []<int ROW>(std::integral_constant<int, ROW>) { return &launch_v6_row<ROW, D, CAUSAL>; });
  static constexpr auto backward = launch_table<Family::v6b, P, D, CAUSAL, BackwardLaunch>(
      []<int ROW>(std::integral_constant<int, ROW>) { return &launch_v6b_row<ROW, D, CAUSAL>; });
  return {forward.data(), backward.data()};
}

}  // namespace fa2::fast
