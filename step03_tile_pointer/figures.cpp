// step03_figures: draws step 3's figure from the tile pointer itself: the article's worked example
// (a (5, 10) row-major tensor, a 2 x 4 tile at offsets (4, 8)), before and after an advance, with the
// addresses element_offset gives, the cells in_bounds rejects and what the real load() returns.
//   build/cpu-only/step03_tile_pointer/step03_figures step03_tile_pointer/figures   (scripts/make_figures.sh: every
//   step)
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/figures.hpp"
#include "common/svg_canvas.hpp"
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace {

using fa2::index_t;
using fa2::svg::attr;

constexpr int R = 2, C = 4;  // the block shape of the worked example
using Blk = fa2::Block<R, C>;
using Ptr = fa2::TilePtr<const float, Blk, fa2::Order<1, 0>>;

constexpr index_t kRows = 5, kCols = 10;  // x: (5, 10), row-major

const std::string kRead = "#98df8a", kPadded = "#d9d9d9", kTileLine = "#1f4e79", kMono = "font-family=\"monospace\"";

std::string pair_text(index_t a, index_t b) {
  return "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

std::string number(float v) {
  return std::to_string(static_cast<long long>(v));
}

// What the tile pointer and load() say about each of the tile's R x C cells.
struct Cell {
  index_t row = 0, col = 0;  // where the cell sits in x (position)
  index_t address = 0;       // element_offset: its distance from base, in elements
  bool inside = false;       // in_bounds with boundary_check<0, 1>
  bool read = false;         // whether load() wrote it from x (it did not where it padded)
  float loaded = 0;          // what load() returned with Padding::zero
  int visit = 0;             // the order load() walks the cells (Order<1, 0>: along a row first)
};

std::vector<Cell> cells_of(const Ptr& ptr) {
  const fa2::HostProgram prog(fa2::Coord<3>{2, 0, 0}, nullptr, 0);  // program 2, as in the article
  const auto zero = fa2::load(prog, ptr, fa2::boundary_check<0, 1>, fa2::Padding::zero);
  // With Padding::none load() leaves a padded cell as it was, so a NaN left here marks a cell it did
  // not read: the figure's "padded" comes from load() itself, not from a copy of its rule.
  using Layout = fa2::RowLayoutFor<fa2::HostProgram, R, C>;
  auto untouched = fa2::Frag<float, Layout>::filled(std::numeric_limits<float>::quiet_NaN());
  fa2::load(prog, ptr, untouched, fa2::boundary_check<0, 1>, fa2::Padding::none);
  std::vector<Cell> cells(static_cast<std::size_t>(R * C));
  for (int e = 0; e < R * C; ++e) {
    const fa2::Coord<2> idx = fa2::unravel<Blk, fa2::Order<1, 0>>(e);
    const auto i = static_cast<std::size_t>(idx[0]), j = static_cast<std::size_t>(idx[1]);
    Cell& cell = cells[i * C + j];
    cell.row = ptr.position(idx)[0];
    cell.col = ptr.position(idx)[1];
    cell.address = ptr.element_offset(idx);
    cell.inside = ptr.in_bounds(idx, fa2::boundary_check<0, 1>);
    cell.read = !std::isnan(untouched.v[i][j]);
    cell.loaded = zero.v[i][j];
    cell.visit = e;
  }
  return cells;
}

// One panel: x as a grid with the tile over it, then the tile's addresses, mask and loaded values.
void draw_panel(fa2::svg::Canvas& c, double x0, double y0, const std::string& panel, const std::string& title,
                const Ptr& ptr, const std::vector<float>& x) {
  const double cell = 32;
  const std::vector<Cell> cells = cells_of(ptr);
  const index_t row0 = ptr.offsets()[0], col0 = ptr.offsets()[1];
  c.text(x0 - 40, y0 - 44, title, 13, "start",
         "font-weight=\"bold\" " + attr("data-panel", panel) + " " + attr("data-offsets", pair_text(row0, col0)));
  // Axis indices; the offsets' row and column in bold.
  const index_t shown_rows = kRows + 1, shown_cols = kCols + 2;  // one row and two columns past the edge
  for (index_t col = 0; col < shown_cols; ++col) {
    c.text(x0 + (static_cast<double>(col) + 0.5) * cell, y0 - 6, std::to_string(col), 10, "middle",
           col == col0 ? "font-weight=\"bold\" fill=\"#1f4e79\"" : "fill=\"#777\"");
  }
  for (index_t row = 0; row < shown_rows; ++row) {
    c.text(x0 - 8, y0 + (static_cast<double>(row) + 0.5) * cell + 4, std::to_string(row), 10, "end",
           row == row0 ? "font-weight=\"bold\" fill=\"#1f4e79\"" : "fill=\"#777\"");
  }
  // x itself: memory slot k holds the value k, so a cell's number is also its address.
  for (index_t row = 0; row < kRows; ++row) {
    for (index_t col = 0; col < kCols; ++col) {
      const double cx = x0 + static_cast<double>(col) * cell, cy = y0 + static_cast<double>(row) * cell;
      c.rect(cx, cy, cell, cell, "white", "#ccc", 0.5);
      c.text(cx + cell / 2, cy + cell / 2 + 4, number(x[static_cast<std::size_t>(row * kCols + col)]), 11, "middle",
             "fill=\"#999\"");
    }
  }
  c.rect(x0, y0, static_cast<double>(kCols) * cell, static_cast<double>(kRows) * cell, "none", "#222", 1.5);
  // The tile's cells, over x or hanging past its edge.
  for (const Cell& t : cells) {
    const double cx = x0 + static_cast<double>(t.col) * cell, cy = y0 + static_cast<double>(t.row) * cell;
    c.rect(cx + 1, cy + 1, cell - 2, cell - 2, t.read ? kRead : kPadded, t.inside ? "#999" : "#777",
           t.inside ? 0.5 : 1.0,
           attr("data-panel", panel) + " " + attr("data-row", static_cast<int>(t.row)) + " " +
               attr("data-col", static_cast<int>(t.col)) + " " + attr("data-address", static_cast<int>(t.address)) +
               " " + attr("data-state", t.read ? "read" : "padded") + " " + attr("data-loaded", number(t.loaded)));
    c.text(cx + 4, cy + 10, std::to_string(t.visit), 8, "start", "fill=\"#555\"");
    c.text(cx + cell / 2, cy + cell / 2 + 6, t.read ? number(t.loaded) : "pad", 11, "middle",
           t.read ? "font-weight=\"bold\"" : "fill=\"#555\"");
  }
  c.rect(x0 + static_cast<double>(col0) * cell, y0 + static_cast<double>(row0) * cell, C * cell, R * cell, "none",
         kTileLine, 2.5);
  // base, strides and shape, drawn beside the grid so that they hide none of its numbers.
  c.circle(x0, y0, 4, "#d62728", "#d62728");
  c.text(x0 - 8, y0 - 4, "base", 10, "end", "fill=\"#d62728\"");
  const auto strides = ptr.strides();
  c.arrow(x0 + cell / 2, y0 - 22, x0 + cell * 1.5, y0 - 22, "#d62728", 1.2);
  c.text(x0 + cell * 1.5 + 5, y0 - 18, "+" + std::to_string(strides[1]) + " per column", 10, "start",
         "fill=\"#d62728\"");
  c.arrow(x0 - 30, y0 + cell / 2, x0 - 30, y0 + cell * 1.5, "#d62728", 1.2);
  c.text(x0 - 34, y0 + cell, "+" + std::to_string(strides[0]), 10, "end", "fill=\"#d62728\"");
  c.text(x0 - 34, y0 + cell + 12, "per row", 10, "end", "fill=\"#d62728\"");
  const double below = y0 + static_cast<double>(shown_rows) * cell;
  c.text(x0, below + 16,
         "shape " + pair_text(ptr.shape()[0], ptr.shape()[1]) + " (black outline), strides " +
             pair_text(strides[0], strides[1]) + ", offsets " + pair_text(row0, col0),
         11, "start", "fill=\"#444\"");

  // The three small tables of the demo: addresses, mask, values.
  const double ty = below + 44, tw = 26, th = 20;
  const std::vector<std::string> heads = {"element_offset", "in_bounds", "load, Padding::zero"};
  for (int t = 0; t < 3; ++t) {
    const double tx = x0 + t * (C * tw + 22);
    c.text(tx, ty - 6, heads[static_cast<std::size_t>(t)], 10, "start", "fill=\"#444\"");
    for (const Cell& cl : cells) {
      const int i = static_cast<int>(cl.row - row0), j = static_cast<int>(cl.col - col0);
      const std::string text = t == 0   ? std::to_string(cl.address)
                               : t == 1 ? (cl.inside ? "T" : "F")
                                        : number(cl.loaded);
      const std::string fill = t == 0 ? "#f7f7f7" : (t == 1 ? cl.inside : cl.read) ? kRead : kPadded;
      c.rect(tx + j * tw, ty + i * th, tw - 1, th - 1, fill, "#bbb", 0.5);
      c.text(tx + j * tw + tw / 2, ty + i * th + 14, text, 10, "middle", kMono);
    }
  }
}

fa2::figures::Figure block_pointer() {
  std::vector<float> x(static_cast<std::size_t>(kRows * kCols));
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k);  // slot k holds k
  const Ptr before = fa2::make_tile_ptr<Blk>(static_cast<const float*>(x.data()), {kRows, kCols}, {kCols, 1}, {4, 8},
                                             fa2::Order<1, 0>{});
  const fa2::Coord<2> delta{-2, -4};
  const Ptr after = before.advance(delta);

  const int width = 950, height = 580;
  fa2::svg::Canvas c(width, height, "The tile pointer's six arguments on the article's worked example");
  c.heading(
      "The tile pointer's six arguments on the article's worked example",
      {"A (5, 10) row-major tensor x whose slot k holds k, a 2 x 4 tile with its top-left element at (4, 8), loaded",
       "with boundary_check<0, 1> and Padding::zero; then the pointer advance() returns, back inside the tensor."});
  c.text(20, 84, "auto x_ptr = make_tile_ptr<Block<2, 4>>(x, {5, 10}, {10, 1}, {4, 8}, Order<1, 0>{});", 12, "start",
         kMono + " font-weight=\"bold\"");
  const std::vector<std::string> args = {"1 base x: element 0, the red dot; never the tile's own address",
                                         "2 shape (5, 10): the whole tensor (black outline), not the tile",
                                         "3 strides (10, 1): one row down is +10 elements, one column right +1",
                                         "4 offsets (4, 8): the tile's top-left element, counted in elements",
                                         "5 block_shape Block<2, 4>: the tile (blue outline), fixed when compiling",
                                         "6 order Order<1, 0>: axis 1 is contiguous; small numbers: load()'s walk"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    c.text(20 + static_cast<double>(i % 2) * 480, 106 + static_cast<double>(i / 2) * 16, args[i], 11, "start",
           "fill=\"#444\"");
  }
  const double top = 216;
  draw_panel(c, 76, top, "before", "x_ptr: offsets (4, 8)", before, x);
  draw_panel(c, 556, top, "after",
             "x_ptr.advance({" + std::to_string(delta[0]) + ", " + std::to_string(delta[1]) + "}): offsets " +
                 pair_text(after.offsets()[0], after.offsets()[1]),
             after, x);
  int read = 0, past_end = 0;
  for (const Cell& t : cells_of(before)) {
    read += t.read ? 1 : 0;
    past_end += !t.read && t.address >= kRows * kCols ? 1 : 0;
  }
  c.notes(height - 56,
          {"Left: " + std::to_string(read) + " of 8 cells lie inside x; load() reads them and pads the other " +
               std::to_string(R * C - read) + " (" + std::to_string(past_end) +
               " of their addresses lie past x's 50 elements). Right: advance() moved",
           "only the offsets (base, shape and strides are the same) and every cell is read. Green: read; grey: padded.",
           "Drawn by step03_figures from TilePtr's element_offset, in_bounds and advance and the real load()."},
          11, 16);
  return {"block_pointer.svg",
          "the worked example's tile pointer: arguments, addresses, mask and load, before and "
          "after advance",
          c.finish()};
}

}  // namespace

int main(int argc, char** argv) {
  return fa2::figures::run_figures_program(
      argc, argv, "step03_figures", "Draws step 3's figure (SVG) into <out_dir> from the tile pointer and load().",
      [] { return std::vector<fa2::figures::Figure>{block_pointer()}; });
}
