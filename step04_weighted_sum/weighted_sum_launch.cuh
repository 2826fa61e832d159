// weighted_sum_fwd on the GPU for device pointers: the launch that Triton's
// weighted_sum_fwd[grid](...) performs, for any power-of-two tile sizes (include from a .cu).
//
//   auto p = make_weighted_sum_params<float>(d_x.view(), d_weight.view(), d_out.view());
//   weighted_sum_fwd_cuda<16, 64>(WeightedSumStyle::tile_pointer, p, stream);
//
// Validates on the host (std::invalid_argument names the bad argument), then launches
// cdiv(NUM_ROWS, ROWS_TILE_SIZE) programs of NUM_THREADS threads on `stream`, asynchronously.
#pragma once

#include <cuda_runtime.h>

#include "step04_weighted_sum/launch_device.cuh"
#include "step04_weighted_sum/weighted_sum.hpp"
#include "step04_weighted_sum/weighted_sum_kernels.hpp"

namespace fa2 {

template <int ROWS_TILE_SIZE, int D_TILE_SIZE, int NUM_THREADS = 128, class T>
void weighted_sum_fwd_cuda(WeightedSumStyle style, const WeightedSumParams<T>& p, cudaStream_t stream) {
  static_assert(is_power_of_two(ROWS_TILE_SIZE) && is_power_of_two(D_TILE_SIZE),
                "ROWS_TILE_SIZE and D_TILE_SIZE are powers of two (round up with next_power_of_two)");
  static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "a program is 1 to 32 whole warps");
  validate(p);
  const Grid grid{weighted_sum_programs(p.NUM_ROWS, ROWS_TILE_SIZE), 1, 1};
  launch_weighted_sum<T, ROWS_TILE_SIZE, D_TILE_SIZE, NUM_THREADS>(style, DeviceLauncher{stream}, grid, p);
}

}  // namespace fa2
