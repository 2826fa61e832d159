// The article's list of block-pointer mistakes that C++ cannot reject at compile time, each
// shown twice: the wrong tile pointer loads (or writes) the wrong tile, the right one the right
// tile. The mistakes the compiler does catch are in compile_fail/ (see README.md for the table).
// Every wrong pointer that strays outside the tensor does so on a GuardedBuffer, so the stray
// access lands on allocated sentinel elements, never on memory we do not own.
//   cmake --build --preset default --target step03_tests && ctest --preset default -L step03
#include <limits>
#include <vector>

#include "common/testing.hpp"
#include "step03_tile_pointer/tests/tile_test_helpers.hpp"

namespace {

using namespace fa2;        // NOLINT(google-build-using-namespace)
using namespace fa2::test;  // NOLINT(google-build-using-namespace)

// The article's tensor: x = 0..49 as 5 rows of 10, tiles of 2 x 4, surrounded by -777 guards.
constexpr index_t N = 5, D = 10;
constexpr int ROWS_TILE = 2, D_TILE = 4;
constexpr float guard_value = -777.0f;

GuardedBuffer<float> article_x() {
  GuardedBuffer<float> x(N * D, guard_value);
  const auto values = iota_floats(N * D);
  std::copy(values.begin(), values.end(), x.data());
  return x;
}

// Loads a (ROWS_TILE, D_TILE) register tile on the host and prints it.
template <class P>
std::string loaded(const P& ptr) {
  return show(load(host_program(), ptr, boundary_check<0, 1>, Padding::zero));
}

}  // namespace

