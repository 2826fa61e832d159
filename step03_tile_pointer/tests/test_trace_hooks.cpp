// The trace recorder's hooks (program.hpp, load_store.hpp): a host program that a
// trace::Recording asked for notes each load and store with its tile pointer and mask, and the
// state note_state hands it; every other program notes nothing.
//   cmake --build --preset cpu-only --target step03_tests && ctest --preset cpu-only -L step03
#include <doctest/doctest.h>

#include <cstddef>
#include <variant>
#include <vector>

#include "common/trace.hpp"
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace {

using fa2::Block;
using fa2::Coord;
using fa2::HostProgram;

// The article's worked example: x is (5, 10) row-major, program 2's tile starts at (4, 8).
struct Example {
  std::vector<float> x = std::vector<float>(50, 1.0f);
  std::vector<float> y = std::vector<float>(50, 0.0f);
  fa2::trace::Recorder rec;
  Example() {
    rec.name_memory(x.data(), x.size() * sizeof(float), "x");
    rec.name_memory(y.data(), y.size() * sizeof(float), "y");
  }
  auto x_ptr() const { return fa2::make_tile_ptr<Block<2, 4>>(x.data(), {5, 10}, {10, 1}, {4, 8}); }
  auto y_ptr() { return fa2::make_tile_ptr<Block<2, 4>>(y.data(), {5, 10}, {10, 1}, {4, 8}); }
};

const fa2::trace::TileAccess& access(const fa2::trace::Recorder& rec, std::size_t i) {
  REQUIRE(i < rec.events().size());
  REQUIRE(std::holds_alternative<fa2::trace::TileAccess>(rec.events()[i]));
  return std::get<fa2::trace::TileAccess>(rec.events()[i]);
}

}  // namespace

