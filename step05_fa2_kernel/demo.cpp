// Step 5 demo: runs the FlashAttention-2 kernel on one problem, on the GPU when there is one
// (the host interpreter otherwise), and prints its error against the float64 reference and
// its time.   build/default/step05_fa2_kernel/step05_demo [--host]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/compare.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  bool force_host = false;
  fa2::cli::Parser cli("step05_demo",
                       "Step 5: runs the FlashAttention-2 kernel on one problem, on the GPU when there is one (the\n"
                       "host interpreter otherwise), and prints its error against the float64 reference and its time.");
  cli.flag("--host", force_host, "run only the host interpreter, even when there is a GPU");
  return cli.run(argc, argv, [&] { return demo(force_host); });
}
