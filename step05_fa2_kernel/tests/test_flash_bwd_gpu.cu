// step05's backward on the GPU: the host suite's matrix through the CUDA launch, plus host/GPU
// agreement, the run-to-run spread that dQ's atomics allow, a head of a (B, N, H, D) tensor and
// batch strides past 2^31 elements (flash_bwd_test_support_cuda.hpp). Skipped (with the reason)
// where there is no GPU; FA2_REQUIRE_GPU=1 makes a missing GPU a failure.
//   cmake --build --preset default --target step05_backward_gpu_tests && ctest --preset default -L backward
#include <optional>
#include <type_traits>

#include "common/cuda/gpu.hpp"
#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/tests/flash_bwd_test_support.hpp"
#include "step05_fa2_kernel/tests/flash_bwd_test_support_cuda.hpp"

using fa2::index_t;
using fa2::Tensor;
using fa2::testing::FlashShape;

namespace {

template <class T>
fa2::testing::FlashPasses<T> gpu_passes() {
  return fa2::testing::gpu_passes<T>(&fa2::flash_bwd_cuda);
}

// The GPU backward with float32 products in 3xTF32 (what allow_tf32 = false asks for).
void flash_bwd_cuda_3xtf32(const fa2::FlashBwdArgs& args, CUstream_st* stream) {
  fa2::FlashBwdArgs a = args;
  a.allow_tf32 = false;
  fa2::flash_bwd_cuda(a, stream);
}

// Fresh inputs of 4 heads of 512 queries and keys (32 key tiles of 16 add into each row of
// dQ_accum), their reference forward, and their backward on the GPU, as often as asked.
struct RepeatedBackward {
  fa2::testing::BwdInputs<float> in;
  fa2::FlashOutputs<float> fwd;
  explicit RepeatedBackward(fa2::Rng& rng)
      : in(FlashShape{4, 512, 512, 64}, rng),
        fwd(fa2::testing::reference_outputs<float>(in.Q.cview(), in.K.cview(), in.V.cview(), false)) {}
  fa2::FlashGradients<float> run(bool deterministic) const {
    return fa2::flash_attention_backward_cuda<float>(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(),
                                                     fwd.L.cview(), in.dO.cview(), false, std::nullopt, deterministic);
  }
};

}  // namespace

