// step05 on the host path: the kernel body run by run_on_host, against the float64 reference.
// Runs in CI. The GPU suite (test_flash_gpu.cu) runs the same matrix on the device.
#include <cmath>
#include <limits>

#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"

using fa2::index_t;
using fa2::Tensor;
using fa2::TensorView;

namespace {

// The host path with float32 products in 3xTF32 (what allow_tf32 = false asks for).
void flash_fwd_host_3xtf32(const fa2::FlashFwdArgs& args) {
  fa2::FlashFwdArgs a = args;
  a.allow_tf32 = false;
  fa2::flash_fwd_host(a);
}

}  // namespace

TEST_SUITE("host") {
  TEST_CASE("float32 with allow_tf32 = false: 3xTF32 products give O and L within 2e-5 of float64, TF32 does not") {
    fa2::testing::check_float32_products(fa2::testing::host_runner<float>(&flash_fwd_host_3xtf32),
                                         fa2::testing::host_runner<float>(&fa2::flash_fwd_host));
  }

  TEST_CASE_TEMPLATE("the article's shapes match the reference for O and L", T, float, fa2::bf16, fa2::fp16) {
    fa2::testing::check_article_matrix<T>(fa2::testing::host_runner<T>(&fa2::flash_fwd_host));
  }

  TEST_CASE_TEMPLATE("causal attention with N_q != N_k follows the top-left mask", T, float, fa2::bf16, fa2::fp16) {
    for (const fa2::testing::FlashShape shape : {fa2::testing::FlashShape{1, 37, 53, 32}, {2, 100, 30, 64}}) {
      const auto c = fa2::testing::run_and_compare<T>(fa2::testing::host_runner<T>(&fa2::flash_fwd_host), shape, true);
      CHECK_MESSAGE(c.O.ok, c.O.summary());
      CHECK_MESSAGE(c.L.ok, c.L.summary());
    }
  }

  TEST_CASE_TEMPLATE(
      "grouped-query attention: groups of 1, 2, 4 and 8 query heads share K and V, and one kv head serves all", T,
      float, fa2::bf16, fa2::fp16) {
    // Q's batch holds 2 batch elements x 8 heads; K and V hold 2 x 8 / group (2 x 1 for group 8).
    for (index_t group : {1, 2, 4, 8}) {
      for (const fa2::testing::FlashShape shape :
           {fa2::testing::FlashShape{16, 37, 53, 32, group}, {16, 40, 21, 64, group}}) {
        for (bool causal : {false, true}) {
          const auto c =
              fa2::testing::run_and_compare<T>(fa2::testing::host_runner<T>(&fa2::flash_fwd_host), shape, causal);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("a sliding window: query q sees keys q - left .. q + right only, causal or not, N_q != N_k", T,
                     float, fa2::bf16, fa2::fp16) {
    // {16, -1} with N_q = 70 > N_k = 45: queries 61 to 69 see no key (O = 0, L = +inf).
    for (const fa2::Window window : fa2::testing::test_windows()) {
      for (const fa2::testing::FlashShape shape :
           {fa2::testing::FlashShape{2, 70, 45, 32}, {1, 45, 70, 64}, {4, 33, 33, 16, 2}}) {
        for (bool causal : {false, true}) {
          const auto c = fa2::testing::run_and_compare<T>(fa2::testing::window_runner<T>(&fa2::flash_fwd_host, window),
                                                          shape, causal, fa2::testing::flash_tolerance<T>(), window);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
      }
    }
  }

  TEST_CASE("key tiles wholly outside the window are skipped: NaN in their keys and values changes nothing") {
    // 20 queries with window (0, 0) see keys 0 to 19, in key tiles 0 and 1 of 16: tiles 2 to 7
    // (keys 32 to 127) must not be read.
    CHECK(fa2::testing::skips_unseen_key_tiles<float>(
        fa2::testing::window_runner<float>(&fa2::flash_fwd_host, fa2::Window{0, 0}), 20, 128, 32, 32));
    // The check itself: without the window every key is seen, and the NaN reaches O.
    CHECK_FALSE(fa2::testing::skips_unseen_key_tiles<float>(fa2::testing::host_runner<float>(&fa2::flash_fwd_host), 20,
                                                            128, 32, 32));
  }

  TEST_CASE("a query that sees no key (window bounded on the left, N_q > N_k) gets O = 0 and L = +inf exactly") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const index_t N_q = 50, N_k = 20, D = 32, left = 5;  // queries 25 to 49 see no key
    const auto Q = fa2::random_normal<float, 3>({1, N_q, D}, rng), K = fa2::random_normal<float, 3>({1, N_k, D}, rng),
               V = fa2::random_normal<float, 3>({1, N_k, D}, rng);
    const auto out = fa2::run_with_host_tensors<float>(&fa2::flash_fwd_host, Q.cview(), K.cview(), V.cview(), false,
                                                       std::nullopt, fa2::Window{left, -1});
    int wrong = 0;
    for (index_t q = N_k + left; q < N_q; ++q) {
      wrong += out.L(0, q) != std::numeric_limits<float>::infinity();
      for (index_t d = 0; d < D; ++d) wrong += out.O(0, q, d) != 0.0f;
    }
    CHECK(wrong == 0);
    CHECK(std::isfinite(out.L(0, N_k + left - 1)));  // the last query that sees one
  }

  TEST_CASE("every head dim and lengths below one tile work") {
    for (index_t D : {16, 32, 64, 128}) {
      for (const fa2::testing::FlashShape shape :
           {fa2::testing::FlashShape{2, 1, 1, D}, {1, 5, 17, D}, {1, 33, 16, D}}) {
        for (bool causal : {false, true}) {
          const auto c = fa2::testing::run_and_compare<float>(fa2::testing::host_runner<float>(&fa2::flash_fwd_host),
                                                              shape, causal);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
      }
    }
  }

  TEST_CASE("non-contiguous inputs are read through their strides") {
    // One head of a (B, N, H, D) tensor, as a projection layer produces it: rows are H*D apart.
    const index_t B = 2, N = 45, H = 3, D = 32, h = 1;
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto q4 = fa2::random_normal<float, 4>({B, N, H, D}, rng);
    const auto k4 = fa2::random_normal<float, 4>({B, N, H, D}, rng);
    const auto v4 = fa2::random_normal<float, 4>({B, N, H, D}, rng);
    const fa2::Extents<3> shape{B, N, D}, strides{N * H * D, H * D, 1};
    const TensorView<const float, 3> Q(q4.view().data() + h * D, shape, strides);
    const TensorView<const float, 3> K(k4.view().data() + h * D, shape, strides);
    const TensorView<const float, 3> V(v4.view().data() + h * D, shape, strides);
    CHECK_FALSE(Q.is_contiguous());

    // O with padded rows, poisoned everywhere, so we also see that the gaps stay untouched.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto O = Tensor<float, 3>::strided(shape, {N * (D + 8), D + 8, 1}, nan);
    Tensor<float, 2> L({B, N}, nan);
    for (bool causal : {false, true}) {
      fa2::flash_fwd_host(fa2::make_flash_args<float>(Q, K, V, O.view(), L.view(), causal));
      const auto ref = fa2::reference_attention<float>(Q, K, V, causal);
      FA2_CHECK_CLOSE(O.cview(), ref.O.cview(), fa2::testing::flash_tolerance<float>(), "O");
      FA2_CHECK_CLOSE(L.cview(), ref.L.cview(), fa2::testing::flash_tolerance<float>(), "L");
    }
    // Every storage element outside the view (the 8 padding columns of each row) is still NaN.
    int gaps_written = 0;
    for (std::size_t i = 0; i < O.storage().size(); ++i) {
      const bool in_gap = static_cast<index_t>(i) % (D + 8) >= D;
      if (in_gap && !std::isnan(O.storage()[i])) ++gaps_written;
    }
    CHECK(gaps_written == 0);
  }

  TEST_CASE("an explicit softmax scale replaces 1/sqrt(D)") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto Q = fa2::random_normal<float, 3>({1, 40, 64}, rng), K = fa2::random_normal<float, 3>({1, 40, 64}, rng),
               V = fa2::random_normal<float, 3>({1, 40, 64}, rng);
    const auto out = fa2::flash_attention_host<float>(Q.cview(), K.cview(), V.cview(), false, 0.05f);
    const auto ref = fa2::reference_attention<float>(Q.cview(), K.cview(), V.cview(), false, 0.05);
    FA2_CHECK_CLOSE(out.O.cview(), ref.O.cview(), fa2::testing::flash_tolerance<float>(), "O");
    FA2_CHECK_CLOSE(out.L.cview(), ref.L.cview(), fa2::testing::flash_tolerance<float>(), "L");
  }
}

TEST_SUITE("validation") {
  namespace {
  struct Fixture {
    Tensor<float, 3> Q{fa2::Extents<3>{2, 20, 64}}, K{fa2::Extents<3>{2, 30, 64}}, V{fa2::Extents<3>{2, 30, 64}};
    Tensor<float, 3> O{fa2::Extents<3>{2, 20, 64}};
    Tensor<float, 2> L{fa2::Extents<2>{2, 20}};
    fa2::FlashFwdArgs args() {
      return fa2::make_flash_args<float>(Q.cview(), K.cview(), V.cview(), O.view(), L.view(), false);
    }
  };

  void check_rejects(const fa2::FlashFwdArgs& a, const char* fragment) {
    CHECK_THROWS_WITH_AS(fa2::flash_fwd_host(a), doctest::Contains(fragment), std::invalid_argument);
  }
  }  // namespace

  TEST_CASE("a valid call passes validation") {
    Fixture f;
    CHECK_NOTHROW(fa2::validate(f.args()));
  }
  TEST_CASE("an unsupported head dim is rejected naming the allowed ones") {
    Fixture f;
    Tensor<float, 3> q({2, 20, 48}), k({2, 30, 48}), v({2, 30, 48}), o({2, 20, 48});
    check_rejects(fa2::make_flash_args<float>(q.cview(), k.cview(), v.cview(), o.view(), f.L.view(), false),
                  "head_dim: got 48, allowed 16, 32, 64 or 128");
  }
  TEST_CASE("mismatched shapes between Q K V O and L are rejected") {
    Fixture f;
    auto a = f.args();
    a.k_shape = {3, 30, 64};  // 3 does not divide Q's batch of 2
    check_rejects(a, "K.shape");
    a = f.args();
    a.k_shape = {2, 30, 32};
    check_rejects(a, "K.shape");
    a = f.args();
    a.v_shape = {2, 31, 64};
    check_rejects(a, "V.shape");
    a = f.args();
    a.o_shape = {2, 21, 64};
    check_rejects(a, "O.shape");
    a = f.args();
    a.l_shape = {2, 19};
    check_rejects(a, "L.shape");
  }
  TEST_CASE("a window bound below -1 is rejected naming its side") {
    Fixture f;
    auto a = f.args();
    a.window = {-2, 0};
    check_rejects(a, "window.left: got -2, allowed -1 (no bound) or a count of keys >= 0");
    a.window = {0, -5};
    check_rejects(a, "window.right: got -5");
  }
  TEST_CASE("a head dim that is not contiguous is rejected") {
    Fixture f;
    auto a = f.args();
    a.v_strides = {30 * 128, 128, 2};
    check_rejects(a, "V.stride(2): got 2, allowed 1");
  }
  TEST_CASE("null pointers are rejected naming the tensor") {
    Fixture f;
    for (const char* which : {"Q", "K", "V", "O", "L"}) {
      auto a = f.args();
      const std::string w(which);
      if (w == "Q") a.q = nullptr;
      if (w == "K") a.k = nullptr;
      if (w == "V") a.v = nullptr;
      if (w == "O") a.o = nullptr;
      if (w == "L") a.l = nullptr;
      check_rejects(a, (w + ": null pointer").c_str());
    }
  }
  TEST_CASE("zero lengths are rejected") {
    Fixture f;
    auto a = f.args();
    a.q_shape = {2, 0, 64};
    check_rejects(a, "Q.shape");
    a = f.args();
    a.k_shape = {2, 0, 64};
    check_rejects(a, "K.shape");
    a = f.args();
    a.q_shape = {0, 20, 64};
    check_rejects(a, "Q.shape");
  }
  TEST_CASE("a batch beyond the grid limit is rejected") {
    Fixture f;
    auto a = f.args();
    a.q_shape = a.o_shape = {70000, 20, 64};
    a.k_shape = a.v_shape = {70000, 30, 64};
    a.l_shape = {70000, 20};
    check_rejects(a, "batch: got 70000");
  }
  TEST_CASE("a non-finite scale and negative strides are rejected") {
    Fixture f;
    auto a = f.args();
    a.scale = std::numeric_limits<float>::infinity();
    check_rejects(a, "scale");
    a = f.args();
    a.q_strides = {-1280, 64, 1};
    check_rejects(a, "Q.strides");
  }
}
