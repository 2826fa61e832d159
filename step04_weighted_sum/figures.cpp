// step04_figures: draws step 4's figure from the two program bodies themselves. Program 2 of the
// article's example runs once per style under a program type of our own that records what the
// body hands to its loads and stores; the figure shows those offsets and masks side by side.
//   build/cpu-only/step04_weighted_sum/step04_figures step04_weighted_sum/figures   (ctest -L figures checks it)
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/figures.hpp"
#include "common/svg_canvas.hpp"
#include "common/tensor.hpp"
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step03_tile_pointer/tile.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"
#include "step04_weighted_sum/pointer_math.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"
#include "step04_weighted_sum/weighted_sum_kernels.hpp"

// ---- a program that watches the body --------------------------------------------------------
// The bodies are templates on their Program, and they call load_masked, load and store without
// a namespace. So a Program type declared here brings this namespace into the lookup (ADL), and
// the overloads below, which name WatchedProgram exactly, are more specialised than the library's
// and win. Each one writes down what the body passed, then calls the library's own function, so
// the body computes exactly what it computes under run_on_host.
namespace watch {

using fa2::index_t;

// One element of a tile as the body addressed it: tile row and column, offset from the
// tensor's start, and whether the body's mask (or the tile pointer's bounds check) lets it through.
struct Element {
  int row = 0, col = 0;
  index_t offset = 0;
  bool on = false;
  bool row_on = false, col_on = false;  // the tile pointer's check along axis 0 and axis 1 alone
  float value = 0.0f;                   // what the load produced there (stores: what was stored)
};
using Access = std::vector<Element>;

struct Log {
  std::vector<Access> x_loads;               // one per column step: the (ROWS, D_TILE) x tile
  std::vector<Access> weight_loads;          // one per column step: the (D_TILE,) weight slice (row 0)
  std::vector<Access> stores;                // the (ROWS,) output band (column 0)
  std::vector<fa2::Coord<2>> x_tile_starts;  // the tile pointer's offsets() at each x load
};

class WatchedProgram {
 public:
  static constexpr int num_threads = 1;  // one thread owns the whole tile, as on the host
  static constexpr bool on_device = false;
  WatchedProgram(int program, Log& log) : program_(program), log_(&log) {}
  int program_id(int axis) const { return axis == 0 ? program_ : 0; }
  int thread_rank() const { return 0; }
  void sync() const {}
  template <int Width, class T, class Op>
  T reduce(T value, Op) const {
    return value;
  }
  Log& log() const { return *log_; }

 private:
  int program_;
  Log* log_;
};
static_assert(fa2::ProgramLike<WatchedProgram>);

// Pointer maths: x's tile, with the offset grid and mask the body built.
template <class L>
fa2::Frag<float, L> load_masked(const WatchedProgram& prog, const float* base, const fa2::Frag<index_t, L>& offsets,
                                const fa2::Frag<bool, L>& mask, float other) {
  const auto loaded = fa2::load_masked(prog, base, offsets, mask, other);
  Access a;
  for (int i = 0; i < L::rows_per_thread; ++i) {
    for (int j = 0; j < L::cols_per_thread; ++j) {
      a.push_back({L::row(0, i), L::col(0, j), offsets.v[i][j], mask.v[i][j], false, false, loaded.v[i][j]});
    }
  }
  prog.log().x_loads.push_back(a);
  return loaded;
}

// Pointer maths: the weight slice, whose mask is the body's column mask.
template <class L>
fa2::ColVec<float, L> load_masked(const WatchedProgram& prog, const float* base, const fa2::ColVec<index_t, L>& offsets,
                                  const fa2::ColVec<bool, L>& mask, float other) {
  const auto loaded = fa2::load_masked(prog, base, offsets, mask, other);
  Access a;
  for (int j = 0; j < L::cols_per_thread; ++j) {
    a.push_back({0, L::col(0, j), offsets.v[j], mask.v[j], false, false, loaded.v[j]});
  }
  prog.log().weight_loads.push_back(a);
  return loaded;
}

// Pointer maths: the totals, with the body's row mask.
template <class L>
void store_masked(const WatchedProgram& prog, float* base, const fa2::RowVec<index_t, L>& offsets,
                  const fa2::RowVec<float, L>& values, const fa2::RowVec<bool, L>& mask) {
  Access a;
  for (int i = 0; i < L::rows_per_thread; ++i) {
    a.push_back({L::row(0, i), 0, offsets.v[i], mask.v[i], false, false, values.v[i]});
  }
  prog.log().stores.push_back(a);
  fa2::store_masked(prog, base, offsets, values, mask);
}

// Tile pointer: x's tile, every element asked of the body's own TilePtr.
template <class BS, class Ord, class L, auto... Axes>
void load(const WatchedProgram& prog, const fa2::TilePtr<const float, BS, Ord>& ptr, fa2::Frag<float, L>& frag,
          fa2::BoundaryCheck<Axes...> check, fa2::Padding pad) {
  fa2::load(prog, ptr, frag, check, pad);
  Access a;
  for (int i = 0; i < L::rows_per_thread; ++i) {
    for (int j = 0; j < L::cols_per_thread; ++j) {
      const int r = L::row(0, i), col = L::col(0, j);
      const fa2::Coord<2> idx{r, col};
      a.push_back({r, col, ptr.element_offset(idx), ptr.in_bounds(idx, check),
                   ptr.in_bounds(idx, fa2::boundary_check<0>), ptr.in_bounds(idx, fa2::boundary_check<1>),
                   frag.v[i][j]});
    }
  }
  prog.log().x_loads.push_back(a);
  prog.log().x_tile_starts.push_back(ptr.offsets());
}

// Tile pointer: the totals, through the body's output tile pointer.
template <class BS, class Ord, class L, auto... Axes>
void store(const WatchedProgram& prog, const fa2::TilePtr<float, BS, Ord>& ptr, const fa2::RowVec<float, L>& rows,
           fa2::BoundaryCheck<Axes...> check) {
  Access a;
  for (int i = 0; i < L::rows_per_thread; ++i) {
    const int r = L::row(0, i);
    const fa2::Coord<1> idx{r};
    const bool inside = ptr.in_bounds(idx, check);
    a.push_back({r, 0, ptr.element_offset(idx), inside, inside, true, rows.v[i]});
  }
  prog.log().stores.push_back(a);
  fa2::store(prog, ptr, rows, check);
}

}  // namespace watch

