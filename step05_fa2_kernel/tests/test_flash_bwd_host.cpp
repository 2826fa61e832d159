// step05's backward on the host path: the three kernel bodies run by run_on_host (with the
// shared-memory race checks), against the float64 reference gradients. Runs in CI:
//   cmake --build --preset default --target step05_backward_host_tests && ctest --preset default -L backward
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/flash_bwd_dispatch.hpp"
#include "step05_fa2_kernel/tests/flash_bwd_test_support.hpp"

#define FA2_KERNEL_NAMESPACE without_barrier
#include "step05_fa2_kernel/flash_bwd_kernel_without_barrier.hpp"

using fa2::index_t;
using fa2::Tensor;
using fa2::TensorView;
using fa2::testing::FlashShape;

namespace {

// Elements of `storage` outside the view's head dims [0, D) of each row of `row_length`: the
// padding of a strided tensor, which the kernel must leave as it was (NaN here).
template <class T>
int written_gaps(const std::vector<T>& storage, index_t row_length, index_t D) {
  int written = 0;
  for (std::size_t i = 0; i < storage.size(); ++i) {
    const bool in_gap = static_cast<index_t>(i) % row_length >= D;
    if (in_gap && !std::isnan(fa2::convert<float>(storage[i]))) ++written;
  }
  return written;
}

// The host backward on float32 with products in TF32 (allow_tf32) or 3xTF32.
fa2::testing::FlashBwdRunner<float> host_backward(bool allow_tf32) {
  return [allow_tf32](TensorView<const float, 3> Q, TensorView<const float, 3> K, TensorView<const float, 3> V,
                      TensorView<const float, 3> O, TensorView<const float, 2> L, TensorView<const float, 3> dO,
                      bool causal) {
    auto grads = fa2::poisoned_gradients<float>(Q.shape(), K.shape());
    auto work = fa2::poisoned_workspace(Q.shape());
    auto args = fa2::make_flash_bwd_args<float>(Q, K, V, O, L, dO, work.D_rows.view(), grads.dQ.view(),
                                                work.dQ_accum.view(), grads.dK.view(), grads.dV.view(), causal);
    args.allow_tf32 = allow_tf32;
    fa2::flash_bwd_host(args);
    return grads;
  };
}

void flash_bwd_without_barrier_host(const fa2::FlashBwdArgs& args) {
  fa2::launch_flash_bwd<fa2::without_barrier::FlashBwdPreprocess, fa2::without_barrier::FlashBwdKernel,
                        fa2::without_barrier::FlashBwdConvertDQ>(
      args, fa2::HostLauncher{}, fa2::DTypes<float>{}, fa2::HeadDims<64>{}, "the backward without its barrier");
}

}  // namespace

