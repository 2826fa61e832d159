// Tests of step 3: the tile pointer's addresses and masks (the article's worked example),
// real strides (transposed, sliced, column-major), 1-D pointers, padding, and loads and
// stores into shared tiles and register tiles.
//   cmake --build --preset default --target step03_tests && ctest --preset default -L step03
#include <cmath>
#include <limits>
#include <vector>

#include "common/random.hpp"
#include "common/testing.hpp"
#include "step03_tile_pointer/tests/tile_test_helpers.hpp"

namespace {

using namespace fa2;        // NOLINT(google-build-using-namespace): test code reads like the kernels
using namespace fa2::test;  // NOLINT(google-build-using-namespace)

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();

// Walks every tile of a (rows, cols) view the way a kernel would (programs down, loop steps
// across) and checks that each loaded element is the tensor's element, or 0 outside it.
template <int ROWS, int COLS, class Ord>
void check_every_tile(TensorView<const float, 2> x, Ord order) {
  const auto prog = host_program();
  const index_t n_rows = x.size(0), n_cols = x.size(1);
  for (index_t pid = 0; pid < cdiv<index_t>(n_rows, ROWS); ++pid) {
    auto ptr = make_tile_ptr<Block<ROWS, COLS>>(x.data(), {n_rows, n_cols}, {x.stride(0), x.stride(1)}, {pid * ROWS, 0},
                                                order);
    for (index_t step = 0; step < cdiv<index_t>(n_cols, COLS); ++step) {
      Tile<float, Block<ROWS, COLS>> tile;
      load(prog, ptr, tile, boundary_check<0, 1>, Padding::zero);
      for (int r = 0; r < ROWS; ++r) {
        for (int c = 0; c < COLS; ++c) {
          const index_t row = pid * ROWS + r, col = step * COLS + c;
          const float expected = (row < n_rows && col < n_cols) ? x(row, col) : 0.0f;
          if (tile.at(r, c) != expected) {
            FAIL_CHECK("tile element (" << r << ", " << c << ") of program " << pid << ", step " << step << " is "
                                        << tile.at(r, c) << ", x(" << row << ", " << col << ") is " << expected);
            return;
          }
        }
      }
      ptr = ptr.advance({0, COLS});
    }
  }
}

// Plays each thread of an NT-thread program alone and records which tile cells it loads.
template <int NT>
void check_each_cell_loaded_once() {
  using P = OneThreadOf<NT>;
  const auto x = iota_floats(50);
  const auto ptr = make_tile_ptr<Block<2, 4>>(x.data(), {5, 10}, {10, 1}, {4, 8});
  using L = RowLayoutFor<P, 2, 4>;
  std::vector<int> loads(8, 0);
  std::vector<float> seen(8, -1.0f);
  for (int rank = 0; rank < NT; ++rank) {
    const P prog{rank};
    Frag<float, L> frag;
    load(prog, ptr, frag, boundary_check<0, 1>, Padding::zero);
    for (int i = 0; i < L::rows_per_thread; ++i) {
      if (!L::owns(rank, i)) continue;
      for (int j = 0; j < L::cols_per_thread; ++j) {
        const int cell = L::row(rank, i) * 4 + L::col(rank, j);
        ++loads[static_cast<std::size_t>(cell)];
        seen[static_cast<std::size_t>(cell)] = frag.v[i][j];
      }
    }
  }
  CHECK(loads == std::vector<int>(8, 1));
  CHECK(show_list(8, [&](int i) { return seen[static_cast<std::size_t>(i)]; }) == "[48, 49, 0, 0, 0, 0, 0, 0]");
}

}  // namespace

