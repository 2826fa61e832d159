// The sm80 path's kernels of one generated translation unit: CMakeLists.txt writes one unit per
// head dim, mask and part (build/<preset>/step07_benchmark/instances/), each a line such as
//   template fa2::flash::Instances fa2::flash::sm80_instances<fa2::flash::ProductRows, fa2::flash::Part::product, 64,
//   true>();
// after including this header and the options of its table's rows (Sm80Options<Table>:
// product/sm80_rows.cuh, lab/sm80_rows.cuh). A unit holds the rows its part compiles at its head
// dim and mask (held(), product/rows.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <utility>

#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/product/rows.hpp"
#include "step07_benchmark/kernels/sm80/launch.cuh"

namespace fa2::flash {

// A forward row: the block's shape (16-row tiles per warp, warps, keys per tile) and its options.
struct V5Options {
  int warp_m = 1;
  int num_warps = 8;
  int block_n = 64;
  FastOptions options;
};

// The options of a table's sm80 rows, in its order: forward[] (V5Options) and backward[]
// (FastBwdOptions). Each table specialises it.
template <class Table>
struct Sm80Options;

template <class Table, int ROW, int D, bool CAUSAL>
void launch_sm80_forward_row(const ForwardPlan& plan, cudaStream_t stream) {
  constexpr V5Options o = Sm80Options<Table>::forward[ROW];
  launch_fast<FastConfig<D, o.warp_m, o.num_warps, o.block_n, CAUSAL, o.options>>(plan, stream);
}

template <class Table, int ROW, int D, bool CAUSAL>
void launch_sm80_backward_row(const BackwardPlan& plan, cudaStream_t stream) {
  launch_fast_bwd<FastBwdConfig<D, CAUSAL, Sm80Options<Table>::backward[ROW]>>(plan, stream);
}

// The unit's tables: each row's launch where part P holds it at (D, CAUSAL), null elsewhere.
template <class Table, Part P, int D, bool CAUSAL>
Instances sm80_instances() {
  static_assert(std::size(Sm80Options<Table>::forward) == std::size(Table::sm80_forward) &&
                std::size(Sm80Options<Table>::backward) == std::size(Table::sm80_backward));
  static constexpr auto forward = launch_table<Table, Family::sm80_forward, P, D, CAUSAL, ForwardLaunch>(
      []<int ROW>(std::integral_constant<int, ROW>) { return &launch_sm80_forward_row<Table, ROW, D, CAUSAL>; });
  static constexpr auto backward = launch_table<Table, Family::sm80_backward, P, D, CAUSAL, BackwardLaunch>(
      []<int ROW>(std::integral_constant<int, ROW>) { return &launch_sm80_backward_row<Table, ROW, D, CAUSAL>; });
  return {forward.data(), backward.data()};
}

}  // namespace fa2::flash
