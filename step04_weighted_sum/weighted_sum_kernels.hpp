// weighted_sum_fwd, twice: the article's two versions of one kernel, as program bodies that run
// on the GPU (launch_on_device, one thread block per program) and on the host (run_on_host).
//
// Each program owns a band of ROWS_TILE_SIZE rows of x (NUM_ROWS, D) and walks across the
// columns D_TILE_SIZE at a time, adding x[r, c] * weight[c] into one float32 total per row.
//   WeightedSumPointerMath   builds the index vectors, the address grid and the masks by hand
//   WeightedSumTilePointer   lets tile pointers do all three (step03)
// Both take the same Params and use the same launch code; read them side by side (README.md).
#pragma once

#include <stdexcept>

#include "common/host_device.hpp"
#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution regions below
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"
#include "step04_weighted_sum/launch.hpp"
#include "step04_weighted_sum/pointer_math.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"

namespace fa2 {

template <class T, int ROWS_TILE_SIZE, int D_TILE_SIZE, int NUM_THREADS>
struct WeightedSumBodyBase {
  static_assert(is_supported_dtype_v<T>, "x and weight are float32 or bfloat16");
  static_assert(is_power_of_two(ROWS_TILE_SIZE) && is_power_of_two(D_TILE_SIZE),
                "tile sizes are powers of two, like Triton's block sizes");
  using Params = WeightedSumParams<T>;
  struct Shared {};  // everything lives in registers: no shared memory
  static constexpr int num_threads = NUM_THREADS;
};

// ---- the classical way: pointer maths -------------------------------------------------------
template <class T, int ROWS_TILE_SIZE, int D_TILE_SIZE, int NUM_THREADS = 128>
struct WeightedSumPointerMath : WeightedSumBodyBase<T, ROWS_TILE_SIZE, D_TILE_SIZE, NUM_THREADS> {
  using Params = WeightedSumParams<T>;

  template <class Program>
  FA2_HOST_DEVICE void operator()(const Program& prog, const Params& p) const {
    // BEGIN SOLUTION step04 standard: the whole pointer-maths body: the program's rows and their mask, the running totals, the column loop, the masked store uses(prog, p)
    using L = RowLayoutFor<Program, ROWS_TILE_SIZE, D_TILE_SIZE>;  // how a (ROWS, D_TILE) tile sits in registers
    const index_t row_tile_idx = prog.program_id(0);

    // 1. The rows of this program, and which of them exist (the last band can be ragged).
    const auto rows = row_positions<L>(prog, row_tile_idx * ROWS_TILE_SIZE);  // (ROWS_TILE_SIZE, 1)
    const auto row_mask = rows < p.NUM_ROWS;                                  // (ROWS_TILE_SIZE, 1)

    auto output = RowVec<float, L>::filled(0.0f);  // (ROWS_TILE_SIZE,) running totals, float32
    // BEGIN SOLUTION step04: the loop over column tiles, with hand-made offsets, masks and masked loads
    for (index_t i = 0; i < cdiv<index_t>(p.D, D_TILE_SIZE); ++i) {
      // 2. The columns of this step, and which of them exist.
      const auto cols = col_positions<L>(prog, i * D_TILE_SIZE);  // (1, D_TILE_SIZE)
      const auto col_mask = cols < p.D;                           // (1, D_TILE_SIZE)

      // 3. Element offsets from the tensors' starts: a column of rows plus a row of columns
      //    broadcasts to the (ROWS, D_TILE) grid, each index times its own stride.
      const auto x_offsets = rows * p.x_stride_row + cols * p.x_stride_dim;  // (ROWS_TILE_SIZE, D_TILE_SIZE)
      const auto w_offsets = cols * p.weight_stride_dim;                     // (1, D_TILE_SIZE)

      // 4. Load where both masks hold, 0 elsewhere: a 0 adds nothing to the sum.
      const auto row = load_masked(prog, p.x_ptr, x_offsets, row_mask & col_mask, 0.0f);  // (ROWS, D_TILE)
      const auto weight = load_masked(prog, p.weight_ptr, w_offsets, col_mask, 0.0f);     // (1, D_TILE)

      output = output + row_sum(prog, row * weight);  // (ROWS_TILE_SIZE,)
    }
    // END SOLUTION step04
    // One total per existing row; the rows past NUM_ROWS are never written.
    store_masked(prog, p.output_ptr, rows * p.output_stride_row, output, row_mask);
    // END SOLUTION step04 standard
  }
};

// ---- the tile-pointer way ------------------------------------------------------------------
template <class T, int ROWS_TILE_SIZE, int D_TILE_SIZE, int NUM_THREADS = 128>
struct WeightedSumTilePointer : WeightedSumBodyBase<T, ROWS_TILE_SIZE, D_TILE_SIZE, NUM_THREADS> {
  using Params = WeightedSumParams<T>;