TEST_SUITE("tile_pointer") {
  // x = 0..49 as 5 x 10, tiles 2 x 4, program 2 (rows 4 and 5), loop step 2 (columns 8..11).
  TEST_CASE("the worked example: program 2 at loop step 2 sees addresses 48 to 61 and loads 48 and 49") {
    GuardedBuffer<float> x(50, -777.0f);
    const auto values = iota_floats(50);
    std::copy(values.begin(), values.end(), x.data());

    const index_t row_tile_idx = 2;
    auto x_ptr = make_tile_ptr<Block<2, 4>>(x.data(), {5, 10}, {10, 1}, {row_tile_idx * 2, 0}, Order<1, 0>{});
    for (int i = 0; i < 2; ++i) x_ptr = x_ptr.advance({0, 4});  // loop steps 0 and 1 done

    CHECK(x_ptr.offsets() == Coord<2>{4, 8});
    CHECK(show_offsets(x_ptr) == "[[48, 49, 50, 51], [58, 59, 60, 61]]");
    CHECK(show_mask(x_ptr, boundary_check<0, 1>) == "[[1, 1, 0, 0], [0, 0, 0, 0]]");
    CHECK(x_ptr.position({1, 3}) == Coord<2>{5, 11});

    const auto prog = host_program(2);
    const auto row = load(prog, x_ptr, boundary_check<0, 1>, Padding::zero);  // (2, 4) in registers
    CHECK(show(row) == "[[48, 49, 0, 0], [0, 0, 0, 0]]");
    CHECK(x.guards_intact());
  }

  TEST_CASE("element offsets are position times stride summed over the axes in 64 bits") {
    const float* base = nullptr;  // element_offset never touches memory
    const auto ptr = make_tile_ptr<Block<4, 8>>(base, {3'000'000'000LL, 1024}, {4096, 2}, {2'999'999'996LL, 64});
    CHECK(ptr.element_offset({0, 0}) == 2'999'999'996LL * 4096 + 64 * 2);
    CHECK(ptr.element_offset({3, 7}) == 2'999'999'999LL * 4096 + 71 * 2);  // past 2^31 without overflow
    CHECK(ptr.in_bounds({3, 7}, boundary_check<0, 1>));
  }

  TEST_CASE("unravel visits the fastest axis of the order first") {
    using B = Block<2, 4>;
    CHECK(unravel<B, Order<1, 0>>(1) == Coord<2>{0, 1});  // row-major: along the row
    CHECK(unravel<B, Order<1, 0>>(4) == Coord<2>{1, 0});
    CHECK(unravel<B, Order<0, 1>>(1) == Coord<2>{1, 0});  // column-major: down the column
    CHECK(unravel<B, Order<0, 1>>(2) == Coord<2>{0, 1});
    CHECK(unravel<B, Order<0, 1>>(7) == Coord<2>{1, 3});
  }

  TEST_CASE("next_power_of_two rounds a run-time size up to a legal block size") {
    CHECK(next_power_of_two(1) == 1);
    CHECK(next_power_of_two(10) == 16);
    CHECK(next_power_of_two(64) == 64);
    CHECK(next_power_of_two(65) == 128);
  }

  TEST_CASE("advance returns a moved pointer and leaves the original unchanged") {
    const auto x = iota_floats(50);
    const auto ptr = make_tile_ptr<Block<2, 4>>(x.data(), {5, 10}, {10, 1}, {2, 0});
    const auto moved = ptr.advance({0, 4});
    CHECK(ptr.offsets() == Coord<2>{2, 0});
    CHECK(moved.offsets() == Coord<2>{2, 4});
    // Only the offsets move: base, shape and strides are shared.
    CHECK(moved.base() == ptr.base());
    CHECK(moved.shape() == ptr.shape());
    CHECK(moved.strides() == ptr.strides());
    const auto prog = host_program();
    CHECK(show(load(prog, ptr, boundary_check<0, 1>, Padding::zero)) == "[[20, 21, 22, 23], [30, 31, 32, 33]]");
    CHECK(show(load(prog, moved, boundary_check<0, 1>, Padding::zero)) == "[[24, 25, 26, 27], [34, 35, 36, 37]]");
  }

  TEST_CASE("moving a tile past the edge is harmless: everything there is padding") {
    const auto x = iota_floats(50);
    const auto prog = host_program();
    auto ptr = make_tile_ptr<Block<2, 4>>(x.data(), {5, 10}, {10, 1}, {0, 0});
    for (int i = 0; i < 3; ++i) ptr = ptr.advance({0, 4});  // (0, 12): entirely right of the tensor
    CHECK(show_mask(ptr, boundary_check<0, 1>) == "[[0, 0, 0, 0], [0, 0, 0, 0]]");
    CHECK(show(load(prog, ptr, boundary_check<0, 1>, Padding::zero)) == "[[0, 0, 0, 0], [0, 0, 0, 0]]");
  }
}

TEST_SUITE("tile_pointer") {
  TEST_CASE("every tile of a contiguous tensor loads the right values including ragged edges") {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_normal<float, 2>({37, 45}, rng);
    check_every_tile<8, 16>(x.cview(), Order<1, 0>{});
    check_every_tile<2, 4>(x.cview(), Order<1, 0>{});
    check_every_tile<1, 1>(x.cview(), Order<1, 0>{});
  }

  TEST_CASE("a transposed tensor loads through its real strides (1 and N)") {
    // x = y.t() with y of shape (D, N): x(r, c) sits at slot c * N + r.
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    auto x = Tensor<float, 2>::strided({13, 10}, {1, 13});
    fill_normal<float, 2>(x.view(), rng);
    CHECK(x.strides() == Extents<2>{1, 13});
    check_every_tile<4, 8>(x.cview(), Order<1, 0>{});
    check_every_tile<4, 8>(x.cview(), Order<0, 1>{});  // the order that matches this layout
  }

  TEST_CASE("a column slice of a wider matrix loads through stride_row of the full width") {
    // A (11, 20) matrix; x = its columns 3..9, so x starts 3 elements in and rows are 20 apart.
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto full = random_normal<float, 2>({11, 20}, rng);
    const TensorView<const float, 2> x(full.cview().data() + 3, {11, 7}, {20, 1});
    check_every_tile<4, 4>(x, Order<1, 0>{});
  }

  TEST_CASE("a row slice of a padded buffer loads through its row stride") {
    // Rows of 12 slots holding 9 values each (row padding, as in an aligned allocation).
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    auto x = Tensor<float, 2>::strided({6, 9}, {12, 1}, nan_f);  // the gaps stay NaN
    fill_normal<float, 2>(x.view(), rng);
    check_every_tile<2, 8>(x.cview(), Order<1, 0>{});
  }

  TEST_CASE("Order 0 1 on a column-major tensor loads the same values as row-major order") {
    // Column-major (5, 10): slot = r + 5 c, so the loaded value says where it came from.
    const auto slots = iota_floats(50);
    const auto prog = host_program();
    const auto col_major = make_tile_ptr<Block<2, 4>>(slots.data(), {5, 10}, {1, 5}, {4, 8}, Order<0, 1>{});
    Tile<float, Block<2, 4>> tile;
    load(prog, col_major, tile, boundary_check<0, 1>, Padding::zero);
    CHECK(show(tile) == "[[44, 49, 0, 0], [0, 0, 0, 0]]");  // x(4, 8) = slot 44, x(4, 9) = slot 49
    CHECK(show_offsets(col_major) == "[[44, 49, 54, 59], [45, 50, 55, 60]]");
    const auto row_order = make_tile_ptr<Block<2, 4>>(slots.data(), {5, 10}, {1, 5}, {2, 0}, Order<1, 0>{});
    const auto col_order = make_tile_ptr<Block<2, 4>>(slots.data(), {5, 10}, {1, 5}, {2, 0}, Order<0, 1>{});
    CHECK(show(load(prog, row_order, boundary_check<0, 1>, Padding::zero)) ==
          show(load(prog, col_order, boundary_check<0, 1>, Padding::zero)));
  }

  TEST_CASE("a 1-D tile pointer walks a vector and pads its ragged last tile") {
    const auto weight = iota_floats(10);  // D = 10
    const auto prog = host_program();
    using L = RowLayoutFor<HostProgram, 2, 4>;  // the columns of a (2, 4) tile
    auto vec_ptr = make_tile_ptr<Block<4>>(weight.data(), {10}, {1}, {0}, Order<0>{});
    std::vector<std::string> steps;
    for (int i = 0; i < 3; ++i) {
      ColVec<float, L> piece;
      load(prog, vec_ptr, piece, boundary_check<0>, Padding::zero);
      steps.push_back(show(piece));
      vec_ptr = vec_ptr.advance({4});
    }
    CHECK(steps == std::vector<std::string>{"[0, 1, 2, 3]", "[4, 5, 6, 7]", "[8, 9, 0, 0]"});

    // A strided 1-D tensor (every third slot) into a shared 1-D tile.
    auto strided = make_tile_ptr<Block<4>>(weight.data(), {4}, {3}, {0});
    Tile<float, Block<4>> tile;
    load(prog, strided, tile, boundary_check<0>, Padding::zero);
    CHECK(show(tile) == "[0, 3, 6, 9]");
  }

  TEST_CASE("a 1-D coordinate is D or {D}: both build the same pointer") {
    // C++ has no one-element-tuple trap: (D) is D, and D converts to Coord<1> just like {D}.
    const auto weight = iota_floats(10);
    const index_t D = 10;
    const auto braced = make_tile_ptr<Block<4>>(weight.data(), {D}, {1}, {8}, Order<0>{});
    const auto plain = make_tile_ptr<Block<4>>(weight.data(), D, 1, 8, Order<0>{});
    const auto parenthesised = make_tile_ptr<Block<4>>(weight.data(), (D), (1), (8), Order<0>{});
    CHECK(plain.shape() == braced.shape());
    CHECK(plain.strides() == braced.strides());
    CHECK(plain.offsets() == braced.offsets());
    CHECK(parenthesised.offsets() == braced.offsets());
    CHECK(plain.advance(4).offsets() == braced.advance({4}).offsets());
  }
}

TEST_SUITE("load_store") {
  TEST_CASE("Padding nan poisons a row sum and Padding zero does not") {
    const auto x = iota_floats(50);
    const auto prog = host_program();
    const auto ptr = make_tile_ptr<Block<2, 4>>(x.data(), {5, 10}, {10, 1}, {4, 8});
    const auto with_zero = load(prog, ptr, boundary_check<0, 1>, Padding::zero);
    const auto with_nan = load(prog, ptr, boundary_check<0, 1>, Padding::nan);
    CHECK(show(with_nan) == "[[48, 49, nan, nan], [nan, nan, nan, nan]]");
    CHECK(show(row_sum(prog, with_zero)) == "[97, 0]");    // 48 + 49, and the missing row adds nothing
    CHECK(show(row_sum(prog, with_nan)) == "[nan, nan]");  // one NaN is enough to lose the row
  }

  TEST_CASE("Padding none leaves the destination untouched outside the tensor") {
    const auto x = iota_floats(50);
    const auto prog = host_program();
    const auto ptr = make_tile_ptr<Block<2, 4>>(x.data(), {5, 10}, {10, 1}, {4, 8});
    const float poison = -1.0f;

    Tile<float, Block<2, 4>> tile;
    for (auto& v : tile.data) v = poison;
    load(prog, ptr, tile, boundary_check<0, 1>, Padding::none);
    CHECK(show(tile) == "[[48, 49, -1, -1], [-1, -1, -1, -1]]");

    auto frag = Frag<float, RowLayoutFor<HostProgram, 2, 4>>::filled(poison);
    load(prog, ptr, frag, boundary_check<0, 1>, Padding::none);
    CHECK(show(frag) == "[[48, 49, -1, -1], [-1, -1, -1, -1]]");
  }

  TEST_CASE("a checked store writes the inside elements only and leaves the guards intact") {
    GuardedBuffer<float> x(50, -777.0f);
    std::fill(x.data(), x.data() + 50, 0.0f);
    const auto prog = host_program();
    const auto corner = make_tile_ptr<Block<2, 4>>(x.data(), {5, 10}, {10, 1}, {4, 8});
    REQUIRE(x.covers_whole_tile(corner));

    SUBCASE("from a shared tile") {
      Tile<float, Block<2, 4>> ones;
      for (auto& v : ones.data) v = 1.0f;
      store(prog, corner, ones, boundary_check<0, 1>);
    }
    SUBCASE("from a register tile") {
      store(prog, corner, Frag<float, RowLayoutFor<HostProgram, 2, 4>>::filled(1.0f), boundary_check<0, 1>);
    }
    std::vector<index_t> written;
    for (index_t i = 0; i < 50; ++i)
      if (x.data()[i] != 0.0f) written.push_back(i);
    CHECK(written == std::vector<index_t>{48, 49});  // x(4, 8) and x(4, 9)
    CHECK(x.guards_intact());
  }

  TEST_CASE("a 1-D checked store of one value per row stops at the end of the output") {
    GuardedBuffer<float> out(5, -777.0f);
    std::fill(out.data(), out.data() + 5, 0.0f);
    const auto prog = host_program();
    using L = RowLayoutFor<HostProgram, 2, 4>;
    const auto out_ptr = make_tile_ptr<Block<2>>(out.data(), {5}, {1}, {4}, Order<0>{});
    auto totals = RowVec<float, L>::filled(0.0f);
    totals.v[0] = 3.5f;
    totals.v[1] = 9.0f;  // row 5 does not exist
    store(prog, out_ptr, totals, boundary_check<0>);
    CHECK(show_list(5, [&](int i) { return out.data()[i]; }) == "[0, 0, 0, 0, 3.5]");
    CHECK(out.guards_intact());
  }

  TEST_CASE("a load into a shared tile and a load into registers agree on every tile") {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_normal<float, 2>({19, 27}, rng);
    const auto prog = host_program();
    for (index_t row0 = 0; row0 < 19; row0 += 8) {
      for (index_t col0 = 0; col0 < 27; col0 += 16) {
        const auto ptr = make_tile_ptr<Block<8, 16>>(x.cview().data(), {19, 27}, {27, 1}, {row0, col0});
        Tile<float, Block<8, 16>> tile;
        load(prog, ptr, tile, boundary_check<0, 1>, Padding::zero);
        const auto frag = load(prog, ptr, boundary_check<0, 1>, Padding::zero);
        CHECK(show(tile) == show(frag));
      }
    }
  }

  TEST_CASE("bf16 elements are widened exactly on load and rounded on store") {
    std::vector<bf16> x(6);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = bf16(0.5f * static_cast<float>(i));
    const auto prog = host_program();
    const auto ptr = make_tile_ptr<Block<2, 4>>(x.data(), {2, 3}, {3, 1}, {0, 0});
    const auto frag = load(prog, ptr, boundary_check<0, 1>, Padding::zero);  // Frag<bf16, ...>
    CHECK(show(frag.to<float>()) == "[[0, 0.5, 1, 0], [1.5, 2, 2.5, 0]]");
    // 1 + 2^-9 is not a bf16 (7 mantissa bits): the store rounds it to 1.
    store(prog, ptr, Frag<float, RowLayoutFor<HostProgram, 2, 4>>::filled(1.0f + 1.0f / 512.0f), boundary_check<0, 1>);
    CHECK(static_cast<float>(x[5]) == 1.0f);
  }
}

TEST_SUITE("load_store") {
  // The GPU spreads a tile over many threads; playing each thread alone on the host shows that
  // together they load every element exactly once, and that only one thread writes each value.
  TEST_CASE("the 128 threads of a program load every element of a register tile exactly once") {
    check_each_cell_loaded_once<128>();
  }
  TEST_CASE("the 32 threads of a one-warp program load every element of a register tile exactly once") {
    check_each_cell_loaded_once<32>();
  }

  TEST_CASE("the threads of a program fill a shared tile together and one thread per row stores") {
    using P = OneThreadOf<128>;
    const auto x = iota_floats(50);
    const auto ptr = make_tile_ptr<Block<4, 8>>(x.data(), {5, 10}, {10, 1}, {2, 4});
    Tile<float, Block<4, 8>> tile;
    for (auto& v : tile.data) v = -1.0f;
    for (int rank = 0; rank < P::num_threads; ++rank) load(P{rank}, ptr, tile, boundary_check<0, 1>, Padding::zero);
    CHECK(show(tile) ==
          "[[24, 25, 26, 27, 28, 29, 0, 0], [34, 35, 36, 37, 38, 39, 0, 0], [44, 45, 46, 47, 48, 49, 0, 0], "
          "[0, 0, 0, 0, 0, 0, 0, 0]]");

    GuardedBuffer<float> out(5, -777.0f);
    std::fill(out.data(), out.data() + 5, 0.0f);
    const auto out_ptr = make_tile_ptr<Block<4>>(out.data(), {5}, {1}, {2});
    using L = RowLayoutFor<P, 4, 8>;
    // After a row_sum every thread of a row holds the row's total. Here each thread offers its own
    // rank + 100 instead, so the output says who wrote it: the first thread of each row, alone
    // (threads run one after another here, so a second writer would leave its own rank).
    for (int rank = 0; rank < P::num_threads; ++rank) {
      const auto mine = RowVec<float, L>::filled(static_cast<float>(rank + 100));
      store(P{rank}, out_ptr, mine, boundary_check<0>);
    }
    static_assert(L::threads_per_row == 8, "rows 2, 3, 4 belong to threads 0-7, 8-15, 16-23");
    CHECK(show_list(5, [&](int i) { return out.data()[i]; }) == "[0, 0, 100, 108, 116]");
    CHECK(out.guards_intact());
  }
}
