// Tests of step 3's figure: the committed block_pointer.svg (step03_tile_pointer/figures/) is read
// back through its data-* attributes and checked against the tile pointer: every drawn cell has the
// address element_offset gives, is padded exactly where in_bounds says no, and holds what load()
// returns, before and after the advance the figure names. Not graded (label figures).
//   cmake --build --preset cpu-only --target step03_figures_tests && ctest --preset cpu-only -L figures
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/testing.hpp"
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace {

using fa2::index_t;
using Attrs = std::map<std::string, std::string>;

std::string read_figure() {
  const std::string path = std::string(fa2::testing::source_dir()) + "/step03_tile_pointer/figures/block_pointer.svg";
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The attributes of every element of `svg` that has the attribute `key`. The canvas writes one
// element per line, attributes as name="value".
std::vector<Attrs> elements_with(const std::string& svg, const std::string& key) {
  static const std::regex element_re(R"(<[a-z]+\s([^>]*)>)");
  static const std::regex attr_re(R"re(([A-Za-z_:][-A-Za-z0-9_:.]*)="([^"]*)")re");
  std::vector<Attrs> found;
  for (std::sregex_iterator e(svg.begin(), svg.end(), element_re), end; e != end; ++e) {
    const std::string body = (*e)[1].str();
    Attrs attrs;
    for (std::sregex_iterator a(body.begin(), body.end(), attr_re); a != end; ++a) attrs[(*a)[1].str()] = (*a)[2].str();
    if (attrs.count(key)) found.push_back(attrs);
  }
  return found;
}

// One drawn cell of the tile: (row, col, address, "read" or "padded", loaded value).
using Cell = std::tuple<long long, long long, long long, std::string, std::string>;

std::set<Cell> figure_cells(const std::string& svg, const std::string& panel) {
  std::set<Cell> cells;
  for (const Attrs& a : elements_with(svg, "data-address")) {
    if (a.at("data-panel") != panel) continue;
    cells.emplace(std::stoll(a.at("data-row")), std::stoll(a.at("data-col")), std::stoll(a.at("data-address")),
                  a.at("data-state"), a.at("data-loaded"));
  }
  return cells;
}

std::string offsets_of(const std::string& svg, const std::string& panel) {
  for (const Attrs& a : elements_with(svg, "data-offsets")) {
    if (a.at("data-panel") == panel) return a.at("data-offsets");
  }
  return "none";
}

// The same cells computed from the pointer: its addresses, its mask, and a real load.
template <class Ptr>
std::set<Cell> pointer_cells(const Ptr& ptr) {
  const fa2::HostProgram prog(fa2::Coord<3>{2, 0, 0}, nullptr, 0);
  const auto tile = fa2::load(prog, ptr, fa2::boundary_check<0, 1>, fa2::Padding::zero);
  std::set<Cell> cells;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      const fa2::Coord<2> idx{i, j};
      const bool inside = ptr.in_bounds(idx, fa2::boundary_check<0, 1>);
      cells.emplace(ptr.position(idx)[0], ptr.position(idx)[1], ptr.element_offset(idx), inside ? "read" : "padded",
                    std::to_string(static_cast<long long>(tile.v[i][j])));
    }
  }
  return cells;
}

std::string pair_text(const fa2::Coord<2>& c) {
  return "(" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ")";
}

}  // namespace

TEST_SUITE("figures") {
  TEST_CASE("the block pointer figure draws the worked example's addresses with 48 and 49 read and six cells padded") {
    // The article's numbers, read from the figure alone.
    std::vector<long long> addresses, read;
    for (const auto& [row, col, address, state, loaded] : figure_cells(read_figure(), "before")) {
      addresses.push_back(address);
      if (state == "read") read.push_back(std::stoll(loaded));
    }
    CHECK(addresses == std::vector<long long>{48, 49, 50, 51, 58, 59, 60, 61});
    CHECK(read == std::vector<long long>{48, 49});
  }

  TEST_CASE("every cell of the block pointer figure has the pointer's address and mask and the value load returns") {
    const std::string svg = read_figure();
    std::vector<float> x(50);
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k);  // slot k holds k, as in the figure
    const auto before = fa2::make_tile_ptr<fa2::Block<2, 4>>(static_cast<const float*>(x.data()), {5, 10}, {10, 1},
                                                             {4, 8}, fa2::Order<1, 0>{});
    // The figure's second panel is the pointer advance() returns for the delta its title names.
    const auto after = before.advance({-2, -4});
    CHECK(offsets_of(svg, "before") == pair_text(before.offsets()));
    CHECK(offsets_of(svg, "after") == pair_text(after.offsets()));
    CHECK(figure_cells(svg, "before") == pointer_cells(before));
    CHECK(figure_cells(svg, "after") == pointer_cells(after));
  }
}
