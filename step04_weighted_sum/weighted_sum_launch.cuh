// weighted_sum_fwd on the GPU for device pointers: the launch that Triton's
// weighted_sum_fwd[grid](...) performs, for any power-of-two tile sizes (include from a .cu).
//
//   auto p = make_weighted_sum_params<float>(d_x.view(), d_weight.view(), d_out.view());
//   weighted_sum_fwd_cuda<16, 64>(WeightedSumStyle::tile_pointer, p, stream);
//   weighted_sum_plain_fwd_cuda<16, 64>(p, stream);        // the plain-CUDA kernel, same params
//
// Validates on the host (std::invalid_argument names the bad argument), then launches
// cdiv(NUM_ROWS, ROWS_TILE_SIZE) programs (thread blocks) on `stream`, asynchronously.
#pragma once

#include <cuda_runtime.h>

#include "common/cuda/cuda_check.hpp"
#include "step04_weighted_sum/launch_device.cuh"
#include "step04_weighted_sum/weighted_sum.hpp"
#include "step04_weighted_sum/weighted_sum_kernels.hpp"
#include "step04_weighted_sum/weighted_sum_plain.cuh"

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

// The plain-CUDA kernel (weighted_sum_plain.cuh): blocks of ROWS_TILE_SIZE threads, one per row.
// The host emulation launches the same shape (weighted_sum_plain_host.cpp).
template <int ROWS_TILE_SIZE, int D_TILE_SIZE, class T>
void weighted_sum_plain_fwd_cuda(const WeightedSumParams<T>& p, cudaStream_t stream) {
  validate(p);
  using Shape = PlainWeightedSumShape<ROWS_TILE_SIZE, D_TILE_SIZE>;
  const auto blocks = static_cast<unsigned>(weighted_sum_programs(p.NUM_ROWS, ROWS_TILE_SIZE));
  weighted_sum_fwd_plain<T, ROWS_TILE_SIZE, D_TILE_SIZE><<<blocks, Shape::threads_per_block, 0, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();
}

}  // namespace fa2