TEST_SUITE("trace") {
  TEST_CASE("a recorded load notes the tile pointer, where the tile lives and which elements were inside x") {
    Example ex;
    const fa2::trace::Recording on(ex.rec, {2, 0, 0});
    const HostProgram prog(Coord<3>{2, 0, 0}, nullptr, 0);
    const auto tile = fa2::load(prog, ex.x_ptr(), fa2::boundary_check<0, 1>, fa2::Padding::zero);
    CHECK(tile.v[0][0] == 1.0f);
    REQUIRE(ex.rec.events().size() == 1);
    const auto& a = access(ex.rec, 0);
    CHECK(a.is_load);
    CHECK(a.tensor == "x");
    CHECK(a.place == "registers");
    CHECK(a.shape == std::vector<std::int64_t>{5, 10});
    CHECK(a.strides == std::vector<std::int64_t>{10, 1});
    CHECK(a.offsets == std::vector<std::int64_t>{4, 8});
    CHECK(a.block == std::vector<std::int64_t>{2, 4});
    CHECK(a.checked == std::vector<int>{0, 1});
    CHECK(a.padding == "zero");
    // Row 4 exists, row 5 does not; columns 8 and 9 exist, 10 and 11 do not.
    CHECK(a.mask == std::vector<std::string>{"1100", "0000"});
  }

  TEST_CASE("the mask follows the checked axes only: unchecked axes count as inside") {
    Example ex;
    const fa2::trace::Recording on(ex.rec, {0, 0, 0});
    const HostProgram prog(Coord<3>{0, 0, 0}, nullptr, 0);
    auto frag = fa2::Frag<float, fa2::RowLayoutFor<HostProgram, 2, 4>>::filled(0.0f);
    // Only rows checked, on a tile that stays inside columns 0..3: nothing hangs over an unchecked edge.
    fa2::load(prog, fa2::make_tile_ptr<Block<2, 4>>(ex.x.data(), {5, 10}, {10, 1}, {4, 0}), frag,
              fa2::boundary_check<0>, fa2::Padding::nan);
    const auto& a = access(ex.rec, 0);
    CHECK(a.checked == std::vector<int>{0});
    CHECK(a.padding == "nan");
    CHECK(a.mask == std::vector<std::string>{"1111", "0000"});
  }

  TEST_CASE("stores from shared and from registers are noted in order, without a padding") {
    Example ex;
    fa2::Tile<float, Block<2, 4>> shared_tile{};
    const fa2::trace::Recording on(ex.rec, {2, 0, 0});
    const HostProgram prog(Coord<3>{2, 0, 0}, nullptr, 0);
    fa2::load(prog, ex.x_ptr(), shared_tile, fa2::boundary_check<0, 1>, fa2::Padding::zero);
    fa2::store(prog, ex.y_ptr(), shared_tile, fa2::boundary_check<0, 1>);
    fa2::store(prog, ex.y_ptr(), fa2::Frag<float, fa2::RowLayoutFor<HostProgram, 2, 4>>::filled(2.0f),
               fa2::boundary_check<0, 1>);
    REQUIRE(ex.rec.events().size() == 3);
    CHECK(access(ex.rec, 0).place == "shared");
    CHECK(access(ex.rec, 1).tensor == "y");
    CHECK_FALSE(access(ex.rec, 1).is_load);
    CHECK(access(ex.rec, 1).place == "shared");
    CHECK(access(ex.rec, 1).padding.empty());
    CHECK(access(ex.rec, 2).place == "registers");
    CHECK(access(ex.rec, 2).mask == std::vector<std::string>{"1100", "0000"});
    CHECK(ex.y[48] == 2.0f);  // the store itself still happened
  }

  TEST_CASE("a 1-D tile's mask is one row") {
    Example ex;
    const fa2::trace::Recording on(ex.rec, {0, 0, 0});
    const HostProgram prog(Coord<3>{0, 0, 0}, nullptr, 0);
    const auto rows = fa2::RowVec<float, fa2::RowLayoutFor<HostProgram, 4, 4>>::filled(3.0f);
    fa2::store(prog, fa2::make_tile_ptr<Block<4>>(ex.y.data(), {6}, {1}, {4}), rows, fa2::boundary_check<0>);
    CHECK(access(ex.rec, 0).mask == std::vector<std::string>{"1100"});
  }

  TEST_CASE("note_state records m_i, l_i and alpha per row with the key tile, and nothing for other programs") {
    Example ex;
    const fa2::trace::Recording on(ex.rec, {1, 0, 0});
    using Rows = fa2::RowLayoutFor<HostProgram, 4, 4>;
    auto m = fa2::RowVec<float, Rows>::filled(0.5f), l = fa2::RowVec<float, Rows>::filled(2.0f),
         alpha = fa2::RowVec<float, Rows>::filled(1.0f);
    m.v[3] = 1.5f;
    alpha.v[3] = 0.25f;
    const HostProgram other(Coord<3>{0, 0, 0}, nullptr, 0);
    fa2::note_state(other, 7, m, l, alpha);
    fa2::load(other, ex.x_ptr(), fa2::boundary_check<0, 1>, fa2::Padding::zero);
    CHECK(ex.rec.events().empty());
    const HostProgram prog(Coord<3>{1, 0, 0}, nullptr, 0);
    fa2::note_state(prog, 7, m, l, alpha);
    REQUIRE(ex.rec.events().size() == 1);
    const auto& s = std::get<fa2::trace::RowState>(ex.rec.events()[0]);
    CHECK(s.key_tile == 7);
    CHECK(s.m == std::vector<double>{0.5, 0.5, 0.5, 1.5});
    CHECK(s.l == std::vector<double>{2.0, 2.0, 2.0, 2.0});
    CHECK(s.alpha == std::vector<double>{1.0, 1.0, 1.0, 0.25});
  }

  TEST_CASE("without a Recording a host program carries no recorder") {
    const HostProgram prog(Coord<3>{0, 0, 0}, nullptr, 0);
    CHECK(prog.recorder() == nullptr);
  }
}
