// weighted_sum_fwd a third time, in plain CUDA: the same problem and the same WeightedSumParams
// as the two program bodies of weighted_sum_kernels.hpp, written with threadIdx, blockIdx,
// __shared__ and __syncthreads(). What the tile pointer did for you, this kernel does by hand.
//   nvcc: the GPU (weighted_sum_launch.cuh)   g++: the host emulation (weighted_sum_plain_host.cpp)
//   ctest --preset cpu-only -L step04
//
// One block of ROWS_TILE_SIZE threads per band of ROWS_TILE_SIZE rows, one thread per row. For each
// step of D_TILE_SIZE columns the block copies an (ROWS_TILE_SIZE, D_TILE_SIZE) tile of x and a
// (D_TILE_SIZE,) slice of weight into shared memory, then each thread adds its row's products.
#pragma once

#include "common/bf16.hpp"
#include "common/numeric.hpp"
#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution region below
#include "step04_weighted_sum/weighted_sum.hpp"

#if !defined(__CUDACC__)
#include "step04_weighted_sum/cuda_primer/cuda_emulation.hpp"  // g++: the CUDA names, played on the host
#endif

namespace fa2 {

// The launch shape the kernel assumes (blockDim.x == threads_per_block, one block per band of
// rows), and the tile's extents as class constants: g++ wrongly warns about a sign conversion when
// a template parameter itself is the bound of a local array, and not when such a constant is.
template <int ROWS_TILE_SIZE, int D_TILE_SIZE>
struct PlainWeightedSumShape {
  static_assert(is_power_of_two(ROWS_TILE_SIZE) && is_power_of_two(D_TILE_SIZE),
                "tile sizes are powers of two, as in the other two styles");
  static_assert(ROWS_TILE_SIZE <= 1024, "one thread per row: a block holds at most 1024 threads");
  static_assert(ROWS_TILE_SIZE * D_TILE_SIZE <= 8192,
                "an x tile of at most 32 KB, so that it fits in the 48 KB of static shared memory with room to spare");
  static constexpr int threads_per_block = ROWS_TILE_SIZE;
  static constexpr int tile_rows = ROWS_TILE_SIZE;
  static constexpr int tile_cols = D_TILE_SIZE;
};

template <class T, int ROWS_TILE_SIZE, int D_TILE_SIZE>
__global__ void weighted_sum_fwd_plain(const WeightedSumParams<T> p) {
  static_assert(is_supported_dtype_v<T>, "x and weight are float32 or bfloat16");
  // BEGIN SOLUTION step04 standard: the plain-CUDA kernel: this thread's row, x and weight tiles in __shared__ memory filled by coalesced loads, the barriers, the row's sum, the store uses(p)
  using Shape = PlainWeightedSumShape<ROWS_TILE_SIZE, D_TILE_SIZE>;
  // Padding each row of the x tile by one float puts column c of consecutive rows in consecutive
  // banks, so a warp reading one column (one row per thread) is served in a single pass.
  __shared__ float xs[Shape::tile_rows][Shape::tile_cols + 1];  // (ROWS_TILE_SIZE, D_TILE_SIZE) + 1 pad column
  __shared__ float ws[Shape::tile_cols];                        // (D_TILE_SIZE,)

  const int me = static_cast<int>(threadIdx.x);
  const index_t band_start = static_cast<index_t>(blockIdx.x) * ROWS_TILE_SIZE;
  const index_t my_row = band_start + me;
  float acc = 0.0f;  // float32 whatever T is

  for (index_t tile_col = 0; tile_col < p.D; tile_col += D_TILE_SIZE) {
    // Element k of the tile goes to thread k % blockDim.x: neighbouring threads fetch neighbouring
    // columns of one row, which are neighbouring addresses when x is row-major (one sector per 8
    // floats). Out-of-range elements become 0 and add nothing.
    for (int k = me; k < ROWS_TILE_SIZE * D_TILE_SIZE; k += static_cast<int>(blockDim.x)) {
      const int r = k / D_TILE_SIZE;
      const int c = k % D_TILE_SIZE;
      const index_t gr = band_start + r;
      const index_t gc = tile_col + c;
      const bool inside = gr < p.NUM_ROWS && gc < p.D;
      xs[r][c] = inside ? convert<float>(p.x_ptr[gr * p.x_stride_row + gc * p.x_stride_dim]) : 0.0f;
    }
    for (int c = me; c < D_TILE_SIZE; c += static_cast<int>(blockDim.x)) {
      ws[c] = tile_col + c < p.D ? convert<float>(p.weight_ptr[(tile_col + c) * p.weight_stride_dim]) : 0.0f;
    }
    __syncthreads();  // the tiles are complete: every thread may read what the others wrote

    for (int c = 0; c < D_TILE_SIZE; ++c) acc += xs[me][c] * ws[c];

    __syncthreads();  // everyone is done reading before the next step overwrites the tiles
  }
  // Threads past NUM_ROWS took part in the loads and the barriers; only now do they sit out.
  if (my_row < p.NUM_ROWS) p.output_ptr[my_row * p.output_stride_row] = acc;
  // END SOLUTION step04 standard
}

}  // namespace fa2
