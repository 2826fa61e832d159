// step05_figures: draws step 5's figure from a trace of the kernel itself: one program's journey
// (which tile of Q it keeps, which K and V tiles it loads at each step, the mask of the ragged last
// tile, where each value lives). The committed copy is step05_fa2_kernel/figures/; ctest -L figures.
//   build/cpu-only/step05_fa2_kernel/step05_figures step05_fa2_kernel/figures
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "common/figures.hpp"
#include "common/svg_canvas.hpp"
#include "common/trace.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_trace.hpp"

namespace {

using fa2::svg::attr;
using fa2::svg::fixed;
using fa2::trace::RowState;
using fa2::trace::TileAccess;

const std::string kBlue = "#aec7e8", kGreen = "#98df8a", kOrange = "#ffbb78", kGrey = "#e6e6e6", kLine = "#888";

struct Journey {
  const TileAccess* q = nullptr;
  std::vector<const TileAccess*> k, v, stores;
  std::vector<const RowState*> states;
};

Journey read(const fa2::trace::Document& doc) {
  Journey j;
  for (const auto& e : doc.events) {
    if (const auto* s = std::get_if<RowState>(&e)) {
      j.states.push_back(s);
      continue;
    }
    const auto* a = std::get_if<TileAccess>(&e);
    if (a == nullptr) continue;
    if (!a->is_load) {
      j.stores.push_back(a);
    } else if (a->tensor == "Q") {
      j.q = a;
    } else if (a->tensor == "K") {
      j.k.push_back(a);
    } else if (a->tensor == "V") {
      j.v.push_back(a);
    }
  }
  if (j.q == nullptr || j.k.empty() || j.k.size() != j.v.size()) {
    throw std::runtime_error("the kernel's trace has no Q load, or not one V load per K load: the figure needs both");
  }
  if (j.states.size() != j.k.size()) {
    throw std::runtime_error("the kernel's trace has " + std::to_string(j.states.size()) + " states for " +
                             std::to_string(j.k.size()) +
                             " key tiles: the figure reads m_i and l_i from note_state, which the key loop calls "
                             "once per key tile (step03_tile_pointer/load_store.hpp)");
  }
  return j;
}

// The rows of a tile's mask that hold at least one element inside the tensor.
std::int64_t rows_inside(const TileAccess& a) {
  std::int64_t n = 0;
  for (const auto& row : a.mask) n += row.find('1') != std::string::npos ? 1 : 0;
  return n;
}

// One tensor of global memory as a strip of tiles along its rows: the tiles the program touches
// filled (`label(t)` inside), the part of the last tile past the tensor's end dashed.
struct Strip {
  double x, y, h, px_per_row;
  std::int64_t rows, tile;
};

void draw_strip(fa2::svg::Canvas& c, const Strip& s, const std::string& name,
                const std::vector<std::pair<const TileAccess*, std::string>>& touched, const std::string& fill) {
  c.text(s.x - 8, s.y + s.h / 2 + 4, name, 12, "end");
  const std::int64_t tiles = (s.rows + s.tile - 1) / s.tile;
  for (std::int64_t t = 0; t < tiles; ++t) {
    const double x0 = s.x + static_cast<double>(t * s.tile) * s.px_per_row;
    const double real = static_cast<double>(std::min(s.tile, s.rows - t * s.tile)) * s.px_per_row;
    c.rect(x0, s.y, real, s.h, "white", "#bbb", 1);
    if (real < static_cast<double>(s.tile) * s.px_per_row) {
      c.rect(x0 + real, s.y, static_cast<double>(s.tile) * s.px_per_row - real, s.h, "#f7f7f7", "#bbb", 1,
             "stroke-dasharray=\"3 2\"");
    }
  }
  for (const auto& [a, label] : touched) {
    const double x0 = s.x + static_cast<double>(a->offsets[0]) * s.px_per_row;
    const double real = static_cast<double>(rows_inside(*a)) * s.px_per_row;
    const double all = static_cast<double>(a->block[0]) * s.px_per_row;
    c.rect(x0, s.y, real, s.h, fill, "#666", 1,
           attr("data-tensor", a->tensor) + " " + attr("data-row", static_cast<int>(a->offsets[0])));
    if (real < all) c.rect(x0 + real, s.y, all - real, s.h, kGrey, "#666", 1, "stroke-dasharray=\"3 2\"");
    c.text(x0 + all / 2, s.y + s.h / 2 + 4, label, 11, "middle");  // over the whole tile: the last is mostly padding
  }
}

void box(fa2::svg::Canvas& c, double x, double y, double w, double h, const std::string& fill, const std::string& title,
         const std::string& detail) {
  c.rect(x, y, w, h, fill, "#666", 1);
  c.text(x + 8, y + 14, title, 12, "start", "font-weight=\"bold\"");
  c.text(x + 8, y + h - 6, detail, 10, "start", "fill=\"#333\"");
}

fa2::figures::Figure program_journey() {
  const fa2::TracedProblem problem;  // the article's (2, 100, 100, 64), non-causal, seed 2024
  const fa2::TracedProgram program;  // the last query tile of batch 0: its rows hang over N_q
  const auto doc =
      fa2::trace_flash_program(&fa2::flash_fwd_host, problem, program, "step 5's kernel", "step05_figures");
  const Journey j = read(doc);
  const TileAccess& q = *j.q;
  const std::int64_t n = q.shape[0], tile = q.block[0], q0 = q.offsets[0];
  const std::size_t steps = j.k.size();

  const double W = 1000, H = 632;
  fa2::svg::Canvas c(static_cast<int>(W), static_cast<int>(H), "One program's journey through step 5's kernel");
  c.heading("One program's journey through step 5's kernel",
            {"Program (" + std::to_string(program.query_tile < 0 ? q0 / tile : program.query_tile) + ", " +
                 std::to_string(program.batch) +
                 ") of (2, 100, 100, 64), float32, non-causal, recorded on the host "
                 "path: every load and store it made, and its state after each key tile.",
             "It keeps one tile of Q in shared memory and walks all " + std::to_string(steps) +
                 " tiles of K and V; the running state and the products stay in registers."});

  // ---- where the values live ----
  const double top = 104, row = 50, strip_x = 110, px = 3.5, strip_h = 30;
  const double shared_x = 590, regs_x = 800, box_w = 180, box_h = 34;
  c.text(20, top,
         "global memory (batch " + std::to_string(program.batch) + "), rows 0.." + std::to_string(n - 1) +
             " left to right",
         12, "start", "font-weight=\"bold\" fill=\"#555\"");
  c.text(shared_x, top, "shared memory (the block's)", 12, "start", "font-weight=\"bold\" fill=\"#555\"");
  c.text(regs_x, top, "registers (float32)", 12, "start", "font-weight=\"bold\" fill=\"#555\"");
  const double y0 = top + 14;
  const auto strip = [&](int r, std::int64_t rows) { return Strip{strip_x, y0 + r * row, strip_h, px, rows, tile}; };
  const auto end_x = strip_x + static_cast<double>(((n + tile - 1) / tile) * tile) * px;
  std::vector<std::pair<const TileAccess*, std::string>> k_tiles, v_tiles;
  for (std::size_t s = 0; s < steps; ++s) {
    k_tiles.emplace_back(j.k[s], "j=" + std::to_string(s));
    v_tiles.emplace_back(j.v[s], "j=" + std::to_string(s));
  }
  draw_strip(c, strip(0, n), "Q (" + std::to_string(n) + ", 64)", {{j.q, "Q_i"}}, kBlue);
  draw_strip(c, strip(1, q.shape[0]), "K", k_tiles, kGreen);
  draw_strip(c, strip(2, q.shape[0]), "V", v_tiles, kGreen);
  std::vector<std::pair<const TileAccess*, std::string>> o_store, l_store;
  for (const auto* s : j.stores) (s->tensor == "O" ? o_store : l_store).emplace_back(s, s->tensor + "_i");
  draw_strip(c, strip(3, n), "O", o_store, kOrange);
  draw_strip(c, Strip{strip_x, y0 + 4 * row + 8, 14, px, n, tile}, "L", l_store, kOrange);

  box(c, shared_x, y0 - 2, box_w, box_h, kBlue, "Q_i (16 x 64)", "loaded once, read by every key step");
  box(c, shared_x, y0 + row - 2, box_w, box_h, kGreen, "K_j (16 x 64)",
      "loaded " + std::to_string(j.k.size()) + " times, one key tile each");
  box(c, shared_x, y0 + 2 * row - 2, box_w, box_h, kGreen, "V_j (16 x 64)",
      "loaded " + std::to_string(j.v.size()) + " times, with K_j");
  box(c, regs_x, y0 - 2, box_w, box_h, "#f7f7f7", "S_ij, P_ij (16 x 16)", "scores, then probabilities");
  box(c, regs_x, y0 + row - 2, box_w, box_h, kOrange, "m_i, l_i (16)", "running max and sum per row");
  box(c, regs_x, y0 + 2 * row - 2, box_w, box_h, kOrange, "O_acc (16 x 64)", "unnormalised output");
  box(c, regs_x, y0 + 3 * row - 2, box_w, box_h, kOrange, "O_i, L_i", "divided by l_i once, at the end");
  for (int r = 0; r < 3; ++r) {
    const double y = y0 + r * row + strip_h / 2;
    c.arrow(end_x + 6, y, shared_x - 4, y, kLine, 1.2);
    c.arrow(shared_x + box_w + 2, y, regs_x - 4, y, "#bbb", 1);
  }
  c.text(end_x + 12, y0 + strip_h / 2 - 6, "load x1", 10, "start", "fill=\"#555\"");
  c.text(end_x + 12, y0 + row + strip_h / 2 - 6, "load x" + std::to_string(j.k.size()), 10, "start", "fill=\"#555\"");
  c.text(end_x + 12, y0 + 2 * row + strip_h / 2 - 6, "load x" + std::to_string(j.v.size()), 10, "start",
         "fill=\"#555\"");
  // The stores leave from the registers, past shared memory, with the mask that keeps padded rows out.
  const double store_y = y0 + 3 * row + strip_h / 2;
  const double l_y = y0 + 4 * row + 15;
  c.arrow(regs_x - 2, store_y, end_x + 6, store_y, kLine, 1.2);
  c.polyline({{end_x + 40, store_y}, {end_x + 40, l_y}, {end_x + 20, l_y}}, kLine, 1.2);
  c.arrow(end_x + 20, l_y, end_x + 6, l_y, kLine, 1.2);
  const std::int64_t stored = j.stores.empty() ? 0 : rows_inside(*j.stores.front());
  c.text(
      end_x + 48, store_y - 6,
      "store once, from the registers: rows " + std::to_string(q0) + ".." + std::to_string(q0 + stored - 1) + " only",
      10, "start", "fill=\"#555\"");

  // ---- the key loop, step by step ----
  const double ky = y0 + 5 * row + 18;
  c.text(20, ky,
         "The key loop from the trace: K_j and V_j into shared memory, then m_i and l_i of row " + std::to_string(q0) +
             " after the tile (orange: the maximum moved, alpha < 1)",
         12, "start", "font-weight=\"bold\" fill=\"#555\"");
  const double cw = (W - 40 - strip_x) / static_cast<double>(steps);
  for (std::size_t s = 0; s < steps; ++s) {
    const RowState& st = *j.states[s];
    const double x = strip_x + static_cast<double>(s) * cw;
    const bool moved = st.alpha[0] < 1.0;
    const std::int64_t k0 = j.k[s]->offsets[0], k_in = rows_inside(*j.k[s]);
    c.rect(x + 2, ky + 10, cw - 4, 74, moved ? kOrange : "#f7f7f7", "#999", 0.8,
           attr("data-key-tile", static_cast<int>(s)) + " " + attr("data-m", fixed(st.m[0], 4)) + " " +
               attr("data-l", fixed(st.l[0], 4)));
    c.text(x + cw / 2, ky + 26, "j = " + std::to_string(s), 12, "middle", "font-weight=\"bold\"");
    c.text(x + cw / 2, ky + 42, "keys " + std::to_string(k0) + ".." + std::to_string(k0 + k_in - 1), 10, "middle");
    c.text(x + cw / 2, ky + 58, "m = " + fixed(st.m[0], 3), 11, "middle");
    c.text(x + cw / 2, ky + 74, "l = " + fixed(st.l[0], 3), 11, "middle");
  }
  c.text(strip_x - 8, ky + 58, "row " + std::to_string(q0), 11, "end");

  // ---- the ragged last tile's mask, as recorded ----
  const TileAccess& last = *j.k.back();
  const double my = ky + 110, cell = 4;
  const std::int64_t k_last = last.offsets[0], inside = rows_inside(last);
  c.text(20, my,
         "K_" + std::to_string(steps - 1) + " as loaded (16 x 64, its recorded mask): rows " + std::to_string(k_last) +
             ".." + std::to_string(k_last + inside - 1) + " inside, rows " + std::to_string(k_last + inside) + ".." +
             std::to_string(k_last + last.block[0] - 1) + " past N_KEYS = " + std::to_string(last.shape[0]),
         12, "start", "font-weight=\"bold\" fill=\"#555\"");
  for (std::size_t r = 0; r < last.mask.size(); ++r) {
    for (std::size_t col = 0; col < last.mask[r].size(); ++col) {
      c.rect(strip_x + static_cast<double>(col) * cell, my + 10 + static_cast<double>(r) * cell, cell - 0.5, cell - 0.5,
             last.mask[r][col] == '1' ? kGreen : kGrey);
    }
  }
  const double tx = strip_x + 64 * cell + 20;
  c.text(tx, my + 24, "The load never reads the grey rows: it writes zeros there (Padding::zero).", 11);
  c.text(tx, my + 40, "A zero key scores exactly 0, not -inf, so the scores need a mask of their own:", 11);
  c.text(tx, my + 56, "keys past N_KEYS are set to -1e6 before the softmax (step 6, bug 2, is what happens", 11);
  c.text(tx, my + 72,
         "without it). Q_i's rows " + std::to_string(n) + ".." + std::to_string(q0 + tile - 1) +
             " are padding too: computed, never stored.",
         11);

  c.notes(H - 34,
          {"Drawn by step05_figures from a trace of the kernel on the host path (trace_flash_program): the "
           "loads, stores and masks are noted by load() and store(), the state by note_state.",
           "Replay it event by event in common/viewer/trace_viewer.html (the shipped trace "
           "step05_noncausal.json)."},
          11, 15);
  return {"program_journey.svg", "one program's loads, masks and state, from a trace of the kernel", c.finish()};
}

}  // namespace

int main(int argc, char** argv) {
  return fa2::figures::run_figures_program(argc, argv, "step05_figures",
                                           "Draws step 5's figures (SVG) into <out_dir> from a trace of the kernel.",
                                           [] { return std::vector<fa2::figures::Figure>{program_journey()}; });
}
