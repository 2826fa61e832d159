// step01_figures: draws step 1's figure from OnlineSoftmaxState itself: one row read once, with
// m and l after every score and the rescale factor update() returns, marked where the maximum
// moves. The committed copy is step01_online_softmax/figures/; ctest -L figures checks it.
//   build/cpu-only/step01_online_softmax/step01_figures step01_online_softmax/figures
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/figures.hpp"
#include "common/svg_canvas.hpp"
#include "step01_online_softmax/online_softmax.hpp"

namespace {

using fa2::svg::fixed;

// One row of scores, -inf a masked one: the maximum moves at elements 0, 1, 3 and 7.
const std::vector<double> kRow = {0.5, 2.0, 1.0, 3.5, -std::numeric_limits<double>::infinity(), 3.0, 0.25, 4.5};

std::string shown(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return fixed(v, 3);
}

fa2::figures::Figure online_softmax_row() {
  struct After {
    double m, l, alpha;
  };
  fa2::online::OnlineSoftmaxState<double> state;
  std::vector<After> after;
  for (const double x : kRow) {
    const double alpha = state.update(x);
    after.push_back({state.m, state.l, alpha});
  }
  const double cell = 78, left = 120, top = 96, row_h = 30;
  const int width = static_cast<int>(left + cell * static_cast<double>(kRow.size()) + 30);
  fa2::svg::Canvas c(width, 330, "The online softmax reads a row once");
  c.heading("The online softmax reads a row once",
            {"After each score x: m = max(m, x), l = alpha * l + exp(x - m), with alpha = exp(m_old - m).",
             "Orange: the maximum moved, so the old sum is rescaled by alpha < 1 (alpha = 0 for the first score)."});
  const std::vector<std::string> labels = {"score x", "m after", "l after", "alpha"};
  for (std::size_t r = 0; r < labels.size(); ++r) {
    c.text(left - 10, top + static_cast<double>(r) * row_h + 20, labels[r], 12, "end", "fill=\"#444\"");
  }
  for (std::size_t i = 0; i < kRow.size(); ++i) {
    const double x = left + static_cast<double>(i) * cell;
    const bool moved = after[i].alpha < 1.0;
    const bool masked = std::isinf(kRow[i]);
    const std::string fill = masked ? "#e0e0e0" : moved ? "#ffbb78" : "#aec7e8";
    c.text(x + cell / 2, top - 8, "element " + std::to_string(i), 10, "middle", "fill=\"#555\"");
    const std::vector<std::string> values = {shown(kRow[i]), shown(after[i].m), shown(after[i].l),
                                             shown(after[i].alpha)};
    for (std::size_t r = 0; r < values.size(); ++r) {
      const double y = top + static_cast<double>(r) * row_h;
      c.rect(x + 2, y, cell - 4, row_h - 4, r == 0 ? fill : "#f7f7f7", "#999", 0.5,
             fa2::svg::attr("data-element", static_cast<int>(i)) + " " + fa2::svg::attr("data-row", labels[r]));
      c.text(x + cell / 2, y + 18, values[r], 12, "middle");
    }
  }
  const double L = state.logsumexp();
  c.notes(top + 4 * row_h + 34,
          {"The masked score (-inf) adds exp(-inf) = 0 and leaves m and l alone: update() returns 1.",
           "At the end, L = m + log(l) = " + fixed(L, 4) + ", the logsumexp of the row, read in one pass.",
           "Drawn by step01_figures from OnlineSoftmaxState::update, the code step 1's tests check."});
  return {"online_softmax_row.svg", "one row read once: m, l and the rescale factor after every score", c.finish()};
}

}  // namespace

int main(int argc, char** argv) {
  return fa2::figures::run_figures_program(argc, argv, "step01_figures",
                                           "Draws step 1's figures (SVG) into <out_dir> from OnlineSoftmaxState.",
                                           [] { return std::vector<fa2::figures::Figure>{online_softmax_row()}; });
}
