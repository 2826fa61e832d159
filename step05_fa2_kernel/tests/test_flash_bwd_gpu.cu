// step05's backward on the GPU: the host suite's matrix through the CUDA launch, plus host/GPU
// agreement, the run-to-run spread that dQ's atomics allow, strided device buffers and batch
// strides past 2^31 elements. Skipped (with the reason) where there is no GPU; FA2_REQUIRE_GPU=1
// makes a missing GPU a failure.
//   cmake --build --preset default --target step05_backward_gpu_tests && ctest --preset default -L backward
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/tests/flash_bwd_test_support.hpp"
#include "step05_fa2_kernel/tests/flash_test_support_cuda.hpp"

using fa2::index_t;
using fa2::Tensor;
using fa2::TensorView;
using fa2::testing::FlashShape;

namespace {

template <class T>
fa2::testing::FlashPasses<T> gpu_passes() {
  return {fa2::testing::gpu_runner<T>(&fa2::flash_fwd_cuda),
          [](TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V, TensorView<const T, 3> O,
             TensorView<const float, 2> L, TensorView<const T, 3> dO,
             bool causal) { return fa2::flash_attention_backward_cuda<T>(Q, K, V, O, L, dO, causal); }};
}

// Storage elements outside [0, D) of each row of `row_length` that are no longer NaN.
template <class T>
int written_gaps(const std::vector<T>& storage, index_t row_length, index_t D) {
  int written = 0;
  for (std::size_t i = 0; i < storage.size(); ++i) {
    if (static_cast<index_t>(i) % row_length >= D && !std::isnan(fa2::convert<float>(storage[i]))) ++written;
  }
  return written;
}

}  // namespace

