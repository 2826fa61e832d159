// step07_bench: the article's benchmark in C++. Our kernels, PyTorch SDPA (default backend and
// each backend forced, when built with Torch) and cuBLAS standard attention, checked and timed
// do_bench style on one GPU, with the GPU's clocks, power and temperature read after each timing;
// prints the tables, writes a CSV and SVG plots. --repeat times in rotating rounds and reports
// each pair's ratio with its spread; --decide applies the tuned dispatch's rule.
//   build/<preset>/step07_benchmark/step07_bench [--quick] [--repeat=R] [--out DIR] [--help]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "common/cuda/gpu.hpp"
#include "common/random.hpp"
#include "common/svg_plot.hpp"
#include "step07_benchmark/baselines/impl_torch.hpp"
#include "step07_benchmark/harness/bench_options.hpp"
#include "step07_benchmark/harness/bench_report.hpp"
#include "step07_benchmark/harness/bench_runner.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"
#include "step07_benchmark/harness/nvml.hpp"
#include "step07_benchmark/harness/quoted_reference.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"

namespace {

using namespace fa2::bench;

std::string today() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// Keys in registry order that have at least one row, then the quoted Triton numbers.
std::vector<std::string> keys_present(const std::vector<Implementation>& impls, const std::vector<Measurement>& all) {
  std::vector<std::string> keys;
  for (const auto& impl : impls) {
    if (std::any_of(all.begin(), all.end(), [&](const Measurement& m) { return m.key == impl.key; })) {
      keys.push_back(impl.key);
    }
  }
  const std::string triton = quoted_article_triton().key;
  if (std::any_of(all.begin(), all.end(), [&](const Measurement& m) { return m.key == triton; }))
    keys.push_back(triton);
  return keys;
}

std::string legend_label(const std::string& key, const std::vector<Measurement>& all) {
  if (key == quoted_article_triton().key) return quoted_article_triton().name;
  if (key == "sdpa") {
    for (const auto& m : all) {
      if (m.key == key && !m.backend.empty()) return "sdpa (default: " + m.backend + ")";
    }
  }
  if (key == fa2::variants::kStep05Key) return key + " (step05 kernel)";
  return key;
}

int bench(int argc, char** argv) {
  // Building the registry touches no GPU, so every option, the --impl and --ours keys included,
  // is checked before anything looks for one.
  const std::vector<Implementation> impls = assemble_registry(torch_implementations());
  std::vector<std::string> registered_keys;
  for (const auto& impl : impls) registered_keys.push_back(impl.key);
  const Options opt = parse_options(argc, argv, registered_keys);
  if (opt.help) {
    std::cout << usage();
    return 0;
  }
  if (opt.variants) {
    std::cout << fa2::variants::variants_markdown();
    return 0;
  }
  const TorchStatus torch = torch_status();
  if (opt.list) {
    for (const auto& impl : impls)
      std::printf("%-12s %-7s %s\n", impl.key.c_str(), impl.family.c_str(), impl.name.c_str());
    if (!torch.built) std::printf("(%s)\n", torch.detail.c_str());
    return 0;
  }
  const auto& gpu = fa2::cuda::gpu_status();
  if (!gpu.available) {
    std::cerr << "step07_bench needs a GPU: " << gpu.reason << "\n(step07_demo prints the napkin math without one.)\n";
    return fa2::cli::kExitFailure;
  }

  const std::uint64_t seed = opt.seed ? *opt.seed : fa2::fresh_seed();
  RunnerConfig config;
  config.budget = opt.budget;
  config.rounds = opt.rounds;
  config.seed = seed;
  config.reference_key = fa2::variants::kStep05Key;
  const DeviceInfo info = DeviceInfo::query(0);
  Runner runner(impls, config, std::cout);

  std::filesystem::path out_dir;
  if (!opt.out_dir.empty()) {
    out_dir = opt.out_dir;
    std::error_code error;
    std::filesystem::create_directories(out_dir, error);
    if (error)
      throw std::runtime_error("cannot create the --out directory " + out_dir.string() + ": " + error.message());
  }
  const auto csv_path = out_dir / "step07_results.csv";
  const auto rounds_path = out_dir / "step07_rounds.csv";
  const auto pairs_path = out_dir / "step07_pairs.csv";
  const std::vector<Measurement> quoted = quoted_measurements(opt.problems);
  const auto write_csv = [&](const std::vector<Measurement>& so_far) {
    if (out_dir.empty()) return;
    std::vector<Measurement> rows = so_far;
    rows.insert(rows.end(), quoted.begin(), quoted.end());
    fa2::cli::write_file(csv_path, to_csv(rows, info.name));
    if (opt.rounds > 1) fa2::cli::write_file(rounds_path, rounds_csv(so_far, info.name));
  };
  write_csv({});  // now, so that an --out that cannot be written fails before the measurements, not after

  const bool any_backward =
      std::any_of(opt.problems.begin(), opt.problems.end(), [](const Problem& p) { return p.backward(); });
  const bool any_forward =
      std::any_of(opt.problems.begin(), opt.problems.end(), [](const Problem& p) { return !p.backward(); });
  const char* passes = any_forward && any_backward ? "forward and backward" : any_backward ? "backward" : "forward";
  std::cout << "step07_bench: FlashAttention-2 " << passes << ", " << today() << "\n" << info.describe();
  std::cout << torch.detail << "\n";
  std::string sweeps;
  for (const auto& s : opt.sweep_names) sweeps += (sweeps.empty() ? "" : ",") + s;
  std::cout << "sweep " << sweeps << ": " << opt.problems.size() << " problems, bfloat16, seed " << seed
            << " (replay with --seed " << seed << ")\n";
  if (opt.budget.isolated_launches > 0) {
    std::printf(
        "timing as isolated launches: %d per measurement, each after %.0f ms of idle GPU and an L2 flush (%s memset), "
        "CUDA events around the launch alone, median\n",
        opt.budget.isolated_launches, opt.budget.gap_ms,
        format_bytes(static_cast<double>(runner.flush_bytes())).c_str());
  } else {
    std::printf(
        "timing as triton.testing.do_bench: warm-up %.0f ms, reps for %.0f ms (%d..%d), L2 flushed (%s memset) "
        "before each timed run, CUDA events per run, median\n",
        opt.budget.warmup_ms, opt.budget.rep_ms, opt.budget.min_reps, opt.budget.max_reps,
        format_bytes(static_cast<double>(runner.flush_bytes())).c_str());
  }
  if (opt.rounds > 1) {
    std::printf(
        "repeated: %d rounds per problem, each timing every implementation once in a rotating order; times are the "
        "median of the rounds' medians; pairs against %s (ratio = its ms / the other's ms per round, above 1: the "
        "other is faster), a difference counted only when every round agrees (at least %zu rounds)\n",
        opt.rounds, opt.baseline.c_str(), kMinRoundsForVerdict);
  }
  std::cout << "GPU state (" << runner.nvml().reason() << "): " << format_sample(runner.nvml().sample());
  if (const auto max_sm = runner.nvml().max_sm_mhz()) std::cout << "; SM clock at most " << *max_sm << " MHz";
  std::cout << "; read again after every timing\n";
  std::printf(
      "checks before timing: NaN-poisoned outputs; whole O vs %s, sampled rows vs float64; atol = rtol = %.0e\n",
      fa2::variants::kStep05Key, config.atol);
  std::cout << "FLOPs = 4*B*H*N^2*D for a forward, 2.5 times that for a backward, halved for causal. Kernels that "
               "still compute\n  the masked tiles (ours16's forward and its tile variants, cuBLAS standard attention) "
               "do the full work under causal\n  but are credited with half of it: their causal TF/s is half their "
               "real rate (not flattered, as the article has it).\n  Backward rows time the whole backward (our "
               "preprocessing and dQ conversion included) and are checked against ours16's\n  gradients (which "
               "step05's tests check against float64); their inputs O and L are ours16's forward.\n";

  const Ceilings datasheet = h200_datasheet();
  if (opt.measure_ceilings) {
    const Ceilings measured = runner.measure_ceilings();
    std::printf("ceilings: bf16 GEMM %.0f TFLOP/s, copy %.2f TB/s (%s); datasheet %.0f TFLOP/s, %.1f TB/s\n",
                measured.matrix_tflops, measured.memory_tbps, measured.source.c_str(), datasheet.matrix_tflops,
                datasheet.memory_tbps);
  }
  std::cout << std::flush;

  std::vector<Measurement> all = runner.run(opt.problems, opt.impl_keys, write_csv);
  write_csv(all);
  // With --repeat: every implementation against the baseline, and the --decide pairs.
  std::vector<std::pair<std::string, std::string>> pairs;
  if (opt.rounds > 1) {
    for (const auto& impl : impls) {
      if (impl.key != opt.baseline) pairs.emplace_back(impl.key, opt.baseline);
    }
    for (const auto& pair : opt.decide) {
      if (std::find(pairs.begin(), pairs.end(), pair) == pairs.end()) pairs.push_back(pair);
    }
  }
  const std::vector<PairResult> pair_rows = pair_results(all, opt.problems, pairs);
  if (opt.rounds > 1 && !out_dir.empty()) fa2::cli::write_file(pairs_path, pairs_csv(pair_rows, info.name));
  all.insert(all.end(), quoted.begin(), quoted.end());

  // Plots, one per head dim.
  std::set<int> dims;
  for (const auto& p : opt.problems) dims.insert(p.D);
  const std::vector<std::string> keys = keys_present(impls, all);
  if (!out_dir.empty()) {
    for (int D : dims) {
      std::vector<ChartSeries> series;
      for (const auto& key : keys) {
        series.push_back(ChartSeries{key, legend_label(key, all), key == quoted_article_triton().key});
      }
      const std::string subtitle = info.name + ", B=" + std::to_string(opt.problems.front().B) +
                                   " H=" + std::to_string(opt.problems.front().H) +
                                   ", bf16, median of do_bench-style runs, " + today() + "; dashed: quoted, not re-run";
      const auto path = out_dir / ("step07_tflops_d" + std::to_string(D) + ".svg");
      fa2::cli::write_file(path, fa2::svg::render(tflops_chart(all, series, D, subtitle)));
      std::cout << "wrote " << path.string() << "\n";
    }
    std::cout << "wrote " << csv_path.string() << "\n";
    if (opt.rounds > 1) std::cout << "wrote " << rounds_path.string() << "\nwrote " << pairs_path.string() << "\n";
  }

  // Everything that did not run cleanly, then the tables; the article's table last.
  int failures = 0;
  std::cout << "\nnot timed:\n";
  for (const auto& m : all) {
    if (m.status == Status::ok || m.status == Status::quoted) continue;
    if (m.status == Status::failed || m.status == Status::error) ++failures;
    std::cout << "  " << m.key << " " << m.problem.label() << ": " << to_string(m.status) << ": " << m.note << "\n";
  }
  if (std::all_of(all.begin(), all.end(),
                  [](const Measurement& m) { return m.status == Status::ok || m.status == Status::quoted; })) {
    std::cout << "  (nothing: every selected implementation passed its checks and was timed)\n";
  }
  std::string sdpa_picked;  // which backend SDPA's default dispatch chose, as _fused_sdp_choice said
  {
    std::set<std::string> picked;
    for (const auto& m : all) {
      if (m.key == "sdpa" && !m.backend.empty()) picked.insert(m.backend);
    }
    for (const auto& b : picked) sdpa_picked += (sdpa_picked.empty() ? "" : "/") + b;
  }
  std::cout << "\nmilliseconds (median)\n" << wide_table(all, opt.problems, keys, WideValue::ms);
  std::cout
      << "\npeak device MiB (ours and cuBLAS: counted buffers incl. S and P; Torch: Q, K, V + its allocator's peak)\n"
      << wide_table(all, opt.problems, keys, WideValue::peak_mib);
  std::cout << "\nTFLOP/s (" << fa2::variants::kStep05Key << " is the step05 kernel; " << quoted_article_triton().key
            << " = " << quoted_article_triton().name << ")\n"
            << wide_table(all, opt.problems, keys, WideValue::tflops);
  if (!torch.built) std::cout << "\n" << torch.detail << "\n";
  if (const std::string check = harness_crosscheck_table(all, opt.problems); !check.empty()) {
    std::cout << "\nharness check: PyTorch timed here vs python* = triton.testing.do_bench on an H200 (quoted: "
              << quoted_article_triton().source << ")\n"
              << check;
  }

  if (!pair_rows.empty()) {
    std::cout << "\npairs over " << opt.rounds
              << " rounds (ratio = against's ms / impl's ms per round, above 1: impl faster; a verdict only where "
                 "every round agrees, otherwise inside the spread)\n"
              << pairs_table(pair_rows);
  }
  for (const auto& [candidate, incumbent] : opt.decide) {
    const std::string report = decision_report(all, opt.problems, candidate, incumbent);
    std::cout << "\ndecide " << candidate << "," << incumbent << " (the tuned dispatch's rule: take " << candidate
              << " only where it wins outside the spread)\n"
              << (report.empty() ? "  (no problem has both timed)\n" : report);
  }

  ArticleColumns cols;
  cols.ours = opt.ours_key;
  for (int D : dims) {
    std::cout << "\nThe article's table, D=" << D << " (ours = " << cols.ours << "; sdpa = default backend"
              << (sdpa_picked.empty() ? "" : " (it picked " + sdpa_picked + ")")
              << "; % = sdpa ms / ours ms; fa2 = flash backend forced; Triton* = quoted, not re-run)\n"
              << article_table(all, opt.problems, D, cols);
  }
  if (failures > 0) std::cout << "\n" << failures << " implementation/problem pairs FAILED or errored (see above)\n";
  return failures > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fa2::cli::guarded_main(
      "step07_bench", [&] { return bench(argc, argv); }, std::cerr);
}
