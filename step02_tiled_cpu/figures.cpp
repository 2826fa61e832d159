// step02_figures: draws step 2's figures from the functions its tests check: the tiles that
// tiled_attention_forward visits and masks (its KeyTileTrace), the running m_i, l_i and O_i of one
// query tile, and the backward's visits and five products (tiled_attention_backward's QueryTileTrace).
//   build/cpu-only/step02_tiled_cpu/step02_figures step02_tiled_cpu/figures   (scripts/make_figures.sh: every step)
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/figures.hpp"
#include "common/reference.hpp"
#include "common/svg_canvas.hpp"
#include "common/tensor.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"
#include "step02_tiled_cpu/tiled_backward.hpp"

namespace {

using fa2::index_t;
using fa2::Tensor;
using fa2::svg::attr;
using fa2::svg::fixed;

// One ragged shape for every figure: neither length is a multiple of the tile, so the last query
// tile has 2 rows and the last key tile 1 key.
constexpr index_t kNq = 10, kNk = 13, kTile = 4;

const std::string kKept = "#aec7e8", kMasked = "#ffbb78", kLine = "#1f4e79";

// ---- inputs -------------------------------------------------------------------------------------
// Small decimal numbers, exact in binary or nearly so, so the figures come out the same bytes on
// every machine.

// The row-state figure's head dim is 1 and its scale 1, so a score is Q[q] * K[k]: even queries see
// K itself and odd ones -K, and the running maximum of rows 8 and 9 moves on different tiles.
const std::vector<double> kRowK = {0.5, 1.0, -0.5, 0.2, -1.0, 0.8, 0.3, -0.2, 1.6, 0.1, -0.4, 0.9, -1.5};

// A (1, n, d) tensor filled from a small integer pattern, entries in [-1, 1] in steps of 1/4.
Tensor<double, 3> pattern(index_t n, index_t d, int a, int b) {
  Tensor<double, 3> t({1, n, d});
  for (index_t i = 0; i < n; ++i) {
    for (index_t j = 0; j < d; ++j) t(0, i, j) = static_cast<double>((a * i + b * j + 3) % 9 - 4) / 4.0;
  }
  return t;
}

std::string joined(const std::vector<double>& values) {
  std::string s;
  for (const double v : values) s += (s.empty() ? "" : ",") + fixed(v, 2);
  return s;
}

// "0-3" for a band of four, "12" for a band of one.
std::string span(index_t start, index_t count) {
  return count == 1 ? std::to_string(start) : std::to_string(start) + "-" + std::to_string(start + count - 1);
}

std::string shape(index_t rows, index_t cols) {
  return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

std::string shown(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return fixed(v, 3);
}

// ---- the tiles a trace reports ---------------------------------------------------------------------

// One (query tile, key tile) pair as the trace reported it: where it starts, how many rows and
// columns it really has, and which of its scores were masked.
struct Visit {
  index_t q_start = 0, k_start = 0, q_rows = 0, k_cols = 0;
  std::vector<bool> masked;  // (q_rows, k_cols), row-major

  bool masked_at(index_t r, index_t c) const { return masked[static_cast<std::size_t>(r * k_cols + c)]; }
};

// The forward's visits, in the order its loops make them. A masked score reaches the trace as -inf.
std::vector<Visit> forward_visits(bool causal) {
  const auto Q = pattern(kNq, 2, 2, 1), K = pattern(kNk, 2, 5, 2), V = pattern(kNk, 2, 4, 3);
  std::vector<Visit> visits;
  fa2::tiled::tiled_attention_forward<double>(Q.cview(), K.cview(), V.cview(),
                                              {.block_q = kTile, .block_k = kTile, .causal = causal},
                                              [&](const fa2::tiled::KeyTileStep<double>& s) {
                                                Visit v{s.q_start, s.k_start, s.S_ij.rows(), s.S_ij.cols(), {}};
                                                for (Eigen::Index r = 0; r < s.S_ij.rows(); ++r) {
                                                  for (Eigen::Index c = 0; c < s.S_ij.cols(); ++c)
                                                    v.masked.push_back(std::isinf(s.S_ij(r, c)));
                                                }
                                                visits.push_back(v);
                                              });
  return visits;
}

// The backward's shapes for one pair, as its trace shows them.
struct PairShapes {
  index_t q_rows = 0, k_cols = 0, D = 0, Dv = 0;
};

struct BackwardRun {
  std::vector<Visit> visits;
  std::map<std::pair<index_t, index_t>, PairShapes> shapes;  // (k_start, q_start) -> shapes
};

// The backward's visits. O and L come from the float64 reference, so this figure does not depend
// on the tiled forward; a masked score reaches the trace as P_ij exactly 0 (tiled_backward.hpp).
BackwardRun backward_visits(bool causal) {
  const index_t D = 3, Dv = 2;  // different, so that every shape in the figure says which it is
  const auto Q = pattern(kNq, D, 2, 1), K = pattern(kNk, D, 5, 2), V = pattern(kNk, Dv, 4, 3);
  const auto dO = pattern(kNq, Dv, 7, 4);
  const auto ref = fa2::reference_attention(Q.cview(), K.cview(), V.cview(), causal);
  BackwardRun run;
  fa2::tiled::tiled_attention_backward<double>(
      Q.cview(), K.cview(), V.cview(), ref.O.cview(), ref.L.cview(), dO.cview(),
      {.block_q = kTile, .block_k = kTile, .causal = causal}, [&](const fa2::tiled::QueryTileStep<double>& s) {
        Visit v{s.q_start, s.k_start, s.P_ij.rows(), s.P_ij.cols(), {}};
        for (Eigen::Index r = 0; r < s.P_ij.rows(); ++r) {
          for (Eigen::Index c = 0; c < s.P_ij.cols(); ++c) v.masked.push_back(s.P_ij(r, c) == 0.0);
        }
        run.visits.push_back(v);
        run.shapes[{s.k_start, s.q_start}] = {s.P_ij.rows(), s.P_ij.cols(), s.dK_j.cols(), s.dV_j.cols()};
      });
  return run;
}

// ---- the tile grid ----------------------------------------------------------------------------------
// Queries down, keys across, one small square per score; thick lines mark the tiles. Each visited
// tile is outlined over the extent the trace gave it and numbered in visit order.

constexpr double kCell = 22;

struct GridPanel {
  double x0, y0;      // the top-left corner of score (0, 0)
  std::string panel;  // "non-causal" or "causal": data-panel of every element
  bool keys_outer;    // the backward's loop order: arrows run down a column, not along a row
};

double band_center(index_t start, index_t count) {
  return (static_cast<double>(start) + static_cast<double>(count) / 2.0) * kCell;
}

void draw_grid(fa2::svg::Canvas& c, const GridPanel& g, const std::string& title, const std::vector<Visit>& visits) {
  c.text(g.x0, g.y0 - 30, title, 13, "start", "font-weight=\"bold\"");
  // Band labels: each tile's rows and columns.
  for (index_t k = 0; k < kNk; k += kTile) {
    const index_t n = std::min(kTile, kNk - k);
    c.text(g.x0 + band_center(k, n), g.y0 - 7, (n == 1 ? "key " : "keys ") + span(k, n), 10, "middle", "fill=\"#555\"");
  }
  for (index_t q = 0; q < kNq; q += kTile) {
    const index_t n = std::min(kTile, kNq - q);
    c.text(g.x0 - 6, g.y0 + band_center(q, n) + 4, "queries " + span(q, n), 10, "end", "fill=\"#555\"");
  }
  // Every score: kept, masked, or never computed.
  const auto at = [](index_t q, index_t k) { return static_cast<std::size_t>(q * kNk + k); };
  std::vector<int> visit_of(at(kNq, 0), 0);  // (Nq, Nk): 1 + the visit that computed the score, 0 if none
  std::vector<bool> masked(at(kNq, 0), false);
  for (std::size_t n = 0; n < visits.size(); ++n) {
    const Visit& v = visits[n];
    for (index_t r = 0; r < v.q_rows; ++r) {
      for (index_t col = 0; col < v.k_cols; ++col) {
        visit_of[at(v.q_start + r, v.k_start + col)] = static_cast<int>(n) + 1;
        masked[at(v.q_start + r, v.k_start + col)] = v.masked_at(r, col);
      }
    }
  }
  for (index_t q = 0; q < kNq; ++q) {
    for (index_t k = 0; k < kNk; ++k) {
      const int n = visit_of[at(q, k)];
      const bool m = masked[at(q, k)];
      const std::string state = n == 0 ? "not computed" : m ? "masked" : "kept";
      c.rect(g.x0 + static_cast<double>(k) * kCell, g.y0 + static_cast<double>(q) * kCell, kCell, kCell,
             n == 0 ? "white"
             : m    ? kMasked
                    : kKept,
             "#d0d0d0", 0.5,
             attr("data-panel", g.panel) + " " + attr("data-q", static_cast<int>(q)) + " " +
                 attr("data-k", static_cast<int>(k)) + " " + attr("data-state", state) + " " + attr("data-visit", n));
    }
  }
  // Tile boundaries, then the tiles that no visit touched.
  for (index_t k = 0; k <= kNk; k += kTile) {
    const double x = g.x0 + static_cast<double>(std::min(k, kNk)) * kCell;
    c.line(x, g.y0, x, g.y0 + static_cast<double>(kNq) * kCell, "#777", 1.2);
  }
  c.line(g.x0 + static_cast<double>(kNk) * kCell, g.y0, g.x0 + static_cast<double>(kNk) * kCell,
         g.y0 + static_cast<double>(kNq) * kCell, "#777", 1.2);
  for (index_t q = 0; q <= kNq; q += kTile) {
    const double y = g.y0 + static_cast<double>(std::min(q, kNq)) * kCell;
    c.line(g.x0, y, g.x0 + static_cast<double>(kNk) * kCell, y, "#777", 1.2);
  }
  c.line(g.x0, g.y0 + static_cast<double>(kNq) * kCell, g.x0 + static_cast<double>(kNk) * kCell,
         g.y0 + static_cast<double>(kNq) * kCell, "#777", 1.2);
  for (index_t q = 0; q < kNq; q += kTile) {
    for (index_t k = 0; k < kNk; k += kTile) {
      const bool met =
          std::any_of(visits.begin(), visits.end(), [&](const Visit& v) { return v.q_start == q && v.k_start == k; });
      const index_t rows = std::min(kTile, kNq - q), cols = std::min(kTile, kNk - k);
      if (!met && cols >= 2) {
        c.text(g.x0 + band_center(k, cols), g.y0 + band_center(q, rows) + 4, "skipped", 10, "middle", "fill=\"#888\"");
      }
    }
  }
  // The visits: outline, order arrows, number and shape.
  const double r = 10;
  std::vector<std::pair<double, double>> centers;
  for (const Visit& v : visits) {
    centers.emplace_back(g.x0 + band_center(v.k_start, v.k_cols), g.y0 + band_center(v.q_start, v.q_rows));
  }
  // Arrows follow the inner loop only: a new outer iteration starts where its number says.
  for (std::size_t n = 0; n + 1 < centers.size(); ++n) {
    const bool same_outer =
        g.keys_outer ? visits[n].k_start == visits[n + 1].k_start : visits[n].q_start == visits[n + 1].q_start;
    if (!same_outer) continue;
    const auto [x1, y1] = centers[n];
    const auto [x2, y2] = centers[n + 1];
    const double len = std::hypot(x2 - x1, y2 - y1);
    const double ux = (x2 - x1) / len, uy = (y2 - y1) / len;
    c.arrow(x1 + ux * (r + 1), y1 + uy * (r + 1), x2 - ux * (r + 2), y2 - uy * (r + 2), "#555", 1.0);
  }
  for (std::size_t n = 0; n < visits.size(); ++n) {
    const Visit& v = visits[n];
    c.rect(g.x0 + static_cast<double>(v.k_start) * kCell + 1.5, g.y0 + static_cast<double>(v.q_start) * kCell + 1.5,
           static_cast<double>(v.k_cols) * kCell - 3, static_cast<double>(v.q_rows) * kCell - 3, "none", kLine, 2.0,
           attr("data-panel", g.panel) + " " + attr("data-visit", static_cast<int>(n) + 1) + " " +
               attr("data-q-start", static_cast<int>(v.q_start)) + " " +
               attr("data-k-start", static_cast<int>(v.k_start)) + " " +
               attr("data-q-rows", static_cast<int>(v.q_rows)) + " " + attr("data-k-cols", static_cast<int>(v.k_cols)));
    // The shape goes where the arrows do not: under the number when they run across, beside it
    // when they run down.
    const auto [x, y] = centers[n];
    const bool room = v.k_cols >= 2 && v.q_rows >= 2;
    const double cy = room && !g.keys_outer ? y - 6 : y;
    c.circle(x, cy, r, "white", kLine);
    c.text(x, cy + 4, std::to_string(n + 1), 11, "middle", "font-weight=\"bold\"");
    if (room && g.keys_outer) c.text(x + r + 3, cy + 4, shape(v.q_rows, v.k_cols), 10, "start");
    if (room && !g.keys_outer) c.text(x, cy + r + 12, shape(v.q_rows, v.k_cols), 10, "middle");
  }
}

void legend(fa2::svg::Canvas& c, double x, double y) {
  const std::vector<std::pair<std::string, std::string>> items = {
      {kKept, "score computed and kept"},
      {kMasked, "computed, then masked: -inf, weight exactly 0"},
      {"white", "never computed"}};
  for (const auto& [fill, label] : items) {
    c.rect(x, y - 10, 12, 12, fill, "#999", 0.8);
    c.text(x + 17, y, label, 11);
    x += 40 + 5.6 * static_cast<double>(label.size());
  }
}

// ---- figure 1: the forward's tiles ------------------------------------------------------------------

fa2::figures::Figure forward_tiles() {
  const auto plain = forward_visits(false), causal = forward_visits(true);
  const int width = 830, height = 456;
  fa2::svg::Canvas c(width, height, "The tiles of the forward pass, in the order it visits them");
  c.heading("The tiles of the forward pass, in the order it visits them",
            {"Nq = 10 queries (rows) by Nk = 13 keys (columns) in tiles of B_q = B_k = 4; the last tiles are short.",
             "Numbers: the order of the visits. The outer loop walks the query tiles; arrows follow the inner loop "
             "over key tiles."});
  const double top = 130;
  draw_grid(c, {100, top, "non-causal", false}, "Non-causal: " + std::to_string(plain.size()) + " tiles", plain);
  draw_grid(c, {520, top, "causal", false}, "Causal: " + std::to_string(causal.size()) + " tiles", causal);
  const double below = top + static_cast<double>(kNq) * kCell + 30;
  legend(c, 20, below);
  c.notes(
      below + 26,
      {"Causal: query q sees key k when k <= q. A query tile's key loop ends at its last query, so the tiles right of",
       "the diagonal are skipped, and the last query tile's key tile 8-11 is cut to keys 8-9. Keys 10-12 meet no "
       "query.",
       "Drawn by step02_figures from tiled_attention_forward's KeyTileTrace: each outline is a traced S_ij."});
  return {"forward_tiles.svg", "the forward's tiles: visit order, ragged edges, what the causal mask skips",
          c.finish()};
}

// ---- figure 2: one query tile's running state -------------------------------------------------------

fa2::figures::Figure forward_row_state() {
  const index_t q0 = 8;  // the last query tile: rows 8 and 9
  Tensor<double, 3> Q({1, kNq, 1}), K({1, kNk, 1}), V({1, kNk, 1});
  std::vector<double> q_values, k_values, v_values;
  for (index_t q = 0; q < kNq; ++q) q_values.push_back(Q(0, q, 0) = q % 2 == 0 ? 1.0 : -1.0);
  for (index_t k = 0; k < kNk; ++k) {
    k_values.push_back(K(0, k, 0) = kRowK[static_cast<std::size_t>(k)]);
    v_values.push_back(V(0, k, 0) = static_cast<double>(k));  // so O_i / l_i is a mean key position
  }
  const fa2::tiled::TileOptions options{.block_q = kTile, .block_k = kTile};

  struct Step {
    index_t k_start = 0;
    std::vector<std::vector<double>> S;                  // (tile_rows, k_cols)
    std::vector<double> m_old, m_new, alpha, l, O_by_l;  // (tile_rows) each
  };
  std::vector<Step> steps;
  const auto full = fa2::tiled::tiled_attention_forward<double>(
      Q.cview(), K.cview(), V.cview(), options, [&](const fa2::tiled::KeyTileStep<double>& s) {
        if (s.q_start != q0) return;
        Step st;
        st.k_start = s.k_start;
        for (Eigen::Index r = 0; r < s.S_ij.rows(); ++r) {
          st.S.emplace_back();
          for (Eigen::Index col = 0; col < s.S_ij.cols(); ++col) st.S.back().push_back(s.S_ij(r, col));
          st.m_old.push_back(s.m_old(r));
          st.m_new.push_back(s.m_new(r));
          st.alpha.push_back(s.alpha(r));
          st.l.push_back(s.l_new(r));
        }
        steps.push_back(st);
      });
  // O_i is carried unnormalised and the trace does not show it. Divided by l_i it is what the keys
  // read so far give, so the forward run on those keys alone returns it.
  for (Step& st : steps) {
    const index_t k_end = st.k_start + static_cast<index_t>(st.S[0].size());
    const fa2::TensorView<const double, 3> K_seen(K.cview().data(), {1, k_end, 1}, K.cview().strides());
    const fa2::TensorView<const double, 3> V_seen(V.cview().data(), {1, k_end, 1}, V.cview().strides());
    const auto part = fa2::tiled::tiled_attention_forward<double>(Q.cview(), K_seen, V_seen, options);
    for (std::size_t r = 0; r < st.S.size(); ++r) st.O_by_l.push_back(part.O(0, q0 + static_cast<index_t>(r), 0));
  }

  const double left = 170, col_w = 165, cell_w = 36, row_h = 22;
  const int width = static_cast<int>(left + col_w * static_cast<double>(steps.size()) + 20);
  const int height = 560;
  fa2::svg::Canvas c(width, height, "One query tile carries m_i, l_i and O_i across the key tiles");
  c.heading(
      "One query tile carries m_i, l_i and O_i across the key tiles",
      {"Query tile [8, 10) (rows 8 and 9), non-causal, keys in tiles of 4. After each key tile the running maximum",
       "m_i may move; alpha = exp(m_old - m_new) then shrinks the old l_i and O_i before the tile's terms are added."});
  c.text(20, 92,
         "Inputs (D = Dv = 1, scale 1): Q = +1 on even rows, -1 on odd rows; K as the scores of row 8 show; V[k] = k.",
         11, "start",
         attr("fill", "#444") + " " + attr("data-Q", joined(q_values)) + " " + attr("data-K", joined(k_values)) + " " +
             attr("data-V", joined(v_values)));
  const double top = 120;
  const std::vector<std::string> names = {"m_old", "m_new", "alpha", "l_i after", "O_i / l_i"};
  const std::vector<std::string> keys = {"m_old", "m_new", "alpha", "l", "O/l"};
  const std::size_t tile_rows = steps.front().S.size();
  // Row labels: the scores, then each query's five quantities.
  for (std::size_t r = 0; r < tile_rows; ++r) {
    c.text(left - 10, top + 34 + static_cast<double>(r) * row_h + 15,
           "S_ij, query " + std::to_string(q0 + static_cast<index_t>(r)), 11, "end", "fill=\"#444\"");
  }
  const double state_top = top + 34 + static_cast<double>(tile_rows) * row_h + 18;
  const auto state_y = [&](std::size_t r, std::size_t i) {
    return state_top + static_cast<double>(r) * (static_cast<double>(names.size()) * row_h + 12) +
           static_cast<double>(i) * row_h;
  };
  for (std::size_t r = 0; r < tile_rows; ++r) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      c.text(left - 10, state_y(r, i) + 15, "query " + std::to_string(q0 + static_cast<index_t>(r)) + ": " + names[i],
             11, "end", "fill=\"#444\"");
    }
  }
  for (std::size_t j = 0; j < steps.size(); ++j) {
    const Step& st = steps[j];
    const std::size_t k_cols = st.S[0].size();
    const double x = left + static_cast<double>(j) * col_w;
    c.text(x + (col_w - 10) / 2, top,
           "key tile " + std::to_string(j) + ": " + (k_cols == 1 ? "key " : "keys ") +
               span(st.k_start, static_cast<index_t>(k_cols)),
           12, "middle", "font-weight=\"bold\"");
    c.text(x + (col_w - 10) / 2, top + 17,
           "S_ij " + shape(static_cast<index_t>(tile_rows), static_cast<index_t>(k_cols)), 11, "middle",
           "fill=\"#555\"");
    for (std::size_t r = 0; r < tile_rows; ++r) {
      for (std::size_t col = 0; col < k_cols; ++col) {
        const double s = st.S[r][col];
        const bool holds_max = s == st.m_new[r];  // the running maximum now sits in this tile
        c.rect(x + static_cast<double>(col) * cell_w, top + 34 + static_cast<double>(r) * row_h, cell_w - 2, row_h - 3,
               holds_max ? kMasked : "#f0f0f0", holds_max ? "#d62728" : "#bbb", holds_max ? 1.5 : 0.5,
               attr("data-k-start", static_cast<int>(st.k_start)) + " " +
                   attr("data-query", static_cast<int>(q0) + static_cast<int>(r)) + " " +
                   attr("data-key", static_cast<int>(st.k_start) + static_cast<int>(col)) + " " +
                   attr("data-score", fixed(s, 2)));
        c.text(x + static_cast<double>(col) * cell_w + (cell_w - 2) / 2, top + 34 + static_cast<double>(r) * row_h + 14,
               fixed(s, 2), 10, "middle");
      }
    }
    for (std::size_t r = 0; r < tile_rows; ++r) {
      const std::vector<double> values = {st.m_old[r], st.m_new[r], st.alpha[r], st.l[r], st.O_by_l[r]};
      for (std::size_t i = 0; i < values.size(); ++i) {
        const bool rescaled = keys[i] == "alpha" && values[i] < 1.0;
        const std::string fill = rescaled ? kMasked : "#f7f7f7";
        c.rect(x, state_y(r, i), col_w - 10, row_h - 3, fill, "#bbb", 0.5,
               attr("data-k-start", static_cast<int>(st.k_start)) + " " +
                   attr("data-query", static_cast<int>(q0) + static_cast<int>(r)) + " " +
                   attr("data-quantity", keys[i]) + " " + attr("data-value", shown(values[i])));
        c.text(x + (col_w - 10) / 2, state_y(r, i) + 14, shown(values[i]), 11, "middle");
      }
    }
  }
  const double below = state_y(tile_rows - 1, names.size() - 1) + row_h + 24;
  c.notes(
      below,
      {"Red outline: the score that is the row's running maximum after this tile. Orange alpha: the maximum moved",
       "(alpha = 0 on the first tile, where there was nothing to rescale); alpha = 1 leaves l_i and O_i as they were.",
       "O_i itself is an unnormalised sum; O_i / l_i is the output of the keys so far (the forward run on those keys",
       "alone gives it) and, with V[k] = k, the attention-weighted mean key position. At the end the forward returns",
       "O = " + fixed(full.O(0, q0, 0), 3) + " and " + fixed(full.O(0, q0 + 1, 0), 3) +
           ", L = m_i + log l_i = " + fixed(full.L(0, q0), 3) + " and " + fixed(full.L(0, q0 + 1), 3) + ".",
       "Drawn by step02_figures from tiled_attention_forward: m, alpha and l from its KeyTileTrace, O_i / l_i from its "
       "output."},
      11, 16);
  return {"forward_row_state.svg", "one query tile's m_i, l_i, alpha and O_i / l_i after each key tile", c.finish()};
}

