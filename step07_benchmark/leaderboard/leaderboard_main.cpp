// step07_leaderboard: checks and times one leaderboard entry (a student's step 5 kernel, or a rung
// of the ladder) on fresh inputs per call, against float64, beside PyTorch SDPA when built with it.
//   build/default/step07_benchmark/leaderboard/step07_leaderboard --kernel=step5 --json=result.json
//   build/cpu-only/step07_benchmark/leaderboard/step07_leaderboard --host --n=256 --heads=2
// scripts/leaderboard.sh builds it on a student's submission and appends its result to a CSV.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/bf16.hpp"
#include "common/cli.hpp"
#include "common/random.hpp"
#include "common/trace_json.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"
#include "step07_benchmark/leaderboard/checked_calls.hpp"
#include "step07_benchmark/leaderboard/entries.hpp"

#if FA2_LEADERBOARD_WITH_CUDA
#include "step07_benchmark/leaderboard/gpu_path.hpp"
#endif

namespace {

using fa2::cli::UsageError;
using fa2::leaderboard::Kernel;
using fa2::leaderboard::SelfTest;

// The article's tolerances (step05's tests, flash_test_support.hpp): bf16 rounds the inputs, P
// and O to 8 significant bits; float32's products run in TF32 (11 bits per operand).
fa2::Tolerance default_tolerance(fa2::DType dtype) {
  return dtype == fa2::DType::bfloat16 ? fa2::Tolerance{2e-2, 2e-2} : fa2::Tolerance{1e-2, 1e-2};
}

struct Options {
  Kernel kernel = Kernel::step5;
  fa2::bench::Problem problem{4, 8, 4096, 64, false, fa2::bench::Pass::forward};
  fa2::DType dtype = fa2::DType::bfloat16;
  fa2::leaderboard::Protocol protocol;
  double atol = 2e-2, rtol = 2e-2;  // replaced by the dtype's defaults unless given
  std::optional<std::uint64_t> seed;
  bool host = false;
  std::string sdpa = "sdpa";
  SelfTest self_test = SelfTest::none;
  std::string json_path;
};

// What one run found, in the fields scripts/leaderboard.sh turns into a CSV row.
struct Result {
  std::string path;  // "gpu" or "host"
  std::string device;
  fa2::leaderboard::CheckedRun checked;
  std::optional<double> median_ms, tflops, sdpa_ms, speed_vs_sdpa;
  std::string sdpa_backend;
  std::optional<unsigned> sm_mhz_min, sm_mhz_max;
  std::vector<std::string> notes;
};

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

Result run_host(const Options& o, const fa2::leaderboard::Shape& shape) {
  using namespace fa2::leaderboard;
  Result r;
  r.path = "host";
  r.device = "host: " + cpu_name();
  const HostEntry entry = with_self_test(host_launcher(o.kernel), o.self_test);
  r.checked = shape.dtype == fa2::DType::bfloat16
                  ? run_checked_calls<fa2::bf16>(shape, o.protocol, host_timed_call<fa2::bf16>(entry, o.problem.causal))
                  : run_checked_calls<float>(shape, o.protocol, host_timed_call<float>(entry, o.problem.causal));
  r.notes.push_back(
      "host path: times are the host interpreter's (one thread plays each thread block), not a GPU's, and not "
      "comparable with GPU rows");
  r.notes.push_back("no SDPA on the host path");
  return r;
}

#if FA2_LEADERBOARD_WITH_CUDA
Result run_gpu(const Options& o, const fa2::leaderboard::Shape& shape) {
  Result r;
  r.path = "gpu";
  fa2::leaderboard::GpuRun g = fa2::leaderboard::run_on_gpu(shape, o.protocol, o.kernel, o.self_test, o.sdpa);
  r.device = g.device;
  r.checked = std::move(g.checked);
  r.sdpa_ms = g.sdpa_ms;
  r.speed_vs_sdpa = g.speed_vs_sdpa;
  r.sdpa_backend = g.sdpa_backend;
  if (!g.sm_mhz.empty()) {
    r.sm_mhz_min = *std::min_element(g.sm_mhz.begin(), g.sm_mhz.end());
    r.sm_mhz_max = *std::max_element(g.sm_mhz.begin(), g.sm_mhz.end());
  }
  if (!g.clock_note.empty()) r.notes.push_back(g.clock_note);
  if (!g.sdpa_note.empty()) r.notes.push_back(g.sdpa_note);
  return r;
}
#endif

// The --dtype word of a dtype: what the JSON and the CSV say.
std::string dtype_word(fa2::DType dtype) {
  return dtype == fa2::DType::bfloat16 ? "bf16" : fa2::to_string(dtype);
}

std::string json_or_null(const std::optional<double>& v) {
  return v ? fa2::trace::json_number(*v) : "null";
}

std::string json_or_null(const std::optional<unsigned>& v) {
  return v ? std::to_string(*v) : "null";
}

std::string to_json(const Options& o, const Result& r, std::uint64_t seed) {
  const auto str = [](const std::string& s) { return fa2::trace::json_string(s); };
  std::string notes;
  for (const auto& n : r.notes) notes += (notes.empty() ? "" : "; ") + n;
  std::ostringstream j;
  j << "{\n"
    << "  \"kernel\": " << str(to_string(o.kernel)) << ",\n"
    << "  \"self_test\": " << str(to_string(o.self_test)) << ",\n"
    << "  \"path\": " << str(r.path) << ",\n"
    << "  \"B\": " << o.problem.B << ", \"H\": " << o.problem.H << ", \"N\": " << o.problem.N
    << ", \"D\": " << o.problem.D << ",\n"
    << "  \"causal\": " << (o.problem.causal ? "true" : "false") << ",\n"
    << "  \"dtype\": " << str(dtype_word(o.dtype)) << ",\n"
    << "  \"warmup_calls\": " << o.protocol.warmup_calls << ", \"timed_calls\": " << o.protocol.timed_calls
    << ", \"sample_rows\": " << o.protocol.sample_rows << ",\n"
    << "  \"atol\": " << fa2::trace::json_number(o.protocol.tol.atol)
    << ", \"rtol\": " << fa2::trace::json_number(o.protocol.tol.rtol) << ",\n"
    << "  \"seed\": " << str(std::to_string(seed)) << ",\n"
    << "  \"status\": " << str(r.checked.accepted ? "ranked" : "rejected") << ",\n"
    << "  \"reason\": " << str(r.checked.reason) << ",\n"
    << "  \"checked_calls\": " << r.checked.calls_checked << ",\n"
    << "  \"median_ms\": " << json_or_null(r.median_ms) << ",\n"
    << "  \"tflops\": " << json_or_null(r.tflops) << ",\n"
    << "  \"sdpa_ms\": " << json_or_null(r.sdpa_ms) << ",\n"
    << "  \"sdpa_backend\": " << str(r.sdpa_backend) << ",\n"
    << "  \"speed_vs_sdpa\": " << json_or_null(r.speed_vs_sdpa) << ",\n"
    << "  \"device\": " << str(r.device) << ",\n"
    << "  \"sm_mhz_min\": " << json_or_null(r.sm_mhz_min) << ", \"sm_mhz_max\": " << json_or_null(r.sm_mhz_max) << ",\n"
    << "  \"notes\": " << str(notes) << "\n"
    << "}\n";
  return j.str();
}

void check_options(const Options& o) {
  const auto& p = o.problem;
  if (p.D != 16 && p.D != 32 && p.D != 64 && p.D != 128) {
    throw UsageError("--d",
                     "got '" + std::to_string(p.D) + "', must be one of 16, 32, 64, 128 (the kernels' head dims)");
  }
  if (o.self_test == SelfTest::unwritten && p.N < 2) {
    throw UsageError("--self-test", "'unwritten' leaves the last query of each head unwritten: it needs --n >= 2");
  }
#if !FA2_LEADERBOARD_WITH_CUDA
  if (!o.host) {
    throw UsageError("--host",
                     "this build has no CUDA (preset cpu-only or no nvcc): pass --host for the host path, "
                     "or build preset default on a machine with nvcc");
  }
#endif
}

int run(Options& o, const fa2::cli::Parser& cli) {
  const fa2::Tolerance tol = default_tolerance(o.dtype);
  o.protocol.tol = {cli.given("--atol") ? o.atol : tol.atol, cli.given("--rtol") ? o.rtol : tol.rtol};
  check_options(o);
  const std::uint64_t seed = o.seed ? *o.seed : fa2::fresh_seed();
  o.protocol.seed = seed;
  const fa2::leaderboard::Shape shape{o.problem, o.dtype};

  std::cout << "step07_leaderboard: " << to_string(o.kernel)
            << (o.self_test == SelfTest::none ? "" : " with the self-test '" + to_string(o.self_test) + "'") << " on "
            << (o.host ? "the host path" : "the GPU") << ", " << o.problem.label() << ", " << dtype_word(o.dtype)
            << ", " << o.protocol.warmup_calls << " warm-up + " << o.protocol.timed_calls << " timed calls, "
            << o.protocol.sample_rows << " rows per call against float64, seed " << seed << std::endl;

  Result r;
#if FA2_LEADERBOARD_WITH_CUDA
  r = o.host ? run_host(o, shape) : run_gpu(o, shape);
#else
  r = run_host(o, shape);
#endif
  if (r.checked.accepted) {
    const fa2::bench::Stats ms = fa2::bench::summarize(r.checked.timed_ms);
    r.median_ms = ms.median;
    r.tflops = fa2::bench::tflops_per_s(fa2::bench::attention_flops(o.problem), ms.median);
    std::cout << "  ranked: " << r.checked.calls_checked << " calls checked; median " << ms.median << " ms (min "
              << ms.min << ", max " << ms.max << "), " << *r.tflops << " TFLOP/s on " << r.device << "\n";
    if (r.sdpa_ms && r.speed_vs_sdpa) {
      std::cout << "  SDPA (" << r.sdpa_backend << "), timed in the same calls: median " << *r.sdpa_ms
                << " ms; the entry runs at " << *r.speed_vs_sdpa << " of SDPA's speed (median of the calls' ratios)\n";
    }
    if (r.sm_mhz_min) std::cout << "  SM clock " << *r.sm_mhz_min << ".." << *r.sm_mhz_max << " MHz\n";
  } else {
    std::cout << "  rejected (calls checked: " << r.checked.calls_checked << "): " << r.checked.reason << "\n";
  }
  for (const auto& note : r.notes) std::cout << "  note: " << note << "\n";
  if (!o.json_path.empty()) {
    fa2::cli::write_file(o.json_path, to_json(o, r, seed));
    std::cout << "wrote " << o.json_path << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  fa2::cli::Parser cli(
      "step07_leaderboard",
      "Checks and times one leaderboard entry: the step 5 kernel, or a rung of step 7's ladder, as this build\n"
      "compiled them. Each call gets fresh random inputs and NaN-poisoned outputs; every call's output must be\n"
      "fully written, must not repeat an earlier call's, and must match float64 on randomly sampled rows. The\n"
      "time is the median of the timed calls: CUDA events after an L2 flush on the GPU, the host's clock with\n"
      "--host. With PyTorch in the build, SDPA is timed the same way on the same GPU. Exit 0 whether the entry\n"
      "is ranked or rejected (the output and --json say which).");
  cli.choice("--kernel", o.kernel, fa2::leaderboard::kernel_words(),
             "step5: step05_fa2_kernel's kernel; v2, v3, v4: the ladder's rungs");
  cli.integer("--batch", o.problem.B, 1, 1024, "B");
  cli.integer("--heads", o.problem.H, 1, 1024, "H");
  cli.integer("--n", o.problem.N, 1, 1 << 20, "N, queries and keys per head");
  cli.integer("--d", o.problem.D, 16, 128, "D, the head dim: 16, 32, 64 or 128");
  cli.flag("--causal", o.problem.causal, "the causal mask (top-left)");
  cli.choice("--dtype", o.dtype, {{"bf16", fa2::DType::bfloat16}, {"float32", fa2::DType::float32}},
             "the inputs' and outputs' type");
  cli.integer("--calls", o.protocol.timed_calls, 1, 100000, "timed calls, each checked");
  cli.integer("--warmup-calls", o.protocol.warmup_calls, 0, 1000, "calls checked but not timed, first");
  cli.integer("--sample-rows", o.protocol.sample_rows, 1, 1 << 30,
              "query rows per call compared with float64, drawn anew per call");
  cli.number("--atol", o.atol, 0.0, 1.0, "absolute tolerance (default per dtype: bf16 2e-2, float32 1e-2)");
  cli.number("--rtol", o.rtol, 0.0, 1.0, "relative tolerance (default per dtype: bf16 2e-2, float32 1e-2)");
  cli.custom("--seed", "N", "seed of the inputs and of the sampled rows (default: FA2_SEED, or a fresh one)",
             [&o](std::string_view flag, const std::string& text) {
               o.seed = fa2::cli::parse_integer<std::uint64_t>(flag, text);
             });
  cli.flag("--host", o.host, "the host path: the kernel body run on the host (no GPU), timed by the host's clock");
  cli.choice("--sdpa", o.sdpa, {"sdpa", "sdpa-fa2", "sdpa-cudnn", "sdpa-mem"},
             "the SDPA entry the ratio is taken against (impl_torch.hpp)");
  cli.choice("--self-test", o.self_test, fa2::leaderboard::self_test_words(),
             "a self-test of the checker, never an entry: 'replay' copies the first call's output into every\n"
             "later call's, 'unwritten' leaves the last query of each head unwritten; either must end rejected");
  cli.text("--json", o.json_path, "FILE", "write the result as JSON to FILE (scripts/leaderboard.sh reads it)");
  return cli.run(argc, argv, [&] { return run(o, cli); });
}
