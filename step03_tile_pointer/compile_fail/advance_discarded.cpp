// Must NOT compile (built with -Werror=unused-result): advance() called without keeping the moved
// pointer. advance is [[nodiscard]] because it never changes the pointer it is called on.
//   ctest --preset default -L compile_fail   (built with -DFA2_SHOW_THE_FIX, the fix compiles)
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"

float sum_first_row(const float* x, fa2::index_t N, fa2::index_t D) {
  const fa2::HostProgram prog(fa2::Coord<3>{0, 0, 0}, nullptr, 0);
  auto x_ptr = fa2::make_tile_ptr<fa2::Block<1, 4>>(x, {N, D}, {D, 1}, {0, 0});
  float total = 0.0f;
  for (fa2::index_t i = 0; i < fa2::cdiv<fa2::index_t>(D, 4); ++i) {
    const auto row = fa2::load(prog, x_ptr, fa2::boundary_check<0, 1>, fa2::Padding::zero);
    total += fa2::row_sum(prog, row).v[0];
#ifdef FA2_SHOW_THE_FIX
    x_ptr = x_ptr.advance({0, 4});
#else
    x_ptr.advance({0, 4});
#endif
  }
  return total;
}