  template <class Program>
  FA2_HOST_DEVICE void operator()(const Program& prog, const Params& p) const {
    // BEGIN SOLUTION step04 standard: the whole tile-pointer body: the three tile pointers, the running totals, the loop that loads, sums and advances, the store uses(prog, p)
    using L = RowLayoutFor<Program, ROWS_TILE_SIZE, D_TILE_SIZE>;
    const index_t row_tile_idx = prog.program_id(0);

    // 1. Each tensor as a whole (start, shape, strides), and where this program's tile starts.
    //    output: the band of totals this program writes, (ROWS_TILE_SIZE,) from row row_tile_idx * ROWS_TILE_SIZE.
    const auto output_ptr = make_tile_ptr<Block<ROWS_TILE_SIZE>>(p.output_ptr, {p.NUM_ROWS}, {p.output_stride_row},
                                                                 {row_tile_idx * ROWS_TILE_SIZE}, Order<0>{});
    auto output = RowVec<float, L>::filled(0.0f);  // (ROWS_TILE_SIZE,) running totals, float32
    // BEGIN SOLUTION step04: x_ptr and weight_ptr, then the loop that loads, sums and advances them
    //    x: the program's band of rows, starting at column 0; weight: all of it, from entry 0.
    auto x_ptr =
        make_tile_ptr<Block<ROWS_TILE_SIZE, D_TILE_SIZE>>(p.x_ptr, {p.NUM_ROWS, p.D}, {p.x_stride_row, p.x_stride_dim},
                                                          {row_tile_idx * ROWS_TILE_SIZE, 0}, Order<1, 0>{});
    auto weight_ptr = make_tile_ptr<Block<D_TILE_SIZE>>(p.weight_ptr, {p.D}, {p.weight_stride_dim}, {0}, Order<0>{});

    for (index_t i = 0; i < cdiv<index_t>(p.D, D_TILE_SIZE); ++i) {
      // Steps 2-4 of the pointer-maths body (columns, offsets, masks) happen inside load().
      Frag<float, L> row;       // (ROWS_TILE_SIZE, D_TILE_SIZE), widened to float32 as it loads
      ColVec<float, L> weight;  // (1, D_TILE_SIZE)
      load(prog, x_ptr, row, boundary_check<0, 1>, Padding::zero);
      load(prog, weight_ptr, weight, boundary_check<0>, Padding::zero);

      output = output + row_sum(prog, row * weight);  // (ROWS_TILE_SIZE,)

      // Both pointers move D_TILE_SIZE elements, so x's columns and weight's entries move together.
      x_ptr = x_ptr.advance({0, D_TILE_SIZE});
      weight_ptr = weight_ptr.advance({D_TILE_SIZE});
    }
    // END SOLUTION step04
    store(prog, output_ptr, output, boundary_check<0>);
    // END SOLUTION step04 standard
  }
};

// Launches the body of the style chosen at run time with `launcher`: HostLauncher{} (launch.hpp)
// or DeviceLauncher{stream} (launch_device.cuh).
template <class T, int ROWS_TILE_SIZE, int D_TILE_SIZE, int NUM_THREADS, class Launcher>
void launch_weighted_sum(WeightedSumStyle style, const Launcher& launcher, const Grid& grid,
                         const WeightedSumParams<T>& p) {
  switch (style) {
    case WeightedSumStyle::pointer_math:
      launch<WeightedSumPointerMath<T, ROWS_TILE_SIZE, D_TILE_SIZE, NUM_THREADS>>(launcher, grid, p);
      return;
    case WeightedSumStyle::tile_pointer:
      launch<WeightedSumTilePointer<T, ROWS_TILE_SIZE, D_TILE_SIZE, NUM_THREADS>>(launcher, grid, p);
      return;
  }
  throw std::invalid_argument("style: not a WeightedSumStyle");
}

}  // namespace fa2
