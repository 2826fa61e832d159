// Median, quantiles, the do_bench repetition plan, the rotation of --repeat's rounds and the
// spread of per-round ratios (see bench_stats.hpp).
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

std::size_t rotation_cycle(std::size_t count) {
  if (count == 0) throw std::invalid_argument("rotation_order: no implementations to order");
  return count % 2 == 0 ? count : 2 * count;
}

std::vector<std::size_t> rotation_order(std::size_t count, std::size_t round) {
  const std::size_t r = round % rotation_cycle(count);
  // The base order 0, 1, count-1, 2, count-2, ...: consecutive entries differ by +1, -2, +3, -4, ...
  // (mod count), so shifting it by r gives every ordered pair of neighbours once per count rounds
  // when count is even.
  std::vector<std::size_t> order(count);
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t base = (j % 2 == 1) ? (j + 1) / 2 : (count - j / 2) % count;
    order[j] = (base + r) % count;
  }
  // With an odd count, one neighbour pair in each direction is missing from the count rotations;
  // the same rotations reversed supply it.
  if (r >= count) std::reverse(order.begin(), order.end());
  return order;
}

RatioSpread ratio_spread(const std::vector<double>& baseline_ms, const std::vector<double>& impl_ms) {
  if (baseline_ms.size() != impl_ms.size()) {
    throw std::invalid_argument("ratio_spread: " + std::to_string(baseline_ms.size()) + " baseline rounds against " +
                                std::to_string(impl_ms.size()));
  }
  if (baseline_ms.empty()) throw std::invalid_argument("ratio_spread: no rounds");
  std::vector<double> ratios;
  ratios.reserve(impl_ms.size());
  for (std::size_t r = 0; r < impl_ms.size(); ++r) {
    const double b = baseline_ms[r], i = impl_ms[r];
    if (!(std::isfinite(b) && b > 0.0 && std::isfinite(i) && i > 0.0)) {
      throw std::invalid_argument("ratio_spread: round " + std::to_string(r) + " has a time that is not positive");
    }
    ratios.push_back(b / i);
  }
  std::sort(ratios.begin(), ratios.end());
  RatioSpread s;
  s.rounds = ratios.size();
  s.median = ratios[(ratios.size() - 1) / 2];
  s.q1 = quantile_sorted(ratios, 0.25);
  s.q3 = quantile_sorted(ratios, 0.75);
  s.min = ratios.front();
  s.max = ratios.back();
  return s;
}

Verdict verdict(const RatioSpread& s) {
  if (s.rounds < kMinRoundsForVerdict) return Verdict::too_few_rounds;
  if (s.min > 1.0) return Verdict::faster;
  if (s.max < 1.0) return Verdict::slower;
  return Verdict::inside_spread;
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::faster:
      return "faster";
    case Verdict::slower:
      return "slower";
    case Verdict::inside_spread:
      return "inside spread";
    case Verdict::too_few_rounds:
      return "too few rounds";
  }
  return "?";
}

bool take_candidate(const RatioSpread& incumbent_over_candidate) {
  return verdict(incumbent_over_candidate) == Verdict::faster;
}

}  // namespace fa2::bench
