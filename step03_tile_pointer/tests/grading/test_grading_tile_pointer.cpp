// The grader's tests of step 3's TilePtr (not in the starter kit): element_offset and in_bounds
// on 1-D to 3-D tensors with strides of every kind (transposed, sliced, past 2^31 elements),
// tiles that start before the tensor or hang over any edge, checks of some axes only, and
// position and advance, each against a formula computed here.
//   ctest --preset cpu-only -R step03_grading   (in the instructor's repository)
#include <array>

#include "common/random.hpp"
#include "common/testing.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace {

using fa2::index_t;

// A random integer in [lo, hi].
index_t pick(fa2::Rng& rng, index_t lo, index_t hi) {
  return lo + static_cast<index_t>(rng.uniform(0.0, static_cast<double>(hi - lo + 1) - 1e-9));
}

}  // namespace

TEST_SUITE("tile_pointer+grading") {
  TEST_CASE("grading: a 3-D tile pointer's element offsets are sum of position times stride, in 64 bits") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    float dummy = 0.0f;
    for (int trial = 0; trial < 200; ++trial) {
      const std::array<index_t, 3> shape{pick(rng, 1, 9), pick(rng, 1, 9), pick(rng, 1, 9)};
      // Strides of any size and sign pattern a view can have, some far past 2^31 elements.
      const std::array<index_t, 3> strides{pick(rng, 0, 5) * (index_t{1} << pick(rng, 0, 34)), pick(rng, 1, 300),
                                           pick(rng, 1, 4)};
      const std::array<index_t, 3> offsets{pick(rng, -3, 9), pick(rng, -3, 9), pick(rng, -3, 9)};
      const auto ptr = fa2::make_tile_ptr<fa2::Block<2, 4, 2>>(&dummy, {shape[0], shape[1], shape[2]},
                                                               {strides[0], strides[1], strides[2]},
                                                               {offsets[0], offsets[1], offsets[2]});
      for (index_t i = 0; i < 2; ++i) {
        for (index_t j = 0; j < 4; ++j) {
          for (index_t k = 0; k < 2; ++k) {
            const index_t want =
                (offsets[0] + i) * strides[0] + (offsets[1] + j) * strides[1] + (offsets[2] + k) * strides[2];
            const bool inside = offsets[0] + i >= 0 && offsets[0] + i < shape[0] && offsets[1] + j >= 0 &&
                                offsets[1] + j < shape[1] && offsets[2] + k >= 0 && offsets[2] + k < shape[2];
            const bool rows_inside = offsets[0] + i >= 0 && offsets[0] + i < shape[0];
            const bool last_inside = offsets[2] + k >= 0 && offsets[2] + k < shape[2];
            INFO("trial ", trial, " element (", i, ", ", j, ", ", k, ")");
            CHECK(ptr.element_offset({i, j, k}) == want);
            CHECK(ptr.in_bounds({i, j, k}, fa2::boundary_check<0, 1, 2>) == inside);
            CHECK(ptr.in_bounds({i, j, k}, fa2::boundary_check<0>) == rows_inside);
            CHECK(ptr.in_bounds({i, j, k}, fa2::boundary_check<2>) == last_inside);
            CHECK(ptr.in_bounds({i, j, k}, fa2::boundary_check<>) == true);
          }
        }
      }
    }
  }

  TEST_CASE("grading: a 1-D pointer past 2^32 elements and a tile that starts before the tensor") {
    float dummy = 0.0f;
    const index_t far = index_t{3} << 31;  // 6.4e9 elements
    const auto ptr = fa2::make_tile_ptr<fa2::Block<4>>(&dummy, {far + 2}, {3}, {far}, fa2::Order<0>{});
    CHECK(ptr.element_offset({1}) == (far + 1) * 3);
    CHECK(ptr.in_bounds({1}, fa2::boundary_check<0>));
    CHECK_FALSE(ptr.in_bounds({2}, fa2::boundary_check<0>));
    const auto before = fa2::make_tile_ptr<fa2::Block<4>>(&dummy, {10}, {1}, {-2}, fa2::Order<0>{});
    CHECK(before.element_offset({0}) == -2);
    CHECK_FALSE(before.in_bounds({1}, fa2::boundary_check<0>));
    CHECK(before.in_bounds({2}, fa2::boundary_check<0>));
  }

  TEST_CASE("grading: position and advance move the tile and nothing else") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    float dummy = 0.0f;
    for (int trial = 0; trial < 50; ++trial) {
      const index_t r0 = pick(rng, -4, 20), c0 = pick(rng, -4, 20), dr = pick(rng, -8, 8), dc = pick(rng, -8, 8);
      const auto ptr = fa2::make_tile_ptr<fa2::Block<4, 8>>(&dummy, {17, 23}, {23, 1}, {r0, c0}, fa2::Order<1, 0>{});
      const auto moved = ptr.advance({dr, dc});
      CHECK(ptr.offsets()[0] == r0);  // the original is unchanged
      CHECK(moved.position({1, 2})[0] == r0 + dr + 1);
      CHECK(moved.position({1, 2})[1] == c0 + dc + 2);
      CHECK(moved.element_offset({3, 7}) == (r0 + dr + 3) * 23 + (c0 + dc + 7));
      CHECK(moved.shape()[0] == 17);
      CHECK(moved.strides()[0] == 23);
      CHECK(moved.base() == &dummy);
    }
  }
}
