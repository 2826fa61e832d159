// Step 3 demo: one tile pointer drawn in the terminal. The tensor grid with the tile over it,
// then the tile's addresses, its mask and the values load() returns, for any size and position;
// --trace=FILE records the program's whole walk (a copy of its rows of x into y) for the viewer.
//   build/default/step03_tile_pointer/step03_demo            (the article's worked example)
//   build/default/step03_tile_pointer/step03_demo --rows 7 --cols 12 --tile-rows 4 --tile-cols 8 --program 1 --step 1
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli.hpp"
#include "common/trace.hpp"
#include "common/trace_json.hpp"
#include "step03_tile_pointer/load_store.hpp"
#include "step03_tile_pointer/program.hpp"
#include "step03_tile_pointer/tile_pointer.hpp"

namespace {

using fa2::index_t;

constexpr int max_extent = 32;  // wider grids no longer fit a terminal
constexpr int max_tile = 16;    // the block sizes this demo is compiled for: 1, 2, 4, 8, 16

struct Options {
  int rows = 5, cols = 10;           // x is (rows, cols)
  int tile_rows = 2, tile_cols = 4;  // Block<tile_rows, tile_cols>
  int program = 2, step = 2;         // which band of rows, which loop step across the columns
  bool col_major = false;
  fa2::Padding padding = fa2::Padding::zero;
};

// A block size: one the demo is compiled for, and a power of two as Block<> requires.
fa2::cli::Parser::Apply block_size(int& target) {
  return [&target](std::string_view flag, const std::string& text) {
    const int v = fa2::cli::parse_integer(flag, text, 1, max_tile);
    if (!fa2::is_power_of_two(v)) {
      // The same rule Block<> enforces with a static_assert, checked here on a run-time value.
      throw fa2::cli::UsageError(
          std::string(flag),
          "got " + std::to_string(v) + ", a block size must be a power of two (1, 2, 4, 8 or 16 here)");
    }
    target = v;
  };
}

// The program and the step must exist for this size and tile, as in the kernel's grid and loop.
void check_program_and_step(const Options& o) {
  const int programs = fa2::cdiv(o.rows, o.tile_rows), steps = fa2::cdiv(o.cols, o.tile_cols);
  if (o.program >= programs) {
    throw fa2::cli::UsageError("--program", "got " + std::to_string(o.program) + ", but " + std::to_string(o.rows) +
                                                " rows in bands of " + std::to_string(o.tile_rows) +
                                                " make programs 0.." + std::to_string(programs - 1));
  }
  if (o.step >= steps) {
    throw fa2::cli::UsageError("--step", "got " + std::to_string(o.step) + ", but " + std::to_string(o.cols) +
                                             " columns in tiles of " + std::to_string(o.tile_cols) +
                                             " make loop steps 0.." + std::to_string(steps - 1));
  }
}

std::string cell(const std::string& text, int width, char open = ' ', char close = ' ') {
  std::string s(static_cast<std::size_t>(std::max(0, width - static_cast<int>(text.size()))), ' ');
  return open + s + text + close;
}

const char* padding_name(fa2::Padding pad) {
  return pad == fa2::Padding::zero ? "zero" : (pad == fa2::Padding::nan ? "nan" : "none");
}

std::string number(double v) {
  if (v != v) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

template <int R, int C>
void draw(const Options& o) {
  const index_t N = o.rows, D = o.cols;
  const index_t stride_row = o.col_major ? 1 : D, stride_col = o.col_major ? N : 1;
  // Memory slot k holds the value k, so every loaded number says where it came from.
  std::vector<float> memory(static_cast<std::size_t>(N * D));
  for (std::size_t k = 0; k < memory.size(); ++k) memory[k] = static_cast<float>(k);

  auto x_ptr = fa2::make_tile_ptr<fa2::Block<R, C>>(memory.data(), {N, D}, {stride_row, stride_col},
                                                    {static_cast<index_t>(o.program) * R, 0});
  for (int i = 0; i < o.step; ++i) x_ptr = x_ptr.advance({0, C});
  const index_t row0 = x_ptr.offsets()[0], col0 = x_ptr.offsets()[1];

  std::printf("x: %d x %d, %s, strides (%lld, %lld); memory slot k holds the value k\n", o.rows, o.cols,
              o.col_major ? "column-major" : "row-major", static_cast<long long>(stride_row),
              static_cast<long long>(stride_col));
  std::printf("x_ptr = make_tile_ptr<Block<%d, %d>>(x, {%d, %d}, {%lld, %lld}, {%d * %d, 0});  // program %d of %d\n",
              R, C, o.rows, o.cols, static_cast<long long>(stride_row), static_cast<long long>(stride_col), o.program,
              R, o.program, fa2::cdiv(o.rows, R));
  std::printf("x_ptr = x_ptr.advance({0, %d}), %d time(s)  ->  offsets (%lld, %lld)  // loop step %d of %d\n\n", C,
              o.step, static_cast<long long>(row0), static_cast<long long>(col0), o.step, fa2::cdiv(o.cols, C));

  // The grid: x's values, the tile in [ ], the tile's cells outside x as [--].
  const index_t last_row = std::max<index_t>(N, row0 + R), last_col = std::max<index_t>(D, col0 + C);
  const int width = std::max(2, static_cast<int>(number(static_cast<double>(N * D - 1)).size()));
  const auto in_tile = [&](index_t r, index_t c) { return r >= row0 && r < row0 + R && c >= col0 && c < col0 + C; };
  std::printf("x, with the tile in [ ] (cells past the edge of x: [--])\n%*s", 5, "");
  std::string header;
  for (index_t c = 0; c < last_col; ++c) header += cell(std::to_string(c), width);
  while (!header.empty() && header.back() == ' ') header.pop_back();
  std::printf("%s\n", header.c_str());
  for (index_t r = 0; r < last_row; ++r) {
    std::string line;
    bool any = false;
    for (index_t c = 0; c < last_col; ++c) {
      const bool inside = r < N && c < D;
      any = any || inside || in_tile(r, c);
      if (in_tile(r, c)) {
        line += cell(inside ? number(memory[static_cast<std::size_t>(r * stride_row + c * stride_col)]) : "--", width,
                     '[', ']');
      } else {
        line += cell(inside ? number(memory[static_cast<std::size_t>(r * stride_row + c * stride_col)]) : "", width);
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (any) std::printf("%4lld %s\n", static_cast<long long>(r), line.c_str());
  }

  // The three panels: addresses (A), mask (B), and what load() returned (C).
  const fa2::HostProgram prog(fa2::Coord<3>{o.program, 0, 0}, nullptr, 0);
  auto tile = fa2::Frag<float, fa2::RowLayoutFor<fa2::HostProgram, R, C>>::filled(-1.0f);
  fa2::load(prog, x_ptr, tile, fa2::boundary_check<0, 1>, o.padding);
  const char* pad_name = padding_name(o.padding);
  const int aw = std::max(width, static_cast<int>(std::to_string(x_ptr.element_offset({R - 1, C - 1})).size()));
  const int vw = std::max(width, o.padding == fa2::Padding::nan ? 3 : 1);
  std::vector<std::string> a{"A. addresses (x + k)"}, b{"B. mask"}, v{std::string("C. load, Padding::") + pad_name};
  int masked = 0, wrapped = 0;
  for (int r = 0; r < R; ++r) {
    a.emplace_back(), b.emplace_back(), v.emplace_back();
    for (int c = 0; c < C; ++c) {
      const index_t off = x_ptr.element_offset({r, c});
      const bool inside = x_ptr.in_bounds({r, c}, fa2::boundary_check<0, 1>);
      a.back() += cell(std::to_string(off), aw);
      b.back() += inside ? " T" : " F";
      // Padding::none leaves a masked cell as it was; "?" says so rather than print what it held.
      v.back() += cell(!inside && o.padding == fa2::Padding::none ? "?" : number(tile.v[r][c]), vw);
      if (!inside) {
        ++masked;
        if (off >= 0 && off < N * D) ++wrapped;
      }
    }
  }
  const auto widest = [](const std::vector<std::string>& lines) {
    std::size_t w = 0;
    for (const auto& l : lines) w = std::max(w, l.size());
    return static_cast<int>(w);
  };
  std::printf("\n");
  for (std::size_t i = 0; i < a.size(); ++i) {
    while (!v[i].empty() && v[i].back() == ' ') v[i].pop_back();
    std::printf("%-*s   %-*s   %s\n", widest(a), a[i].c_str(), widest(b), b[i].c_str(), v[i].c_str());
  }
  std::printf("\n%d of %d cells are masked (F): load() never reads them", masked, R * C);
  if (masked > 0) {
    std::printf(";\nwithout boundary_check, %d of them would read another element of x and %d memory past its end",
                wrapped, masked - wrapped);
  }
  std::printf(".\n");
  if (o.padding == fa2::Padding::none) std::printf("? = Padding::none left the destination as it was.\n");
}

// --trace: the program's whole loop as a copy kernel, recorded by its HostProgram (load_store.hpp
// notes each load and store): at every step the tile of x is loaded into registers and stored
// into y at the same place, then both pointers advance by C columns.
template <int R, int C>
void record(const Options& o, const std::string& file) {
  const index_t N = o.rows, D = o.cols;
  const index_t stride_row = o.col_major ? 1 : D, stride_col = o.col_major ? N : 1;
  std::vector<float> x(static_cast<std::size_t>(N * D)), y(x.size(), 0.0f);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k);
  fa2::trace::Recorder recorder;
  recorder.name_memory(x.data(), x.size() * sizeof(float), "x");
  recorder.name_memory(y.data(), y.size() * sizeof(float), "y");
  const int steps = fa2::cdiv(o.cols, C);
  {
    const fa2::trace::Recording on(recorder, {o.program, 0, 0});
    const fa2::HostProgram prog(fa2::Coord<3>{o.program, 0, 0}, nullptr, 0);
    const index_t row0 = static_cast<index_t>(o.program) * R;
    auto x_ptr = fa2::make_tile_ptr<fa2::Block<R, C>>(x.data(), {N, D}, {stride_row, stride_col}, {row0, 0});
    auto y_ptr = fa2::make_tile_ptr<fa2::Block<R, C>>(y.data(), {N, D}, {stride_row, stride_col}, {row0, 0});
    for (int step = 0; step < steps; ++step) {
      auto tile = fa2::Frag<float, fa2::RowLayoutFor<fa2::HostProgram, R, C>>::filled(-1.0f);
      fa2::load(prog, x_ptr, tile, fa2::boundary_check<0, 1>, o.padding);
      fa2::store(prog, y_ptr, tile, fa2::boundary_check<0, 1>);
      x_ptr = x_ptr.advance({0, C});
      y_ptr = y_ptr.advance({0, C});
    }
  }
  fa2::trace::Document doc;
  doc.title = "step 3's tile pointer: program " + std::to_string(o.program) + " copies its rows of a " +
              std::to_string(o.rows) + " x " + std::to_string(o.cols) + " tensor, " + std::to_string(R) + " x " +
              std::to_string(C) + " tiles";
  doc.source = "step03_demo --rows=" + std::to_string(o.rows) + " --cols=" + std::to_string(o.cols) +
               " --tile-rows=" + std::to_string(R) + " --tile-cols=" + std::to_string(C) +
               " --program=" + std::to_string(o.program) + " --layout=" + (o.col_major ? "col-major" : "row-major") +
               " --padding=" + padding_name(o.padding) + " --trace";
  doc.view = "tensor";
  doc.problem = {{"rows", N},
                 {"cols", D},
                 {"layout", std::string(o.col_major ? "col-major" : "row-major")},
                 {"padding", std::string(padding_name(o.padding))}};
  doc.tiles = {{"tile_rows", std::int64_t{R}}, {"tile_cols", std::int64_t{C}}};
  doc.program = {{"program", std::int64_t{o.program}}, {"steps", std::int64_t{steps}}};
  doc.notes = {
      "Memory slot k of x holds the value k. Each step loads one tile of x into registers and stores it into y.",
      "Masked cells (past the edge of x) are never read: the load pads them, the store skips them."};
  doc.events = std::move(recorder.events());
  fa2::cli::write_file(file, fa2::trace::to_json(doc));
  std::printf("\nwrote %s: %zu events (open common/viewer/trace_viewer.html and load it)\n", file.c_str(),
              doc.events.size());
}

// Tile sizes are template arguments, so a run-time choice picks one of the compiled versions.
template <int R, int C>
void dispatch_cols(const Options& o, const std::string& trace_file) {
  if constexpr (C <= max_tile) {
    if (o.tile_cols == C) {
      draw<R, C>(o);
      if (!trace_file.empty()) record<R, C>(o, trace_file);
      return;
    }
    dispatch_cols<R, C * 2>(o, trace_file);
  }
}
template <int R>
void dispatch_rows(const Options& o, const std::string& trace_file) {
  if constexpr (R <= max_tile) {
    if (o.tile_rows == R) return dispatch_cols<R, 1>(o, trace_file);
    dispatch_rows<R * 2>(o, trace_file);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string trace_file;
  fa2::cli::Parser cli("step03_demo",
                       "Step 3: one tile pointer drawn in the terminal. The tensor grid with the tile over it, then\n"
                       "the tile's addresses, its mask and the values load() returns, for any size and position.\n"
                       "The defaults are the article's worked example.");
  cli.integer("--rows=N", o.rows, 1, max_extent, "rows of x")
      .integer("--cols=D", o.cols, 1, max_extent, "columns of x")
      .custom("--tile-rows", "R", "block rows: 1, 2, 4, 8 or 16 (default " + std::to_string(o.tile_rows) + ")",
              block_size(o.tile_rows))
      .custom("--tile-cols", "C", "block columns: 1, 2, 4, 8 or 16 (default " + std::to_string(o.tile_cols) + ")",
              block_size(o.tile_cols))
      .integer("--program=P", o.program, 0, max_extent, "the program (band of R rows), below cdiv(N, R)")
      .integer("--step=S", o.step, 0, max_extent, "the loop step (tile of C columns), below cdiv(D, C)")
      .choice("--layout", o.col_major, {{"row-major", false}, {"col-major", true}},
              "row-major: strides (D, 1); col-major: strides (1, N)")
      .choice("--padding", o.padding,
              {{"zero", fa2::Padding::zero}, {"nan", fa2::Padding::nan}, {"none", fa2::Padding::none}},
              "what load() puts in masked cells")
      .text("--trace", trace_file, "FILE",
            "also record the program's whole walk over x (each tile loaded, then stored into y) as JSON\n"
            "for the trace viewer (common/viewer/trace_viewer.html)");
  return cli.run(argc, argv, [&] {
    check_program_and_step(o);
    dispatch_rows<1>(o, trace_file);
    return 0;
  });
}