namespace {

using fa2::index_t;
using fa2::svg::attr;

// The article's example, as step 4's demo runs it: x = 0..49 as 5 x 10 (memory slot k holds k),
// weight = 1..10, tiles 2 x 4. Program 2 owns rows 4 and 5: its tile hangs over the last row,
// and its last column step over the last column.
constexpr index_t kNumRows = 5, kD = 10;
constexpr int kRowsTile = 2, kColsTile = 4, kProgram = 2;

struct Run {
  watch::Log log;
  fa2::Tensor<float, 1> output{fa2::Extents<1>{kNumRows}, std::numeric_limits<float>::quiet_NaN()};
};

template <class Body>
Run watch_program() {
  fa2::Tensor<float, 2> x(fa2::Extents<2>{kNumRows, kD});
  fa2::Tensor<float, 1> weight(fa2::Extents<1>{kD});
  for (index_t r = 0; r < kNumRows; ++r)
    for (index_t c = 0; c < kD; ++c) x(r, c) = static_cast<float>(r * kD + c);
  for (index_t c = 0; c < kD; ++c) weight(c) = static_cast<float>(c + 1);
  Run run;
  const auto params = fa2::make_weighted_sum_params<float>(x.cview(), weight.cview(), run.output.view());
  const watch::WatchedProgram prog(kProgram, run.log);
  Body{}(prog, params);
  return run;
}

bool same_access(const watch::Access& a, const watch::Access& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].row != b[k].row || a[k].col != b[k].col || a[k].offset != b[k].offset || a[k].on != b[k].on) return false;
  }
  return true;
}

std::string tf(bool b) {
  return b ? "T" : "F";
}
std::string yes_no(bool b) {
  return b ? "true" : "false";
}
std::string shown(float v) {
  return std::isnan(v) ? "NaN" : fa2::svg::fixed(static_cast<double>(v), 0);
}

const std::string kReadFill = "#ffffff", kMaskedFill = "#e3e3e3", kTrue = "#2a7a2a", kFalse = "#c0392b";
constexpr double kCellW = 58, kCellH = 30;

