// Median, quantiles and the do_bench repetition plan (see bench_stats.hpp).
#include "step07_benchmark/harness/bench_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fa2::bench {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("quantile of an empty sample");
  if (!(q >= 0.0 && q <= 1.0)) throw std::invalid_argument("quantile: q must be in [0, 1]");
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Stats summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  for (double x : samples) {
    if (std::isnan(x)) throw std::invalid_argument("summarize: a sample is NaN");
  }
  std::sort(samples.begin(), samples.end());
  Stats s;
  s.count = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = samples[(samples.size() - 1) / 2];  // the lower middle, like torch.median
  double sum = 0.0;
  for (double x : samples) sum += x;
  s.mean = sum / static_cast<double>(samples.size());
  double sq = 0.0;
  for (double x : samples) sq += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(sq / static_cast<double>(samples.size()));
  s.p20 = quantile_sorted(samples, 0.2);
  s.p80 = quantile_sorted(samples, 0.8);
  return s;
}

RepPlan plan_reps(double estimate_ms, const TimingBudget& b) {
  if (!(b.warmup_ms >= 0.0) || !(b.rep_ms > 0.0)) {
    throw std::invalid_argument("timing budget: warmup_ms must be >= 0 and rep_ms > 0");
  }
  if (b.min_reps < 1 || b.max_reps < b.min_reps) {
    throw std::invalid_argument("timing budget: need 1 <= min_reps <= max_reps, got " + std::to_string(b.min_reps) +
                                " and " + std::to_string(b.max_reps));
  }
  // A run too fast for the event timer's resolution counts as 1 us, so the counts stay finite.
  const double est = (std::isfinite(estimate_ms) && estimate_ms > 1e-3) ? estimate_ms : 1e-3;
  const auto runs_in = [&](double budget_ms) {
    const double n = std::floor(budget_ms / est);
    return n >= static_cast<double>(std::numeric_limits<int>::max()) ? std::numeric_limits<int>::max()
                                                                     : static_cast<int>(n);
  };
  RepPlan plan;
  plan.warmup = std::clamp(runs_in(b.warmup_ms), 1, b.max_reps);
  plan.reps = std::clamp(runs_in(b.rep_ms), b.min_reps, b.max_reps);
  return plan;
}

}  // namespace fa2::bench
