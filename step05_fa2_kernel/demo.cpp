// Step 5 demo: runs the FlashAttention-2 kernel on one problem, on the GPU when there is one
// (the host interpreter otherwise), and prints its error against the float64 reference and
// its time; --trace records one program of the host path for the trace viewer (common/viewer/).
//   build/default/step05_fa2_kernel/step05_demo [--host] [--trace=FILE [--trace-program=Q,B] [--trace-causal]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli.hpp"
#include "common/compare.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/trace_json.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_trace.hpp"

#if FA2_HAS_CUDA
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#endif

namespace {

using fa2::bf16;
using fa2::index_t;

void report_errors(const char* where, const fa2::FlashOutputs<bf16>& out, const fa2::AttentionReference& ref) {
  const auto o = fa2::compare_close(out.O.cview(), ref.O.cview(), fa2::Tolerance{2e-2, 2e-2}, "O");
  const auto l = fa2::compare_close(out.L.cview(), ref.L.cview(), fa2::Tolerance{2e-2, 2e-2}, "L");
  std::printf("  %-5s max |O - O_ref| = %.2e   max |L - L_ref| = %.2e   (%s)\n", where, o.max_abs_error,
              l.max_abs_error, o.ok && l.ok ? "within bf16 tolerance 2e-2" : "OUTSIDE tolerance");
}

#if FA2_HAS_CUDA
// Median time of `reps` launches on (B*H, N, D) bf16 inputs, in ms.
double time_gpu(index_t BH, index_t N, index_t D, bool causal, int reps) {
  fa2::Rng rng(fa2::fresh_seed());
  const auto Q = fa2::random_normal<bf16, 3>({BH, N, D}, rng);
  const fa2::cuda::DeviceTensor<bf16, 3> dQ(Q), dK(Q), dV(Q);  // same values are fine for timing
  fa2::Tensor<bf16, 3> O({BH, N, D});
  fa2::Tensor<float, 2> L({BH, N});
  fa2::cuda::DeviceTensor<bf16, 3> dO(O);
  fa2::cuda::DeviceTensor<float, 2> dL(L);
  const auto args = fa2::make_flash_args<bf16>(dQ.view(), dK.view(), dV.view(), dO.view(), dL.view(), causal);
  cudaEvent_t start, stop;
  FA2_CUDA_CHECK(cudaEventCreate(&start));
  FA2_CUDA_CHECK(cudaEventCreate(&stop));
  fa2::flash_fwd_cuda(args);  // warm-up
  std::vector<float> ms(static_cast<std::size_t>(reps));
  for (auto& t : ms) {
    FA2_CUDA_CHECK(cudaEventRecord(start));
    fa2::flash_fwd_cuda(args);
    FA2_CUDA_CHECK(cudaEventRecord(stop));
    FA2_CUDA_CHECK(cudaEventSynchronize(stop));
    FA2_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
  }
  FA2_CUDA_CHECK(cudaEventDestroy(start));
  FA2_CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return static_cast<double>(ms[static_cast<std::size_t>(reps / 2)]);
}
#endif

// force_host: run the host interpreter only, even with a GPU (e.g. to time it alone).
int demo(bool force_host) {
  const index_t B = 4, N = 300, D = 64;  // 300 is not a multiple of 16: the last tiles are ragged
  fa2::Rng rng(fa2::fresh_seed());
  const auto Q = fa2::random_normal<bf16, 3>({B, N, D}, rng), K = fa2::random_normal<bf16, 3>({B, N, D}, rng),
             V = fa2::random_normal<bf16, 3>({B, N, D}, rng);
  std::printf("FlashAttention-2 forward, bf16, (batch, N, D) = (%ld, %ld, %ld), 16x16 tiles, seed %llu\n",
              static_cast<long>(B), static_cast<long>(N), static_cast<long>(D),
              static_cast<unsigned long long>(rng.seed()));

  for (bool causal : {false, true}) {
    std::printf("%s:\n", causal ? "causal" : "non-causal");
    const auto ref = fa2::reference_attention<bf16>(Q.cview(), K.cview(), V.cview(), causal);
    const auto t0 = std::chrono::steady_clock::now();
    const auto host = fa2::flash_attention_host<bf16>(Q.cview(), K.cview(), V.cview(), causal);
    const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    report_errors("host", host, ref);
    std::printf("        host interpreter took %.1f ms (one thread plays each thread block)\n", host_ms);
#if FA2_HAS_CUDA
    if (!force_host && fa2::cuda::gpu_status().available) {
      report_errors("GPU", fa2::flash_attention_cuda<bf16>(Q.cview(), K.cview(), V.cview(), causal), ref);
    }
#endif
  }

#if FA2_HAS_CUDA
  const auto& gpu = fa2::cuda::gpu_status();
  if (!force_host && gpu.available) {
    std::printf("\nKernel time on %s, bf16, B*H = 32, N = 4096, D = 64 (median of 20 launches):\n", gpu.name.c_str());
    for (bool causal : {false, true}) {
      const double ms = time_gpu(32, 4096, 64, causal, 20);
      const double flops = 4.0 * 32 * 4096.0 * 4096.0 * 64 / (causal ? 2.0 : 1.0);
      std::printf("  %-10s %8.3f ms  %6.1f TFLOP/s\n", causal ? "causal" : "non-causal", ms, flops / ms * 1e-9);
    }
    std::printf("(step07 measures this properly: L2 flushed between runs, against PyTorch and cuBLAS.)\n");
  } else if (!force_host) {
    std::printf("\nNo GPU here (%s): only the host path ran.\n", gpu.reason.c_str());
  }
#else
  (void)force_host;  // without CUDA the host path is the only one
  std::printf("\nBuilt without CUDA: only the host path ran.\n");
#endif
  return 0;
}

// --trace: one program of the host path on the article's (2, 100, 100, 64), float32, seed 2024.
struct TraceRequest {
  std::string file;
  fa2::TracedProblem problem;
  fa2::TracedProgram program;
};

void write_trace(const TraceRequest& t) {
  std::string source = "step05_demo --trace";
  if (t.program.query_tile >= 0) {
    source += " --trace-program=" + std::to_string(t.program.query_tile) + "," + std::to_string(t.program.batch);
  }
  if (t.problem.causal) source += " --trace-causal";
  const auto doc = fa2::trace_flash_program(&fa2::flash_fwd_host, t.problem, t.program, "step 5's kernel", source);
  fa2::cli::write_file(t.file, fa2::trace::to_json(doc));
  std::printf("\nRecorded %s: %zu events.\nwrote %s (open common/viewer/trace_viewer.html and load it)\n",
              doc.title.c_str(), doc.events.size(), t.file.c_str());
}

// "Q,B": the query tile and the batch element of the program to record, inside the trace's grid.
fa2::cli::Parser::Apply program_of(fa2::TracedProgram& program, const fa2::TracedProblem& problem) {
  return [&program, &problem](std::string_view flag, const std::string& text) {
    const auto parts = fa2::cli::split_list(text);
    if (parts.size() != 2) throw fa2::cli::UsageError(std::string(flag), "got '" + text + "', expected Q,B");
    const index_t tiles = fa2::traced_query_tiles(problem);
    program.query_tile = fa2::cli::parse_integer<index_t>(std::string(flag) + " (query tile)", parts[0], 0, tiles - 1);
    program.batch = fa2::cli::parse_integer<index_t>(std::string(flag) + " (batch)", parts[1], 0, problem.batch - 1);
  };
}

}  // namespace

