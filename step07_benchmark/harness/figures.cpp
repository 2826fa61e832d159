// The figures of step07's GUIDE.md and APPENDIX.md (see figures.hpp): the kernels' own host-device formulas
// (kernels/device/layouts.hpp, kernels/device/tile_scheduler.hpp), a schematic pipeline schedule and the roofline's
// points, drawn on common/svg_canvas.hpp. Every coordinate is printed with one decimal, so the output is the same on
// every machine.
#include "step07_benchmark/harness/figures.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "common/svg_canvas.hpp"
#include "common/svg_plot.hpp"
#include "step01_online_softmax/online_softmax.hpp"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/device/packed_schedule.hpp"
#include "step07_benchmark/kernels/device/split_kv.hpp"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"

namespace fa2::bench::figures {
namespace {

void check_range(const char* what, int value, int lo, int hi) {
  if (value < lo || value > hi) {
    throw std::out_of_range(std::string(what) + " = " + std::to_string(value) + ", must be in " + std::to_string(lo) +
                            ".." + std::to_string(hi));
  }
}

// ---- the SVG canvas (common/svg_canvas.hpp) and number formats ----------------------------------------
using svg::attr;
using svg::fixed;
using svg::num;
using Svg = svg::Canvas;

// "2,032": thousands separated, for numbers a reader compares by eye.
std::string grouped(double v) {
  std::string digits = fixed(std::round(v), 0);
  std::string out;
  const std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

using svg::escape_xml;

// Light fills that keep black text readable: one per register, chunk or stage.
const std::array<const char*, 8> kLight = {"#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                                           "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d"};

}  // namespace

// ---- fragments -------------------------------------------------------------------------------------
bool operator==(const FragmentSlot& x, const FragmentSlot& y) {
  return x.lane == y.lane && x.reg == y.reg && x.half == y.half;
}

namespace {

// The slot whose element `element(lane, reg, half)` (layouts.hpp's fragment layout) is (row, col).
template <class Element>
FragmentSlot owner_of(int row, int col, int regs, int halves, Element element) {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < regs; ++reg)
      for (int half = 0; half < halves; ++half) {
        const fa2::flash::RowCol at = element(lane, reg, half);
        if (at.row == row && at.col == col) return {lane, reg, half};
      }
  throw std::logic_error("no lane holds (" + std::to_string(row) + ", " + std::to_string(col) + ")");
}

}  // namespace

FragmentSlot mma_a_fragment_owner(int row, int k) {
  check_range("A row", row, 0, 15);
  check_range("A k", k, 0, 15);
  return owner_of(row, k, 4, 2, fa2::flash::mma_a_element);
}

FragmentSlot mma_b_fragment_owner(int k, int col) {
  check_range("B k", k, 0, 15);
  check_range("B col", col, 0, 7);
  return owner_of(k, col, 2, 2, fa2::flash::mma_b_element);
}

FragmentSlot mma_c_fragment_owner(int row, int col) {
  check_range("C row", row, 0, 15);
  check_range("C col", col, 0, 7);
  return owner_of(row, col, 4, 1, [](int lane, int reg, int) { return fa2::flash::mma_c_element(lane, reg); });
}

// ---- ldmatrix ---------------------------------------------------------------------------------------
RowChunk ldmatrix_address(LdmatrixOrder order, int lane) {
  check_range("lane", lane, 0, 31);
  // What sm80/forward.cuh's addr_rows_then_chunks and addr_chunks_then_rows add to (row0, chunk0).
  const fa2::flash::RowCol at = order == LdmatrixOrder::rows_then_chunks ? fa2::flash::ldmatrix_rows_then_chunks(lane)
                                                                         : fa2::flash::ldmatrix_chunks_then_rows(lane);
  return {at.row, at.col};
}

BlockElement ldmatrix_element(LdmatrixOrder order, bool transposed, int lane, int matrix, int half) {
  check_range("lane", lane, 0, 31);
  check_range("matrix", matrix, 0, 3);
  check_range("half", half, 0, 1);
  // Row r of matrix i comes from the address lane 8 i + r gave.
  const fa2::flash::RowCol in_matrix = fa2::flash::ldmatrix_received(lane, half, transposed);
  const RowChunk src = ldmatrix_address(order, 8 * matrix + in_matrix.row);
  return {src.row, src.chunk * kChunkElems + in_matrix.col};
}

// ---- shared memory -----------------------------------------------------------------------------------
std::string to_string(SmemLayout layout) {
  switch (layout) {
    case SmemLayout::plain:
      return "plain";
    case SmemLayout::padded:
      return "padded";
    case SmemLayout::swizzled:
      return "swizzled";
  }
  return "?";
}

int tile_offset(int row, int chunk, int D, SmemLayout layout) {
  if (D != 32 && D != 64 && D != 128) throw std::invalid_argument("tile_offset: D = " + std::to_string(D));
  const int chunks = D / kChunkElems;
  check_range("row", row, 0, 1 << 20);
  check_range("chunk", chunk, 0, chunks - 1);
  switch (layout) {
    case SmemLayout::plain:
      return row * D + chunk * kChunkElems;
    case SmemLayout::padded:
      return row * (D + kStep05Pad) + chunk * kChunkElems;
    case SmemLayout::swizzled:  // sm80/forward.cuh's tile_offset
      return row * D + fa2::flash::swizzled_chunk(row, chunk, chunks) * kChunkElems;
  }
  return 0;
}

int bank_of(int element_offset) {
  return (element_offset * 2 / kBankBytes) % kBanks;
}

int ldmatrix_conflict_ways(int row0, int chunk, int D, SmemLayout layout) {
  // Each row gives 16 aligned bytes, i.e. four banks starting at a multiple of four: count how
  // many rows start on each group of four.
  std::array<int, kBanks / 4> rows_on{};
  for (int r = row0; r < row0 + 8; ++r)
    ++rows_on[static_cast<std::size_t>(bank_of(tile_offset(r, chunk, D, layout)) / 4)];
  return *std::max_element(rows_on.begin(), rows_on.end());
}

// ---- pipeline ------------------------------------------------------------------------------------------
PipelineSchedule pipeline_schedule(Pipeline pipeline, int n_tiles, double load_half, double compute_s,
                                   double compute_pv) {
  check_range("n_tiles", n_tiles, 1, 64);
  PipelineSchedule s;
  s.pipeline = pipeline;
  double copy_free = 0.0;  // the copy track moves one request at a time
  const auto copy = [&](int tile, int stage, bool k, bool v, double issued) {
    PipelineEvent e;
    e.track = Track::copy;
    e.tile = tile;
    e.stage = stage;
    e.has_k = k;
    e.has_v = v;
    e.label =
        std::string(k ? "K" + std::to_string(tile) : "") + (k && v ? " " : "") + (v ? "V" + std::to_string(tile) : "");
    e.t0 = std::max(issued, copy_free);
    e.t1 = e.t0 + load_half * ((k ? 1 : 0) + (v ? 1 : 0));
    copy_free = e.t1;
    s.events.push_back(e);
    return e.t1;
  };
  const auto compute = [&](int tile, int stage, bool k, bool v, double start, double length, const std::string& what) {
    PipelineEvent e;
    e.track = Track::compute;
    e.tile = tile;
    e.stage = stage;
    e.reads_k = k;
    e.reads_v = v;
    e.label = what + " " + std::to_string(tile);
    e.t0 = start;
    e.t1 = start + length;
    s.events.push_back(e);
    return e.t1;
  };
  const auto barrier = [&](double t, const std::string& label) {
    s.barriers.push_back({t, label});
    return t;
  };
  const double compute_all = compute_s + compute_pv;

  if (pipeline == Pipeline::one_stage) {
    double t = barrier(copy(0, 0, true, true, 0.0), "wait<0> + __syncthreads()");
    for (int j = 0; j < n_tiles; ++j) {
      t = compute(j, 0, true, true, t, compute_all, "tile");
      if (j + 1 < n_tiles) {
        barrier(t, "__syncthreads(): the only stage is free");
        t = barrier(copy(j + 1, 0, true, true, t), "wait<0> + __syncthreads()");
      }
    }
    s.end = t;
  } else if (pipeline == Pipeline::two_stages) {
    double t = barrier(copy(0, 0, true, true, 0.0), "wait<0> + __syncthreads()");
    for (int j = 0; j < n_tiles; ++j) {
      double landed = t;
      if (j + 1 < n_tiles) landed = copy(j + 1, (j + 1) % 2, true, true, t);
      const double done = compute(j, j % 2, true, true, t, compute_all, "tile");
      t = std::max(done, landed);
      if (j + 1 < n_tiles) barrier(t, "wait<0> + __syncthreads()");
    }
    s.end = t;
  } else {
    double k_landed = copy(0, 0, true, false, 0.0);
    double v_landed = copy(0, 0, false, true, 0.0);
    double t = 0.0;
    for (int j = 0; j < n_tiles; ++j) {
      t = barrier(std::max(t, k_landed), "wait<1> + __syncthreads(): K" + std::to_string(j) + " has landed");
      const double next_k = j + 1 < n_tiles ? copy(j + 1, (j + 1) % 2, true, false, t) : t;
      t = compute(j, j % 2, true, false, t, compute_s, "S, softmax");
      t = barrier(std::max(t, v_landed), "wait<1> + __syncthreads(): V" + std::to_string(j) + " has landed");
      const double next_v = j + 1 < n_tiles ? copy(j + 1, (j + 1) % 2, false, true, t) : t;
      t = compute(j, j % 2, false, true, t, compute_pv, "P V");
      k_landed = next_k;
      v_landed = next_v;
    }
    s.end = t;
  }
  return s;
}

// ---- causal masks --------------------------------------------------------------------------------------
bool causal_visible(int q, int k, int n_q, int n_k, CausalAlign align) {
  check_range("q", q, 0, n_q - 1);
  check_range("k", k, 0, n_k - 1);
  return align == CausalAlign::top_left ? k <= q : k <= q + n_k - n_q;
}

// ---- the persistent schedule -----------------------------------------------------------------------
std::vector<int> persistent_block_tiles(const ScheduleProblem& sp) {
  check_range("blocks", sp.blocks, 1, 1 << 20);
  check_range("block_m", sp.block_m, 1, 1 << 20);
  check_range("block_n", sp.block_n, 1, 1 << 20);
  const int n_q_tiles = (sp.n + sp.block_m - 1) / sp.block_m;
  const auto run = [&](auto scheduler) {
    std::vector<int> tiles(static_cast<std::size_t>(sp.blocks), 0);
    for (int b = 0; b < sp.blocks; ++b) {
      for (int k = 0, t = scheduler.item(0, b, sp.blocks); t < scheduler.items();
           t = scheduler.item(++k, b, sp.blocks)) {
        const int q0 = scheduler.work_tile(t).q_tile * sp.block_m;
        tiles[static_cast<std::size_t>(b)] +=
            sp.causal ? fa2::flash::key_tiles<true>(sp.n, sp.block_n, q0, sp.block_m, sp.n)
                      : fa2::flash::key_tiles<false>(sp.n, sp.block_n, q0, sp.block_m, sp.n);
      }
    }
    return tiles;
  };
  if (sp.causal) return run(fa2::flash::TileScheduler<true, true>{n_q_tiles, sp.heads});
  return run(fa2::flash::TileScheduler<false, true>{n_q_tiles, sp.heads});
}

// ---- one row of the online softmax --------------------------------------------------------------------
RowState online_softmax_row(const std::vector<float>& scores, const std::vector<bool>& keep,
                            const std::vector<float>& values, int tile, MaskStyle style) {
  if (scores.size() != keep.size() || scores.size() != values.size() || tile < 1) {
    throw std::invalid_argument("online_softmax_row: scores, keep and values must have one entry per key, tile >= 1");
  }
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kLog2e = 1.4426950408889634f;
  const std::size_t n = scores.size(), step = static_cast<std::size_t>(tile);
  RowState st{-kInf, 0.0f, 0.0f};
  // Step 5's kernel replaces a masked score by the finite sentinel -1e6; what it does with the
  // row is step 1's online softmax, so that path runs step 1's own OnlineSoftmaxState (a tile
  // at a time or a score at a time gives the same m, and l and O up to rounding).
  fa2::online::OnlineSoftmaxState<float> sentinel_state;
  for (std::size_t k0 = 0; k0 < n; k0 += step) {
    const std::size_t k1 = std::min(n, k0 + step);
    if (style == MaskStyle::step05_sentinel) {
      for (std::size_t k = k0; k < k1; ++k) {
        const float score = keep[k] ? scores[k] : -1.0e6f;
        const float rescale = sentinel_state.update(score);
        st.o = rescale * st.o + std::exp(score - sentinel_state.m) * values[k];
      }
      st.m = sentinel_state.m;
      st.l = sentinel_state.l;
    } else {
      // sm80/forward.cuh's online_softmax (log2 units; scale 1 here, so scale_log2 = log2 e).
      float row_max = -kInf;
      for (std::size_t k = k0; k < k1; ++k) row_max = std::max(row_max, keep[k] ? scores[k] : -kInf);
      const float m_new = std::max(st.m, row_max * kLog2e);
      const bool guard = style == MaskStyle::v5_neg_inf;
      const float m_use = guard && m_new == -kInf ? 0.0f : m_new;
      const float alpha = std::exp2(st.m - m_use);
      st.m = m_new;
      st.l *= alpha;
      st.o *= alpha;
      for (std::size_t k = k0; k < k1; ++k) {
        const float p = std::exp2(std::fma(keep[k] ? scores[k] : -kInf, kLog2e, -m_use));
        st.l += p;
        st.o += p * values[k];
      }
    }
  }
  return st;
}

// ---- roofline data ------------------------------------------------------------------------------------
CeilingsLine parse_ceilings(const std::string& log_text) {
  static const std::regex re(
      R"(ceilings: bf16 GEMM ([0-9.]+) TFLOP/s, copy ([0-9.]+) TB/s.*?; datasheet ([0-9.]+) TFLOP/s, ([0-9.]+) TB/s)");
  std::smatch m;
  if (!std::regex_search(log_text, m, re)) {
    throw std::invalid_argument(
        "no line 'ceilings: bf16 GEMM <x> TFLOP/s, copy <y> TB/s ...; datasheet <a> TFLOP/s, <b> TB/s' (what "
        "step07_bench prints before its first problem)");
  }
  CeilingsLine c;
  c.measured = {std::stod(m[1].str()), std::stod(m[2].str()),
                "measured (step07_bench: cuBLAS bf16 GEMM 8192^3, 1 GiB copy)"};
  c.datasheet = {std::stod(m[3].str()), std::stod(m[4].str()), "datasheet"};
  return c;
}

double napkin_bytes(const std::string& key, const Problem& p) {
  const double least = min_traffic_bytes(p);
  if (key == "cublas") return least + 4.0 * static_cast<double>(score_matrix_bytes(p));
  return least;
}

std::vector<RooflinePoint> roofline_points(const std::vector<Measurement>& all, const Problem& p) {
  std::vector<RooflinePoint> out;
  for (const auto& m : all) {
    if (!(m.problem == p) || m.key == "sdpa") continue;
    if (m.status != Status::ok && m.status != Status::quoted) continue;
    if (!(m.tflops > 0.0)) continue;
    out.push_back({m.key, m.tflops, attention_flops(p), napkin_bytes(m.key, p), m.status == Status::quoted});
  }
  return out;
}

// ---- the figures -----------------------------------------------------------------------------------------
std::string fragment_layout_svg() {
  constexpr double cw = 34, ch = 23, top = 118;
  struct Panel {
    const char* m;  // "A", "B", "C"
    std::string title, reg_name;
    int rows, cols, regs;
    const char* row_axis;
    const char* col_axis;
  };
  const std::vector<Panel> panels = {
      {"A", "A: 16 x 16 (row x k), bf16: Q, or P", "a", 16, 16, 4, "row", "k"},
      {"B", "B: 16 x 8 (k x n), bf16: K^T, or V", "b", 16, 8, 2, "k", "n"},
      {"C", "C and D: 16 x 8 (row x n), fp32: S, or O", "d", 16, 8, 4, "row", "n"},
  };
  const double gap = 70, left = 56;
  double width = left;
  for (const auto& p : panels) width += p.cols * cw + gap;
  Svg s(static_cast<int>(width), 640, "mma.sync m16n8k16 fragment layout");
  s.heading(
      "mma.sync.m16n8k16: which lane holds which element",
      {"Each cell names the lane (T0..T31) that holds the element in a register; the colour is the register "
       "(a[0..3], b0/b1, d[0..3]). g = lane / 4 picks the row (or n), c = 2 (lane % 4) the pair of columns (or k).",
       "Source: step07_benchmark/kernels/ptx/mma.cuh (mma_bf16_16816's table, from the PTX ISA); "
       "drawn by step07_figures."});
  double x0 = left;
  for (const auto& p : panels) {
    s.open_group(std::string("fragment ") + p.m);
    s.text(x0, top - 30, p.title, 14, "start", "font-weight=\"bold\"");
    for (int c = 0; c < p.cols; ++c)
      s.text(x0 + (c + 0.5) * cw, top - 8, std::to_string(c), 10, "middle", "fill=\"#555\"");
    s.text(x0 - 8, top - 8, std::string(p.row_axis) + " \\ " + p.col_axis, 10, "end", "fill=\"#555\"");
    for (int r = 0; r < p.rows; ++r) {
      s.text(x0 - 8, top + (r + 0.5) * ch + 4, std::to_string(r), 10, "end", "fill=\"#555\"");
      for (int c = 0; c < p.cols; ++c) {
        const FragmentSlot f = p.m[0] == 'A'   ? mma_a_fragment_owner(r, c)
                               : p.m[0] == 'B' ? mma_b_fragment_owner(r, c)
                                               : mma_c_fragment_owner(r, c);
        const double x = x0 + c * cw, y = top + r * ch;
        s.rect(x, y, cw, ch, kLight[static_cast<std::size_t>(f.reg)], "#ffffff", 1.0,
               attr("data-m", p.m) + " " + attr("data-row", r) + " " + attr("data-col", c) + " " +
                   attr("data-lane", f.lane) + " " + attr("data-reg", f.reg));
        s.text(x + cw / 2, y + ch / 2 + 4, "T" + std::to_string(f.lane), 10.5, "middle");
      }
    }
    // The register legend.
    const double ly = top + p.rows * ch + 22;
    for (int g = 0; g < p.regs; ++g) {
      const std::string name =
          p.m[0] == 'B' ? "b" + std::to_string(g) : std::string(p.reg_name) + "[" + std::to_string(g) + "]";
      s.rect(x0 + g * 64, ly, 14, 14, kLight[static_cast<std::size_t>(g)], "#888", 0.5);
      s.text(x0 + g * 64 + 19, ly + 11, name, 11);
    }
    s.close_group();
    x0 += p.cols * cw + gap;
  }
  const double ny = top + 16 * ch + 70;
  s.notes(ny, {"Why P never leaves the registers: lane T holds the same (row, column) pairs of S (C tiles 2kk and "
               "2kk+1) as the A operand of P V needs (a[0..3]),",
               "so accumulate_pv packs d[0],d[1] -> a[0], d[2],d[3] -> a[1] of tile 2kk and the same of tile 2kk+1 "
               "-> a[2], a[3] with no shuffle and no shared memory.",
               "step05's WMMA fragments have no documented layout, which is why its products pass S, P and O "
               "through shared memory (tile_dot_device.cuh)."});
  return s.finish();
}

std::string ldmatrix_svg() {
  constexpr double top = 136, rh = 22, cw_addr = 112, cw_el = 38;
  Svg s(1360, 606, "ldmatrix.x4: addresses and what each lane receives");
  s.heading(
      "ldmatrix.sync.aligned.m8n8.x4.b16: one instruction, four 8 x 8 bf16 matrices, straight into mma fragments",
      {"Left: a 16 x 16 block in shared memory as 16 rows of two 16-byte chunks; each chunk says which lane gives "
       "its address and which matrix (= register r[i]) it becomes.",
       "Right: what one matrix delivers: lane T gets two neighbouring bf16 in one 32-bit register. Source: "
       "device/smem_tiles.cuh (addr_rows_then_chunks, addr_chunks_then_rows), ptx/mma.cuh."});
  double x0 = 60;
  const auto address_panel = [&](LdmatrixOrder order, const std::string& title, const std::string& use) {
    s.open_group("ldmatrix addresses");
    s.text(x0, top - 40, title, 14, "start", "font-weight=\"bold\"");
    s.text(x0, top - 24, use, 11, "start", "fill=\"#444\"");
    s.text(x0 + cw_addr / 2, top - 6, "chunk 0 (cols 0-7)", 10, "middle", "fill=\"#555\"");
    s.text(x0 + 1.5 * cw_addr, top - 6, "chunk 1 (cols 8-15)", 10, "middle", "fill=\"#555\"");
    for (int lane = 0; lane < 32; ++lane) {
      const RowChunk a = ldmatrix_address(order, lane);
      const int matrix = lane / 8;
      const double x = x0 + a.chunk * cw_addr, y = top + a.row * rh;
      s.rect(x, y, cw_addr, rh, kLight[static_cast<std::size_t>(matrix)], "#ffffff", 1.0,
             attr("data-order", order == LdmatrixOrder::rows_then_chunks ? "rows_then_chunks" : "chunks_then_rows") +
                 " " + attr("data-row", a.row) + " " + attr("data-chunk", a.chunk) + " " + attr("data-lane", lane));
      s.text(x + cw_addr / 2, y + rh / 2 + 4, "lane " + std::to_string(lane) + " -> r[" + std::to_string(matrix) + "]",
             10.5, "middle");
    }
    for (int r = 0; r < 16; ++r)
      s.text(x0 - 6, top + (r + 0.5) * rh + 4, std::to_string(r), 10, "end", "fill=\"#555\"");
    s.close_group();
    x0 += 2 * cw_addr + 64;
  };
  address_panel(LdmatrixOrder::rows_then_chunks, "A order", "Q, P (A operand); V with .trans (B)");
  address_panel(LdmatrixOrder::chunks_then_rows, "K order", "K (B operand): keys 0-7, then 8-15");
  x0 += 16;

  const auto element_panel = [&](bool transposed) {
    s.open_group(transposed ? "ldmatrix trans" : "ldmatrix plain");
    s.text(x0, top - 40, transposed ? "one matrix, .trans" : "one matrix, no .trans", 14, "start",
           "font-weight=\"bold\"");
    s.text(x0, top - 24, transposed ? "lane T: column T/4, rows 2(T%4), +1" : "lane T: row T/4, columns 2(T%4), +1", 11,
           "start", "fill=\"#444\"");
    for (int r = 0; r < 8; ++r) {
      s.text(x0 - 6, top + (r + 0.5) * rh + 4, std::to_string(r), 10, "end", "fill=\"#555\"");
      for (int c = 0; c < 8; ++c) {
        const int lane = transposed ? 4 * c + r / 2 : 4 * r + c / 2;
        const double x = x0 + c * cw_el, y = top + r * rh;
        s.rect(x, y, cw_el, rh, kLight[static_cast<std::size_t>((lane / 4) % 8)], "#ffffff", 1.0);
        s.text(x + cw_el / 2, y + rh / 2 + 4, "T" + std::to_string(lane), 10.5, "middle");
      }
    }
    for (int c = 0; c < 8; ++c)
      s.text(x0 + (c + 0.5) * cw_el, top - 6, std::to_string(c), 10, "middle", "fill=\"#555\"");
    s.close_group();
    x0 += 8 * cw_el + 56;
  };
  element_panel(false);
  element_panel(true);

  const double ny = top + 16 * rh + 36;
  s.notes(ny, {"Lane l gives the address of row l % 8 of matrix l / 8. In the A order the four matrices are "
               "(rows 0-7, chunk 0), (rows 8-15, chunk 0), (rows 0-7, chunk 1), (rows 8-15, chunk 1):",
               "lane T then holds exactly a[0..3] of mma_bf16_16816's A fragment. In the K order, r[0], r[1] are "
               "b0, b1 of keys 0-7 and r[2], r[3] those of keys 8-15.",
               "With .trans on V (stored key x d), the same A order gives b0, b1 of d 0-7 and of d 8-15: "
               "step07_figures_tests checks all three against the fragment table, lane by lane.",
               "Every row address must be 16-byte aligned; the eight addresses of one matrix are read in one "
               "pass when their 16-byte chunks fall on different banks (see swizzle_banks.svg)."});
  return s.finish();
}

std::string swizzle_banks_svg() {
  constexpr int D = 64, chunks = D / kChunkElems;
  constexpr double cw = 42, ch = 26, top = 140;
  struct Panel {
    SmemLayout layout;
    std::string title, where;
  };
  const std::vector<Panel> panels = {
      {SmemLayout::plain, "plain: r * 64 + 8 c", "v5.1 (no swizzle)"},
      {SmemLayout::padded, "padded: r * (64 + 8) + 8 c", "step05's tiles (kSmemPad = 8)"},
      {SmemLayout::swizzled, "swizzled: r * 64 + 8 (c ^ (r & 7))", "v5.2 and later (tile_offset)"},
  };
  const double left = 70, gap = 64;
  const double width = left + 3 * chunks * cw + 2 * gap + 30;
  Svg s(static_cast<int>(width), 480, "shared-memory banks without and with the XOR swizzle");
  s.heading(
      "Where 16-byte chunk c of row r lands among the 32 banks (a K tile of v5, head dim 64)",
      {"A row of 64 bf16 is 128 bytes = one pass over all 32 four-byte banks, so each column below is four banks. "
       "Cells show the logical chunk stored there; the framed cells",
       "are chunk 0 of rows 0-7: the eight 16-byte rows one 8 x 8 matrix of an ldmatrix reads at once. Source: "
       "device/smem_tiles.cuh (tile_offset), tile_dot.hpp (kSmemPad)."});
  double x0 = left;
  for (const auto& p : panels) {
    s.open_group("layout " + to_string(p.layout));
    s.text(x0, top - 52, p.title, 14, "start", "font-weight=\"bold\"");
    s.text(x0, top - 36, p.where, 11, "start", "fill=\"#444\"");
    for (int g = 0; g < chunks; ++g) {
      s.text(x0 + (g + 0.5) * cw, top - 8, std::to_string(4 * g) + "-" + std::to_string(4 * g + 3), 9.5, "middle",
             "fill=\"#555\"");
    }
    s.text(x0 + chunks * cw / 2, top - 21, "banks", 10, "middle", "fill=\"#555\"");
    for (int r = 0; r < 8; ++r) {
      s.text(x0 - 6, top + (r + 0.5) * ch + 4, "row " + std::to_string(r), 10, "end", "fill=\"#555\"");
      for (int c = 0; c < chunks; ++c) {
        const int off = tile_offset(r, c, D, p.layout);
        const int group = bank_of(off) / 4;
        const double x = x0 + group * cw, y = top + r * ch;
        const bool read = c == 0;
        s.rect(x, y, cw, ch, kLight[static_cast<std::size_t>(c)], read ? "#000000" : "#ffffff", read ? 2.5 : 1.0,
               read ? attr("class", "ldmatrix-row") + " " + attr("data-layout", to_string(p.layout)) + " " +
                          attr("data-row", r) + " " + attr("data-chunk", c) + " " + attr("data-bank", bank_of(off))
                    : "");
        s.text(x + cw / 2, y + ch / 2 + 4, "c" + std::to_string(c), 11, "middle", read ? "font-weight=\"bold\"" : "");
      }
    }
    const int ways = ldmatrix_conflict_ways(0, 0, D, p.layout);
    const double ry = top + 8 * ch + 24;
    if (ways == 1) {
      s.text(x0, ry, "chunk 0 of rows 0-7 covers all 32 banks:", 12);
      s.text(x0, ry + 17, "one pass (conflict-free)", 12, "start", "fill=\"#2a7a2a\" font-weight=\"bold\"");
    } else {
      s.text(x0, ry, "chunk 0 of rows 0-7 sits on banks 0-3 only:", 12);
      s.text(x0, ry + 17, std::to_string(ways) + "-way conflict, " + std::to_string(ways) + " passes", 12, "start",
             "fill=\"#b22222\" font-weight=\"bold\"");
    }
    if (p.layout == SmemLayout::padded) {
      s.text(x0, ry + 36, "(each row's 16 padding bytes are not drawn:", 11, "start", "fill=\"#444\"");
      s.text(x0, ry + 51, "12.5% more shared memory)", 11, "start", "fill=\"#444\"");
    }
    if (p.layout == SmemLayout::swizzled) {
      s.text(x0, ry + 36, "(no extra bytes; a row stays one", 11, "start", "fill=\"#444\"");
      s.text(x0, ry + 51, "aligned 128-byte line)", 11, "start", "fill=\"#444\"");
    }
    s.close_group();
    x0 += chunks * cw + gap;
  }
  s.text(20, 464,
         "Every chunk c (not only 0) of any 8 consecutive rows from a multiple of 8 is conflict-free when "
         "swizzled, at head dims 32, 64 and 128 (step07_figures_tests).",
         12);
  return s.finish();
}

std::string cp_async_pipeline_svg(const std::vector<Measurement>& results, const Problem& p) {
  constexpr int n_tiles = 3;
  constexpr double unit = 40, left = 90, track_h = 30, row_gap = 50, top = 100;
  struct Row {
    Pipeline pipeline;
    std::string title, where;
  };
  const std::vector<Row> rows = {
      {Pipeline::one_stage, "one stage (v5.1, v5.2)", "key_loop_joint_wait, STAGES = 1"},
      {Pipeline::two_stages, "two stages (v5.3, v5.4)", "key_loop_joint_wait, STAGES = 2"},
      {Pipeline::split_waits, "K and V waited apart (v5.5)", "key_loop_split_waits"},
  };
  std::vector<PipelineSchedule> schedules;
  double longest = 0.0;
  for (const auto& r : rows) {
    schedules.push_back(pipeline_schedule(r.pipeline, n_tiles));
    longest = std::max(longest, schedules.back().end);
  }
  const double width = std::max(left + longest * unit + 60, 1120.0);
  const double height = top + static_cast<double>(rows.size()) * (2 * track_h + row_gap + 16) + 40;
  Svg s(static_cast<int>(width), static_cast<int>(height), "cp.async double buffering: a schematic timeline");
  s.heading("The key loop's cp.async pipeline: loads of tile j+1 under the compute of tile j",
            {"Schematic (box lengths are not measured). Colour = shared-memory stage written or read (blue: stage 0, "
             "orange: stage 1). Dashed red: cp.async.wait_group + __syncthreads().",
             "A wait only covers this thread's own copies; the barrier makes every thread's copies visible and "
             "frees the stage the next load overwrites. Source: sm80/forward.cuh (key_loop_*)."});
  const std::array<const char*, 2> stage_fill = {"#aec7e8", "#ffbb78"};
  double y0 = top;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& sch = schedules[i];
    s.open_group("pipeline " + rows[i].title);
    s.text(20, y0 + 4, rows[i].title, 13, "start", "font-weight=\"bold\"");
    s.text(20 + 8.0 * static_cast<double>(rows[i].title.size()) + 12, y0 + 4, rows[i].where, 10.5, "start",
           "fill=\"#444\"");
    y0 += 16;
    s.text(left - 10, y0 + track_h / 2 + 4, "cp.async", 11, "end");
    s.text(left - 10, y0 + track_h * 1.5 + 8, "warps", 11, "end");
    s.line(left, y0 + 2 * track_h + 12, left + longest * unit, y0 + 2 * track_h + 12, "#bbb", 1);
    for (const auto& e : sch.events) {
      const double x = left + e.t0 * unit, w = (e.t1 - e.t0) * unit;
      const double y = e.track == Track::copy ? y0 : y0 + track_h + 6;
      s.rect(x, y, w, track_h - 4, stage_fill[static_cast<std::size_t>(e.stage % 2)], "#555", 1.0,
             attr("data-track", e.track == Track::copy ? "copy" : "compute") + " " + attr("data-tile", e.tile) + " " +
                 attr("data-stage", e.stage));
      s.text(x + w / 2, y + track_h / 2 + 2, e.label, 10.5, "middle");
    }
    for (const auto& b : sch.barriers) {
      const double x = left + b.t * unit;
      s.line(x, y0 - 4, x, y0 + 2 * track_h + 8, "#d62728", 1.5, "stroke-dasharray=\"4 3\"");
    }
    s.text(left + sch.end * unit + 6, y0 + track_h * 1.5 + 8, fixed(sch.end, 1), 10.5, "start", "fill=\"#444\"");
    s.close_group();
    y0 += 2 * track_h + row_gap;
  }
  s.text(left, y0 - row_gap + 34, "time (schematic units) ->", 10.5, "start", "fill=\"#444\"");
  // What the three loops measured, when the results have them.
  const auto tf = [&](const std::string& key) {
    const Measurement* m = find_measurement(results, key, p);
    return m != nullptr && m->status == Status::ok ? m->tflops : 0.0;
  };
  const double v52 = tf("v5.2"), v53 = tf("v5.3"), v54 = tf("v5.4"), v55 = tf("v5.5");
  if (v52 > 0 && v53 > 0 && v54 > 0 && v55 > 0) {
    const auto pct = [](double now, double before) {
      const double d = std::round((now / before - 1.0) * 100.0);
      return (d > 0 ? "+" : "") + fixed(d, 0) + "%";
    };
    s.notes(y0 + 4, {"Measured (" + p.label() + "): v5.2 " + fixed(v52, 1) + " -> v5.3 " + fixed(v53, 1) +
                         " TFLOP/s (" + pct(v53, v52) + "); v5.5 " + fixed(v55, 1) + " against v5.4's " +
                         fixed(v54, 1) + " (" + pct(v55, v54) + ").",
                     "The picture leaves out what v5.5's second __syncthreads() per tile costs; on the GPU the "
                     "overlap it buys did not pay for it."});
  }
  return s.finish();
}

std::string causal_alignment_svg() {
  constexpr double cell = 26, top = 128;
  struct Panel {
    int n_q, n_k;
    CausalAlign align;
    std::string title;
  };
  const std::vector<Panel> panels = {
      {3, 5, CausalAlign::top_left, "N_q = 3, N_k = 5, top-left"},
      {3, 5, CausalAlign::bottom_right, "N_q = 3, N_k = 5, bottom-right"},
      {5, 3, CausalAlign::top_left, "N_q = 5, N_k = 3, top-left"},
      {5, 3, CausalAlign::bottom_right, "N_q = 5, N_k = 3, bottom-right"},
  };
  const double left = 60;
  Svg s(1060, 350, "causal masks: top-left and bottom-right alignment");
  s.heading(
      "Causal attention when N_q != N_k: which keys each query sees",
      {"Top-left (our kernels, torch's is_causal=True): query q sees keys k <= q. Bottom-right (the flash-attn "
       "library since 2.1): k <= q + N_k - N_q,",
       "i.e. the last query sees every key. Filled: visible. A red frame marks a query that sees no key at all."});
  double x0 = left;
  for (const auto& p : panels) {
    s.open_group("mask");
    s.text(x0, top - 34, p.title, 13, "start", "font-weight=\"bold\"");
    s.text(x0 + p.n_k * cell / 2, top - 8, "key k", 10, "middle", "fill=\"#555\"");
    for (int q = 0; q < p.n_q; ++q) {
      s.text(x0 - 6, top + (q + 0.5) * cell + 4, "q" + std::to_string(q), 10, "end", "fill=\"#555\"");
      bool any = false;
      for (int k = 0; k < p.n_k; ++k) {
        const bool v = causal_visible(q, k, p.n_q, p.n_k, p.align);
        any = any || v;
        s.rect(x0 + k * cell, top + q * cell, cell, cell, v ? "#4c72b0" : "#f4f4f4", "#ffffff", 1.0,
               attr("data-q", q) + " " + attr("data-k", k) + " " + attr("data-visible", v ? 1 : 0));
        s.text(x0 + (k + 0.5) * cell, top + (q + 0.5) * cell + 4, v ? "1" : "0", 11, "middle",
               v ? "fill=\"white\"" : "fill=\"#999\"");
      }
      if (!any) {
        s.rect(x0 - 1, top + q * cell - 1, p.n_k * cell + 2, cell + 2, "none", "#d62728", 2.0);
        s.text(x0 + p.n_k * cell + 6, top + (q + 0.5) * cell + 4, "no key", 10, "start", "fill=\"#d62728\"");
      }
    }
    s.close_group();
    x0 += 250;
  }
  s.notes(292, {"The two agree when N_q = N_k. Bottom-right with N_q > N_k leaves the first N_q - N_k queries with "
                "no visible key: the masked-row case of APPENDIX.md (A.9).",
                "For such a row step05's -1e6 sentinel would average the masked values and v5's -inf would store "
                "0 x (1 / 0) = NaN;",
                "the flash-attn library stores 0 and an infinite logsumexp. With our top-left mask every query sees "
                "key 0, so no row is ever empty."});
  return s.finish();
}

std::string split_kv_svg() {
  // One (sequence, kv head) of a decoding batch: a cache of kKeys keys in tiles of 16, cut into
  // kParts parts (split_kv.hpp's split_tiles), each part's tiles dealt to 4 warps in turn
  // (warp_tile_count), as sm80/decode.cuh walks them.
  constexpr int kKeys = 600, kTile = 16, kParts = 3, kWarps = 4;
  constexpr double left = 40, bar_y = 150, cell = 24, block_y = 260, block_h = 150, merge_y = 470;
  const fa2::flash::BlockKeys block = fa2::flash::decode_block_keys(0, 0, 1, kKeys, -1, 0, kTile);
  const int tiles = block.tiles;
  Svg s(static_cast<int>(left + tiles * cell + 60), 600, "split-KV decoding: one long cache over several blocks");
  s.heading(
      "Decoding with split-KV: a long cache in parts, one block each, merged by logsumexp",
      {"One query and the 4 query heads that share a kv head are 4 rows of one block (each key is read once "
       "for the group); " +
           std::to_string(kKeys) + " keys in " + std::to_string(tiles) + " tiles of " + std::to_string(kTile) + ",",
       "cut into " + std::to_string(kParts) +
           " parts (split_tiles); in a block, warp w takes tiles w, w + 4, ... of its part (warp_tile_count), "
           "with its own stages and softmax state."});
  s.text(left, bar_y - 12, "the cache of one (sequence, kv head): key tiles, coloured by part, labelled by warp", 12);
  for (int part = 0; part < kParts; ++part) {
    const fa2::flash::TileRange r = fa2::flash::split_tiles(tiles, kParts, part);
    for (int warp = 0; warp < kWarps; ++warp) {
      for (int j = 0; j < fa2::flash::warp_tile_count(r, warp, kWarps); ++j) {
        const int tile = r.begin + warp + j * kWarps;
        s.rect(left + tile * cell, bar_y, cell - 2, 34, kLight[static_cast<std::size_t>(part)], "#555", 0.8,
               attr("data-tile", tile) + " " + attr("data-part", part) + " " + attr("data-warp", warp));
        s.text(left + (tile + 0.5) * cell - 1, bar_y + 22, "w" + std::to_string(warp), 10, "middle");
      }
    }
    // The part's block: its warps' states, merged in shared memory into O_s and L_s.
    const double bx = left + r.begin * cell, bw = (r.end - r.begin) * cell - 6;
    s.open_group("part");
    s.line(bx + bw / 2, bar_y + 36, bx + bw / 2, block_y, "#777", 1.0);
    s.rect(
        bx, block_y, bw, block_h, kLight[static_cast<std::size_t>(part)], "#333", 1.2,
        attr("data-block", part) + " " + attr("data-first-tile", r.begin) + " " + attr("data-tiles", r.end - r.begin));
    s.text(bx + 8, block_y + 20, "block (b, kv head, part " + std::to_string(part) + ") on an SM", 12, "start",
           "font-weight=\"bold\"");
    s.text(bx + 8, block_y + 42,
           "keys " + std::to_string(block.keys.first + r.begin * kTile) + " .. " +
               std::to_string(std::min(block.keys.last, block.keys.first + r.end * kTile - 1)),
           11);
    s.text(bx + 8, block_y + 64, "4 warps: (m_w, l_w, O_w) each", 11);
    s.text(bx + 8, block_y + 86, "merged: weights 2^(m_w - max m)", 11);
    s.text(bx + 8, block_y + 112, "writes O_" + std::to_string(part) + " and L_" + std::to_string(part), 12, "start",
           "font-weight=\"bold\"");
    s.arrow(bx + bw / 2, block_y + block_h, left + tiles * cell / 2, merge_y - 4, "#333", 1.2);
    s.close_group();
  }
  s.rect(left + tiles * cell / 2 - 260, merge_y, 520, 56, "#f4f4f4", "#333", 1.2, attr("data-merge", kParts));
  s.text(left + tiles * cell / 2, merge_y + 22, "the combine kernel, one warp per (query, head): step 1's merge", 12,
         "middle", "font-weight=\"bold\"");
  s.text(left + tiles * cell / 2, merge_y + 44, "L = log sum_s exp(L_s),   O = sum_s exp(L_s - L) O_s", 12, "middle");
  s.notes(merge_y + 82, {"Decoding reads every key and value once and does little with each: its time is the bytes of "
                         "K and V over the memory bandwidth.",
                         "Without the split this cache would be one block on one SM."});
  return s.finish();
}

std::string packed_schedule_svg() {
  // A packed batch of causal sequences (queries = keys) as v6's packed twin runs it: the query tiles
  // of 128 rows, their work in key tiles of 128 (packed_key_tiles), the order of packed_schedule
  // and the rounds of persistent blocks (PackedScheduler, one head for the drawing).
  const std::vector<int> lengths = {640, 200, 384, 64, 256};
  constexpr int kBlockM = 128, kBlockN = 128, kBlocks = 3;
  std::vector<std::int32_t> cu = {0};
  for (const int n : lengths) cu.push_back(cu.back() + n);
  const fa2::flash::PackedSchedule schedule =
      fa2::flash::packed_schedule(cu.data(), cu.data(), nullptr, static_cast<int>(lengths.size()),
                                  fa2::flash::PackedMask::causal, kBlockM, kBlockN, 0, 0);
  const auto work = [&](const fa2::flash::PackedTile& t) {
    const fa2::flash::PackedSequence& q = schedule.sequences[static_cast<std::size_t>(t.seq)];
    return fa2::flash::packed_key_tiles(fa2::flash::PackedMask::causal, q, t.q_tile * kBlockM, kBlockM, kBlockN, 0, 0)
        .count();
  };
  constexpr double left = 40, row_px = 0.55, rows_y = 120, order_y = 250, order_unit = 30, unit = 34, lanes_y = 380,
                   lane_h = 40;
  const int total_rows = cu.back();
  Svg s(static_cast<int>(left + total_rows * row_px + 60), 620, "a packed batch's schedule on v6's packed twin");
  s.heading("A packed batch in one launch: the sequences' query tiles, longest sequence first, on persistent blocks",
            {"Causal sequences of " + std::to_string(lengths[0]) + ", " + std::to_string(lengths[1]) + ", " +
                 std::to_string(lengths[2]) + ", " + std::to_string(lengths[3]) + " and " + std::to_string(lengths[4]) +
                 " tokens end to end; query tiles of 128 rows; work: key tiles of 128 "
                 "(packed_key_tiles).",
             "packed_schedule orders them sequence by sequence, the most work first; PackedScheduler deals them to the "
             "blocks in rounds, left to right and back (one head drawn)."});
  // The packed rows: one segment per sequence, cut into its query tiles.
  s.text(left, rows_y - 12,
         "the packed rows (cu_seq_q), coloured by sequence, cut into query tiles; past a "
         "sequence's end a tile reads zeros (ragged TMA view)",
         12);
  for (const fa2::flash::PackedSequence& q : schedule.sequences) {
    const auto b = static_cast<std::size_t>(&q - schedule.sequences.data());
    for (int m = 0; m * kBlockM < q.n_q; ++m) {
      const int rows = std::min(kBlockM, q.n_q - m * kBlockM);
      s.rect(left + (q.q_start + m * kBlockM) * row_px, rows_y, rows * row_px - 1.5, 40, kLight[b % kLight.size()],
             "#555", 0.8, attr("data-seq", static_cast<int>(b)) + " " + attr("data-tile", m));
      s.text(left + (q.q_start + m * kBlockM + rows / 2.0) * row_px, rows_y + 25,
             "s" + std::to_string(b) + "." + std::to_string(m), 10, "middle");
    }
  }
  // The schedule's order: one box per tile, its width its work.
  s.text(left, order_y - 12,
         "packed_schedule's order: sequence by sequence, in each the most key tiles first (widths: key tiles)", 12);
  double x = left;
  for (std::size_t i = 0; i < schedule.tiles.size(); ++i) {
    const fa2::flash::PackedTile& t = schedule.tiles[i];
    const int w = work(t);
    s.rect(x, order_y, w * order_unit - 2, 34, kLight[static_cast<std::size_t>(t.seq) % kLight.size()], "#555", 0.8,
           attr("data-order", static_cast<int>(i)) + " " + attr("data-seq-order", t.seq) + " " + attr("data-work", w));
    s.text(x + w * order_unit / 2.0 - 1, order_y + 21, "s" + std::to_string(t.seq) + "." + std::to_string(t.q_tile), 10,
           "middle");
    x += w * order_unit;
  }
  // The persistent blocks: round k's items k * blocks onwards, in alternating directions.
  s.text(left, lanes_y - 12,
         std::to_string(kBlocks) +
             " persistent blocks (an SM each), item by item; the block with a round's heaviest "
             "item takes the next round's lightest",
         12);
  const fa2::flash::PackedScheduler<true> sched{schedule.tiles.data(), static_cast<int>(schedule.tiles.size()), 1};
  for (int block = 0; block < kBlocks; ++block) {
    double bx = left + 90;
    int total = 0;
    s.text(left, lanes_y + block * (lane_h + 10) + 25, "block " + std::to_string(block), 12);
    for (int k = 0, t = sched.item(0, block, kBlocks); t < sched.items(); t = sched.item(++k, block, kBlocks)) {
      const fa2::flash::WorkTile wt = sched.work_tile(t);
      const fa2::flash::PackedTile& tile = schedule.tiles[static_cast<std::size_t>(t)];
      const int w = work(tile);
      s.rect(bx, lanes_y + block * (lane_h + 10), w * unit - 2, lane_h,
             kLight[static_cast<std::size_t>(wt.seq) % kLight.size()], "#555", 0.8,
             attr("data-block", block) + " " + attr("data-item", t) + " " + attr("data-work", w));
      s.text(bx + w * unit / 2.0 - 1, lanes_y + block * (lane_h + 10) + 25,
             "s" + std::to_string(wt.seq) + "." + std::to_string(wt.q_tile), 10, "middle");
      bx += w * unit;
      total += w;
    }
    s.text(bx + 8, lanes_y + block * (lane_h + 10) + 25, std::to_string(total) + " key tiles", 11, "start",
           attr("data-total", total));
  }
  s.notes(lanes_y + kBlocks * (lane_h + 10) + 24,
          {"Each item reads its sequence's rows where they lie (PackedSequence: first row and length of its "
           "queries and keys); no sequence is padded or copied,",
           "and the short sequences' tiles fill the ends of the rounds instead of each costing its own launch."});
  return s.finish();
}

std::string roofline_svg(const std::vector<RooflinePoint>& points, const CeilingsLine& ceilings, const Problem& p,
                         const std::string& source) {
  constexpr double left = 80, top = 96, pw = 560, ph = 470;
  constexpr double x_lo = 0.0, x_hi = 4.0;  // log10 FLOP/byte: 1 .. 10^4
  constexpr double y_lo = 1.0, y_hi = 3.2;  // log10 TFLOP/s: 10 .. ~1600
  const auto sx = [&](double intensity) { return left + (std::log10(intensity) - x_lo) / (x_hi - x_lo) * pw; };
  const auto sy = [&](double tflops) { return top + ph - (std::log10(tflops) - y_lo) / (y_hi - y_lo) * ph; };
  const double label_x = left + pw + 40;
  Svg s(static_cast<int>(label_x + 270), static_cast<int>(top + ph + 118), "roofline");
  s.heading("Roofline: " + p.label() + ", bf16, every implementation of the run",
            {"x: FLOPs over the bytes the napkin math charges (harness/bench_problem.hpp); y: measured TFLOP/s; "
             "roof: min(matrix rate, bandwidth x intensity).",
             source});
  // Grid and axes.
  for (int e = 0; e <= 4; ++e) {
    for (int m = 1; m <= 9; ++m) {
      const double v = m * std::pow(10.0, e);
      if (std::log10(v) > x_hi + 1e-9) break;
      s.line(sx(v), top, sx(v), top + ph, m == 1 ? "#d8d8d8" : "#f0f0f0", 1);
    }
    s.text(sx(std::pow(10.0, e)), top + ph + 16,
           e == 0   ? "1"
           : e == 1 ? "10"
           : e == 2 ? "100"
           : e == 3 ? "1,000"
                    : "10,000",
           11, "middle");
  }
  for (int e = 1; e <= 3; ++e) {
    for (int m = 1; m <= 9; ++m) {
      const double v = m * std::pow(10.0, e);
      if (std::log10(v) > y_hi + 1e-9) break;
      s.line(left, sy(v), left + pw, sy(v), m == 1 ? "#d8d8d8" : "#f0f0f0", 1);
      if (m == 1 || m == 2 || m == 5) s.text(left - 6, sy(v) + 4, grouped(v), 11, "end");
    }
  }
  s.rect(left, top, pw, ph, "none", "#333", 1.0);
  s.text(left + pw / 2, top + ph + 38, "arithmetic intensity, FLOP per byte of device memory (log)", 12, "middle");
  s.text(22, top + ph / 2, "TFLOP/s (log)", 12, "middle", "transform=\"rotate(-90 22 " + num(top + ph / 2) + ")\"");

  // The roofs.
  const auto roof = [&](const Ceilings& c, const std::string& name, const std::string& stroke, const std::string& dash,
                        double label_dy) {
    const double ridge = c.matrix_tflops / c.memory_tbps;
    const double x_start = std::pow(10.0, y_lo) / c.memory_tbps;  // where the slope enters the plot
    s.polyline({{sx(x_start), sy(std::pow(10.0, y_lo))},
                {sx(ridge), sy(c.matrix_tflops)},
                {sx(std::pow(10.0, x_hi)), sy(c.matrix_tflops)}},
               stroke, 2.0, dash.empty() ? "" : "stroke-dasharray=\"" + dash + "\"");
    s.text(sx(std::pow(10.0, x_hi)) - 6, sy(c.matrix_tflops) + label_dy,
           name + ": " + fixed(c.matrix_tflops, 0) + " TFLOP/s, " + fixed(c.memory_tbps, 2) + " TB/s, ridge " +
               fixed(ridge, 0),
           10.5, "end", "fill=\"" + stroke + "\"");
  };
  roof(ceilings.datasheet, "datasheet", "#999999", "6 4", -6);
  roof(ceilings.measured, "measured", "#222222", "", 15);

  // The points: colours by family; labels in a column right of the plot for the points that share
  // the fused kernels' intensity, next to the point for the others.
  const auto colour = [](const RooflinePoint& q) -> std::string {
    if (q.quoted) return "#7f7f7f";
    if (q.key.rfind("ours", 0) == 0) return "#1f77b4";
    if (q.key == "v2" || q.key == "v3" || q.key == "v4") return "#ff7f0e";
    if (q.key == "v5") return "#006400";
    if (q.key.rfind("v5.", 0) == 0) return "#2ca02c";
    if (q.key.rfind("sdpa", 0) == 0) return "#d62728";
    return "#8c564b";
  };
  double fused_intensity = 0.0;
  for (const auto& q : points) {
    if (q.key != "cublas") {
      fused_intensity = q.intensity();
      break;
    }
  }
  std::vector<const RooflinePoint*> column;
  for (const auto& q : points) {
    if (std::fabs(q.intensity() - fused_intensity) <= 0.01 * fused_intensity) column.push_back(&q);
  }
  std::sort(column.begin(), column.end(),
            [](const RooflinePoint* a, const RooflinePoint* b) { return a->tflops > b->tflops; });
  std::vector<double> label_y;
  constexpr double row = 13.5;
  for (const auto* q : column) label_y.push_back(std::max(sy(q->tflops), label_y.empty() ? top : label_y.back() + row));
  for (std::size_t i = label_y.size(); i-- > 0;) {  // push back up if the column ran past the bottom
    const double limit = i + 1 < label_y.size() ? label_y[i + 1] - row : top + ph + 40;
    label_y[i] = std::min(label_y[i], limit);
  }
  s.open_group("points");
  for (std::size_t i = 0; i < column.size(); ++i) {
    const auto& q = *column[i];
    const double px = sx(q.intensity()), py = sy(q.tflops);
    s.line(px, py, label_x - 4, label_y[i] - 4, "#cccccc", 0.8);
  }
  for (const auto& q : points) {
    const double px = sx(q.intensity()), py = sy(q.tflops);
    s.circle(px, py, 4.5, q.quoted ? "white" : colour(q), colour(q),
             attr("class", "roofline-point") + " " + attr("data-key", q.key) + " " +
                 attr("data-tflops", fixed(q.tflops, 2)) + " " + attr("data-intensity", fixed(q.intensity(), 1)));
    const bool in_column = std::find(column.begin(), column.end(), &q) != column.end();
    if (!in_column) {
      s.text(px + 8, py + 4, q.key + " " + fixed(q.tflops, 1) + " TFLOP/s at " + fixed(q.intensity(), 1) + " FLOP/B",
             11, "start", "fill=\"" + colour(q) + "\"");
    }
  }
  for (std::size_t i = 0; i < column.size(); ++i) {
    const auto& q = *column[i];
    s.text(label_x, label_y[i], q.key + (q.quoted ? " (quoted)" : ""), 11, "start", "fill=\"" + colour(q) + "\"");
    s.text(label_x + 190, label_y[i], fixed(q.tflops, 1), 11, "end", "fill=\"" + colour(q) + "\"");
  }
  s.close_group();
  s.text(label_x, top - 12, "at " + grouped(fused_intensity) + " FLOP/B", 11, "start", "font-weight=\"bold\"");
  s.text(label_x + 190, top - 12, "TFLOP/s", 11, "end", "font-weight=\"bold\"");
  const double fy = top + ph + 64;
  s.notes(fy,
          {"Bytes: a fused kernel moves at least Q, K, V, O (bf16) and L (fp32), " + grouped(min_traffic_bytes(p)) +
               " bytes for " + grouped(attention_flops(p)) + " FLOPs;",
           "cuBLAS attention also writes S and P and reads each back once: 4 x " +
               grouped(static_cast<double>(score_matrix_bytes(p))) + " bytes more.",
           "Every fused point lies far right of the ridge: the roof above it is the matrix rate, and the gap "
           "below it is time lost to latency and instructions, not to memory."},
          11.5, 16);
  return s.finish();
}

namespace {

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path + " (" + what + "): " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

FigureInputs read_inputs(const std::string& csv_path, const std::string& log_path) {
  namespace fs = std::filesystem;
  FigureInputs in;
  try {
    in.results = from_csv(read_text(csv_path, "the results"));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(csv_path + ": " + e.what());
  }
  try {
    in.ceilings = parse_ceilings(read_text(log_path, "the run's log, for its measured ceilings"));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(log_path + ": " + e.what());
  }
  in.source = "Measured: " + fs::path(csv_path).filename().string() + " (TFLOP/s) and " +
              fs::path(log_path).filename().string() + " (ceilings) of results/" +
              fs::path(csv_path).parent_path().filename().string() + "; drawn by step07_figures.";
  return in;
}

std::optional<Problem> find_problem(const std::vector<Measurement>& results, int N, int D, bool causal) {
  for (const auto& m : results) {
    if (m.problem.N == N && m.problem.D == D && m.problem.causal == causal) return m.problem;
  }
  return std::nullopt;
}

std::vector<Figure> all_figures(const FigureInputs& in) {
  const auto points = roofline_points(in.results, in.problem);
  if (points.empty()) {
    throw std::invalid_argument("the results have no ok row for " + in.problem.label() + " (the roofline's problem)");
  }
  return {
      {"fragment_layout.svg", "mma.sync m16n8k16: the lane and register of every element of A, B and C",
       fragment_layout_svg()},
      {"ldmatrix.svg", "ldmatrix.x4: which lane gives which row address, and what each lane receives", ldmatrix_svg()},
      {"swizzle_banks.svg", "a K tile's chunks on the 32 banks: plain (8-way conflict), padded, XOR-swizzled",
       swizzle_banks_svg()},
      {"cp_async_pipeline.svg", "the key loop's cp.async schedule: one stage, two stages, split K/V waits",
       cp_async_pipeline_svg(in.results, in.problem)},
      {"causal_alignment.svg", "top-left and bottom-right causal masks for N_q != N_k", causal_alignment_svg()},
      {"split_kv.svg", "split-KV decoding: a long cache's parts, their blocks and warps, and the merge",
       split_kv_svg()},
      {"packed_schedule.svg",
       "a packed batch's query tiles, the order packed_schedule gives them, and the blocks' rounds",
       packed_schedule_svg()},
      {"roofline.svg", "roofline with " + std::to_string(points.size()) + " measured points at " + in.problem.label(),
       roofline_svg(points, in.ceilings, in.problem, in.source)},
  };
}

}  // namespace fa2::bench::figures