TEST_SUITE("common_mistakes") {
  TEST_CASE("base must be the tensor start: a tile address as base reads past the end on the last program") {
    auto x = article_x();
    const index_t stride_row = D;

    for (index_t row_tile_idx : {1, 2}) {
      CAPTURE(row_tile_idx);
      // Wrong: base already points at the tile, offsets are (0, 0), shape is still the whole tensor.
      const float* tile_start = x.data() + row_tile_idx * ROWS_TILE * stride_row;
      const auto wrong = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(tile_start, {N, D}, {stride_row, 1}, {0, 0});
      // Right: base is x[0, 0], offsets place the tile.
      const auto right =
          make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {stride_row, 1}, {row_tile_idx * ROWS_TILE, 0});
      REQUIRE(x.covers_whole_tile(wrong));

      if (row_tile_idx == 1) {
        // On a full tile both give the same numbers: the mistake is invisible away from the edge.
        CHECK(loaded(wrong) == "[[20, 21, 22, 23], [30, 31, 32, 33]]");
        CHECK(loaded(right) == "[[20, 21, 22, 23], [30, 31, 32, 33]]");
      } else {
        // The bounds check compares offsets (0, 0) with shape (5, 10): row 5 looks inside, so
        // the wrong pointer reads the guard elements after x instead of padding with 0.
        CHECK(loaded(wrong) == "[[40, 41, 42, 43], [-777, -777, -777, -777]]");
        CHECK(loaded(right) == "[[40, 41, 42, 43], [0, 0, 0, 0]]");
      }
    }
  }

  TEST_CASE("offsets count elements: a tile number in offsets loads the wrong rows") {
    auto x = article_x();
    const index_t row_tile_idx = 1;  // should see rows 2 and 3
    const auto wrong = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {row_tile_idx, 0});
    const auto right = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {row_tile_idx * ROWS_TILE, 0});
    CHECK(loaded(wrong) == "[[10, 11, 12, 13], [20, 21, 22, 23]]");  // rows 1 and 2: overlaps program 0
    CHECK(loaded(right) == "[[20, 21, 22, 23], [30, 31, 32, 33]]");
  }

  TEST_CASE("shape describes the full tensor: the tile size there turns every later tile into padding") {
    auto x = article_x();
    // Program 1, loop step 1: the tile at (2, 4).
    const auto wrong = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {ROWS_TILE, D_TILE}, {D, 1}, {2, 4});
    const auto right = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {2, 4});
    CHECK(show_mask(wrong, boundary_check<0, 1>) == "[[0, 0, 0, 0], [0, 0, 0, 0]]");
    CHECK(loaded(wrong) == "[[0, 0, 0, 0], [0, 0, 0, 0]]");  // silently zero: no error, wrong sums
    CHECK(loaded(right) == "[[24, 25, 26, 27], [34, 35, 36, 37]]");
  }

  TEST_CASE("strides come from the tensor: assuming stride_row = D misreads a transposed tensor") {
    // x = y.t(): y is (D, N) row-major, so x is (N, D) with strides (1, N). Slot k holds k.
    const auto y = iota_floats(N * D);
    const TensorView<const float, 2> x(y.data(), {N, D}, {1, N});
    const auto wrong = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {2, 0});
    const auto right = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {x.stride(0), x.stride(1)}, {2, 0});
    CHECK(loaded(wrong) == "[[20, 21, 22, 23], [30, 31, 32, 33]]");  // x's slots, but not x's elements
    CHECK(loaded(right) == "[[2, 7, 12, 17], [3, 8, 13, 18]]");      // x(2, c) = y(c, 2) = slot 5c + 2
    CHECK(x(2, 1) == 7.0f);
  }

  TEST_CASE("strides come from the tensor: assuming stride_row = D misreads a column slice") {
    // x = wide[:, 4:14] of a (5, 16) matrix: rows are 16 apart, not D = 10.
    const auto wide = iota_floats(N * 16);
    const TensorView<const float, 2> x(wide.data() + 4, {N, D}, {16, 1});
    const auto wrong = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {2, 0});
    const auto right = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {x.stride(0), x.stride(1)}, {2, 0});
    CHECK(loaded(wrong) == "[[24, 25, 26, 27], [34, 35, 36, 37]]");
    CHECK(loaded(right) == "[[36, 37, 38, 39], [52, 53, 54, 55]]");  // x(2, 0) = wide(2, 4) = 36
  }

  TEST_CASE("advance must be saved: a discarded advance loads the first tile on every step") {
    // The plain `x_ptr.advance(...);` does not compile here ([[nodiscard]] under -Werror, see
    // compile_fail/advance_discarded.cpp); a deliberate cast to void is the only way to write it.
    auto x = article_x();
    auto wrong = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {0, 0});
    auto right = wrong;
    std::vector<std::string> wrong_tiles, right_tiles;
    for (index_t i = 0; i < cdiv<index_t>(D, D_TILE); ++i) {
      wrong_tiles.push_back(loaded(wrong));
      right_tiles.push_back(loaded(right));
      static_cast<void>(wrong.advance({0, D_TILE}));  // the result is thrown away
      right = right.advance({0, D_TILE});
    }
    CHECK(wrong_tiles == std::vector<std::string>(3, "[[0, 1, 2, 3], [10, 11, 12, 13]]"));
    CHECK(right_tiles == std::vector<std::string>{"[[0, 1, 2, 3], [10, 11, 12, 13]]",
                                                  "[[4, 5, 6, 7], [14, 15, 16, 17]]",
                                                  "[[8, 9, 0, 0], [18, 19, 0, 0]]"});
  }

  TEST_CASE("advance counts elements: advancing by one tile count moves one column") {
    auto x = article_x();
    const auto start = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {0, 0});
    const auto wrong = start.advance({0, 1});                    // "one tile to the right"
    const auto right = start.advance({0, D_TILE});               // D_TILE elements to the right
    CHECK(loaded(wrong) == "[[1, 2, 3, 4], [11, 12, 13, 14]]");  // overlaps the first tile
    CHECK(loaded(right) == "[[4, 5, 6, 7], [14, 15, 16, 17]]");
  }

  TEST_CASE("boundary_check cannot be skipped: an unchecked ragged tile reads outside the tensor") {
    auto x = article_x();
    const auto prog = host_program();
    const auto corner = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {4, 8});
    REQUIRE(x.covers_whole_tile(corner));  // slots 48..61: inside the allocation, past the tensor

    Tile<float, Block<ROWS_TILE, D_TILE>> tile;
    load(prog, corner, tile, unchecked, Padding::zero);  // padding is never used: nothing is checked
    CHECK(show(tile) == "[[48, 49, -777, -777], [-777, -777, -777, -777]]");
    load(prog, corner, tile, boundary_check<0, 1>, Padding::zero);
    CHECK(show(tile) == "[[48, 49, 0, 0], [0, 0, 0, 0]]");
  }

  TEST_CASE("boundary_check cannot be skipped: an unchecked column edge reads the next row instead") {
    // No guard is even needed to go wrong: columns 10 and 11 of row 0 are slots 10 and 11,
    // which are x(1, 0) and x(1, 1). Checking the rows alone does not help.
    auto x = article_x();
    const auto right_edge = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {0, 8});
    CHECK(show(load(host_program(), right_edge, boundary_check<0>, Padding::zero)) ==
          "[[8, 9, 10, 11], [18, 19, 20, 21]]");
    CHECK(loaded(right_edge) == "[[8, 9, 0, 0], [18, 19, 0, 0]]");
  }

  TEST_CASE("boundary_check cannot be skipped: an unchecked ragged store overwrites memory past the tensor") {
    const auto prog = host_program();
    const auto ones = Frag<float, RowLayoutFor<HostProgram, ROWS_TILE, D_TILE>>::filled(1.0f);

    auto wrong_x = article_x();
    const auto wrong = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(wrong_x.data(), {N, D}, {D, 1}, {4, 8});
    REQUIRE(wrong_x.covers_whole_tile(wrong));
    store(prog, wrong, ones, unchecked);
    CHECK_FALSE(wrong_x.guards_intact());  // slots 50, 51 and 58..61 were sentinels

    auto right_x = article_x();
    const auto right = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(right_x.data(), {N, D}, {D, 1}, {4, 8});
    store(prog, right, ones, boundary_check<0, 1>);
    CHECK(right_x.guards_intact());
    CHECK(right_x.data()[48] == 1.0f);
    CHECK(right_x.data()[49] == 1.0f);
    CHECK(right_x.data()[47] == 47.0f);
  }

  TEST_CASE("padding must suit the reduction: Padding nan turns a row sum into NaN") {
    auto x = article_x();
    const auto prog = host_program();
    using L = RowLayoutFor<HostProgram, ROWS_TILE, D_TILE>;
    for (const Padding pad : {Padding::nan, Padding::zero}) {
      // Rows 4 and 5 (row 5 lies past the tensor), walked across in tiles of D_TILE columns:
      // the last tile hangs over column 10, and row 5 over the bottom edge.
      auto band = make_tile_ptr<Block<ROWS_TILE, D_TILE>>(x.data(), {N, D}, {D, 1}, {4, 0});
      auto totals = RowVec<float, L>::filled(0.0f);
      for (index_t step = 0; step * D_TILE < D; ++step) {
        totals = totals + row_sum(prog, load(prog, band, boundary_check<0, 1>, pad));
        band = band.advance({0, D_TILE});
      }
      // Row 4 sums 40 + c over c = 0..9, 445; row 5 does not exist, so it sums padding only.
      CHECK(show(totals) == (pad == Padding::nan ? "[nan, nan]" : "[445, 0]"));
    }
  }
}
