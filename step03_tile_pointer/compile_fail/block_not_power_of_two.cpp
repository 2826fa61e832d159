// Must NOT compile: a block shape that is not a power of two (3 x 10). Round run-time sizes up
// on the host with next_power_of_two(), as Triton code does with triton.next_power_of_2.
//   ctest --preset default -L compile_fail   (built with -DFA2_SHOW_THE_FIX, the fix compiles)
#include "step03_tile_pointer/tile_pointer.hpp"

void make_x_ptr(const float* x, fa2::index_t N, fa2::index_t D) {
#ifdef FA2_SHOW_THE_FIX
  constexpr int D_TILE_SIZE = static_cast<int>(fa2::next_power_of_two(10));  // 16
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<4, D_TILE_SIZE>>(x, {N, D}, {D, 1}, {0, 0});
#else
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<3, 10>>(x, {N, D}, {D, 1}, {0, 0});
#endif
  static_cast<void>(x_ptr);
}
