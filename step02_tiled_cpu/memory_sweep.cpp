// Step 2's measurement (see memory_sweep.hpp): each method runs once with the heap meter on,
// then `repeats` times with a stopwatch; the two outputs are compared before any number is kept.
//   Program: build/cpu-only/step02_tiled_cpu/step02_measure; tests: ctest --preset cpu-only -L step02
#include "step02_tiled_cpu/memory_sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/compare.hpp"
#include "common/random.hpp"
#include "common/tensor.hpp"
#include "step02_tiled_cpu/naive_attention.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"

namespace fa2::tiled {
namespace {

// Both methods compute in T, in different orders; a slip in either is an error of order 1.
template <class T>
constexpr Tolerance kAgreement = std::is_same_v<T, float> ? Tolerance{1e-4, 1e-4} : Tolerance{1e-10, 1e-10};

// One metered call, then `repeats` timed ones. `call` returns the ForwardResult; the metered
// call's result is handed back for the comparison of the two methods.
template <class T, class Call>
ForwardResult<T> run_method(const Call& call, int repeats, MethodResult& result) {
  std::optional<ForwardResult<T>> first;
  result.heap = measure_heap([&] { first.emplace(call()); });
  result.ms.clear();
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const ForwardResult<T> out = call();
    const auto stop = std::chrono::steady_clock::now();
    result.ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::vector<double> sorted = result.ms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  result.ms_min = sorted.front();
  result.ms_max = sorted.back();
  result.ms_median = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  return std::move(*first);
}

template <class T>
SweepPoint measure_point_as(const SweepOptions& o, index_t N) {
  Rng rng(o.seed + static_cast<std::uint64_t>(N));  // the same inputs for both methods
  // Allocated before the meter starts, so the inputs are never part of a method's peak.
  const auto Q = random_normal<T, 3>({o.batch, N, o.head_dim}, rng);
  const auto K = random_normal<T, 3>({o.batch, N, o.head_dim}, rng);
  const auto V = random_normal<T, 3>({o.batch, N, o.head_dim}, rng);
  const TileOptions tiles{.block_q = o.block_q, .block_k = o.block_k, .causal = o.causal};

  SweepPoint p;
  p.N = N;
  const std::int64_t output_bytes = o.batch * N * (o.head_dim + 1) * static_cast<std::int64_t>(sizeof(T));
  p.tiled.output_bytes = p.naive.output_bytes = output_bytes;  // O (B, N, D) and L (B, N), both in T
  const auto tiled = run_method<T>([&] { return tiled_attention_forward<T>(Q.cview(), K.cview(), V.cview(), tiles); },
                                   o.repeats, p.tiled);
  const auto naive = run_method<T>(
      [&] { return naive_attention_forward<T>(Q.cview(), K.cview(), V.cview(), o.causal); }, o.repeats, p.naive);

  const CloseReport agree = compare_close(tiled.O.cview(), naive.O.cview(), kAgreement<T>, "O");
  p.max_abs_diff = agree.max_abs_error;
  if (!agree.ok) {
    throw std::runtime_error("N = " + std::to_string(N) +
                             ": the tiled and the naive outputs disagree: " + agree.summary());
  }
  return p;
}

std::string fixed(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

constexpr const char* kMethodNames[] = {"tiled", "naive"};  // the table's and the CSV's names, in row order

}  // namespace

const char* dtype_label(Dtype dtype) {
  return dtype == Dtype::float32 ? "float32" : "float64";
}

SweepPoint measure_point(const SweepOptions& options, index_t N) {
  if (options.repeats < 1) {
    throw std::invalid_argument("repeats: got " + std::to_string(options.repeats) + ", allowed >= 1");
  }
  return options.dtype == Dtype::float32 ? measure_point_as<float>(options, N) : measure_point_as<double>(options, N);
}

std::vector<SweepPoint> run_sweep(const SweepOptions& options, const std::function<void(const SweepPoint&)>& on_point) {
  std::vector<SweepPoint> points;
  for (index_t N : options.n_values) {
    points.push_back(measure_point(options, N));
    if (on_point) on_point(points.back());
  }
  return points;
}

double loglog_slope(double x0, double y0, double x1, double y1) {
  if (!(x0 > 0 && y0 > 0 && x1 > 0 && y1 > 0) || x0 == x1) {
    throw std::invalid_argument("loglog_slope: needs positive values and two different x");
  }
  return std::log(y1 / y0) / std::log(x1 / x0);
}

std::string format_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (std::llabs(bytes) < 1024) return std::to_string(bytes) + " B";
  if (std::llabs(bytes) < 1024 * 1024) return fixed("%.1f KiB", b / 1024.0);
  return fixed("%.1f MiB", b / (1024.0 * 1024.0));
}

std::string table_header(const SweepOptions& o) {
  std::ostringstream s;
  s << "B = " << o.batch << ", D = " << o.head_dim << ", " << dtype_label(o.dtype) << ", "
    << (o.causal ? "causal" : "non-causal") << "; tiled: " << o.block_q << " x " << o.block_k
    << " tiles; naive: the whole N x N score matrix.\n"
    << "peak heap: the most bytes the call held at once (O and L included, the inputs not); beyond O, L:\n"
    << "that peak minus the outputs; allocs: heap blocks the call allocated; ms: median (min .. max) of " << o.repeats
    << (o.repeats == 1 ? " call.\n\n" : " calls.\n\n")
    << "     N  method   peak heap  beyond O, L  allocs   ms median  (min .. max)              max|O_tiled - "
       "O_naive|\n";
  return s.str();
}

std::string table_rows(const SweepPoint& p) {
  std::string out;
  for (int m = 0; m < 2; ++m) {
    const MethodResult& r = m == 0 ? p.tiled : p.naive;
    const std::string spread = "(" + fixed("%.3f", r.ms_min) + " .. " + fixed("%.3f", r.ms_max) + ")";
    char line[256];
    std::snprintf(line, sizeof line, "%6lld  %-6s %11s  %11s  %6lld  %10.3f  %s", static_cast<long long>(p.N),
                  kMethodNames[m], format_bytes(r.heap.peak_bytes).c_str(), format_bytes(r.extra_bytes()).c_str(),
                  static_cast<long long>(r.heap.allocations), r.ms_median, spread.c_str());
    out += line;
    if (m == 1)
      out += std::string(spread.size() < 24 ? 24 - spread.size() : 0, ' ') + " " + fixed("%.1e", p.max_abs_diff);
    out += "\n";
  }
  return out;
}

std::string table_slopes(const std::vector<SweepPoint>& points) {
  if (points.size() < 2) return "";
  std::vector<SweepPoint> by_n = points;
  std::sort(by_n.begin(), by_n.end(), [](const SweepPoint& x, const SweepPoint& y) { return x.N < y.N; });
  const SweepPoint& a = by_n[by_n.size() - 2];
  const SweepPoint& b = by_n[by_n.size() - 1];
  if (a.N == b.N) return "";
  const double x0 = static_cast<double>(a.N), x1 = static_cast<double>(b.N);
  const auto peak = [&](const MethodResult& r0, const MethodResult& r1) {
    return fixed(
        "%.2f", loglog_slope(x0, static_cast<double>(r0.heap.peak_bytes), x1, static_cast<double>(r1.heap.peak_bytes)));
  };
  const auto time = [&](const MethodResult& r0, const MethodResult& r1) {
    return fixed("%.2f", loglog_slope(x0, r0.ms_median, x1, r1.ms_median));
  };
  std::ostringstream s;
  s << "\nlog-log slopes from N = " << a.N << " to " << b.N << " (1: grows like N, 2: like N^2):\n"
    << "  peak heap  tiled " << peak(a.tiled, b.tiled) << ", naive " << peak(a.naive, b.naive) << "\n"
    << "  time       tiled " << time(a.tiled, b.tiled) << ", naive " << time(a.naive, b.naive) << "\n";
  return s.str();
}

std::string to_csv(const SweepOptions& o, const std::vector<SweepPoint>& points) {
  std::ostringstream s;
  s << kCsvHeader << '\n';
  for (const auto& p : points) {
    for (int m = 0; m < 2; ++m) {
      const MethodResult& r = m == 0 ? p.tiled : p.naive;
      s << kMethodNames[m] << ',' << p.N << ',' << o.batch << ',' << o.head_dim << ',' << (o.causal ? "true" : "false")
        << ',' << dtype_label(o.dtype) << ',';
      if (m == 0)
        s << o.block_q << ',' << o.block_k;
      else
        s << ',';
      s << ',' << o.repeats << ',' << fixed("%.6g", r.ms_median) << ',' << fixed("%.6g", r.ms_min) << ','
        << fixed("%.6g", r.ms_max) << ',' << r.heap.peak_bytes << ',' << r.output_bytes << ',' << r.extra_bytes() << ','
        << r.heap.allocations << ',' << fixed("%.3g", p.max_abs_diff) << '\n';
    }
  }
  return s.str();
}

svg::Chart memory_time_chart(const std::vector<SweepPoint>& points, const std::string& subtitle) {
  svg::Chart chart;
  chart.title = kChartTitle;
  chart.subtitle = subtitle;
  chart.x_label = "sequence length N (log2 scale)";
  chart.y_scale = svg::YScale::log10;
  chart.y_per_panel = true;

  constexpr double kMiB = 1024.0 * 1024.0;
  const auto memory = [&](const MethodResult& r) { return static_cast<double>(r.heap.peak_bytes) / kMiB; };
  const auto time = [](const MethodResult& r) { return r.ms_median; };
  const auto panel = [&](std::string title, std::string y_label, const auto& value) {
    svg::Panel out{std::move(title), {}, std::move(y_label)};
    svg::Series tiled{"tiled forward (step 2)", svg::palette(0), false, {}};
    svg::Series naive{"naive: the N x N scores", svg::palette(1), false, {}};
    for (const auto& p : points) {
      const double n = static_cast<double>(p.N);
      tiled.points.emplace_back(n, value(p.tiled));
      naive.points.emplace_back(n, value(p.naive));
    }
    // The guides start at the smallest N, one from tiled's point, one from naive's.
    svg::Series slope1{"slope 1 (grows like N)", "#999999", true, {}, false};
    svg::Series slope2{"slope 2 (grows like N^2)", "#444444", true, {}, false};
    if (!points.empty()) {
      const SweepPoint& first = *std::min_element(points.begin(), points.end(),
                                                  [](const SweepPoint& a, const SweepPoint& b) { return a.N < b.N; });
      for (const auto& p : points) {
        const double r = static_cast<double>(p.N) / static_cast<double>(first.N);
        slope1.points.emplace_back(static_cast<double>(p.N), value(first.tiled) * r);
        slope2.points.emplace_back(static_cast<double>(p.N), value(first.naive) * r * r);
      }
    }
    out.series = {std::move(tiled), std::move(naive), std::move(slope1), std::move(slope2)};
    return out;
  };
  chart.panels.push_back(panel("peak heap during one call", "MiB (log10 scale)", memory));
  chart.panels.push_back(panel("time per call", "ms, median (log10 scale)", time));
  return chart;
}

}  // namespace fa2::tiled