// One (ROWS, D_TILE) grid of addressed elements at (x0, y0), with the mask of each row on its
// left and of each column above it.
void draw_tile(fa2::svg::Canvas& c, double x0, double y0, const watch::Access& tile, const std::vector<bool>& row_on,
               const std::vector<bool>& col_on, index_t first_row, index_t first_col, const std::string& style,
               int step, const std::string& row_mask_name, const std::string& col_mask_name) {
  const double cw = kCellW, ch = kCellH;
  c.text(x0 - 70, y0 - 8, row_mask_name, 10, "start", "fill=\"#555\"");
  c.text(x0 + 4 * cw + 4, y0 - 8, col_mask_name, 10, "start", "fill=\"#555\"");
  for (int j = 0; j < kColsTile; ++j) {
    const double cx = x0 + (j + 0.5) * cw;
    const bool on = col_on[static_cast<std::size_t>(j)];
    c.text(cx - 6, y0 - 8, "col " + std::to_string(first_col + j), 10, "end", "fill=\"#555\"");
    c.text(cx + 2, y0 - 8, tf(on), 11, "start",
           "font-weight=\"bold\" fill=\"" + (on ? kTrue : kFalse) + "\" " + attr("data-style", style) + " " +
               attr("data-step", step) + " " + attr("data-col-mask", static_cast<int>(first_col + j)) + " " +
               attr("data-on", yes_no(on)));
  }
  for (int i = 0; i < kRowsTile; ++i) {
    const double cy = y0 + i * ch;
    const bool on = row_on[static_cast<std::size_t>(i)];
    c.text(x0 - 70, cy + 19, "row " + std::to_string(first_row + i), 11, "start", "fill=\"#555\"");
    c.text(x0 - 18, cy + 19, tf(on), 11, "start",
           "font-weight=\"bold\" fill=\"" + (on ? kTrue : kFalse) + "\" " + attr("data-style", style) + " " +
               attr("data-step", step) + " " + attr("data-row-mask", static_cast<int>(first_row + i)) + " " +
               attr("data-on", yes_no(on)));
  }
  for (const auto& e : tile) {
    const double x = x0 + e.col * cw, y = y0 + e.row * ch;
    c.rect(x, y, cw - 2, ch - 2, e.on ? kReadFill : kMaskedFill, "#888", 0.8,
           attr("data-style", style) + " " + attr("data-step", step) + " " +
               attr("data-row", static_cast<int>(first_row + e.row)) + " " +
               attr("data-col", static_cast<int>(first_col + e.col)) + " " +
               attr("data-offset", static_cast<int>(e.offset)) + " " + attr("data-read", yes_no(e.on)) + " " +
               attr("data-value", shown(e.value)));
    c.text(x + (cw - 2) / 2, y + 19, "x + " + std::to_string(e.offset), 12, "middle", e.on ? "" : "fill=\"#8a8a8a\"");
  }
}

