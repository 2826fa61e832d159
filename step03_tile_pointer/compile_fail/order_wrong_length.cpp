// Must NOT compile: an order with one entry for a 2-D block (order lists every axis, fastest
// first: Order<1, 0> for a row-major matrix).
//   ctest --preset default -L compile_fail   (built with -DFA2_SHOW_THE_FIX, the fix compiles)
#include "step03_tile_pointer/tile_pointer.hpp"

void make_x_ptr(const float* x, fa2::index_t N, fa2::index_t D) {
#ifdef FA2_SHOW_THE_FIX
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<2, 4>>(x, {N, D}, {D, 1}, {0, 0}, fa2::Order<1, 0>{});
#else
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<2, 4>>(x, {N, D}, {D, 1}, {0, 0}, fa2::Order<0>{});
#endif
  static_cast<void>(x_ptr);
}
