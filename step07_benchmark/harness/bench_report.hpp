// What step07_bench prints and writes: one Measurement per implementation x problem, the
// article's table (ours vs SDPA), a wide TFLOP/s table with every implementation, a peak-memory
// table, the CSV and the SVG chart; with --repeat, the per-round CSV, the pairs' ratios with
// their spread and the decisions of --decide. Host only; unit-tested by step07_tests.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/svg_plot.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"
#include "step07_benchmark/harness/nvml.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"

namespace fa2::bench {

enum class Status {
  ok,           // checked, then timed
  failed,       // its output did not match: reported, never timed
  unsupported,  // the implementation does not take this problem (e.g. a head dim)
  unavailable,  // a forced backend that refused the problem (no silent fallback)
  skipped,      // not enough device memory, or filtered out
  error,        // an exception while preparing or running
  quoted,       // a number copied from an earlier measurement, not run here
};
std::string to_string(Status s);
std::string short_status(Status s);  // "FAIL", "n/a", "unavail", "skip", "err" for table cells

struct Measurement {
  std::string key;   // implementation key, e.g. "ours16"
  std::string name;  // e.g. "ours step05 16x16"
  Problem problem;
  Status status = Status::ok;
  std::string note;     // why it is not ok, or extra information
  std::string backend;  // what actually ran, when the implementation can tell (Torch SDPA)
  Stats ms;             // milliseconds per call; only median is set for quoted numbers
  int reps = 0;
  double tflops = 0.0;                 // attention_flops(problem) / median
  std::optional<double> peak_bytes;    // device memory while it runs
  std::string peak_source;             // "counted" (buffers it needs) or "allocator" (Torch's peak stats)
  std::optional<double> max_err_ref;   // max |O - O_ref| over the whole output (reference implementation)
  std::optional<double> max_err_fp64;  // max |O - O_fp64| over the sampled rows
  std::string timing;                  // how it was timed: "do_bench" or "isolated" (empty: not timed)
  GpuSample gpu;                       // NVML's reading after the timed runs (over rounds: combine_samples)
  // --repeat: each round's median time in round order, the position it ran at in that round
  // (rotation_order), its timed runs and NVML's reading after them. One entry without --repeat.
  std::vector<double> round_ms;
  std::vector<std::size_t> round_position;
  std::vector<int> round_reps;
  std::vector<GpuSample> round_gpu;
};

// Right-aligned text columns with a header and a rule; first column left-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);  // throws std::invalid_argument on a wrong cell count
  std::string render() const;
  std::size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

std::string format_fixed(double value, int decimals);

// The measurement of `key` for `p`, or nullptr.
const Measurement* find_measurement(const std::vector<Measurement>& all, const std::string& key, const Problem& p);

// The Triton numbers quoted from sdpa_h200.txt, as Measurements with Status::quoted, for the
// problems that match what was measured there (B=4, H=8, D=64).
std::vector<Measurement> quoted_measurements(const std::vector<Problem>& problems);

struct ArticleColumns {
  std::string ours = variants::kStep05Key;  // the "ours" columns
  std::string sdpa = "sdpa";                // "sdpa" = the default backend, as in the article
  std::string fa2 = "sdpa-fa2";             // for the "% FA2" column (the flash backend forced)
};

// The article's table: N, causal, ours ms, sdpa ms, ours TF/s, sdpa TF/s, % sdpa, then the
// flash backend's time and % FA2, and the quoted Triton time. One table for the problems of
// head dim `D`. The SDPA and FA2 columns are left out when nothing was measured under those keys
// (a build without Torch).
std::string article_table(const std::vector<Measurement>& all, const std::vector<Problem>& problems, int D,
                          const ArticleColumns& cols);

// Our PyTorch measurements next to the same backends timed by triton.testing.do_bench in Python
// on the same GPU model (quoted): if the two harnesses agree on these, they agree on ours too.
// Empty when nothing under the sdpa keys was measured for the quoted shape (B=4, H=8, D=64).
std::string harness_crosscheck_table(const std::vector<Measurement>& all, const std::vector<Problem>& problems);

enum class WideValue { tflops, ms, peak_mib };
// One row per problem, one column per key (in `keys` order): TFLOP/s, ms or peak MiB.
std::string wide_table(const std::vector<Measurement>& all, const std::vector<Problem>& problems,
                       const std::vector<std::string>& keys, WideValue what);

// Comma-separated values with a header row; fields with a comma, quote or newline are quoted.
std::string csv_escape(const std::string& field);
std::string csv_header();
std::string csv_row(const Measurement& m, const std::string& gpu);
std::string to_csv(const std::vector<Measurement>& all, const std::string& gpu);
// Reads back what to_csv wrote: key, name, problem, status, median ms and TFLOP/s (what the
// plots need). Throws std::invalid_argument naming the line of a malformed row.
std::vector<Measurement> from_csv(const std::string& text);

struct ChartSeries {
  std::string key;
  std::string label;
  bool dashed = false;
};
// TFLOP/s against N for head dim D: a non-causal and a causal panel, one series per entry of
// `series` (ok and quoted measurements only).
// --repeat's files: one row per implementation x problem x round (rounds_csv), and one per pair
// (pairs_csv).
std::string rounds_csv(const std::vector<Measurement>& all, const std::string& gpu);

// One implementation against another on one problem, over the rounds both were timed in.
struct PairResult {
  std::string impl, against;
  Problem problem;
  RatioSpread spread;  // against's time over impl's, per round: above 1, impl is faster
  Verdict verdict = Verdict::too_few_rounds;
};

// Every pair of `pairs` ((impl, against) keys) on every problem where both were timed in the same
// rounds (ok, and as many rounds each), in problem order.
std::vector<PairResult> pair_results(const std::vector<Measurement>& all, const std::vector<Problem>& problems,
                                     const std::vector<std::pair<std::string, std::string>>& pairs);
// The table of those: per problem and pair the median ratio, its interquartile range and range,
// and the verdict (faster or slower only outside the range; otherwise inside the spread).
std::string pairs_table(const std::vector<PairResult>& results);
std::string pairs_csv(const std::vector<PairResult>& results, const std::string& gpu);

// --decide=CANDIDATE,INCUMBENT: the tuned dispatch's rule (take_candidate) applied point by point,
// then one summary line: at which points the candidate is taken, and why the incumbent stays at
// the others. Empty when no problem has both timed.
std::string decision_report(const std::vector<Measurement>& all, const std::vector<Problem>& problems,
                            const std::string& candidate, const std::string& incumbent);

svg::Chart tflops_chart(const std::vector<Measurement>& all, const std::vector<ChartSeries>& series, int D,
                        const std::string& subtitle);

}  // namespace fa2::bench
