// step07_demo: the benchmark's napkin math for the article's shapes (FLOPs, least bytes, the
// H200's floor times, what standard attention must store) and, when a GPU is present, one small
// point measured by the real harness (our step05 kernel and cuBLAS standard attention).
//   build/<preset>/step07_benchmark/step07_demo
#include <cstdio>
#include <iostream>
#include <string>

#include "common/cli.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_report.hpp"

#if FA2_STEP07_WITH_CUDA
#include "common/cuda/gpu.hpp"
#include "common/random.hpp"
#include "step07_benchmark/harness/bench_runner.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"
#endif

namespace {

using namespace fa2::bench;

void print_napkin_math() {
  const Ceilings h200 = h200_datasheet();
  std::printf(
      "Napkin math for the article's shapes: B=4, H=8, D=64, bfloat16 (%s: %.0f TFLOP/s dense bf16, %.1f TB/s)\n\n",
      h200.source.c_str(), h200.matrix_tflops, h200.memory_tbps);
  TextTable t({"N", "causal", "GFLOP", "least MiB", "FLOP/byte", "floor ms", "bound by", "S+P GiB"});
  for (int n : {512, 1024, 2048, 4096, 8192, 16384}) {
    for (bool causal : {false, true}) {
      const Problem p{4, 8, n, 64, causal};
      const double flops = attention_flops(p);
      const double bytes = min_traffic_bytes(p);
      const FloorTime f = floor_time(p, h200);
      t.add_row({std::to_string(n), causal ? "True" : "False", format_fixed(flops * 1e-9, 1),
                 format_fixed(bytes / (1024.0 * 1024.0), 1), format_fixed(flops / bytes, 0),
                 format_fixed(f.floor_ms(), 4), f.compute_bound() ? "compute" : "memory",
                 format_fixed(2.0 * static_cast<double>(score_matrix_bytes(p)) / (1024.0 * 1024.0 * 1024.0), 2)});
    }
  }
  std::cout << t.render();
  std::cout
      << "\nCompare FLOP/byte with the H200's balance point, 989e12 / 4.8e12 = about 206 FLOP per byte: above it\n"
         "the matrix units set the floor, below it memory does ('bound by'). The FLOP count is the article's\n"
         "(4*B*H*N^2*D, halved for causal); a kernel that still computes the masked tiles does the full work\n"
         "and is credited with half of it, so its causal TF/s is half its real rate (the article says such a\n"
         "rate is flattered; the count does the opposite). Standard attention also writes and reads S and\n"
         "P (last column, bf16), which is why it needs far more memory than a fused kernel.\n";
}

int demo() {
  print_napkin_math();
#if FA2_STEP07_WITH_CUDA
  const auto& gpu = fa2::cuda::gpu_status();
  if (!gpu.available) {
    std::cout << "\nThe benchmark itself needs a GPU (" << gpu.reason << ").\n"
              << "On one: step07_bench (or scripts/gpu_session.sh bench) runs the whole sweep.\n";
    return 0;
  }
  std::cout << "\nOne small point on " << gpu.name << " (the full sweep is step07_bench):\n";
  RunnerConfig config;
  config.budget.warmup_ms = 5.0;
  config.budget.rep_ms = 20.0;
  config.seed = fa2::fresh_seed();
  config.reference_key = fa2::variants::kStep05Key;
  Runner runner(assemble_registry({}), config, std::cout);
  const Problem p{4, 8, 1024, 64, false};
  const auto results = runner.run({p}, {fa2::variants::kStep05Key, "cublas"});
  TextTable t({"implementation", "ms", "TF/s", "peak MiB", "max |err| vs fp64"});
  for (const auto& m : results) {
    const bool ok = m.status == Status::ok;
    t.add_row({m.key, ok ? format_fixed(m.ms.median, 3) : short_status(m.status), ok ? format_fixed(m.tflops, 1) : "-",
               m.peak_bytes ? format_fixed(*m.peak_bytes / (1024.0 * 1024.0), 0) : "-",
               m.max_err_fp64 ? format_fixed(*m.max_err_fp64, 4) : "-"});
  }
  std::cout << "\n" << t.render();
#else
  std::cout
      << "\nThis build has no CUDA compiler, so it has no benchmark; build with nvcc and run step07_bench on a GPU.\n";
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fa2::cli::Parser cli("step07_demo",
                       "Step 7: the benchmark's napkin math for the article's shapes (FLOPs, least bytes, the H200's\n"
                       "floor times, what standard attention must store) and, when a GPU is present, one small point\n"
                       "measured by the real harness (our step05 kernel and cuBLAS standard attention).");
  return cli.run(argc, argv, demo);
}