TEST_SUITE("host+backward") {
  TEST_CASE("backward: float32 with allow_tf32 = false: 3xTF32 gradients within 5e-5 of the scale, and 0 for one key") {
    fa2::testing::check_float32_gradients(host_backward(false), host_backward(true));
  }

  TEST_CASE_TEMPLATE("backward: the article's shapes give dQ, dK, dV of the float64 reference, causal and not", T,
                     float, fa2::bf16, fa2::fp16) {
    fa2::testing::check_backward_matrix<T>(fa2::testing::host_passes<T>());
  }

  TEST_CASE_TEMPLATE("backward: causal with N_q != N_k follows the top-left mask both ways", T, float, fa2::bf16,
                     fa2::fp16) {
    for (const FlashShape shape : {FlashShape{1, 37, 53, 32}, {2, 100, 30, 64}, {1, 20, 70, 16}}) {
      fa2::testing::require_close(
          fa2::testing::run_backward_and_compare<T>(fa2::testing::host_passes<T>(), shape, true));
    }
  }

  TEST_CASE("backward: every head dim, ragged last tiles and lengths below one tile give the reference gradients") {
    for (index_t D : {16, 32, 64, 128}) {
      for (const FlashShape shape : {FlashShape{2, 1, 1, D}, {1, 5, 17, D}, {1, 33, 16, D}, {2, 47, 29, D}}) {
        for (bool causal : {false, true}) {
          fa2::testing::require_close(
              fa2::testing::run_backward_and_compare<float>(fa2::testing::host_passes<float>(), shape, causal));
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("backward: grouped-query attention sums dK and dV over the query heads of each group (1, 2, 4, 8)",
                     T, float, fa2::bf16, fa2::fp16) {
    for (index_t group : {1, 2, 4, 8}) {
      for (const FlashShape shape : {FlashShape{8, 37, 53, 32, group}, {16, 40, 21, 64, group}}) {
        for (bool causal : {false, true}) {
          fa2::testing::require_close(
              fa2::testing::run_backward_and_compare<T>(fa2::testing::host_passes<T>(), shape, causal));
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("backward: a sliding window, causal or not, N_q != N_k both ways, queries that see no key", T,
                     float, fa2::bf16, fa2::fp16) {
    for (const fa2::Window window : fa2::testing::test_windows()) {
      for (const FlashShape shape : {FlashShape{2, 70, 45, 32}, {1, 45, 70, 64}, {4, 33, 33, 16, 2}}) {
        for (bool causal : {false, true}) {
          fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(
              fa2::testing::host_passes<T>(window), shape, causal, 1.0, fa2::testing::gradient_tolerance<T>(), window));
        }
      }
    }
  }

  TEST_CASE("backward: query tiles wholly outside the window are skipped: NaN in their Q and dO reaches no other row") {
    // Window (0, 0) over 128 queries and keys: key k is seen by query k alone, so the key tiles of
    // keys 0 to 63 must not read the query tiles from 64 on.
    CHECK(fa2::testing::skips_unseen_query_tiles<float>(fa2::testing::host_passes<float>(fa2::Window{0, 0}).backward,
                                                        128, 32, 64));
    // The check itself: without the window every query tile is read, and the NaN reaches dK and dV.
    CHECK_FALSE(
        fa2::testing::skips_unseen_query_tiles<float>(fa2::testing::host_passes<float>().backward, 128, 32, 64));
  }

  TEST_CASE("backward: keys that no query sees (causal, N_q < N_k) get dK = dV = 0 exactly, not NaN") {
    // Queries 0..9 see keys 0..9 only: keys 10..49 (part of key tile 0, all of tiles 1 to 3)
    // meet no query, and key tiles 1 to 3 visit no query tile at all.
    const FlashShape shape{1, 10, 50, 32};
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const fa2::testing::BwdInputs<float> in(shape, rng);
    const auto fwd = fa2::testing::reference_outputs<float>(in.Q.cview(), in.K.cview(), in.V.cview(), true);
    const auto g = fa2::flash_attention_backward_host<float>(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(),
                                                             fwd.L.cview(), in.dO.cview(), true);
    int nonzero = 0;
    for (index_t k = shape.N_q; k < shape.N_k; ++k) {
      for (index_t d = 0; d < shape.D; ++d) nonzero += (g.dK(0, k, d) != 0.0f) + (g.dV(0, k, d) != 0.0f);
    }
    CHECK(nonzero == 0);
    fa2::testing::require_close(
        fa2::testing::check_backward<float>(fa2::testing::host_passes<float>(), in, true, "keys no query sees"));
  }

  TEST_CASE("backward: one head of a (B, N, H, D) tensor is read and written through its strides") {
    // Inputs are one head of (B, N, H, D) tensors (rows H*D apart); the gradients and the
    // workspaces have padded rows, poisoned with NaN, which must stay untouched.
    const index_t B = 2, N_q = 45, N_k = 38, H = 3, D = 32, h = 1, pad = 8;
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto q4 = fa2::random_normal<float, 4>({B, N_q, H, D}, rng);
    const auto k4 = fa2::random_normal<float, 4>({B, N_k, H, D}, rng);
    const auto v4 = fa2::random_normal<float, 4>({B, N_k, H, D}, rng);
    const auto do4 = fa2::random_normal<float, 4>({B, N_q, H, D}, rng);
    const auto head = [&](const Tensor<float, 4>& t, index_t N) {
      return TensorView<const float, 3>(t.view().data() + h * D, {B, N, D}, {N * H * D, H * D, 1});
    };
    const auto Q = head(q4, N_q), K = head(k4, N_k), V = head(v4, N_k), dO = head(do4, N_q);
    CHECK_FALSE(Q.is_contiguous());

    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto padded = [&](index_t N) {
      return Tensor<float, 3>::strided({B, N, D}, {N * (D + pad), D + pad, 1}, nan);
    };
    for (bool causal : {false, true}) {
      INFO("causal ", causal);
      const auto fwd = fa2::testing::reference_outputs<float>(Q, K, V, causal);
      fa2::FlashGradients<float> g{padded(N_q), padded(N_k), padded(N_k)};
      auto dQ_accum = padded(N_q);
      auto D_rows = Tensor<float, 2>::strided({B, N_q}, {2 * N_q, 2}, nan);  // every other float
      fa2::flash_bwd_host(fa2::make_flash_bwd_args<float>(Q, K, V, fwd.O.cview(), fwd.L.cview(), dO, D_rows.view(),
                                                          g.dQ.view(), dQ_accum.view(), g.dK.view(), g.dV.view(),
                                                          causal));
      fa2::testing::require_close(fa2::testing::compare_gradients<float>(
          g, fa2::reference_attention_backward<float>(Q, K, V, dO, causal), "strided"));
      CHECK(written_gaps(g.dQ.storage(), D + pad, D) == 0);
      CHECK(written_gaps(g.dK.storage(), D + pad, D) == 0);
      CHECK(written_gaps(g.dV.storage(), D + pad, D) == 0);
      CHECK(written_gaps(dQ_accum.storage(), D + pad, D) == 0);
      CHECK(written_gaps(D_rows.storage(), 2, 1) == 0);
    }
  }

  TEST_CASE_TEMPLATE("backward: scores of about +-25 keep the gradients finite and close to the reference", T, float,
                     fa2::bf16, fa2::fp16) {
    // Q and K of standard deviation 5: scores q.k / sqrt(D) of standard deviation 25, a softmax
    // close to one-hot, where exp(S - L) must neither overflow nor lose the few keys that count.
    for (const FlashShape shape : {FlashShape{2, 100, 100, 64}, {1, 37, 53, 32}}) {
      for (bool causal : {false, true}) {
        fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(
            fa2::testing::host_passes<T>(), shape, causal, 5.0, fa2::testing::kLargeScoreTolerance));
      }
    }
  }

  TEST_CASE("backward: an explicit softmax scale replaces 1/sqrt(D) in P, dK and dQ") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const fa2::testing::BwdInputs<float> in(FlashShape{1, 40, 50, 64}, rng);
    for (bool causal : {false, true}) {
      const auto fwd = fa2::testing::reference_outputs<float>(in.Q.cview(), in.K.cview(), in.V.cview(), causal, 0.05);
      const auto g = fa2::flash_attention_backward_host<float>(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(),
                                                               fwd.L.cview(), in.dO.cview(), causal, 0.05f);
      const auto ref = fa2::reference_attention_backward<float>(in.Q.cview(), in.K.cview(), in.V.cview(), in.dO.cview(),
                                                                causal, 0.05);
      fa2::testing::require_close(fa2::testing::compare_gradients<float>(g, ref, "scale 0.05"));
    }
  }

  TEST_CASE(
      "backward: the preprocess writes D_i, the row dot product of dO and O, and clears a NaN-poisoned dQ "
      "accumulator") {
    const FlashShape shape{2, 37, 21, 64};
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const fa2::testing::BwdInputs<fa2::bf16> in(shape, rng);
    const auto fwd = fa2::testing::reference_outputs<fa2::bf16>(in.Q.cview(), in.K.cview(), in.V.cview(), false);
    auto grads = fa2::poisoned_gradients<fa2::bf16>(in.Q.shape(), in.K.shape());
    auto work = fa2::poisoned_workspace(in.Q.shape());
    fa2::flash_bwd_host(fa2::make_flash_bwd_args<fa2::bf16>(
        in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(), fwd.L.cview(), in.dO.cview(), work.D_rows.view(),
        grads.dQ.view(), work.dQ_accum.view(), grads.dK.view(), grads.dV.view(), false));
    // D_i in float32 from the bf16 O and dO: the same products, summed in another order.
    Tensor<double, 2> D_expected({shape.B, shape.N_q});
    for (index_t b = 0; b < shape.B; ++b) {
      for (index_t q = 0; q < shape.N_q; ++q) {
        double sum = 0.0;
        for (index_t d = 0; d < shape.D; ++d) {
          sum += static_cast<double>(in.dO(b, q, d)) * static_cast<double>(fwd.O(b, q, d));
        }
        D_expected(b, q) = sum;
      }
    }
    FA2_CHECK_CLOSE(work.D_rows.cview(), D_expected.cview(), (fa2::Tolerance{1e-5, 1e-5}), "D_rows");
    // dQ is dQ_accum rounded once to bf16: every accumulator entry was cleared, then summed.
    int mismatched = 0;
    fa2::for_each_index<3>(in.Q.shape(), [&](const fa2::Extents<3>& i) {
      mismatched += grads.dQ.view().at(i) != fa2::bf16(work.dQ_accum.view().at(i));
    });
    CHECK(mismatched == 0);
  }

  TEST_CASE("backward: deterministic, the key tiles run one launch each and give the bits of one launch") {
    // On the host the programs run one after another either way: the same additions in the same
    // order, so the same bits, whichever launch ran them (Grid::first_x picks each key tile).
    const FlashShape shape{4, 70, 45, 32, 2};  // grouped-query: each key tile program walks two heads
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const fa2::testing::BwdInputs<float> in(shape, rng);
    for (bool causal : {false, true}) {
      const auto fwd = fa2::testing::reference_outputs<float>(in.Q.cview(), in.K.cview(), in.V.cview(), causal);
      const auto run = [&](bool deterministic) {
        return fa2::flash_attention_backward_host<float>(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(),
                                                         fwd.L.cview(), in.dO.cview(), causal, std::nullopt,
                                                         deterministic);
      };
      const auto one_launch = run(false), per_key_tile = run(true);
      CHECK(fa2::testing::same_bits(one_launch.dQ, per_key_tile.dQ));
      CHECK(fa2::testing::same_bits(one_launch.dK, per_key_tile.dK));
      CHECK(fa2::testing::same_bits(one_launch.dV, per_key_tile.dV));
    }
  }

  TEST_CASE("backward: the host path gives the same bits on every run (the GPU's atomics do not)") {
    const FlashShape shape{2, 70, 45, 32};
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const fa2::testing::BwdInputs<float> in(shape, rng);
    const auto fwd = fa2::testing::reference_outputs<float>(in.Q.cview(), in.K.cview(), in.V.cview(), true);
    const auto run = [&] {
      return fa2::flash_attention_backward_host<float>(in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(),
                                                       fwd.L.cview(), in.dO.cview(), true);
    };
    const auto a = run(), b = run();
    CHECK(fa2::testing::same_bits(a.dQ, b.dQ));
    CHECK(fa2::testing::same_bits(a.dK, b.dK));
    CHECK(fa2::testing::same_bits(a.dV, b.dV));
  }
}

TEST_SUITE("host+backward+barrier") {
  // Without the barrier after the loads, the first product reads Q_i while other threads may
  // still be writing it: warp 0, played by its thread 0, reads row 1, which thread 64 loaded.
  TEST_CASE("backward: the kernel without its prog.sync() fails on the host with the race, its tile and its threads") {
    for (bool causal : {false, true}) {
      fa2::Rng rng(fa2::fresh_seed());
      INFO("seed ", rng.seed(), ", causal ", causal);
      const fa2::testing::BwdInputs<float> in(FlashShape{1, 40, 40, 64}, rng);
      const auto fwd = fa2::testing::reference_outputs<float>(in.Q.cview(), in.K.cview(), in.V.cview(), causal);
      auto grads = fa2::poisoned_gradients<float>(in.Q.shape(), in.K.shape());
      auto work = fa2::poisoned_workspace(in.Q.shape());
      const auto args = fa2::make_flash_bwd_args<float>(
          in.Q.cview(), in.K.cview(), in.V.cview(), fwd.O.cview(), fwd.L.cview(), in.dO.cview(), work.D_rows.view(),
          grads.dQ.view(), work.dQ_accum.view(), grads.dK.view(), grads.dV.view(), causal);
      CHECK_THROWS_WITH_AS(flash_bwd_without_barrier_host(args),
                           doctest::Contains("thread 0 read element (1, 0) of the 16 x 64 float tile"),
                           fa2::SharedMemoryHazard);
      CHECK_THROWS_WITH_AS(flash_bwd_without_barrier_host(args),
                           doctest::Contains("which thread 64 wrote after the last prog.sync()"),
                           fa2::SharedMemoryHazard);
      CHECK_NOTHROW(fa2::flash_bwd_host(args));  // the intact kernel, same arguments
    }
  }
}

TEST_SUITE("validation+backward") {
  namespace {
  struct Fixture {
    Tensor<float, 3> Q{fa2::Extents<3>{2, 20, 64}}, K{fa2::Extents<3>{2, 30, 64}}, V{fa2::Extents<3>{2, 30, 64}};
    Tensor<float, 3> O{fa2::Extents<3>{2, 20, 64}}, dO{fa2::Extents<3>{2, 20, 64}};
    Tensor<float, 2> L{fa2::Extents<2>{2, 20}}, D_rows{fa2::Extents<2>{2, 20}};
    Tensor<float, 3> dQ{fa2::Extents<3>{2, 20, 64}}, dQ_accum{fa2::Extents<3>{2, 20, 64}};
    Tensor<float, 3> dK{fa2::Extents<3>{2, 30, 64}}, dV{fa2::Extents<3>{2, 30, 64}};
    fa2::FlashBwdArgs args() {
      return fa2::make_flash_bwd_args<float>(Q.cview(), K.cview(), V.cview(), O.cview(), L.cview(), dO.cview(),
                                             D_rows.view(), dQ.view(), dQ_accum.view(), dK.view(), dV.view(), false);
    }
  };

  void check_rejects(const fa2::FlashBwdArgs& a, const std::string& fragment) {
    CHECK_THROWS_WITH_AS(fa2::flash_bwd_host(a), doctest::Contains(fragment.c_str()), std::invalid_argument);
  }
  }  // namespace

  TEST_CASE("backward: a valid call passes validation") {
    Fixture f;
    CHECK_NOTHROW(fa2::validate(f.args()));
  }

  TEST_CASE("backward: the forward's checks of Q, K, V, O, L and the scale apply") {
    Fixture f;
    auto a = f.args();
    a.q_shape = a.o_shape = a.do_shape = a.dq_shape = a.dq_accum_shape = {2, 20, 48};
    a.k_shape = a.v_shape = a.dk_shape = a.dv_shape = {2, 30, 48};
    check_rejects(a, "head_dim: got 48, allowed 16, 32, 64 or 128");
    a = f.args();
    a.k_shape = {3, 30, 64};
    check_rejects(a, "K.shape");
    a = f.args();
    a.o_shape = {2, 21, 64};
    check_rejects(a, "O.shape");
    a = f.args();
    a.l_shape = {2, 19};
    check_rejects(a, "L.shape");
    a = f.args();
    a.scale = std::numeric_limits<float>::quiet_NaN();
    check_rejects(a, "scale");
  }

  TEST_CASE("backward: a wrong shape of dO, D_rows, dQ_accum, dQ, dK or dV is rejected naming it") {
    Fixture f;
    auto a = f.args();
    a.do_shape = {2, 21, 64};
    check_rejects(a, "dO.shape: got (2, 21, 64), must equal O.shape (2, 20, 64)");
    a = f.args();
    a.d_rows_shape = {2, 19};
    check_rejects(a, "D_rows.shape: got (2, 19), must be (batch, N_q) = (2, 20)");
    a = f.args();
    a.dq_accum_shape = {1, 20, 64};
    check_rejects(a, "dQ_accum.shape: got (1, 20, 64), must equal Q.shape (2, 20, 64)");
    a = f.args();
    a.dq_shape = {2, 20, 32};
    check_rejects(a, "dQ.shape: got (2, 20, 32), must equal Q.shape (2, 20, 64)");
    a = f.args();
    a.dk_shape = {2, 20, 64};
    check_rejects(a, "dK.shape: got (2, 20, 64), must equal K.shape (2, 30, 64)");
    a = f.args();
    a.dv_shape = {2, 31, 64};
    check_rejects(a, "dV.shape: got (2, 31, 64), must equal V.shape (2, 30, 64)");
  }

  TEST_CASE("backward: a head dim that is not contiguous in dO, dQ_accum, dQ, dK or dV is rejected naming it") {
    Fixture f;
    const fa2::Extents<3> every_other{20 * 128, 128, 2};
    for (const char* which : {"dO", "dQ_accum", "dQ", "dK", "dV"}) {
      auto a = f.args();
      const std::string w(which);
      if (w == "dO") a.do_strides = every_other;
      if (w == "dQ_accum") a.dq_accum_strides = every_other;
      if (w == "dQ") a.dq_strides = every_other;
      if (w == "dK") a.dk_strides = every_other;
      if (w == "dV") a.dv_strides = every_other;
      check_rejects(a, w + ".stride(2): got 2, allowed 1");
    }
  }

  TEST_CASE("backward: negative strides are rejected naming the tensor") {
    Fixture f;
    for (const char* which : {"dO", "D_rows", "dQ_accum", "dQ", "dK", "dV"}) {
      auto a = f.args();
      const std::string w(which);
      if (w == "dO") a.do_strides = {-1280, 64, 1};
      if (w == "D_rows") a.d_rows_strides = {20, -1};
      if (w == "dQ_accum") a.dq_accum_strides = {-1280, 64, 1};
      if (w == "dQ") a.dq_strides = {1280, -64, 1};
      if (w == "dK") a.dk_strides = {-1920, 64, 1};
      if (w == "dV") a.dv_strides = {1920, -64, 1};
      check_rejects(a, w + ".strides");
    }
  }

  TEST_CASE("backward: null pointers are rejected naming the tensor") {
    Fixture f;
    for (const char* which : {"Q", "K", "V", "O", "L", "dO", "D_rows", "dQ_accum", "dQ", "dK", "dV"}) {
      auto a = f.args();
      const std::string w(which);
      if (w == "Q") a.q = nullptr;
      if (w == "K") a.k = nullptr;
      if (w == "V") a.v = nullptr;
      if (w == "O") a.o = nullptr;
      if (w == "L") a.l = nullptr;
      if (w == "dO") a.do_ = nullptr;
      if (w == "D_rows") a.d_rows = nullptr;
      if (w == "dQ_accum") a.dq_accum = nullptr;
      if (w == "dQ") a.dq = nullptr;
      if (w == "dK") a.dk = nullptr;
      if (w == "dV") a.dv = nullptr;
      check_rejects(a, w + ": null pointer");
    }
  }
}