// ---- figure 3: the backward ---------------------------------------------------------------------------

fa2::figures::Figure backward_tiles() {
  const auto plain = backward_visits(false), causal = backward_visits(true);
  const int width = 900, height = 712;
  fa2::svg::Canvas c(width, height, "The backward pass: key tiles outer, five products per tile pair");
  c.heading(
      "The backward pass: key tiles outer, five products per tile pair",
      {"The same 10 x 13 scores in 4 x 4 tiles, now visited key tile by key tile (down each column). dK_j and dV_j",
       "stay with their key tile until its column is done; dQ_i collects a piece from every key tile in its row."});
  const double top = 130;
  const std::vector<std::pair<GridPanel, const BackwardRun*>> panels = {{{90, top, "non-causal", true}, &plain},
                                                                        {{530, top, "causal", true}, &causal}};
  for (const auto& [g, run] : panels) {
    draw_grid(c, g, (g.panel == "causal" ? "Causal: " : "Non-causal: ") + std::to_string(run->visits.size()) + " pairs",
              run->visits);
    // Where each visit's gradients go: below a column, the visits summed into its dK_j and dV_j;
    // right of a row, the visits that added to its dQ_i.
    const double bottom = g.y0 + static_cast<double>(kNq) * kCell;
    c.text(g.x0 - 6, bottom + 16, "dK_j, dV_j from", 10, "end", "fill=\"#555\"");
    for (index_t k = 0; k < kNk; k += kTile) {
      std::string from;
      for (std::size_t n = 0; n < run->visits.size(); ++n) {
        if (run->visits[n].k_start == k) from += (from.empty() ? "" : "+") + std::to_string(n + 1);
      }
      c.text(
          g.x0 + band_center(k, std::min(kTile, kNk - k)), bottom + 16, from.empty() ? "none" : from, 10, "middle",
          attr("data-panel", g.panel) + " " + attr("data-dkv-of", static_cast<int>(k)) + " " + attr("data-from", from));
    }
    for (index_t q = 0; q < kNq; q += kTile) {
      std::string from;
      for (std::size_t n = 0; n < run->visits.size(); ++n) {
        if (run->visits[n].q_start == q) from += (from.empty() ? "" : "+") + std::to_string(n + 1);
      }
      c.text(
          g.x0 + static_cast<double>(kNk) * kCell + 6, g.y0 + band_center(q, std::min(kTile, kNq - q)) + 4,
          "dQ_i: " + from, 10, "start",
          attr("data-panel", g.panel) + " " + attr("data-dq-of", static_cast<int>(q)) + " " + attr("data-from", from));
    }
  }
  const double legend_y = top + static_cast<double>(kNq) * kCell + 44;
  legend(c, 20, legend_y);

  // The five products of one pair, with the shapes its trace reported.
  const index_t k_pick = 8, q_pick = 8;  // causal visit: keys 8-11 against queries 8-9, half masked
  const PairShapes& s = causal.shapes.at({k_pick, q_pick});
  const std::string qr = std::to_string(s.q_rows), kc = std::to_string(s.k_cols);
  const std::string D = std::to_string(s.D), Dv = std::to_string(s.Dv);
  double y = legend_y + 36;
  c.text(20, y,
         "One pair (causal): key tile j = keys " + span(k_pick, s.k_cols) + ", query tile i = queries " +
             span(q_pick, s.q_rows) + "; head dims D = " + D + ", Dv = " + Dv + ".",
         13, "start",
         "font-weight=\"bold\" " + attr("data-k-start", static_cast<int>(k_pick)) + " " +
             attr("data-q-start", static_cast<int>(q_pick)) + " " + attr("data-D", static_cast<int>(s.D)) + " " +
             attr("data-Dv", static_cast<int>(s.Dv)));
  y += 20;
  c.text(20, y,
         "In: Q_i " + shape(s.q_rows, s.D) + ", dO_i " + shape(s.q_rows, s.Dv) + ", L_i (" + qr + "), D_i (" + qr +
             ") from query tile i;  K_j " + shape(s.k_cols, s.D) + ", V_j " + shape(s.k_cols, s.Dv) +
             " from key tile j.",
         11, "start", "fill=\"#444\"");
  struct Product {
    std::string what, shape, goes, fill;
  };
  const std::string stays = "#98df8a", shared = "#c5b0d5", local = "#f0f0f0";
  const std::vector<Product> products = {
      {"P_ij = exp(S_ij - L_i), with S_ij = scale Q_i K_j^T, masked to -inf", shape(s.q_rows, s.k_cols),
       "this pair only: rebuilt from L, never stored", local},
      {"dV_j += P_ij^T dO_i", shape(s.k_cols, s.Dv), "dV_j: stays with key tile j", stays},
      {"dP_ij = dO_i V_j^T", shape(s.q_rows, s.k_cols), "this pair only", local},
      {"dS_ij = P_ij * (dP_ij - D_i), element by element", shape(s.q_rows, s.k_cols), "this pair only", local},
      {"dK_j += scale dS_ij^T Q_i", shape(s.k_cols, s.D), "dK_j: stays with key tile j", stays},
      {"dQ_i += scale dS_ij K_j", shape(s.q_rows, s.D), "dQ_i: added into dQ in memory, summed over key tiles",
       shared}};
  y += 14;
  const double row_h = 24;
  c.text(48, y + 12, "product", 11, "start", "fill=\"#555\"");
  c.text(470, y + 12, "shape", 11, "middle", "fill=\"#555\"");
  c.text(520, y + 12, "where the result goes", 11, "start", "fill=\"#555\"");
  y += 18;
  for (std::size_t i = 0; i < products.size(); ++i) {
    const Product& p = products[i];
    const double yy = y + static_cast<double>(i) * row_h;
    c.text(30, yy + 15, std::to_string(i), 11, "middle", "fill=\"#555\"");
    c.rect(44, yy, 396, row_h - 4, "#fafafa", "#ccc", 0.5);
    c.text(50, yy + 15, p.what, 11, "start",
           attr("data-product", static_cast<int>(i)) + " " + attr("data-shape", p.shape));
    c.text(470, yy + 15, p.shape, 11, "middle");
    c.rect(510, yy, 370, row_h - 4, p.fill, "#bbb", 0.5);
    c.text(518, yy + 15, p.goes, 11);
  }
  y += static_cast<double>(products.size()) * row_h + 16;
  c.notes(
      y,
      {"Causal: key tile j starts at the query tile that holds its first key; the tile of key 12 meets no query (dK, "
       "dV = 0).",
       "Unlike the forward, the backward computes all of keys 8-11 against queries 8-9 (keys 10 and 11 masked).",
       "D_i = rowsum(dO_i * O_i) is computed once, before the loops; L_i is the forward's logsumexp.",
       "Drawn by step02_figures from tiled_attention_backward's QueryTileTrace: visits, masks (P_ij = 0) and shapes."},
      11, 16);
  return {"backward_tiles.svg", "the backward's visits, its five products per pair and where each result is summed",
          c.finish()};
}

}  // namespace

int main(int argc, char** argv) {
  return fa2::figures::run_figures_program(
      argc, argv, "step02_figures",
      "Draws step 2's figures (SVG) into <out_dir> from tiled_attention_forward and tiled_attention_backward.", [] {
        return std::vector<fa2::figures::Figure>{forward_tiles(), forward_row_state(), backward_tiles()};
      });
}