fa2::figures::Figure program_addresses() {
  const auto pm = watch_program<fa2::WeightedSumPointerMath<float, kRowsTile, kColsTile>>();
  const auto tp = watch_program<fa2::WeightedSumTilePointer<float, kRowsTile, kColsTile>>();
  const std::size_t steps = pm.log.x_loads.size();
  if (steps != tp.log.x_loads.size() || steps != pm.log.weight_loads.size() || pm.log.stores.size() != 1 ||
      tp.log.stores.size() != 1 || tp.log.x_tile_starts.size() != steps) {
    throw std::logic_error("step04_figures: the bodies did not make one x load per column step and one store");
  }
  const index_t first_row = kProgram * kRowsTile;

  const double left = 240, right = 640, top = 128, band = 124;
  const int width = 920;
  const int height = static_cast<int>(top + static_cast<double>(steps) * band + 140);
  fa2::svg::Canvas c(width, height, "Program 2's addresses, pointer maths beside the tile pointer");
  c.heading("Program 2's addresses, pointer maths beside the tile pointer",
            {"The article's example: x = 0..49 as 5 x 10 (strides (10, 1)), weight = 1..10, tiles 2 x 4. Program 2 "
             "owns rows 4 and 5;",
             "row 5 and columns 10, 11 lie outside x. Each cell is x + the element's offset; grey: masked, never read, "
             "0 in the tile."});
  c.text(left - 70, top - 44, "pointer maths", 13, "start", "font-weight=\"bold\"");
  c.text(left - 70, top - 28, "the offsets and the masks the body built", 11, "start", "fill=\"#444\"");
  c.text(right - 70, top - 44, "tile pointer", 13, "start", "font-weight=\"bold\"");
  c.text(right - 70, top - 28, "element_offset and in_bounds of the body's x_ptr", 11, "start", "fill=\"#444\"");

  int agreeing = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const int step = static_cast<int>(s);
    const double y0 = top + static_cast<double>(s) * band + 24;
    const auto& pm_x = pm.log.x_loads[s];
    const auto& tp_x = tp.log.x_loads[s];
    const index_t first_col = tp.log.x_tile_starts[s][1];
    // The pointer-maths masks, each as the body passed it: rows to the store, columns to the weight load.
    std::vector<bool> pm_rows, pm_cols, tp_rows, tp_cols;
    for (const auto& e : pm.log.stores[0]) pm_rows.push_back(e.on);
    for (const auto& e : pm.log.weight_loads[s]) pm_cols.push_back(e.on);
    for (int i = 0; i < kRowsTile; ++i) tp_rows.push_back(tp_x[static_cast<std::size_t>(i * kColsTile)].row_on);
    for (int j = 0; j < kColsTile; ++j) tp_cols.push_back(tp_x[static_cast<std::size_t>(j)].col_on);
    const bool agree = same_access(pm_x, tp_x) && pm_rows == tp_rows && pm_cols == tp_cols;
    agreeing += agree ? 1 : 0;

    c.text(20, y0 + 8, "step " + std::to_string(step), 13, "start", "font-weight=\"bold\"");
    c.text(20, y0 + 26, "columns " + std::to_string(first_col) + " to " + std::to_string(first_col + kColsTile - 1), 11,
           "start", "fill=\"#444\"");
    c.text(20, y0 + 44, agree ? "same offsets, same masks" : "the two styles DIFFER", 11, "start",
           std::string("fill=\"") + (agree ? kTrue : kFalse) + "\" " + attr("data-step", step) + " " +
               attr("data-agree", yes_no(agree)));
    draw_tile(c, left, y0, pm_x, pm_rows, pm_cols, first_row, first_col, "pointer_math", step, "row_mask", "col_mask");
    draw_tile(c, right, y0, tp_x, tp_rows, tp_cols, first_row, first_col, "tile_pointer", step, "axis 0", "axis 1");
    c.text(right - 70, y0 + kRowsTile * kCellH + 14,
           "x_ptr.offsets() = (" + std::to_string(tp.log.x_tile_starts[s][0]) + ", " + std::to_string(first_col) + ")",
           10, "start", "fill=\"#555\"");
  }

  // After the loop: where each style stores the totals, and which row it leaves alone.
  const double ys = top + static_cast<double>(steps) * band + 10;
  c.text(20, ys + 14, "store", 13, "start", "font-weight=\"bold\"");
  for (const auto& [x0, run, label] : {std::tuple{left, &pm, "store_masked under row_mask"},
                                       std::tuple{right, &tp, "store through output_ptr, axis 0 checked"}}) {
    c.text(x0 - 70, ys + 14, label, 11, "start", "fill=\"#444\"");
    for (const auto& e : run->log.stores[0]) {
      const double box = 2 * kCellW;  // one output row under two tile columns
      const double x = x0 + e.row * box;
      const std::string style = run == &pm ? "pointer_math" : "tile_pointer";
      c.rect(x, ys + 22, box - 2, 26, e.on ? kReadFill : kMaskedFill, "#888", 0.8,
             attr("data-style", style) + " " + attr("data-store-row", static_cast<int>(first_row + e.row)) + " " +
                 attr("data-offset", static_cast<int>(e.offset)) + " " + attr("data-written", yes_no(e.on)));
      c.text(x + (box - 2) / 2, ys + 40,
             e.on ? "output + " + std::to_string(e.offset) + " = " + shown(e.value)
                  : "output + " + std::to_string(e.offset) + ": skipped",
             11, "middle", e.on ? "" : "fill=\"#8a8a8a\"");
    }
  }
  // The totals each body stored for row 4, against the article's closed form 550 r + 330.
  const auto row4 = static_cast<double>(first_row);
  c.notes(ys + 74,
          {"Row 4's total: " + shown(pm.output(first_row)) + " from pointer maths, " + shown(tp.output(first_row)) +
               " from the tile pointer (the article's 550 r + 330 gives " + fa2::svg::fixed(550 * row4 + 330, 0) +
               "); row 5 is never written. Steps where the styles agree: " + std::to_string(agreeing) + " of " +
               std::to_string(steps) + ".",
           "Drawn by step04_figures from a run of WeightedSumPointerMath and WeightedSumTilePointer on program 2: a "
           "program type",
           "of the figure's own records what each body passes to load_masked and store_masked, and asks its TilePtr "
           "for element_offset and in_bounds."},
          11, 16);
  return {"program_addresses.svg",
          "program 2's addresses at every column step: the pointer-maths offsets and masks beside the tile pointer's",
          c.finish()};
}

}  // namespace

int main(int argc, char** argv) {
  return fa2::figures::run_figures_program(
      argc, argv, "step04_figures",
      "Draws step 4's figure (SVG) into <out_dir> from a watched run of the two weighted-sum bodies.",
      [] { return std::vector<fa2::figures::Figure>{program_addresses()}; });
}
