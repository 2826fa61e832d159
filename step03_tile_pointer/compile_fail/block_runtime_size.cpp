// Must NOT compile: a tile size known only at run time used as block_shape. Block sizes are
// template arguments, so they must be constant expressions (Triton: tl.constexpr).
//   ctest --preset default -L compile_fail   (built with -DFA2_SHOW_THE_FIX, the fix compiles)
#include "step03_tile_pointer/tile_pointer.hpp"

void make_x_ptr(const float* x, fa2::index_t N, fa2::index_t D, [[maybe_unused]] int rows_tile_size) {
#ifdef FA2_SHOW_THE_FIX
  constexpr int ROWS_TILE_SIZE = 2;  // fixed when the kernel is compiled
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<ROWS_TILE_SIZE, 4>>(x, {N, D}, {D, 1}, {0, 0});
#else
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<rows_tile_size, 4>>(x, {N, D}, {D, 1}, {0, 0});
#endif
  static_cast<void>(x_ptr);
}
