// step07_figures' tests: every figure is well-formed SVG; the kernels' host-device formulas it
// draws (layouts.hpp: fragment layout, ldmatrix addresses, swizzle, P from S; tile_scheduler.hpp:
// the causal key tiles and v6's persistent schedule) agree with each other and with what GUIDE.md
// says; the pipeline, masks, masked-row arithmetic and roofline say what APPENDIX.md says; and the
// committed SVGs equal what the program writes now. No GPU needed.
//   ctest --test-dir build/<preset> -L figures
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/testing.hpp"
#include "step05_fa2_kernel/tile_dot.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_report.hpp"
#include "step07_benchmark/harness/figures.hpp"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/device/split_kv.hpp"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"

using namespace fa2::bench;
using namespace fa2::bench::figures;

namespace {

const std::string kSource = fa2::testing::source_dir();
const std::string kRecord = "step07_benchmark/results/h200_2026-11-29";
const std::string kFigures = "step07_benchmark/figures";

std::string read(const std::string& relative) {
  std::ifstream in(kSource + "/" + relative, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << kSource << "/" << relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

FigureInputs committed_inputs() {
  auto in = read_inputs(kSource + "/" + kRecord + "/step07_results.csv", kSource + "/" + kRecord + "/step07_log.txt");
  const auto p = find_problem(in.results, 4096, 64, false);
  REQUIRE(p.has_value());
  in.problem = *p;
  return in;
}

// What is wrong with `doc` as an SVG document, or "": an XML prolog, one <svg> root with width,
// height and viewBox, every tag closed in order, attributes name="value" with no '<' inside, and
// text with no bare '<' or '&' outside the five predefined entities.
std::string svg_problem(const std::string& doc) {
  static const std::regex attr_re(R"re(\s+([A-Za-z_:][-A-Za-z0-9_:.]*)="([^"<]*)")re");
  static const std::regex name_re(R"(^/?[A-Za-z_][-A-Za-z0-9_:.]*)");
  if (doc.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0) != 0) return "no XML prolog";
  std::vector<std::string> stack;
  int roots = 0;
  std::size_t i = doc.find("?>") + 2;
  while (i < doc.size()) {
    if (doc[i] == '&') {
      const std::size_t semi = doc.find(';', i);
      if (semi == std::string::npos) return "unterminated entity at " + std::to_string(i);
      const std::string ent = doc.substr(i, semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;") {
        return "bad entity " + ent;
      }
      i = semi + 1;
      continue;
    }
    if (doc[i] != '<') {
      if (stack.empty() && doc[i] != '\n' && doc[i] != ' ') return "text outside the root at " + std::to_string(i);
      ++i;
      continue;
    }
    const std::size_t close = doc.find('>', i);
    if (close == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = doc.substr(i + 1, close - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag at " + std::to_string(i);
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (self_closing) tag.pop_back();
    std::smatch name;
    if (!std::regex_search(tag, name, name_re)) return "no tag name at " + std::to_string(i);
    std::string rest = tag.substr(static_cast<std::size_t>(name.length()));
    // Attributes: the whole rest must be name="value" pairs; values hold no bare '&'.
    std::map<std::string, std::string> attrs;
    for (std::sregex_iterator it(rest.begin(), rest.end(), attr_re), end; it != end; ++it) {
      if (!attrs.emplace((*it)[1].str(), (*it)[2].str()).second) return "attribute repeated in <" + tag + ">";
    }
    std::string left = std::regex_replace(rest, attr_re, "");
    if (left.find_first_not_of(" \n") != std::string::npos) return "malformed attributes in <" + tag + ">";
    for (const auto& [k, v] : attrs) {
      for (std::size_t a = v.find('&'); a != std::string::npos; a = v.find('&', a + 1)) {
        const std::string ent = v.substr(a, v.find(';', a) - a + 1);
        if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;") {
          return "bad entity in attribute " + k;
        }
      }
    }
    const std::string n = name.str();
    if (n[0] == '/') {
      if (stack.empty() || stack.back() != n.substr(1)) {
        return "</" + n.substr(1) + "> closes " + (stack.empty() ? "nothing" : "<" + stack.back() + ">");
      }
      stack.pop_back();
    } else {
      if (stack.empty()) {
        if (++roots > 1) return "more than one root element";
        if (n != "svg") return "the root is <" + n + ">, not <svg>";
        for (const char* a : {"width", "height", "viewBox", "xmlns"}) {
          if (!attrs.count(a)) return std::string("the <svg> root has no ") + a;
        }
        const std::string box = "0 0 " + attrs["width"] + " " + attrs["height"];
        if (attrs["viewBox"] != box) return "viewBox '" + attrs["viewBox"] + "' is not '" + box + "'";
      }
      if (!self_closing) stack.push_back(n);
    }
    i = close + 1;
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  if (roots != 1) return "no <svg> root";
  return "";
}

// Every element of `svg` whose attributes include `must` (a literal attr="value" text), as its tag text.
std::vector<std::string> elements_with(const std::string& svg, const std::string& must) {
  std::vector<std::string> out;
  for (std::size_t at = svg.find(must); at != std::string::npos; at = svg.find(must, at + 1)) {
    const std::size_t b = svg.rfind('<', at), e = svg.find('>', at);
    out.push_back(svg.substr(b, e - b + 1));
  }
  return out;
}

std::string attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const std::size_t b = element.find(key);
  if (b == std::string::npos) return "";
  const std::size_t v = b + key.size();
  return element.substr(v, element.find('"', v) - v);
}

Measurement row(const std::string& key, const Problem& p, double ms, Status status = Status::ok) {
  Measurement m;
  m.key = key;
  m.name = key;
  m.problem = p;
  m.status = status;
  m.ms.median = m.ms.min = m.ms.p20 = m.ms.p80 = ms;
  m.reps = 10;
  m.tflops = tflops_per_s(attention_flops(p), ms);
  return m;
}

}  // namespace

TEST_SUITE("figures") {
  TEST_CASE("figures: every figure is well-formed SVG with a sized root, closed tags and escaped text") {
    CHECK(svg_problem("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg width=\"1\" height=\"1\">\n</svg>\n") ==
          "the <svg> root has no viewBox");
    CHECK(svg_problem("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"x\" width=\"1\" height=\"1\" "
                      "viewBox=\"0 0 1 1\"><text>a < b</text></svg>\n") != "");
    CHECK(svg_problem("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"x\" width=\"1\" height=\"1\" "
                      "viewBox=\"0 0 1 1\"><g></svg>\n") == "</svg> closes <g>");
    const auto figures = all_figures(committed_inputs());
    REQUIRE(figures.size() == 8);
    for (const auto& f : figures) {
      INFO(f.file);
      CHECK(svg_problem(f.svg) == "");
      CHECK(f.svg.find("<title>") != std::string::npos);
      static const std::regex not_a_number(R"(="[^"]*(nan|inf)[^"]*")");  // a coordinate gone wrong
      CHECK_FALSE(std::regex_search(f.svg, not_a_number));
    }
    // Text a figure takes from its inputs is escaped: a key with XML's special characters.
    const Problem p{1, 1, 64, 64, false};
    const auto points = roofline_points({row("a<b&\"c\"", p, 1.0), row("cublas", p, 2.0)}, p);
    const std::string svg = roofline_svg(points, CeilingsLine{{750, 4.25, "measured"}, {989, 4.8, "datasheet"}}, p,
                                         "source <with> & markup");
    CHECK(svg_problem(svg) == "");
    CHECK(svg.find("a&lt;b&amp;&quot;c&quot;") != std::string::npos);
    CHECK(svg.find("source &lt;with&gt; &amp; markup") != std::string::npos);
  }

  TEST_CASE("figures: the mma fragment owners follow the PTX ISA's table (layouts.hpp), each slot exactly once") {
    // A few elements worked by hand from the table (g = lane / 4, c = 2 (lane % 4)).
    CHECK(mma_a_fragment_owner(0, 0) == FragmentSlot{0, 0, 0});
    CHECK(mma_a_fragment_owner(9, 3) == FragmentSlot{5, 1, 1});    // g = 1, c = 2: a[1], high half
    CHECK(mma_a_fragment_owner(2, 12) == FragmentSlot{10, 2, 0});  // g = 2, c + 8 = 12: a[2]
    CHECK(mma_a_fragment_owner(15, 15) == FragmentSlot{31, 3, 1});
    CHECK(mma_b_fragment_owner(9, 2) == FragmentSlot{8, 1, 1});  // n g = 2, k c + 8 + 1 with c = 0: b1
    CHECK(mma_b_fragment_owner(6, 7) == FragmentSlot{31, 0, 0});
    CHECK(mma_c_fragment_owner(0, 0) == FragmentSlot{0, 0, 0});
    CHECK(mma_c_fragment_owner(9, 3) == FragmentSlot{5, 3, 0});  // row g + 8, column c + 1: d[3]
    CHECK(mma_c_fragment_owner(7, 6) == FragmentSlot{31, 0, 0});
    CHECK_THROWS_AS(mma_c_fragment_owner(16, 0), std::out_of_range);

    // Every (lane, register, half) holds exactly one element: 256 of A, 128 of B, 128 of C.
    std::set<std::tuple<int, int, int>> a, b, c;
    for (int r = 0; r < 16; ++r) {
      for (int k = 0; k < 16; ++k) {
        const auto f = mma_a_fragment_owner(r, k);
        a.insert({f.lane, f.reg, f.half});
      }
      for (int n = 0; n < 8; ++n) {
        const auto fb = mma_b_fragment_owner(r, n);
        b.insert({fb.lane, fb.reg, fb.half});
        const auto fc = mma_c_fragment_owner(r, n);
        c.insert({fc.lane, fc.reg, fc.half});
      }
    }
    CHECK(a.size() == 256);
    CHECK(b.size() == 128);
    CHECK(c.size() == 128);

    // The figure draws what the functions say.
    const std::string svg = fragment_layout_svg();
    CHECK(elements_with(svg, "data-m=\"C\" data-row=\"9\" data-col=\"3\" data-lane=\"5\" data-reg=\"3\"").size() == 1);
    CHECK(elements_with(svg, "data-m=\"A\" data-row=\"2\" data-col=\"12\" data-lane=\"10\" data-reg=\"2\"").size() ==
          1);
    CHECK(elements_with(svg, "data-m=\"B\" data-row=\"9\" data-col=\"2\" data-lane=\"8\" data-reg=\"1\"").size() == 1);
    CHECK(elements_with(svg, "data-m=\"A\"").size() == 256);
    CHECK(elements_with(svg, "data-m=\"C\"").size() == 128);
  }

  TEST_CASE("figures: ldmatrix in the kernel's two address orders delivers exactly the mma A and B fragments") {
    // Each order's 32 addresses cover the 16 rows x 2 chunks of the block once, matrix by matrix:
    // lanes 8 i .. 8 i + 7 give the eight rows of matrix i, at one chunk.
    for (LdmatrixOrder order : {LdmatrixOrder::rows_then_chunks, LdmatrixOrder::chunks_then_rows}) {
      std::set<std::pair<int, int>> cells;
      for (int lane = 0; lane < 32; ++lane) {
        const RowChunk a = ldmatrix_address(order, lane);
        cells.insert({a.row, a.chunk});
        CHECK(a.row % 8 == lane % 8);
        CHECK(a.chunk == ldmatrix_address(order, 8 * (lane / 8)).chunk);
      }
      CHECK(cells.size() == 32);
    }
    CHECK(ldmatrix_address(LdmatrixOrder::rows_then_chunks, 8).row == 8);    // matrix 1: rows 8-15, chunk 0
    CHECK(ldmatrix_address(LdmatrixOrder::chunks_then_rows, 8).chunk == 1);  // matrix 1: rows 0-7, chunk 1
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 4; ++i) {
        for (int h = 0; h < 2; ++h) {
          CAPTURE(lane);
          CAPTURE(i);
          CAPTURE(h);
          // Q and P: the A order, no .trans, gives a[i] of the 16 x 16 block.
          const auto qa = ldmatrix_element(LdmatrixOrder::rows_then_chunks, false, lane, i, h);
          CHECK(mma_a_fragment_owner(qa.row, qa.col) == FragmentSlot{lane, i, h});
          // K (stored key x d): the K order gives b0/b1 of keys 0-7 (r[0], r[1]) and 8-15 (r[2], r[3]).
          const auto kb = ldmatrix_element(LdmatrixOrder::chunks_then_rows, false, lane, i, h);
          CHECK(kb.row / 8 == i / 2);
          CHECK(mma_b_fragment_owner(kb.col, kb.row % 8) == FragmentSlot{lane, i % 2, h});
          // V (stored key x d) with .trans in the A order: b0/b1 of d 0-7 (r[0], r[1]) and 8-15.
          const auto vb = ldmatrix_element(LdmatrixOrder::rows_then_chunks, true, lane, i, h);
          CHECK(vb.col / 8 == i / 2);
          CHECK(mma_b_fragment_owner(vb.row, vb.col % 8) == FragmentSlot{lane, i % 2, h});
        }
      }
    }
    // The figure's address cells are the function's.
    const std::string svg = ldmatrix_svg();
    CHECK(
        elements_with(svg, "data-order=\"rows_then_chunks\" data-row=\"8\" data-chunk=\"0\" data-lane=\"8\"").size() ==
        1);
    CHECK(
        elements_with(svg, "data-order=\"chunks_then_rows\" data-row=\"0\" data-chunk=\"1\" data-lane=\"8\"").size() ==
        1);
  }

  TEST_CASE("figures: the S accumulators are already the A fragments of P V, so P never leaves the registers") {
    // accumulate_pv and pack_probabilities pack A register r of keys 16 kk .. 16 kk + 15 from
    // accumulator tile 2 kk + p_source_tile(r), elements p_source_element(r) and the next: for
    // every lane both halves are the (row, key) the A fragment needs there.
    using namespace fa2::flash;
    for (int lane = 0; lane < 32; ++lane) {
      for (int r = 0; r < 4; ++r) {
        for (int half = 0; half < 2; ++half) {
          CAPTURE(lane);
          CAPTURE(r);
          const RowCol need = mma_a_element(lane, r, half);  // (row, key within the 16)
          const RowCol have = mma_c_element(lane, p_source_element(r) + half);
          CHECK(have.row == need.row);
          CHECK(8 * p_source_tile(r) + have.col == need.col);
        }
      }
    }
    for (int row = 0; row < 16; ++row) {
      for (int key = 0; key < 16; ++key) {
        CAPTURE(row);
        CAPTURE(key);
        const FragmentSlot s = mma_c_fragment_owner(row, key % 8);  // in C tile key / 8
        const FragmentSlot p = mma_a_fragment_owner(row, key);
        CHECK(p.lane == s.lane);
        CHECK(p.reg == 2 * (key / 8) + s.reg / 2);
        CHECK(p.half == s.reg % 2);
      }
    }
  }

  TEST_CASE("figures: the swizzle is layouts.hpp's swizzled_chunk and the padding is step05's kSmemPad") {
    CHECK(kStep05Pad == fa2::kSmemPad);
    CHECK(kChunkElems * 2 == 16);  // bf16 in a 16-byte chunk
    CHECK(tile_offset(3, 5, 64, SmemLayout::plain) == 3 * 64 + 5 * 8);
    CHECK(tile_offset(3, 5, 64, SmemLayout::swizzled) == 3 * 64 + (5 ^ 3) * 8);
    CHECK(tile_offset(3, 1, 32, SmemLayout::swizzled) == 3 * 32 + (1 ^ 1) * 8);  // 4 chunks: row >> 1
    CHECK(tile_offset(3, 5, 64, SmemLayout::padded) == 3 * 72 + 5 * 8);
    CHECK(tile_offset(9, 12, 128, SmemLayout::swizzled) == 9 * 128 + (12 ^ 1) * 8);
    // A swizzle only permutes the chunks inside each row: no data is lost or doubled.
    for (int D : {32, 64, 128}) {
      for (int r = 0; r < 64; ++r) {
        std::set<int> chunks;
        for (int c = 0; c < D / 8; ++c) {
          const int off = tile_offset(r, c, D, SmemLayout::swizzled);
          CHECK(off / D == r);
          chunks.insert(off % D / 8);
        }
        CHECK(static_cast<int>(chunks.size()) == D / 8);
      }
    }
  }

  TEST_CASE("figures: with the swizzle the 8 rows an ldmatrix reads never share banks, without it they do") {
    for (int D : {32, 64, 128}) {
      for (int row0 = 0; row0 < 128; row0 += 8) {
        for (int c = 0; c < D / 8; ++c) {
          CAPTURE(D);
          CAPTURE(row0);
          CAPTURE(c);
          CHECK(ldmatrix_conflict_ways(row0, c, D, SmemLayout::swizzled) == 1);
          CHECK(ldmatrix_conflict_ways(row0, c, D, SmemLayout::padded) == 1);
          // Rows of 128 or 256 bytes start on bank 0: all eight on the same four banks. Rows of 64
          // bytes alternate between banks 0-15 and 16-31: four rows on each group of four.
          CHECK(ldmatrix_conflict_ways(row0, c, D, SmemLayout::plain) == (D == 32 ? 4 : 8));
        }
      }
    }
    // The figure frames chunk 0 of rows 0-7 in each layout, with the bank tile_offset gives it.
    const std::string svg = swizzle_banks_svg();
    for (SmemLayout layout : {SmemLayout::plain, SmemLayout::padded, SmemLayout::swizzled}) {
      const auto framed = elements_with(svg, "data-layout=\"" + to_string(layout) + "\"");
      REQUIRE(framed.size() == 8);
      std::set<int> groups;
      for (const auto& e : framed) {
        const int r = std::stoi(attribute(e, "data-row")), bank = std::stoi(attribute(e, "data-bank"));
        CHECK(bank == bank_of(tile_offset(r, 0, 64, layout)));
        groups.insert(bank / 4);
      }
      CHECK(groups.size() == (layout == SmemLayout::plain ? 1u : 8u));
    }
  }

  TEST_CASE(
      "figures: the cp.async schedules wait for their tile, never overwrite a stage in use, and overlap with two "
      "stages") {
    for (Pipeline pl : {Pipeline::one_stage, Pipeline::two_stages, Pipeline::split_waits}) {
      const auto s = pipeline_schedule(pl, 4);
      CAPTURE(static_cast<int>(pl));
      int computes = 0;
      for (const auto& c : s.events) {
        if (c.track != Track::compute) continue;
        ++computes;
        for (const auto& l : s.events) {
          if (l.track != Track::copy) continue;
          const bool needed =
              l.tile == c.tile && l.stage == c.stage && ((l.has_k && c.reads_k) || (l.has_v && c.reads_v));
          if (needed) CHECK(l.t1 <= c.t0);  // the wait: a tile is read only after it has landed
          const bool same_buffer = l.stage == c.stage && ((l.has_k && c.reads_k) || (l.has_v && c.reads_v));
          if (same_buffer && l.tile != c.tile) {
            CHECK((l.t1 <= c.t0 || l.t0 >= c.t1));  // the barrier: no load into a stage while it is read
          }
        }
        // Every compute starts at a barrier.
        CHECK(std::any_of(s.barriers.begin(), s.barriers.end(), [&](const Barrier& b) { return b.t == c.t0; }));
      }
      CHECK(computes == (pl == Pipeline::split_waits ? 8 : 4));
      // Loads overlap compute only when there is a second stage to load into.
      bool overlap = false;
      for (const auto& c : s.events) {
        for (const auto& l : s.events) {
          if (c.track == Track::compute && l.track == Track::copy && l.t0 < c.t1 && c.t0 < l.t1) overlap = true;
        }
      }
      CHECK(overlap == (pl != Pipeline::one_stage));
    }
    CHECK(pipeline_schedule(Pipeline::two_stages, 4).end < pipeline_schedule(Pipeline::one_stage, 4).end);
  }

  TEST_CASE("figures: bottom-right causal masks match the flash-attn library's examples, top-left is k <= q") {
    const auto mask = [](int n_q, int n_k, CausalAlign a) {
      std::string out;
      for (int q = 0; q < n_q; ++q) {
        for (int k = 0; k < n_k; ++k) out += causal_visible(q, k, n_q, n_k, a) ? '1' : '0';
        out += '\n';
      }
      return out;
    };
    // flash_attn_func's docstring (Dao-AILab/flash-attention): seqlen_q = 2, seqlen_k = 5 and 5, 2.
    CHECK(mask(2, 5, CausalAlign::bottom_right) == "11110\n11111\n");
    CHECK(mask(5, 2, CausalAlign::bottom_right) == "00\n00\n00\n10\n11\n");
    CHECK(mask(2, 5, CausalAlign::top_left) == "10000\n11000\n");
    CHECK(mask(5, 2, CausalAlign::top_left) == "10\n11\n11\n11\n11\n");
    CHECK(mask(4, 4, CausalAlign::top_left) == mask(4, 4, CausalAlign::bottom_right));
    // The figure marks the rows with no visible key: two of them (N_q = 5, N_k = 3, bottom-right).
    const std::string svg = causal_alignment_svg();
    CHECK(elements_with(svg, ">no key<").size() == 2);
  }

  TEST_CASE("figures: split-KV deals every key tile to one part and one warp, as the decoding kernel does") {
    const std::string svg = split_kv_svg();
    CHECK(svg_problem(svg).empty());
    const auto tiles = elements_with(svg, "data-tile=");
    REQUIRE(tiles.size() == 38);  // 600 keys in tiles of 16
    std::vector<int> seen(38, 0);
    for (const std::string& e : tiles) {
      const int tile = std::stoi(attribute(e, "data-tile")), part = std::stoi(attribute(e, "data-part"));
      const int warp = std::stoi(attribute(e, "data-warp"));
      ++seen[static_cast<std::size_t>(tile)];
      const fa2::flash::TileRange r = fa2::flash::split_tiles(38, 3, part);
      CHECK(tile >= r.begin);
      CHECK(tile < r.end);
      CHECK((tile - r.begin) % 4 == warp);
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    CHECK(elements_with(svg, "data-block=").size() == 3);
    CHECK(elements_with(svg, "data-merge=\"3\"").size() == 1);
  }

  TEST_CASE("figures: the packed schedule draws every query tile once, sequence by sequence, on blocks within a tile") {
    const std::string svg = packed_schedule_svg();
    CHECK(svg_problem(svg).empty());
    // 640, 200, 384, 64 and 256 rows in tiles of 128: 5 + 2 + 3 + 1 + 2.
    CHECK(elements_with(svg, "data-seq=").size() == 13);
    const auto order = elements_with(svg, "data-order=");
    REQUIRE(order.size() == 13);
    // Sequence by sequence (each one's tiles together), the most key tiles first inside each.
    int previous_seq = -1, previous_work = 0;
    std::vector<int> started;
    for (const std::string& e : order) {
      const int seq = std::stoi(attribute(e, "data-seq-order")), w = std::stoi(attribute(e, "data-work"));
      if (seq != previous_seq) {
        CHECK(std::find(started.begin(), started.end(), seq) == started.end());
        started.push_back(seq);
      } else {
        CHECK(w <= previous_work);
      }
      previous_seq = seq, previous_work = w;
    }
    CHECK(started == std::vector<int>{0, 2, 1, 4, 3});  // 15, 6, 3, 3 and 1 key tiles
    const auto items = elements_with(svg, "data-item=");
    REQUIRE(items.size() == 13);
    std::vector<int> seen(13, 0);
    for (const std::string& e : items) ++seen[static_cast<std::size_t>(std::stoi(attribute(e, "data-item")))];
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    std::vector<int> totals;
    for (const std::string& e : elements_with(svg, "data-total="))
      totals.push_back(std::stoi(attribute(e, "data-total")));
    REQUIRE(totals.size() == 3);
    // 28 key tiles over 3 blocks: the rounds' alternating directions keep them within the heaviest
    // tile's 5 of each other.
    CHECK(totals[0] + totals[1] + totals[2] == 28);
    CHECK(*std::max_element(totals.begin(), totals.end()) - *std::min_element(totals.begin(), totals.end()) <= 5);
  }

  TEST_CASE("figures: a fully masked row gives step05's sentinel an average and v5's -inf a NaN only at the end") {
    const std::vector<float> scores = {0.5f, -1.0f, 2.0f, 0.25f}, values = {1.0f, 2.0f, 3.0f, 6.0f};
    const std::vector<bool> none(4, false), later = {false, false, true, true}, all(4, true);
    // Nothing visible. step05: every key weighs exp(-1e6 - (-1e6)) = 1, the row is the mean of V.
    const auto s05 = online_softmax_row(scores, none, values, 2, MaskStyle::step05_sentinel);
    CHECK(s05.l == 4.0f);
    CHECK(s05.out() == doctest::Approx(3.0));
    // v5: m stays -inf, the guard keeps alpha = 2^(-inf - 0) = 0 and P = 0: l = 0, O = 0, no NaN in
    // the loop; the store multiplies 0 by 1 / 0 = inf, which is NaN.
    const auto v5 = online_softmax_row(scores, none, values, 2, MaskStyle::v5_neg_inf);
    CHECK(v5.m == -std::numeric_limits<float>::infinity());
    CHECK(v5.l == 0.0f);
    CHECK(v5.o == 0.0f);
    CHECK(std::isnan(v5.out()));
    // Without the guard, -inf - (-inf) is NaN already on the first tile.
    CHECK(std::isnan(online_softmax_row(scores, none, values, 2, MaskStyle::v5_neg_inf_without_guard).l));
    // A first tile with nothing visible, then real keys: both kernels recover the exact softmax; the
    // unguarded one does not.
    const double e2 = std::exp(2.0), e025 = std::exp(0.25);
    const double expected = (e2 * 3.0 + e025 * 6.0) / (e2 + e025);
    CHECK(online_softmax_row(scores, later, values, 2, MaskStyle::step05_sentinel).out() == doctest::Approx(expected));
    CHECK(online_softmax_row(scores, later, values, 2, MaskStyle::v5_neg_inf).out() == doctest::Approx(expected));
    CHECK(std::isnan(online_softmax_row(scores, later, values, 2, MaskStyle::v5_neg_inf_without_guard).out()));
    // When key 0 is visible (every row of our top-left kernels) all three agree.
    double num = 0.0, den = 0.0;
    for (std::size_t k = 0; k < 4; ++k) {
      num += std::exp(static_cast<double>(scores[k])) * static_cast<double>(values[k]);
      den += std::exp(static_cast<double>(scores[k]));
    }
    for (MaskStyle st : {MaskStyle::step05_sentinel, MaskStyle::v5_neg_inf, MaskStyle::v5_neg_inf_without_guard}) {
      CHECK(online_softmax_row(scores, all, values, 2, st).out() == doctest::Approx(num / den));
    }
  }

  TEST_CASE("figures: the roofline's points are the CSV's rows, at the napkin math's intensity") {
    const Problem p{4, 8, 1024, 64, false}, other{4, 8, 2048, 64, false};
    std::vector<Measurement> rows = {row("ours16", p, 0.3), row("v5", p, 0.04), row("sdpa", p, 0.02),
                                     row("cublas", p, 0.15), row("v5", other, 0.1)};
    Measurement failed = row("v4", p, 0.1, Status::failed);
    rows.push_back(failed);
    // Through the CSV, as step07_figures reads it.
    const auto points = roofline_points(from_csv(to_csv(rows, "test GPU")), p);
    REQUIRE(points.size() == 3);  // not sdpa (drawn as its forced backend), not the failed row, not N = 2048
    CHECK(points[0].key == "ours16");
    CHECK(points[1].key == "v5");
    CHECK(points[2].key == "cublas");
    CHECK(points[1].tflops == doctest::Approx(rows[1].tflops).epsilon(1e-3));
    CHECK(points[0].intensity() == doctest::Approx(attention_flops(p) / min_traffic_bytes(p)));
    CHECK(points[2].bytes == doctest::Approx(min_traffic_bytes(p) + 4.0 * static_cast<double>(score_matrix_bytes(p))));

    // The committed run at N = 4096, D = 64: 30 points, v5 at 265.01 TFLOP/s and 2032 FLOP/byte.
    const auto in = committed_inputs();
    const auto committed = roofline_points(in.results, in.problem);
    CHECK(committed.size() == 30);
    const auto v5 = std::find_if(committed.begin(), committed.end(), [](const auto& q) { return q.key == "v5"; });
    REQUIRE(v5 != committed.end());
    CHECK(v5->tflops == doctest::Approx(265.01));
    CHECK(v5->intensity() == doctest::Approx(2032.1).epsilon(1e-4));
    // The figure has one marker per point, carrying the CSV's number.
    const std::string svg = all_figures(in).back().svg;
    const auto markers = elements_with(svg, "class=\"roofline-point\"");
    CHECK(markers.size() == committed.size());
    CHECK(elements_with(svg, "data-key=\"v5\" data-tflops=\"265.01\" data-intensity=\"2032.1\"").size() == 1);
    CHECK(elements_with(svg, "data-key=\"cublas\" data-tflops=\"72.49\" data-intensity=\"31.5\"").size() == 1);
    CHECK_THROWS_AS(all_figures(FigureInputs{rows, in.ceilings, Problem{4, 8, 333, 64, false}, ""}),
                    std::invalid_argument);
  }

  TEST_CASE("figures: the ceilings come from the run's log, measured and datasheet") {
    const auto c = parse_ceilings(read(kRecord + "/step07_log.txt"));
    CHECK(c.measured.matrix_tflops == 750.0);
    CHECK(c.measured.memory_tbps == 4.25);
    CHECK(c.datasheet.matrix_tflops == 989.0);
    CHECK(c.datasheet.memory_tbps == 4.8);
    CHECK_THROWS_WITH_AS(parse_ceilings("no such line\n"), doctest::Contains("ceilings: bf16 GEMM"),
                         std::invalid_argument);
  }

  TEST_CASE("figures: the committed SVGs equal what step07_figures writes now") {
    const auto figures = all_figures(committed_inputs());
    for (const auto& f : figures) {
      std::ifstream in(kSource + "/" + kFigures + "/" + f.file, std::ios::binary);
      std::stringstream text;
      if (in) text << in.rdbuf();
      // The first line that differs, rather than two whole documents.
      const std::string committed = text.str();
      std::size_t at = 0;
      while (at < committed.size() && at < f.svg.size() && committed[at] == f.svg[at]) ++at;
      const bool same = committed == f.svg;
      const std::size_t line_start = at == 0 ? std::string::npos : f.svg.rfind('\n', at - 1);
      const std::size_t from = line_start == std::string::npos ? 0 : line_start + 1;
      CHECK_MESSAGE(same,
                    kFigures << "/" << f.file << " is missing or differs from what step07_figures writes now, "
                             << "from byte " << at << "; the program writes there:\n  "
                             << f.svg.substr(from, f.svg.find('\n', at) - from) << "\n"
                             << "Regenerate the figures (from the repository root):\n  build/<preset>/step07_benchmark/"
                             << "step07_figures " << kRecord << "/step07_results.csv " << kFigures);
    }
  }
}
