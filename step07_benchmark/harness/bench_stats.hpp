// Statistics of repeated timings and the repetition budget, both as triton.testing.do_bench
// has them: the number of warm-up and timed runs follows from a first estimate of one run's
// time, and the reported number is the median. Host only; unit-tested by step07_tests.
#pragma once

#include <cstddef>
#include <vector>

namespace fa2::bench {

struct Stats {
  std::size_t count = 0;
  double median = 0.0;  // torch.median semantics: the lower of the two middle values for even counts
  double mean = 0.0;
  double stddev = 0.0;  // population standard deviation
  double min = 0.0;
  double max = 0.0;
  double p20 = 0.0;  // torch.quantile(times, 0.2), linear interpolation (do_bench's quantiles)
  double p80 = 0.0;
};

// Throws std::invalid_argument for an empty sample or a NaN in it.
Stats summarize(std::vector<double> samples);

// q-quantile (0 <= q <= 1) of a sorted sample with linear interpolation between neighbours.
double quantile_sorted(const std::vector<double>& sorted, double q);

// The time budget of one measurement, in milliseconds of device time, as do_bench's
// warmup=25, rep=100 defaults; the repetitions are clamped to [min_reps, max_reps] so that a
// 45 ms kernel still gets a median of several runs and a 10 us one does not run forever.
struct TimingBudget {
  double warmup_ms = 25.0;
  double rep_ms = 100.0;
  int estimate_runs = 5;  // runs (each after an L2 flush) that estimate one run's time
  int min_reps = 5;
  int max_reps = 1000;
};

struct RepPlan {
  int warmup = 1;
  int reps = 5;
};

// do_bench: n_warmup = max(1, warmup / estimate), n_repeat = max(1, rep / estimate), with the
// repetitions clamped as above. Throws std::invalid_argument for a bad budget.
RepPlan plan_reps(double estimate_ms, const TimingBudget& budget);

}  // namespace fa2::bench
