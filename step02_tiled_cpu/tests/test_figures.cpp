// Tests of step 2's figures: the committed SVGs (step02_tiled_cpu/figures/) are read back through
// their data-* attributes and checked against the functions they claim to show: the tiles and masks
// of tiled_attention_forward's and tiled_attention_backward's traces, the running m_i, alpha and l_i,
// and O_i / l_i against the float64 reference on the keys read so far. Not graded (label figures).
//   cmake --build --preset cpu-only --target step02_figures_tests && ctest --preset cpu-only -L figures
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/testing.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"
#include "step02_tiled_cpu/tiled_backward.hpp"

namespace {

using fa2::index_t;
using fa2::Tensor;
using Attrs = std::map<std::string, std::string>;

// The shape every figure of step 2 is drawn on (their headings say so).
constexpr index_t kNq = 10, kNk = 13, kTile = 4;

std::string read_figure(const std::string& name) {
  const std::string path = std::string(fa2::testing::source_dir()) + "/step02_tiled_cpu/figures/" + name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The attributes of every element of `svg` that has the attribute `key` (and, if given, with
// key="value"). The canvas writes one element per line, attributes as name="value".
std::vector<Attrs> elements_with(const std::string& svg, const std::string& key, const std::string& value = "") {
  static const std::regex element_re(R"(<[a-z]+\s([^>]*)>)");
  static const std::regex attr_re(R"re(([A-Za-z_:][-A-Za-z0-9_:.]*)="([^"]*)")re");
  std::vector<Attrs> found;
  for (std::sregex_iterator e(svg.begin(), svg.end(), element_re), end; e != end; ++e) {
    const std::string body = (*e)[1].str();
    Attrs attrs;
    for (std::sregex_iterator a(body.begin(), body.end(), attr_re); a != end; ++a) attrs[(*a)[1].str()] = (*a)[2].str();
    if (attrs.count(key) && (value.empty() || attrs[key] == value)) found.push_back(attrs);
  }
  return found;
}

int as_int(const Attrs& a, const std::string& key) {
  REQUIRE_MESSAGE(a.count(key), "no attribute " << key);
  return std::stoi(a.at(key));
}

double as_number(const std::string& text) {
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  return std::stod(text);
}

std::vector<double> as_list(const std::string& text) {
  std::vector<double> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) values.push_back(std::stod(item));
  return values;
}

// A tile pair as a trace reports it and as the figure outlines it.
using Visit = std::tuple<int, int, int, int>;  // (q_start, k_start, q_rows, k_cols)

std::vector<Visit> figure_visits(const std::string& svg, const std::string& panel) {
  std::map<int, Visit> by_number;
  for (const Attrs& a : elements_with(svg, "data-q-rows")) {
    if (a.at("data-panel") != panel) continue;
    by_number[as_int(a, "data-visit")] = {as_int(a, "data-q-start"), as_int(a, "data-k-start"),
                                          as_int(a, "data-q-rows"), as_int(a, "data-k-cols")};
  }
  std::vector<Visit> visits;
  for (const auto& [n, v] : by_number) {
    CHECK(n == static_cast<int>(visits.size()) + 1);  // numbered 1, 2, 3, ... without a gap
    visits.push_back(v);
  }
  return visits;
}

// (q, k) -> "kept", "masked" or "not computed", as the figure colours each score of a panel.
std::map<std::pair<int, int>, std::string> figure_cells(const std::string& svg, const std::string& panel) {
  std::map<std::pair<int, int>, std::string> cells;
  for (const Attrs& a : elements_with(svg, "data-state")) {
    if (a.at("data-panel") == panel) cells[{as_int(a, "data-q"), as_int(a, "data-k")}] = a.at("data-state");
  }
  return cells;
}

// Every score starts "not computed"; each traced tile marks its scores kept or masked.
struct TraceCells {
  std::vector<Visit> visits;
  std::map<std::pair<int, int>, std::string> cells;

  TraceCells() {
    for (int q = 0; q < kNq; ++q) {
      for (int k = 0; k < kNk; ++k) cells[{q, k}] = "not computed";
    }
  }
  template <class Matrix, class IsMasked>
  void add(index_t q_start, index_t k_start, const Matrix& tile, IsMasked is_masked) {
    visits.emplace_back(static_cast<int>(q_start), static_cast<int>(k_start), static_cast<int>(tile.rows()),
                        static_cast<int>(tile.cols()));
    for (Eigen::Index r = 0; r < tile.rows(); ++r) {
      for (Eigen::Index c = 0; c < tile.cols(); ++c) {
        cells[{static_cast<int>(q_start + r), static_cast<int>(k_start + c)}] =
            is_masked(tile(r, c)) ? "masked" : "kept";
      }
    }
  }
};

// Whatever the values, the tiles and the masks depend only on the shape: random inputs do.
struct Problem {
  Tensor<double, 3> Q, K, V, dO;
};

Problem random_problem(index_t D, index_t Dv, fa2::Rng& rng) {
  return {fa2::random_normal<double, 3>({1, kNq, D}, rng), fa2::random_normal<double, 3>({1, kNk, D}, rng),
          fa2::random_normal<double, 3>({1, kNk, Dv}, rng), fa2::random_normal<double, 3>({1, kNq, Dv}, rng)};
}

const char* panel_of(bool causal) {
  return causal ? "causal" : "non-causal";
}

}  // namespace

TEST_SUITE("figures") {
  TEST_CASE("the forward figure outlines exactly the tiles the forward's trace reports in the order it reports them") {
    const std::string svg = read_figure("forward_tiles.svg");
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Problem p = random_problem(4, 3, rng);
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      TraceCells trace;
      fa2::tiled::tiled_attention_forward<double>(
          p.Q.cview(), p.K.cview(), p.V.cview(), {.block_q = kTile, .block_k = kTile, .causal = causal},
          [&](const fa2::tiled::KeyTileStep<double>& s) {
            trace.add(s.q_start, s.k_start, s.S_ij, [](double v) { return std::isinf(v); });
          });
      CHECK(figure_visits(svg, panel_of(causal)) == trace.visits);
      // Kept, masked to -inf, or never computed: score by score, as the trace has it.
      const auto cells = figure_cells(svg, panel_of(causal));
      CHECK(cells.size() == static_cast<std::size_t>(kNq * kNk));
      CHECK(cells == trace.cells);
    }
  }

  TEST_CASE(
      "the row-state figure shows the trace's scores m alpha and l and O over l is attention on the keys so far") {
    const std::string svg = read_figure("forward_row_state.svg");
    const auto inputs = elements_with(svg, "data-Q");
    REQUIRE(inputs.size() == 1);
    const auto q_values = as_list(inputs[0].at("data-Q")), k_values = as_list(inputs[0].at("data-K"));
    const auto v_values = as_list(inputs[0].at("data-V"));
    REQUIRE(q_values.size() == static_cast<std::size_t>(kNq));
    REQUIRE(k_values.size() == static_cast<std::size_t>(kNk));
    REQUIRE(v_values.size() == static_cast<std::size_t>(kNk));
    Tensor<double, 3> Q({1, kNq, 1}), K({1, kNk, 1}), V({1, kNk, 1});
    for (index_t q = 0; q < kNq; ++q) Q(0, q, 0) = q_values[static_cast<std::size_t>(q)];
    for (index_t k = 0; k < kNk; ++k) {
      K(0, k, 0) = k_values[static_cast<std::size_t>(k)];
      V(0, k, 0) = v_values[static_cast<std::size_t>(k)];
    }
    // (k_start, query, quantity) -> the number the trace gives; the figure prints 3 decimals.
    std::map<std::tuple<int, int, std::string>, double> expected;
    std::map<std::tuple<int, int, int>, double> scores;  // (k_start, query, key) -> S
    const index_t q0 = 8;
    const auto out = fa2::tiled::tiled_attention_forward<double>(
        Q.cview(), K.cview(), V.cview(), {.block_q = kTile, .block_k = kTile},
        [&](const fa2::tiled::KeyTileStep<double>& s) {
          if (s.q_start != q0) return;
          const int k0 = static_cast<int>(s.k_start);
          for (Eigen::Index r = 0; r < s.S_ij.rows(); ++r) {
            const int q = static_cast<int>(q0 + r);
            expected[{k0, q, "m_old"}] = s.m_old(r);
            expected[{k0, q, "m_new"}] = s.m_new(r);
            expected[{k0, q, "alpha"}] = s.alpha(r);
            expected[{k0, q, "l"}] = s.l_new(r);
            for (Eigen::Index c = 0; c < s.S_ij.cols(); ++c) scores[{k0, q, k0 + static_cast<int>(c)}] = s.S_ij(r, c);
            // O_i / l_i after this tile: attention over keys 0 .. k_end - 1 alone, by the float64 reference.
            const index_t k_end = s.k_start + s.S_ij.cols();
            const fa2::TensorView<const double, 3> K_seen(K.cview().data(), {1, k_end, 1}, K.cview().strides());
            const fa2::TensorView<const double, 3> V_seen(V.cview().data(), {1, k_end, 1}, V.cview().strides());
            expected[{k0, q, "O/l"}] = fa2::reference_attention(Q.cview(), K_seen, V_seen, false).O(0, q, 0);
          }
        });
    std::size_t seen = 0;
    for (const Attrs& a : elements_with(svg, "data-quantity")) {
      const auto key = std::make_tuple(as_int(a, "data-k-start"), as_int(a, "data-query"), a.at("data-quantity"));
      REQUIRE_MESSAGE(expected.count(key),
                      "the figure shows a value the trace does not have: " << a.at("data-quantity"));
      const double shown = as_number(a.at("data-value")), want = expected.at(key);
      CAPTURE(a.at("data-quantity"));
      CAPTURE(a.at("data-k-start"));
      if (std::isinf(want)) {
        CHECK(shown == want);
      } else {
        CHECK(std::abs(shown - want) <= 5e-4);
      }
      ++seen;
    }
    CHECK(seen == expected.size());
    std::size_t score_cells = 0;
    for (const Attrs& a : elements_with(svg, "data-score")) {
      const auto key = std::make_tuple(as_int(a, "data-k-start"), as_int(a, "data-query"), as_int(a, "data-key"));
      REQUIRE(scores.count(key));
      CHECK(std::abs(as_number(a.at("data-score")) - scores.at(key)) <= 5e-3);
      ++score_cells;
    }
    CHECK(score_cells == scores.size());
    // The last column is what the forward returns.
    for (const index_t q : {q0, q0 + 1}) {
      CHECK(std::abs(expected.at({12, static_cast<int>(q), "O/l"}) - out.O(0, q, 0)) <= 1e-12);
    }
  }

  TEST_CASE("the backward figure outlines exactly the pairs its trace reports with P exactly 0 where it shows a mask") {
    const std::string svg = read_figure("backward_tiles.svg");
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Problem p = random_problem(3, 2, rng);
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const auto ref = fa2::reference_attention(p.Q.cview(), p.K.cview(), p.V.cview(), causal);
      TraceCells trace;
      fa2::tiled::tiled_attention_backward<double>(
          p.Q.cview(), p.K.cview(), p.V.cview(), ref.O.cview(), ref.L.cview(), p.dO.cview(),
          {.block_q = kTile, .block_k = kTile, .causal = causal}, [&](const fa2::tiled::QueryTileStep<double>& s) {
            trace.add(s.q_start, s.k_start, s.P_ij, [](double v) { return v == 0.0; });
          });
      CHECK(figure_visits(svg, panel_of(causal)) == trace.visits);
      CHECK(figure_cells(svg, panel_of(causal)) == trace.cells);
      // Below each key tile, the visits summed into its dK_j and dV_j; beside each query tile,
      // the visits that added to its dQ_i.
      const std::vector<std::pair<std::string, int>> sums = {{"data-dkv-of", 1}, {"data-dq-of", 0}};
      for (const auto& [key, axis] : sums) {
        std::size_t tiles = 0;
        for (const Attrs& a : elements_with(svg, key)) {
          if (a.at("data-panel") != panel_of(causal)) continue;
          const int start = as_int(a, key);
          std::string from;
          for (std::size_t n = 0; n < trace.visits.size(); ++n) {
            const int visit_start = axis == 1 ? std::get<1>(trace.visits[n]) : std::get<0>(trace.visits[n]);
            if (visit_start == start) from += (from.empty() ? "" : "+") + std::to_string(n + 1);
          }
          CAPTURE(key);
          CAPTURE(start);
          CHECK(a.at("data-from") == from);
          ++tiles;
        }
        CHECK(tiles == static_cast<std::size_t>(axis == 1 ? 4 : 3));  // key tiles of 13, query tiles of 10
      }
    }
  }

  TEST_CASE("the backward figure's five products carry the shapes of the traced tiles of the pair it names") {
    const std::string svg = read_figure("backward_tiles.svg");
    const auto pair = elements_with(svg, "data-Dv");
    REQUIRE(pair.size() == 1);
    const index_t D = as_int(pair[0], "data-D"), Dv = as_int(pair[0], "data-Dv");
    const int k_pick = as_int(pair[0], "data-k-start"), q_pick = as_int(pair[0], "data-q-start");
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Problem p = random_problem(D, Dv, rng);
    const auto ref = fa2::reference_attention(p.Q.cview(), p.K.cview(), p.V.cview(), true);
    std::map<int, std::string> shapes;  // product number -> (rows, cols)
    const auto shape = [](Eigen::Index rows, Eigen::Index cols) {
      return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
    };
    fa2::tiled::tiled_attention_backward<double>(
        p.Q.cview(), p.K.cview(), p.V.cview(), ref.O.cview(), ref.L.cview(), p.dO.cview(),
        {.block_q = kTile, .block_k = kTile, .causal = true}, [&](const fa2::tiled::QueryTileStep<double>& s) {
          if (s.k_start != k_pick || s.q_start != q_pick) return;
          shapes[0] = shape(s.P_ij.rows(), s.P_ij.cols());
          shapes[1] = shape(s.dV_j.rows(), s.dV_j.cols());
          shapes[2] = shape(s.dP_ij.rows(), s.dP_ij.cols());
          shapes[3] = shape(s.dS_ij.rows(), s.dS_ij.cols());
          shapes[4] = shape(s.dK_j.rows(), s.dK_j.cols());
          shapes[5] = shape(s.P_ij.rows(), s.dK_j.cols());  // dQ_i: a query row per P row, D columns like dK_j
        });
    REQUIRE_MESSAGE(shapes.size() == 6, "the trace never visited the pair the figure names");
    const auto products = elements_with(svg, "data-product");
    CHECK(products.size() == 6);
    for (const Attrs& a : products) {
      CAPTURE(a.at("data-product"));
      CHECK(a.at("data-shape") == shapes.at(as_int(a, "data-product")));
    }
  }
}