int main(int argc, char** argv) {
  bool force_host = false;
  TraceRequest trace;
  fa2::cli::Parser cli(
      "step05_demo",
      "Step 5: runs the FlashAttention-2 kernel on one problem, on the GPU when there is one (the\n"
      "host interpreter otherwise), and prints its error against the float64 reference and its time.\n"
      "With --trace it then records one program of the host path on the article's (2, 100, 100, 64),\n"
      "float32 (seed 2024): every load and store with its tile and mask, and m_i, l_i and alpha after\n"
      "each key tile, as JSON for the trace viewer (common/viewer/trace_viewer.html).");
  cli.flag("--host", force_host, "run only the host interpreter, even when there is a GPU")
      .text("--trace", trace.file, "FILE", "write the trace of one program to FILE (JSON)")
      .custom("--trace-program", "Q,B",
              "the program to record: query tile Q (0..6) of batch element B (0..1); default the last query\n"
              "tile of batch 0",
              program_of(trace.program, trace.problem))
      .flag("--trace-causal", trace.problem.causal, "record the causal kernel (default non-causal)");
  return cli.run(argc, argv, [&] {
    if (trace.file.empty() && (cli.given("--trace-program") || cli.given("--trace-causal"))) {
      throw fa2::cli::UsageError("--trace-program and --trace-causal need --trace=FILE");
    }
    const int status = demo(force_host);
    if (!trace.file.empty()) write_trace(trace);
    return status;
  });
}
