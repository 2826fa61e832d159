// Tests of step02_measure's parts: the heap meter counts every byte exactly, naive attention is
// right, the tiled forward's peak grows like N and the naive one's like N^2, and the CSV and
// SVG say what was measured.
//   cmake --build --preset cpu-only --target step02_tests && ctest --preset cpu-only -L step02
#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/svg_plot.hpp"
#include "common/testing.hpp"
#include "step02_tiled_cpu/heap_meter.hpp"
#include "step02_tiled_cpu/memory_sweep.hpp"
#include "step02_tiled_cpu/naive_attention.hpp"

namespace {

using fa2::index_t;
using fa2::tiled::HeapPeak;
using fa2::tiled::measure_heap;
using fa2::tiled::SweepOptions;
using fa2::tiled::SweepPoint;

// The compiler may drop a malloc whose block is never used, and with it what the test wants to
// count. Calls through these volatile pointers cannot be dropped.
void* (*volatile opaque_malloc)(std::size_t) = std::malloc;
void (*volatile opaque_free)(void*) = std::free;
void* volatile sink = nullptr;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every element that opens is closed, in order: "" or what is wrong. Enough for the writer's
// output, which has no comments, CDATA or '>' inside attribute values.
std::string unbalanced_tags(const std::string& doc) {
  std::vector<std::string> open;
  for (std::size_t at = doc.find('<'); at != std::string::npos; at = doc.find('<', at + 1)) {
    const std::size_t end = doc.find('>', at);
    if (end == std::string::npos) return "a '<' is never closed";
    const std::string tag = doc.substr(at + 1, end - at - 1);
    if (tag.empty() || tag[0] == '?') continue;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "</" + tag.substr(1) + "> closes nothing open";
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> is never closed";
}

SweepOptions small_sweep(index_t D) {
  SweepOptions o;
  o.batch = 1;
  o.head_dim = D;
  o.repeats = 1;  // these tests count bytes; the time is not looked at
  return o;
}

// A point with the given peaks (bytes) and median times (ms), for the writers' tests.
SweepPoint synthetic_point(index_t N, std::int64_t tiled_peak, std::int64_t naive_peak, double tiled_ms,
                           double naive_ms) {
  SweepPoint p;
  p.N = N;
  p.tiled.heap.peak_bytes = tiled_peak;
  p.naive.heap.peak_bytes = naive_peak;
  p.tiled.ms_median = tiled_ms;
  p.naive.ms_median = naive_ms;
  return p;
}

std::int64_t output_bytes(index_t B, index_t N, index_t D) {
  return B * N * (D + 1) * static_cast<std::int64_t>(sizeof(float));  // O (B, N, D) and L (B, N)
}

}  // namespace

TEST_SUITE("memory") {
  TEST_CASE("the heap meter counts malloc and operator new by the bytes requested, and only blocks of its own") {
    REQUIRE(fa2::tiled::heap_meter_available());

    // Three mallocs, one free in between: at most 100 + 200 live at once, 250 at the end.
    void* a = nullptr;
    void* b = nullptr;
    void* c = nullptr;
    const HeapPeak three = measure_heap([&] {
      a = opaque_malloc(100);
      b = opaque_malloc(200);
      opaque_free(a);
      c = opaque_malloc(50);
    });
    CHECK(three.peak_bytes == 300);
    CHECK(three.live_bytes == 250);
    CHECK(three.allocations == 3);
    opaque_free(b);
    opaque_free(c);

    // operator new (std::vector) goes through malloc too.
    const HeapPeak vector = measure_heap([] {
      std::vector<char> v(1000);
      sink = v.data();
    });
    CHECK(vector.peak_bytes == 1000);
    CHECK(vector.live_bytes == 0);

    // Eigen's matrices come from malloc directly (at most one alignment's worth of padding).
    const HeapPeak eigen = measure_heap([] {
      Eigen::MatrixXf m(100, 100);
      sink = m.data();
    });
    CHECK(eigen.peak_bytes >= 100 * 100 * 4);
    CHECK(eigen.peak_bytes <= 100 * 100 * 4 + 64);

    // A block from before the measurement is not counted, not even when it is freed inside.
    char* before = new char[5000];
    sink = before;
    const HeapPeak old_block = measure_heap([&] {
      delete[] before;
      sink = opaque_malloc(10);
      opaque_free(sink);
    });
    CHECK(old_block.peak_bytes == 10);
    CHECK(old_block.live_bytes == 0);  // not -5000

    // calloc, realloc and the aligned allocations.
    const HeapPeak others = measure_heap([] {
      void* z = std::calloc(10, 30);  // 300
      sink = z;
      void* r = std::realloc(z, 1000);  // counted as 300 freed, 1000 allocated
      sink = r;
      void* aligned = nullptr;
      REQUIRE(posix_memalign(&aligned, 64, 128) == 0);
      CHECK(reinterpret_cast<std::uintptr_t>(aligned) % 64 == 0);
      sink = aligned;
      std::free(aligned);
      std::free(r);
    });
    CHECK(others.peak_bytes == 1000 + 128);
    CHECK(others.allocations == 3);
    CHECK(others.live_bytes == 0);
  }

  TEST_CASE("one measurement at a time, and a call that throws stops the meter") {
    CHECK_THROWS_AS(measure_heap([] { measure_heap([] {}); }), std::logic_error);
    CHECK_THROWS_AS(measure_heap([] { throw std::runtime_error("inside"); }), std::runtime_error);
    const HeapPeak after = measure_heap([] { sink = opaque_malloc(64); });
    opaque_free(sink);
    CHECK(after.peak_bytes == 64);
  }

  TEST_CASE_TEMPLATE("naive attention matches the float64 reference, causal or not, with Nq != Nk", T, float, double) {
    fa2::Rng rng(fa2::fresh_seed());
    CAPTURE(rng.seed());
    const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
    for (const auto [B, Nq, Nk, D, Dv] :
         {std::array<index_t, 5>{2, 37, 53, 16, 8}, std::array<index_t, 5>{1, 64, 64, 32, 32},
          std::array<index_t, 5>{1, 70, 20, 8, 12}, std::array<index_t, 5>{1, 1, 1, 1, 1}}) {
      const auto Q = fa2::random_normal<T, 3>({B, Nq, D}, rng);
      const auto K = fa2::random_normal<T, 3>({B, Nk, D}, rng);
      const auto V = fa2::random_normal<T, 3>({B, Nk, Dv}, rng);
      for (bool causal : {false, true}) {
        CAPTURE(causal);
        const auto out = fa2::tiled::naive_attention_forward<T>(Q.cview(), K.cview(), V.cview(), causal);
        const auto ref = fa2::reference_attention<T>(Q.cview(), K.cview(), V.cview(), causal);
        FA2_CHECK_CLOSE(out.O.cview(), ref.O.cview(), (fa2::Tolerance{tol, tol}), "O");
        FA2_CHECK_CLOSE(out.L.cview(), ref.L.cview(), (fa2::Tolerance{tol, tol}), "L");
      }
    }
  }

  TEST_CASE("naive attention refuses a last axis that is not contiguous, naming the argument") {
    auto Q = fa2::Tensor<float, 3>::strided({1, 4, 8}, {64, 16, 2});
    const fa2::Tensor<float, 3> K({1, 4, 8}), V({1, 4, 8});
    CHECK_THROWS_WITH_AS(fa2::tiled::naive_attention_forward<float>(Q.cview(), K.cview(), V.cview(), false),
                         doctest::Contains("Q: the last axis must be contiguous"), std::invalid_argument);
  }

  TEST_CASE("the tiled forward's peak grows like N: doubling N at most doubles it, the part beyond O and L stays") {
    const SweepOptions o = small_sweep(16);
    std::vector<SweepPoint> points;
    for (index_t N : {64, 128, 256, 512}) points.push_back(fa2::tiled::measure_point(o, N));
    for (const auto& p : points) {
      CAPTURE(p.N);
      CHECK(p.tiled.output_bytes == output_bytes(1, p.N, 16));
      CHECK(p.tiled.heap.live_bytes == p.tiled.output_bytes);  // only O and L outlive the call
      CHECK(p.tiled.heap.peak_bytes > p.tiled.output_bytes);   // and the tiles were counted
    }
    for (std::size_t i = 1; i < points.size(); ++i) {
      CAPTURE(points[i].N);
      CHECK(points[i].tiled.heap.peak_bytes > points[i - 1].tiled.heap.peak_bytes);
      CHECK(points[i].tiled.heap.peak_bytes <= 2 * points[i - 1].tiled.heap.peak_bytes);
      // What the loops hold besides the outputs is a few tiles of B_q x B_k, B_q x D, B_k x D:
      // it does not depend on N at all.
      CHECK(points[i].tiled.extra_bytes() == points[0].tiled.extra_bytes());
    }
    CHECK(points[0].tiled.extra_bytes() < 16 * 1024);
  }

  // N <= 128 keeps Eigen's packing buffers of the products on the stack on every machine (they
  // go to the heap above 128 KiB, and their size depends on the CPU's caches): then the naive
  // peak is the score matrix plus terms linear in N, exactly.
  TEST_CASE("the naive peak grows like N^2: it holds the N x N scores, and doubling N nearly quadruples it") {
    const SweepOptions o = small_sweep(8);
    std::vector<SweepPoint> points;
    for (index_t N : {32, 64, 128}) points.push_back(fa2::tiled::measure_point(o, N));
    for (const auto& p : points) {
      CAPTURE(p.N);
      const std::int64_t scores = p.N * p.N * static_cast<std::int64_t>(sizeof(float));
      CHECK(p.naive.heap.live_bytes == p.naive.output_bytes);
      CHECK(p.naive.heap.peak_bytes >= scores + p.naive.output_bytes);
      CHECK(p.naive.extra_bytes() >= scores);
      CHECK(p.naive.extra_bytes() < 2 * scores);  // one score matrix, not two (see naive_attention.cpp)
    }
    const auto peak_ratio = [](const SweepPoint& small, const SweepPoint& large) {
      return static_cast<double>(large.naive.heap.peak_bytes) / static_cast<double>(small.naive.heap.peak_bytes);
    };
    CHECK(peak_ratio(points[1], points[2]) >= 3.5);  // 4 N^2 against the linear terms: 3.7 at N = 64 -> 128
    CHECK(peak_ratio(points[1], points[2]) <= 4.0);
    CHECK(peak_ratio(points[0], points[1]) >= 3.0);
    // f(4N) - 3 f(2N) + 2 f(N) removes every a N + b term and leaves 6 c N^2: for the naive peak,
    // c = sizeof(float), the score matrix and nothing else quadratic; for the tiled peak, c = 0.
    const auto second_difference = [&](auto peak) {
      return peak(points[2]) - 3 * peak(points[1]) + 2 * peak(points[0]);
    };
    CHECK(second_difference([](const SweepPoint& p) { return p.naive.heap.peak_bytes; }) ==
          6 * static_cast<std::int64_t>(sizeof(float)) * 32 * 32);
    CHECK(second_difference([](const SweepPoint& p) { return p.tiled.heap.peak_bytes; }) == 0);
  }

  TEST_CASE("the same measurement twice counts the same bytes, and the two methods agree on O") {
    SweepOptions o = small_sweep(16);
    o.causal = true;
    const SweepPoint first = fa2::tiled::measure_point(o, 96);
    const SweepPoint second = fa2::tiled::measure_point(o, 96);
    CHECK(first.tiled.heap.peak_bytes == second.tiled.heap.peak_bytes);
    CHECK(first.tiled.heap.allocations == second.tiled.heap.allocations);
    CHECK(first.naive.heap.peak_bytes == second.naive.heap.peak_bytes);
    CHECK(first.max_abs_diff < 1e-5);
    CHECK(first.tiled.ms.size() == 1);
    CHECK(first.tiled.ms_median > 0.0);
  }

  TEST_CASE("the CSV has the header and one row per method and N with the measured numbers") {
    SweepOptions o = small_sweep(64);
    o.causal = true;
    o.repeats = 3;
    SweepPoint p;
    p.N = 256;
    p.tiled.heap = HeapPeak{70000, 66560, 900};
    p.tiled.output_bytes = 66560;
    p.tiled.ms_median = 1.5, p.tiled.ms_min = 1.25, p.tiled.ms_max = 2;
    p.naive.heap = HeapPeak{340000, 66560, 7};
    p.naive.output_bytes = 66560;
    p.naive.ms_median = 0.75, p.naive.ms_min = 0.5, p.naive.ms_max = 1;
    p.max_abs_diff = 2.5e-7;
    const std::string csv = fa2::tiled::to_csv(o, {p});
    CHECK(csv == std::string(fa2::tiled::kCsvHeader) + "\n" +
                     "tiled,256,1,64,true,float32,16,16,3,1.5,1.25,2,70000,66560,3440,900,2.5e-07\n"
                     "naive,256,1,64,true,float32,,,3,0.75,0.5,1,340000,66560,273440,7,2.5e-07\n");
  }

  TEST_CASE("the table prints bytes readably and the log-log slopes of the two largest N") {
    CHECK(fa2::tiled::format_bytes(812) == "812 B");
    CHECK(fa2::tiled::format_bytes(65536) == "64.0 KiB");
    CHECK(fa2::tiled::format_bytes(std::int64_t{128} << 20) == "128.0 MiB");
    CHECK(fa2::tiled::loglog_slope(256, 3, 512, 12) == doctest::Approx(2.0));
    CHECK_THROWS_AS(fa2::tiled::loglog_slope(256, 0, 512, 12), std::invalid_argument);

    std::vector<SweepPoint> points;
    for (index_t N : {1024, 2048}) {
      const double n = static_cast<double>(N);
      points.push_back(synthetic_point(N, 1000 * N, 4 * N * N, 1e-6 * n * n, 2e-6 * n * n));  // slopes 1, 2; 2, 2
    }
    const std::string slopes = fa2::tiled::table_slopes(points);
    CHECK(slopes.find("from N = 1024 to 2048") != std::string::npos);
    CHECK(slopes.find("peak heap  tiled 1.00, naive 2.00") != std::string::npos);
    CHECK(slopes.find("time       tiled 2.00, naive 2.00") != std::string::npos);
    CHECK(fa2::tiled::table_slopes({points[0]}).empty());
    const std::string rows = fa2::tiled::table_rows(points[1]);
    CHECK(count(rows, "\n") == 2);
    CHECK(rows.find("  2048  tiled ") == 0);
    CHECK(rows.find("2.0 MiB") != std::string::npos);   // tiled: 1000 * 2048 bytes
    CHECK(rows.find("16.0 MiB") != std::string::npos);  // naive: 4 * 2048^2 bytes
  }

  TEST_CASE("the chart has two log-log panels, a series per method and guides of slopes 1 and 2") {
    std::vector<SweepPoint> points;
    for (index_t N : {256, 512, 1024}) {
      const double n = static_cast<double>(N);
      points.push_back(synthetic_point(N, 100 * N, 4 * N * N, 1e-5 * n * n, 2e-5 * n * n));  // 0.024 MiB .. 4 MiB
    }
    const fa2::svg::Chart chart = fa2::tiled::memory_time_chart(points, "a \"test\" run");
    CHECK(chart.y_scale == fa2::svg::YScale::log10);
    CHECK(chart.y_per_panel);
    REQUIRE(chart.panels.size() == 2);
    CHECK(chart.panels[0].y_label == "MiB (log10 scale)");
    CHECK(chart.panels[1].y_label == "ms, median (log10 scale)");
    for (const auto& panel : chart.panels) {
      REQUIRE(panel.series.size() == 4);  // tiled, naive, slope 1, slope 2
      const auto& tiled = panel.series[0].points;
      const auto& naive = panel.series[1].points;
      const auto& slope1 = panel.series[2].points;
      const auto& slope2 = panel.series[3].points;
      REQUIRE(slope1.size() == 3);
      REQUIRE(slope2.size() == 3);
      CHECK(slope1[0].second == tiled[0].second);  // each guide starts on its method's first point
      CHECK(slope2[0].second == naive[0].second);
      CHECK(slope1[2].second == doctest::Approx(4 * tiled[0].second));   // N x 4 -> x 4
      CHECK(slope2[2].second == doctest::Approx(16 * naive[0].second));  // N x 4 -> x 16
    }
    CHECK(chart.panels[0].series[1].points[2].second == doctest::Approx(4.0));  // naive at N = 1024: 4 MiB

    const std::string doc = fa2::svg::render(chart);
    CHECK(unbalanced_tags(doc) == "");
    CHECK(count(doc, "<polyline") == 8);         // 4 series x 2 panels
    CHECK(count(doc, "stroke-dasharray") == 6);  // the 2 guides in 2 panels, and their 2 legend lines
    CHECK(count(doc, "<circle") == 4 * 3);       // a marker per measured point, none on the guides
    CHECK(doc.find("a &quot;test&quot; run") != std::string::npos);
    CHECK(doc.find(">MiB (log10 scale)</text>") != std::string::npos);
    CHECK(doc.find(">ms, median (log10 scale)</text>") != std::string::npos);
    CHECK(doc.find(">0.01</text>") != std::string::npos);  // memory decades: 0.01 .. 10 MiB
    CHECK(doc.find(">10</text>") != std::string::npos);
    CHECK(doc.find(">1k</text>") != std::string::npos);  // x: N = 256 .. 1024 on a log2 axis
  }
}
