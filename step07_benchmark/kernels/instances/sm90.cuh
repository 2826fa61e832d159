// The sm90 path's kernels of one generated translation unit (compiled for sm_90a alone): as
// instances/sm80.cuh, with the options of a table's rows in Sm90Options<Table>
// (product/sm90_rows.cuh, lab/sm90_rows.cuh).
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <utility>

#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/product/rows.hpp"
#include "step07_benchmark/kernels/sm90/launch.cuh"

namespace fa2::flash {

// A row's options at head dims 64 and 128 (the last two columns of its row).
template <class Options>
struct AtHeadDims {
  Options at64;
  Options at128;
  constexpr const Options& at(int head_dim) const { return head_dim == 64 ? at64 : at128; }
};

// The options of a table's sm90 rows, in its order: forward[] (AtHeadDims<HopperOptions>) and
// backward[] (AtHeadDims<HopperBwdOptions>). Each table specialises it.
template <class Table>
struct Sm90Options;

template <class Table, int ROW, int D, bool CAUSAL>
void launch_sm90_forward_row(const ForwardPlan& plan, cudaStream_t stream) {
  launch_hopper<HopperConfig<D, CAUSAL, Sm90Options<Table>::forward[ROW].at(D)>>(plan, stream);
}

template <class Table, int ROW, int D, bool CAUSAL>
void launch_sm90_backward_row(const BackwardPlan& plan, cudaStream_t stream) {
  launch_hopper_bwd<HopperBwdConfig<D, CAUSAL, Sm90Options<Table>::backward[ROW].at(D)>>(plan, stream);
}

// The unit's tables: each row's launch where part P holds it at (D, CAUSAL), null elsewhere.
template <class Table, Part P, int D, bool CAUSAL>
Instances sm90_instances() {
  static_assert(std::size(Sm90Options<Table>::forward) == std::size(Table::sm90_forward) &&
                std::size(Sm90Options<Table>::backward) == std::size(Table::sm90_backward));
  static constexpr auto forward = launch_table<Table, Family::sm90_forward, P, D, CAUSAL, ForwardLaunch>(
      []<int ROW>(std::integral_constant<int, ROW>) { return &launch_sm90_forward_row<Table, ROW, D, CAUSAL>; });
  static constexpr auto backward = launch_table<Table, Family::sm90_backward, P, D, CAUSAL, BackwardLaunch>(
      []<int ROW>(std::integral_constant<int, ROW>) { return &launch_sm90_backward_row<Table, ROW, D, CAUSAL>; });
  return {forward.data(), backward.data()};
}

}  // namespace fa2::flash