TEST_SUITE("gpu+backward") {
  TEST_CASE("GPU backward: float32 with allow_tf32 = false: 3xTF32 gradients within 5e-5 of the scale, 0 for one key") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::check_float32_gradients(fa2::testing::gpu_passes<float>(&flash_bwd_cuda_3xtf32).backward,
                                          fa2::testing::gpu_passes<float>(&fa2::flash_bwd_cuda).backward);
  }

  TEST_CASE_TEMPLATE("GPU backward: the article's shapes give dQ, dK, dV of the float64 reference, causal and not", T,
                     float, fa2::bf16, fa2::fp16) {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::check_backward_matrix<T>(gpu_passes<T>());
  }

  TEST_CASE_TEMPLATE("GPU backward: every head dim, causal with N_q != N_k both ways, lengths below one tile", T, float,
                     fa2::bf16, fa2::fp16) {
    FA2_SKIP_WITHOUT_GPU();
    for (index_t D : {16, 32, 64, 128}) {
      for (const FlashShape shape : {FlashShape{2, 37, 53, D}, {1, 100, 30, D}, {3, 1, 1, D}, {1, 20, 70, D}}) {
        for (bool causal : {false, true}) {
          fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(gpu_passes<T>(), shape, causal));
        }
      }
    }
  }

  TEST_CASE_TEMPLATE(
      "GPU backward: grouped-query attention sums dK and dV over each group (1, 2, 4, 8), also deterministic", T, float,
      fa2::bf16, fa2::fp16) {
    FA2_SKIP_WITHOUT_GPU();
    for (index_t group : {1, 2, 4, 8}) {
      for (const FlashShape shape : {FlashShape{16, 100, 130, 64, group}, {8, 37, 21, 128, group}}) {
        for (bool causal : {false, true}) {
          for (bool deterministic : {false, true}) {
            fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(
                fa2::testing::gpu_passes<T>(&fa2::flash_bwd_cuda, deterministic), shape, causal));
          }
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("GPU backward: a sliding window, causal or not, N_q != N_k both ways, also deterministic", T,
                     float, fa2::bf16, fa2::fp16) {
    FA2_SKIP_WITHOUT_GPU();
    for (const fa2::Window window : fa2::testing::test_windows()) {
      for (const FlashShape shape : {FlashShape{2, 170, 145, 64}, {1, 145, 170, 128}, {4, 33, 33, 32, 2}}) {
        for (bool causal : {false, true}) {
          for (bool deterministic : {false, true}) {
            fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(
                fa2::testing::gpu_passes<T>(&fa2::flash_bwd_cuda, deterministic, window), shape, causal, 1.0,
                fa2::testing::gradient_tolerance<T>(), window));
          }
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("GPU backward: scores of about +-25 keep the gradients finite and close to the reference", T,
                     float, fa2::bf16, fa2::fp16) {
    FA2_SKIP_WITHOUT_GPU();
    for (const FlashShape shape : {FlashShape{2, 300, 300, 64}, {1, 37, 53, 128}}) {
      for (bool causal : {false, true}) {
        fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(gpu_passes<T>(), shape, causal, 5.0,
                                                                              fa2::testing::kLargeScoreTolerance));
      }
    }
  }

  TEST_CASE_TEMPLATE("GPU backward: the GPU and the host path compute the same gradients", T, float, fa2::bf16,
                     fa2::fp16) {
    FA2_SKIP_WITHOUT_GPU();
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const fa2::testing::BwdInputs<T> in(FlashShape{2, 77, 90, 64}, rng);
    for (bool causal : {false, true}) {
      INFO("causal ", causal);
      // The same O and L for both, so that only the backward differs.
      const auto fwd = fa2::flash_attention_host<T>(in.Q.cview(), in.K.cview(), in.V.cview(), causal);
      const auto gpu = fa2::flash_attention_backward_cuda<T>(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(),
                                                             fwd.L.cview(), in.dO.cview(), causal);
      const auto host = fa2::flash_attention_backward_host<T>(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(),
                                                              fwd.L.cview(), in.dO.cview(), causal);
      // Same operands and tile order; what differs is the order of additions inside a tensor-core
      // product and in dQ's atomics, and __expf against std::exp. Such float32 differences can
      // flip the rounding of a P or dS operand to TF32 or fp16 (2^-11) or bf16 (2^-8), and the
      // result's own rounding to bf16 or fp16 by one step: hence 1e-3 (float32), 2e-3 (fp16) and
      // 1e-2 (bf16) of the largest entry.
      const fa2::testing::GradientTolerance tol = std::is_same_v<T, float> ? fa2::testing::GradientTolerance{1e-3, 1e-3}
                                                  : std::is_same_v<T, fa2::fp16>
                                                      ? fa2::testing::GradientTolerance{2e-3, 2e-3}
                                                      : fa2::testing::GradientTolerance{1e-2, 1e-2};
      fa2::testing::require_close(
          fa2::testing::compare_gradients<T>(gpu, fa2::testing::widened(host), "GPU vs host", tol));
    }
  }

  TEST_CASE("GPU backward: dK and dV are the same bits on every run, dQ differs only by the order of its atomics") {
    FA2_SKIP_WITHOUT_GPU();
    // 32 key tiles add into each row of dQ_accum, in whatever order the programs reach it.
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const RepeatedBackward backward(rng);
    const auto a = backward.run(false), b = backward.run(false);
    CHECK(fa2::testing::same_bits(a.dK, b.dK));  // one program owns each row: a fixed order of additions
    CHECK(fa2::testing::same_bits(a.dV, b.dV));
    // A float32 sum of 32 shares, reordered, moves by a few 2^-24 of the shares' size.
    const auto c = fa2::testing::compare_gradients<float>(a, fa2::testing::widened(b), "run 1 vs run 2",
                                                          fa2::testing::GradientTolerance{1e-5, 1e-5});
    CHECK_MESSAGE(c.dQ.ok, c.dQ.summary());
  }

  TEST_CASE("GPU backward: deterministic gives the reference's gradients and the same bits on every run") {
    FA2_SKIP_WITHOUT_GPU();
    // One launch per key tile: every element of dQ_accum gets its shares in key-tile order.
    for (bool causal : {false, true}) {
      fa2::testing::require_close(fa2::testing::run_backward_and_compare<float>(
          fa2::testing::gpu_passes<float>(&fa2::flash_bwd_cuda, true), FlashShape{2, 70, 45, 64}, causal));
    }
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const RepeatedBackward backward(rng);
    const auto a = backward.run(true);
    for (int r = 2; r <= 4; ++r) {
      const auto b = backward.run(true);
      CHECK_MESSAGE(fa2::testing::same_bits(a.dQ, b.dQ), "dQ, run ", r);
      CHECK_MESSAGE(fa2::testing::same_bits(a.dK, b.dK), "dK, run ", r);
      CHECK_MESSAGE(fa2::testing::same_bits(a.dV, b.dV), "dV, run ", r);
    }
  }

  TEST_CASE("GPU backward: a head of a (B, N, H, D) tensor is read and written through its strides, nothing else") {
    FA2_SKIP_WITHOUT_GPU();
    for (bool causal : {false, true}) fa2::testing::check_backward_head_view(&fa2::flash_bwd_cuda, causal);
  }

  TEST_CASE("GPU backward: batch strides past 2^31 elements are addressed in 64 bits") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::check_backward_batch_stride_past_2_31(&fa2::flash_bwd_cuda, false);
  }
}

TEST_SUITE("validation+backward") {
  TEST_CASE("backward: the CUDA launch validates its arguments before touching the GPU") {
    // Runs without a GPU: the checks come first, so no CUDA call is made.
    Tensor<float, 3> q({1, 8, 64}), g({1, 8, 64});
    Tensor<float, 2> l({1, 8}), d({1, 8});
    auto a = fa2::make_flash_bwd_args<float>(q.cview(), q.cview(), q.cview(), q.cview(), l.cview(), q.cview(), d.view(),
                                             g.view(), g.view(), g.view(), g.view(), false);
    a.dk = nullptr;
    CHECK_THROWS_WITH_AS(fa2::flash_bwd_cuda(a), doctest::Contains("dK: null pointer"), std::invalid_argument);
    a = fa2::make_flash_bwd_args<float>(q.cview(), q.cview(), q.cview(), q.cview(), l.cview(), q.cview(), d.view(),
                                        g.view(), g.view(), g.view(), g.view(), false);
    a.do_shape = {1, 9, 64};
    CHECK_THROWS_WITH_AS(fa2::flash_bwd_cuda(a), doctest::Contains("dO.shape"), std::invalid_argument);
  }
}