TEST_SUITE("gpu+backward") {
  TEST_CASE_TEMPLATE("GPU backward: the article's shapes give dQ, dK, dV of the float64 reference, causal and not", T,
                     float, fa2::bf16) {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::check_backward_matrix<T>(gpu_passes<T>());
  }

  TEST_CASE_TEMPLATE("GPU backward: every head dim, causal with N_q != N_k both ways, lengths below one tile", T, float,
                     fa2::bf16) {
    FA2_SKIP_WITHOUT_GPU();
    for (index_t D : {16, 32, 64, 128}) {
      for (const FlashShape shape : {FlashShape{2, 37, 53, D}, {1, 100, 30, D}, {3, 1, 1, D}, {1, 20, 70, D}}) {
        for (bool causal : {false, true}) {
          fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(gpu_passes<T>(), shape, causal));
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("GPU backward: scores of about +-25 keep the gradients finite and close to the reference", T,
                     float, fa2::bf16) {
    FA2_SKIP_WITHOUT_GPU();
    for (const FlashShape shape : {FlashShape{2, 300, 300, 64}, {1, 37, 53, 128}}) {
      for (bool causal : {false, true}) {
        fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(gpu_passes<T>(), shape, causal, 5.0,
                                                                              fa2::testing::kLargeScoreTolerance));
      }
    }
  }

  TEST_CASE_TEMPLATE("GPU backward: the GPU and the host path compute the same gradients", T, float, fa2::bf16) {
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
      // flip the rounding of a P or dS operand to TF32 (2^-11) or bf16 (2^-8), and the result's
      // own rounding to bf16 by one step: hence 1e-3 and 1e-2 of the largest entry.
      const fa2::testing::GradientTolerance tol = std::is_same_v<T, float>
                                                      ? fa2::testing::GradientTolerance{1e-3, 1e-3}
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
    const fa2::testing::BwdInputs<float> in(FlashShape{4, 512, 512, 64}, rng);
    const auto fwd = fa2::flash_attention_cuda<float>(in.Q.cview(), in.K.cview(), in.V.cview(), false);
    const auto run = [&] {
      return fa2::flash_attention_backward_cuda<float>(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(),
                                                       fwd.L.cview(), in.dO.cview(), false);
    };
    const auto a = run(), b = run();
    const auto same_bits = [](const Tensor<float, 3>& x, const Tensor<float, 3>& y) {
      return std::memcmp(x.storage().data(), y.storage().data(), x.storage().size() * sizeof(float)) == 0;
    };
    CHECK(same_bits(a.dK, b.dK));  // one program owns each row: a fixed order of additions
    CHECK(same_bits(a.dV, b.dV));
    // A float32 sum of 32 shares, reordered, moves by a few 2^-24 of the shares' size.
    const auto c = fa2::testing::compare_gradients<float>(a, fa2::testing::widened(b), "run 1 vs run 2",
                                                          fa2::testing::GradientTolerance{1e-5, 1e-5});
    CHECK_MESSAGE(c.dQ.ok, c.dQ.summary());
  }

  TEST_CASE("GPU backward: strided device buffers are read and written through their strides") {
    FA2_SKIP_WITHOUT_GPU();
    const index_t B = 2, N_q = 45, N_k = 38, D = 64, pad = 16;
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Rows of D + pad elements; the pad of every output is NaN and must stay so.
    const auto padded = [&](index_t N, auto fill) {
      using E = decltype(fill);
      return Tensor<E, 3>::strided({B, N, D}, {N * (D + pad), D + pad, 1}, fill);
    };
    const auto random_padded = [&](index_t N) {
      auto t = padded(N, fa2::bf16(0.0f));
      fa2::fill_normal<fa2::bf16, 3>(t.view(), rng);
      return t;
    };
    const auto Q = random_padded(N_q), K = random_padded(N_k), V = random_padded(N_k), dO = random_padded(N_q);
    const auto fwd = fa2::flash_attention_cuda<fa2::bf16>(Q.cview(), K.cview(), V.cview(), true);
    auto O = padded(N_q, fa2::bf16(nan));
    fa2::copy_convert<fa2::bf16, fa2::bf16, 3>(fwd.O.cview(), O.view());
    auto L = Tensor<float, 2>::strided({B, N_q}, {2 * N_q, 2}, nan);
    fa2::copy_convert<float, float, 2>(fwd.L.cview(), L.view());
    fa2::FlashGradients<fa2::bf16> g{padded(N_q, fa2::bf16(nan)), padded(N_k, fa2::bf16(nan)),
                                     padded(N_k, fa2::bf16(nan))};
    auto dQ_accum = padded(N_q, nan);
    auto D_rows = Tensor<float, 2>::strided({B, N_q}, {2 * N_q, 2}, nan);

    const fa2::cuda::DeviceTensor<fa2::bf16, 3> dev_Q(Q), dev_K(K), dev_V(V), dev_O(O), dev_dO(dO);
    const fa2::cuda::DeviceTensor<float, 2> dev_L(L);
    fa2::cuda::DeviceTensor<fa2::bf16, 3> dev_dQ(g.dQ), dev_dK(g.dK), dev_dV(g.dV);
    fa2::cuda::DeviceTensor<float, 3> dev_dQ_accum(dQ_accum);
    fa2::cuda::DeviceTensor<float, 2> dev_D_rows(D_rows);
    fa2::flash_bwd_cuda(fa2::make_flash_bwd_args<fa2::bf16>(
        dev_Q.view(), dev_K.view(), dev_V.view(), dev_O.view(), dev_L.view(), dev_dO.view(), dev_D_rows.view(),
        dev_dQ.view(), dev_dQ_accum.view(), dev_dK.view(), dev_dV.view(), true));
    FA2_CUDA_CHECK(cudaDeviceSynchronize());
    dev_dQ.download_to(g.dQ);
    dev_dK.download_to(g.dK);
    dev_dV.download_to(g.dV);
    dev_dQ_accum.download_to(dQ_accum);
    dev_D_rows.download_to(D_rows);

    fa2::testing::require_close(fa2::testing::compare_gradients<fa2::bf16>(
        g, fa2::reference_attention_backward<fa2::bf16>(Q.cview(), K.cview(), V.cview(), dO.cview(), true), "strided"));
    CHECK(written_gaps(g.dQ.storage(), D + pad, D) == 0);
    CHECK(written_gaps(g.dK.storage(), D + pad, D) == 0);
    CHECK(written_gaps(g.dV.storage(), D + pad, D) == 0);
    CHECK(written_gaps(dQ_accum.storage(), D + pad, D) == 0);
    CHECK(written_gaps(D_rows.storage(), 2, 1) == 0);
  }

  TEST_CASE("GPU backward: batch strides past 2^31 elements are addressed in 64 bits") {
    FA2_SKIP_WITHOUT_GPU();
    // Batch element 1 of every tensor starts 8 GiB + 256 bytes after its element 0: 2^31 + 64
    // float32 elements, 2^32 + 128 bf16 elements, so a 32-bit offset would wrap. Rather than one
    // such buffer per tensor (four bf16 ones, 17 GB, in the forward's test), the eleven tensors
    // share one arena: batch element b of tensor t lives at byte b * batch_bytes + t * slot_bytes.
    const index_t B = 2, N_q = 64, N_k = 48, D = 64;
    constexpr std::size_t batch_bytes = ((std::size_t{1} << 31) + 64) * sizeof(float);
    const std::size_t slot_bytes = static_cast<std::size_t>(N_q * D) * sizeof(float);  // the largest per-batch tensor
    constexpr int slots = 11;
    const std::size_t arena_bytes = batch_bytes + slots * slot_bytes;
    std::size_t free_bytes = 0, total_bytes = 0;
    FA2_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (free_bytes < arena_bytes + (std::size_t{1} << 30)) {
      fa2::testing::mark_skipped("needs ~9.6 GB of free GPU memory");
      return;
    }
    fa2::cuda::DeviceBuffer<std::byte> arena(arena_bytes);
    int next_slot = 0;
    // A (B, N, ...) view of the next slot, with the arena's batch stride, and its host twin's
    // batches copied in.
    const auto place = [&]<class E, int Rank>(const Tensor<E, Rank>& host) {
      std::byte* const at = arena.data() + static_cast<std::size_t>(next_slot++) * slot_bytes;
      fa2::Extents<Rank> strides = fa2::contiguous_strides<Rank>(host.shape());
      strides[0] = static_cast<index_t>(batch_bytes / sizeof(E));
      const std::size_t per_batch = static_cast<std::size_t>(host.numel() / B) * sizeof(E);
      for (index_t b = 0; b < B; ++b) {
        FA2_CUDA_CHECK(cudaMemcpy(at + static_cast<std::size_t>(b) * batch_bytes,
                                  host.storage().data() + static_cast<std::size_t>(b * host.strides()[0]), per_batch,
                                  cudaMemcpyHostToDevice));
      }
      return TensorView<E, Rank>(reinterpret_cast<E*>(at), host.shape(), strides);
    };
    const auto fetch = [&]<class E, int Rank>(TensorView<E, Rank> dev, Tensor<E, Rank>& host) {
      const std::size_t per_batch = static_cast<std::size_t>(host.numel() / B) * sizeof(E);
      for (index_t b = 0; b < B; ++b) {
        FA2_CUDA_CHECK(
            cudaMemcpy(host.storage().data() + static_cast<std::size_t>(b * host.strides()[0]),
                       reinterpret_cast<const std::byte*>(dev.data()) + static_cast<std::size_t>(b) * batch_bytes,
                       per_batch, cudaMemcpyDeviceToHost));
      }
    };

    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const fa2::testing::BwdInputs<fa2::bf16> in(FlashShape{B, N_q, N_k, D}, rng);
    const auto fwd = fa2::flash_attention_cuda<fa2::bf16>(in.Q.cview(), in.K.cview(), in.V.cview(), false);
    auto grads = fa2::poisoned_gradients<fa2::bf16>(in.Q.shape(), in.K.shape());
    auto work = fa2::poisoned_workspace(in.Q.shape());
    const auto Q = place(in.Q), K = place(in.K), V = place(in.V), O = place(fwd.O), dO = place(in.dO);
    const auto L = place(fwd.L), D_rows = place(work.D_rows);
    const auto dQ_accum = place(work.dQ_accum);
    const auto dQ = place(grads.dQ), dK = place(grads.dK), dV = place(grads.dV);
    REQUIRE(next_slot == slots);
    fa2::flash_bwd_cuda(fa2::make_flash_bwd_args<fa2::bf16>(Q, K, V, O, L, dO, D_rows, dQ, dQ_accum, dK, dV, false));
    FA2_CUDA_CHECK(cudaDeviceSynchronize());
    fetch(dQ, grads.dQ);
    fetch(dK, grads.dK);
    fetch(dV, grads.dV);

    fa2::testing::require_close(fa2::testing::compare_gradients<fa2::bf16>(
        grads,
        fa2::reference_attention_backward<fa2::bf16>(in.Q.cview(), in.K.cview(), in.V.cview(), in.dO.cview(), false),
        "batch stride 2^31 + 64"));
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
