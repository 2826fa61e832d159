// Step 2's measurement: the time and the peak heap memory of the tiled forward against naive
// attention (the whole (N, N) score matrix), for a list of N; then a table, a CSV and a plot.
//   Program: build/cpu-only/step02_tiled_cpu/step02_measure --help (measure_main.cpp)
//   Tests:   ctest --preset cpu-only -L step02 (tests/test_memory_sweep.cpp)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/numeric.hpp"
#include "common/svg_plot.hpp"
#include "step02_tiled_cpu/heap_meter.hpp"

namespace fa2::tiled {

enum class Dtype { float32, float64 };

const char* dtype_label(Dtype dtype);  // "float32", "float64"

struct SweepOptions {
  std::vector<index_t> n_values = {256, 512, 1024, 2048, 4096};  // N = Nq = Nk, in the order given
  index_t batch = 1;                                             // B
  index_t head_dim = 64;                                         // D = Dv
  bool causal = false;
  Dtype dtype = Dtype::float32;
  int repeats = 5;                     // timed calls per method and N, after one untimed metered call
  index_t block_q = 16, block_k = 16;  // the tiled forward's tile sizes B_q, B_k
  std::uint64_t seed = 2026;           // Q, K, V ~ N(0, 1)
};

// One method at one N.
struct MethodResult {
  HeapPeak heap;                  // counted during the first call, which is not timed
  std::int64_t output_bytes = 0;  // what the call returns: O (B, N, D) and L (B, N)
  std::vector<double> ms;         // the timed calls, in order (steady_clock)
  double ms_median = 0.0, ms_min = 0.0, ms_max = 0.0;

  // The working memory: the peak beyond the outputs, which any forward must allocate.
  std::int64_t extra_bytes() const { return heap.peak_bytes - output_bytes; }
};

struct SweepPoint {
  index_t N = 0;
  MethodResult tiled;       // tiled_attention_forward (step 2)
  MethodResult naive;       // naive_attention_forward (the (N, N) scores)
  double max_abs_diff = 0;  // max |O_tiled - O_naive|: both computed the same attention
};

// Runs both methods at one N. Throws std::runtime_error when the two outputs differ by more
// than the type's tolerance (then one of them is wrong, and its numbers mean nothing).
SweepPoint measure_point(const SweepOptions& options, index_t N);

// Every N of options.n_values in order; `on_point` sees each point as soon as it is measured.
std::vector<SweepPoint> run_sweep(const SweepOptions& options,
                                  const std::function<void(const SweepPoint&)>& on_point = {});

// The slope of the straight line through (x0, y0) and (x1, y1) on log-log axes: 1 for y ~ x,
// 2 for y ~ x^2. All four must be > 0 and x0 != x1.
double loglog_slope(double x0, double y0, double x1, double y1);

// "812 B", "64.0 KiB", "128.0 MiB"
std::string format_bytes(std::int64_t bytes);

// The table: a header line, then two lines per point (tiled, naive), then the slopes between
// the two largest N when there are two. table_header and table_rows print it as it is measured.
std::string table_header(const SweepOptions& options);
std::string table_rows(const SweepPoint& point);
std::string table_slopes(const std::vector<SweepPoint>& points);

// The CSV's first line. One row per method and N follows; bytes as integers, times in
// milliseconds; block_q and block_k are empty on the naive rows (it has no tiles).
inline constexpr const char* kCsvHeader =
    "method,N,B,D,causal,dtype,block_q,block_k,repeats,ms_median,ms_min,ms_max,"
    "peak_bytes,output_bytes,extra_bytes,allocations,max_abs_diff";
std::string to_csv(const SweepOptions& options, const std::vector<SweepPoint>& points);

// Two log-log panels against N: peak heap memory (MiB) and median time (ms), one series per
// method, and dashed guides of slope 1 (through tiled's first point) and 2 (through naive's).
inline constexpr const char* kChartTitle = "Step 2: tiled against naive attention on the CPU, log-log";
svg::Chart memory_time_chart(const std::vector<SweepPoint>& points, const std::string& subtitle);

}  // namespace fa2::tiled
