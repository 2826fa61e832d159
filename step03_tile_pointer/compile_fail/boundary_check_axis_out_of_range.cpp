// Must NOT compile: boundary_check names axis 2 of a 2-D tile (the axes are 0 for rows and 1
// for columns). An axis that does not exist would otherwise be silently never checked.
//   ctest --preset default -L compile_fail   (built with -DFA2_SHOW_THE_FIX, the fix compiles)
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"

float first_element(const float* x, fa2::index_t N, fa2::index_t D) {
  const fa2::HostProgram prog(fa2::Coord<3>{0, 0, 0}, nullptr, 0);
  const auto x_ptr = fa2::make_tile_ptr<fa2::Block<2, 4>>(x, {N, D}, {D, 1}, {0, 0});
#ifdef FA2_SHOW_THE_FIX
  const auto tile = fa2::load(prog, x_ptr, fa2::boundary_check<0, 1>, fa2::Padding::zero);
#else
  const auto tile = fa2::load(prog, x_ptr, fa2::boundary_check<1, 2>, fa2::Padding::zero);
#endif
  return tile.v[0][0];
}
