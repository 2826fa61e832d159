// Command-line options of step07_bench: which sweep (problem list), which implementations,
// the timing budget and where the CSV/SVG go. Host only; unit-tested by step07_tests.
//   step07_bench                       the full sweep (article + long + d128), every implementation
//   step07_bench --quick               N = 512, 1024 at D = 64, a short timing budget
//   step07_bench --repeat=7 --impl=v6.17,v6.11 --decide=v6.17,v6.11   rounds, ratios, a decision
//   step07_bench --help                every option
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"

namespace fa2::bench {

struct Options {
  std::vector<Problem> problems;         // in the order they run and print
  std::vector<std::string> sweep_names;  // what produced them, for the header
  TimingBudget budget;
  std::vector<std::string> impl_keys;           // --impl: only these (empty: all registered)
  std::string ours_key = variants::kStep05Key;  // the "ours" column of the article's table
  std::string out_dir;                          // --out: CSV and SVG go here (empty: no files)
  std::optional<std::uint64_t> seed;            // --seed: replay inputs; default a fresh seed per run
  // --repeat=R: every problem is timed in R rounds, each round timing every implementation once
  // in rotation_order; the pairs table compares each with `baseline`, and --decide applies the
  // tuned dispatch's rule (take_candidate) to each (candidate, incumbent) pair.
  int rounds = 1;
  std::string baseline;  // with --repeat: --baseline, or the first --impl key, or the reference
  std::vector<std::pair<std::string, std::string>> decide;
  bool quick = false;
  bool measure_ceilings = true;  // --no-ceilings skips the copy/GEMM rate measurement
  bool list = false;             // --list: print the registered implementations and exit
  bool variants = false;         // --variants: print the variants table (Markdown) and exit
  bool help = false;
};

// The named sweeps. All use B=4, H=8 (the article's) unless --batch/--heads say otherwise.
//   article : D=64,  N = 512, 1024, 2048, 4096          (the article's table)
//   long    : D=64,  N = 8192, 16384                    (beyond it)
//   d128    : D=128, N = 1024, 4096, 16384              (a larger head dim)
//   full    : article + long + d128                     (the default)
//   quick   : D=64,  N = 512, 1024
// Each N runs non-causal then causal, like the article's loop; with --pass=fwd,bwd (the default)
// each forward problem is followed by the same problem's backward.
std::vector<Problem> sweep_problems(const std::string& name, int B = 4, int H = 8);
std::vector<std::string> sweep_names();

// Parses argv[1..] with common/cli.hpp: both "--key=value" and "--key value" work. Every check
// happens here, before anything looks for a GPU: a mistake throws fa2::cli::UsageError naming
// the option and what it allows. `implementation_keys` are what --impl and --ours accept: the
// registry's keys (assemble_registry builds it without touching the GPU).
Options parse_options(const std::vector<std::string>& args, const std::vector<std::string>& implementation_keys);
Options parse_options(int argc, const char* const* argv, const std::vector<std::string>& implementation_keys);

std::string usage();

}  // namespace fa2::bench
