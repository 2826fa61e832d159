// step04_figures' tests: the committed figure (figures/program_addresses.svg, which the ctest
// step04_figures_match_the_committed_ones keeps equal to what the program draws) says what the code
// does: its tile-pointer cells are TilePtr's answers, its pointer-maths cells the same, and the
// addresses it shows add up to the total weighted_sum_host stores. Host only, fast.
//   ctest --test-dir build/<preset> -L step04 -L figures
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/tensor.hpp"
#include "common/testing.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"

namespace {

using Attrs = std::map<std::string, std::string>;

// The attributes of every element of the committed figure that carries `key` (data-* values).
std::vector<Attrs> elements_with(const std::string& key) {
  const std::string path =
      std::string(fa2::testing::source_dir()) + "/step04_weighted_sum/figures/program_addresses.svg";
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  static const std::regex tag_re(R"(<(rect|text)\s([^>]*)>)");
  static const std::regex attr_re(R"re(([-A-Za-z0-9_:]+)="([^"]*)")re");
  std::vector<Attrs> out;
  for (std::sregex_iterator t(doc.begin(), doc.end(), tag_re), end; t != end; ++t) {
    Attrs a;
    const std::string body = (*t)[2].str();
    for (std::sregex_iterator m(body.begin(), body.end(), attr_re); m != end; ++m) a[(*m)[1].str()] = (*m)[2].str();
    if (a.count(key)) out.push_back(a);
  }
  return out;
}

int as_int(const Attrs& a, const std::string& key) {
  REQUIRE_MESSAGE(a.count(key), "an element lacks " << key);
  return std::stoi(a.at(key));
}

// The article's example, as the figure draws it: x (5, 10) row-major, tiles 2 x 4, program 2.
constexpr fa2::index_t kNumRows = 5, kD = 10, kFirstRow = 4;

}  // namespace

TEST_SUITE("figures") {
  TEST_CASE("step 4's figure: each tile-pointer cell is TilePtr's element_offset and in_bounds for program 2") {
    const auto cells = elements_with("data-offset");
    int checked = 0;
    for (const auto& a : cells) {
      if (a.count("data-step") == 0 || a.at("data-style") != "tile_pointer") continue;
      const int step = as_int(a, "data-step"), row = as_int(a, "data-row"), col = as_int(a, "data-col");
      // A tile pointer made here, independently of the body: the tile of program 2 at this step.
      const float* x = nullptr;
      const auto ptr =
          fa2::make_tile_ptr<fa2::Block<2, 4>>(x, {kNumRows, kD}, {kD, 1}, {kFirstRow, 4 * step}, fa2::Order<1, 0>{});
      const fa2::Coord<2> idx{row - kFirstRow, col - 4 * step};
      INFO("step ", step, ", element (", row, ", ", col, ")");
      CHECK(as_int(a, "data-offset") == ptr.element_offset(idx));
      CHECK(a.at("data-read") == (ptr.in_bounds(idx, fa2::boundary_check<0, 1>) ? "true" : "false"));
      ++checked;
    }
    CHECK(checked == 3 * 2 * 4);  // three column steps of a 2 x 4 tile
  }

  TEST_CASE("step 4's figure: the pointer-maths cells equal the tile pointer's, and are grey exactly outside x") {
    std::map<std::string, Attrs> tile_pointer;
    for (const auto& a : elements_with("data-offset")) {
      if (a.count("data-step") && a.at("data-style") == "tile_pointer") {
        tile_pointer[a.at("data-step") + "," + a.at("data-row") + "," + a.at("data-col")] = a;
      }
    }
    int checked = 0;
    for (const auto& a : elements_with("data-offset")) {
      if (a.count("data-step") == 0 || a.at("data-style") != "pointer_math") continue;
      const std::string key = a.at("data-step") + "," + a.at("data-row") + "," + a.at("data-col");
      INFO("step, row, col = ", key);
      REQUIRE(tile_pointer.count(key) == 1);
      CHECK(a.at("data-offset") == tile_pointer.at(key).at("data-offset"));
      CHECK(a.at("data-read") == tile_pointer.at(key).at("data-read"));
      const bool inside = as_int(a, "data-row") < kNumRows && as_int(a, "data-col") < kD;
      CHECK(a.at("data-read") == (inside ? "true" : "false"));
      // x holds k in memory slot k, so a read element holds its own offset; a masked one the padding 0.
      CHECK(a.at("data-value") == (inside ? a.at("data-offset") : "0"));
      ++checked;
    }
    CHECK(checked == 24);
    for (const auto& a : elements_with("data-agree")) CHECK(a.at("data-agree") == "true");
    CHECK(elements_with("data-agree").size() == 3);
  }

  TEST_CASE("step 4's figure: the addresses it shows, weighted, give the total weighted_sum_host stores for row 4") {
    fa2::Tensor<float, 2> x(fa2::Extents<2>{kNumRows, kD});
    fa2::Tensor<float, 1> weight(fa2::Extents<1>{kD});
    for (fa2::index_t r = 0; r < kNumRows; ++r)
      for (fa2::index_t c = 0; c < kD; ++c) x(r, c) = static_cast<float>(r * kD + c);
    for (fa2::index_t c = 0; c < kD; ++c) weight(c) = static_cast<float>(c + 1);
    double from_figure = 0.0;
    for (const auto& a : elements_with("data-offset")) {
      if (a.count("data-step") == 0 || a.at("data-style") != "pointer_math" || a.at("data-read") != "true") continue;
      const int offset = as_int(a, "data-offset"), col = as_int(a, "data-col");
      from_figure += static_cast<double>(x.cview().data()[offset]) * static_cast<double>(weight(col));
    }
    for (const auto style : {fa2::WeightedSumStyle::pointer_math, fa2::WeightedSumStyle::tile_pointer}) {
      const auto out = fa2::weighted_sum_host<2, 4, float>(style, x.cview(), weight.cview());
      CHECK(static_cast<double>(out(kFirstRow)) == from_figure);
    }
    // The store cells: row 4 written at output + 4 by both styles, row 5 skipped.
    int stores = 0;
    for (const auto& a : elements_with("data-store-row")) {
      const int row = as_int(a, "data-store-row");
      CHECK(as_int(a, "data-offset") == row);
      CHECK(a.at("data-written") == (row < kNumRows ? "true" : "false"));
      ++stores;
    }
    CHECK(stores == 4);
  }
}
