// The options of the product's sm90 rows (kernels.def), for the generated units of instances/sm90.cuh.
#pragma once

#include "step07_benchmark/kernels/instances/sm90.cuh"

namespace fa2::flash {

template <>
struct Sm90Options<ProductRows> {
  static constexpr AtHeadDims<HopperOptions> forward[] = {
#define FA2_SM90_FORWARD(key, head_dims, ...) {__VA_ARGS__},
#include "step07_benchmark/kernels/product/kernels.def"
  };
  static constexpr AtHeadDims<HopperBwdOptions> backward[] = {
#define FA2_SM90_BACKWARD(key, head_dims, ...) {__VA_ARGS__},
#include "step07_benchmark/kernels/product/kernels.def"
  };
};

// The picks for calls with a sliding window must name rows built with a windowed twin.
constexpr bool window_picks_take_windows() {
  for (const Pick& p : kPicks) {
    if (p.family != Family::sm90_forward || !p.window) continue;
    const int row = row_index<ProductRows, Family::sm90_forward>(p.row);
    if (row < 0 || !takes_window(Sm90Options<ProductRows>::forward[row].at(p.head_dim))) return false;
  }
  return true;
}
static_assert(window_picks_take_windows(),
              "kernels.def: a window pick names an sm90 row that takes no window (sm90/config.cuh)");

}  // namespace fa2::flash
