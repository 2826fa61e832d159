// Must NOT compile: strides and offsets with one entry for a 2-D tensor. Every coordinate of a
// tile pointer is a Coord<rank>, so its length is checked against block_shape's rank.
//   ctest --preset default -L compile_fail   (built with -DFA2_SHOW_THE_FIX, the fix compiles)
#include "step03_tile_pointer/tile_pointer.hpp"

void make_x_ptr(const float* x, fa2::index_t N, fa2::index_t D, fa2::index_t row_tile_idx) {
  constexpr int ROWS_TILE_SIZE = 2, D_TILE_SIZE = 4;
#ifdef FA2_SHOW_THE_FIX
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<ROWS_TILE_SIZE, D_TILE_SIZE>>(
      x, {N, D}, {D, 1}, {row_tile_idx * ROWS_TILE_SIZE, 0}, fa2::Order<1, 0>{});
#else
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<ROWS_TILE_SIZE, D_TILE_SIZE>>(
      x, {N, D}, {D}, {row_tile_idx * ROWS_TILE_SIZE}, fa2::Order<1, 0>{});
#endif
  static_cast<void>(x_ptr);
}
