// Must NOT compile: a 2-D tile pointer given one entry for its shape. (In C++ a 1-D coordinate
// is D or {D}, so Python's (D) vs (D,) slip cannot happen; what can happen is a missing axis.)
//   ctest --preset default -L compile_fail   (built with -DFA2_SHOW_THE_FIX, the fix compiles)
#include "step03_tile_pointer/tile_pointer.hpp"

void make_x_ptr(const float* x, fa2::index_t N, fa2::index_t D) {
#ifdef FA2_SHOW_THE_FIX
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<2, 4>>(x, {N, D}, {D, 1}, {0, 0});
#else
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<2, 4>>(x, D, {D, 1}, {0, 0});  // shape=(D)
#endif
  static_cast<void>(x_ptr);
  static_cast<void>(N);
}
