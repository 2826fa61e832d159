// Statistics of repeated timings and the repetition budget, both as triton.testing.do_bench
// has them: the number of warm-up and timed runs follows from a first estimate of one run's
// time, and the reported number is the median. Then what --repeat adds: the order in which
// each round times the implementations, the spread of the per-round speed ratios, and the rule
// that reads a difference as real only outside that spread. Host only; unit-tested by
// step07_tests.
#pragma once

#include <cstddef>
#include <string>
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
  // --isolated: instead of do_bench's back-to-back runs, this many single launches, each after
  // `gap_ms` of an idle GPU and an L2 flush, timed alone (0: do_bench's way). This is how a
  // profiler sees a launch: cold caches, and clocks that have had time to recover.
  int isolated_launches = 0;
  double gap_ms = 50.0;
};

struct RepPlan {
  int warmup = 1;
  int reps = 5;
};

// do_bench: n_warmup = max(1, warmup / estimate), n_repeat = max(1, rep / estimate), with the
// repetitions clamped as above. Throws std::invalid_argument for a bad budget.
RepPlan plan_reps(double estimate_ms, const TimingBudget& budget);

// The order in which round `round` (0, 1, ...) times `count` implementations: a Williams design,
// a cyclic Latin square whose base order is 0, 1, count-1, 2, count-2, ... and whose round r adds r
// (mod count) to each entry; for an odd count, rounds count..2*count-1 run those orders reversed.
// Over one cycle (count rounds when count is even, 2*count when odd), every implementation takes
// every position equally often and follows every other one equally often, so a drift of the clocks
// or of the temperature, or a lasting effect of the previous run, falls on all of them alike.
// Throws std::invalid_argument for a count of 0.
std::vector<std::size_t> rotation_order(std::size_t count, std::size_t round);
std::size_t rotation_cycle(std::size_t count);  // rounds after which the orders repeat

// One pair's speed ratio, round by round: baseline_ms[r] / impl_ms[r] (above 1: the
// implementation is faster than the baseline). Both were timed in the same round, so a change of
// the GPU's state between rounds cancels out of each ratio. The spread is the per-round ratios'
// range (min..max) and their interquartile range (q1..q3, interpolated as quantile_sorted does).
struct RatioSpread {
  std::size_t rounds = 0;
  double median = 0.0;  // the lower middle, as Stats::median
  double q1 = 0.0, q3 = 0.0;
  double min = 0.0, max = 0.0;
};

// Throws std::invalid_argument when the two lists differ in length, are empty, or hold a time
// that is not a positive finite number.
RatioSpread ratio_spread(const std::vector<double>& baseline_ms, const std::vector<double>& impl_ms);

// Rounds below which no verdict is given: with independent noise that is as likely to favour
// either side, every one of R rounds agrees by chance with probability 2^(1-R), 1 in 16 for 5.
inline constexpr std::size_t kMinRoundsForVerdict = 5;

// What a pair's per-round ratios say. A difference lies outside the spread only when every round
// agrees on its sign (min > 1: faster; max < 1: slower); otherwise it lies inside the spread and
// is read as noise.
enum class Verdict { faster, slower, inside_spread, too_few_rounds };
Verdict verdict(const RatioSpread& s);
std::string to_string(Verdict v);  // "faster", "slower", "inside spread", "too few rounds"

// The rule for the tuned dispatch: a candidate configuration replaces the incumbent at a point only
// when it wins outside the spread, i.e. when verdict(ratio_spread(incumbent_ms, candidate_ms)) is
// `faster`. Inside the spread, slower, or with too few rounds, the incumbent stays.
bool take_candidate(const RatioSpread& incumbent_over_candidate);

}  // namespace fa2::bench
