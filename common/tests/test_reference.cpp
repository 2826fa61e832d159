// The float64 reference: checked against hand-computed cases and basic identities.
#include <cmath>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/testing.hpp"

using fa2::Tensor;

TEST_SUITE("reference") {
  TEST_CASE("a 2x2 case computed by hand") {
    // One batch, two queries, two keys, D = 1, scale 1: scores are q * k.
    Tensor<double, 3> Q({1, 2, 1}), K({1, 2, 1}), V({1, 2, 1});
    Q(0, 0, 0) = 1.0;
    Q(0, 1, 0) = 2.0;
    K(0, 0, 0) = 0.0;
    K(0, 1, 0) = 1.0;
    V(0, 0, 0) = 10.0;
    V(0, 1, 0) = 20.0;
    const auto ref = fa2::reference_attention<double>(Q.cview(), K.cview(), V.cview(), false, 1.0);
    // Row 0: scores (0, 1) -> weights (1, e) / (1 + e).
    const double e = std::exp(1.0);
    CHECK(ref.O(0, 0, 0) == doctest::Approx((10.0 + 20.0 * e) / (1.0 + e)).epsilon(1e-14));
    CHECK(ref.L(0, 0) == doctest::Approx(std::log(1.0 + e)).epsilon(1e-14));
    // Row 1: scores (0, 2).
    const double e2 = std::exp(2.0);
    CHECK(ref.O(0, 1, 0) == doctest::Approx((10.0 + 20.0 * e2) / (1.0 + e2)).epsilon(1e-14));
    CHECK(ref.L(0, 1) == doctest::Approx(std::log(1.0 + e2)).epsilon(1e-14));
    // Causal: query 0 sees only key 0.
    const auto causal = fa2::reference_attention<double>(Q.cview(), K.cview(), V.cview(), true, 1.0);
    CHECK(causal.O(0, 0, 0) == doctest::Approx(10.0).epsilon(1e-15));
    CHECK(causal.L(0, 0) == doctest::Approx(0.0));
  }

  TEST_CASE("softmax rows sum to 1: V of ones gives O of ones") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto Q = fa2::random_normal<double, 3>({2, 7, 8}, rng);
    const auto K = fa2::random_normal<double, 3>({2, 5, 8}, rng);
    const Tensor<double, 3> V({2, 5, 3}, 1.0);
    for (bool causal : {false, true}) {
      const auto ref = fa2::reference_attention<double>(Q.cview(), K.cview(), V.cview(), causal);
      const Tensor<double, 3> ones({2, 7, 3}, 1.0);
      FA2_CHECK_CLOSE(ref.O.cview(), ones.cview(), (fa2::Tolerance{1e-12, 0}), "O");
    }
  }

  TEST_CASE("L is the logsumexp of the scaled scores summed term by term") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto Q = fa2::random_normal<float, 3>({1, 4, 16}, rng);
    const auto K = fa2::random_normal<float, 3>({1, 6, 16}, rng);
    const auto V = fa2::random_normal<float, 3>({1, 6, 16}, rng);
    const double scale = 0.3;
    const auto ref = fa2::reference_attention<float>(Q.cview(), K.cview(), V.cview(), true, scale);
    for (int q = 0; q < 4; ++q) {
      double sum = 0.0;
      for (int k = 0; k <= q; ++k) {
        double s = 0.0;
        for (int d = 0; d < 16; ++d) s += double(Q(0, q, d)) * double(K(0, k, d));
        sum += std::exp(s * scale);
      }
      CHECK(ref.L(0, q) == doctest::Approx(std::log(sum)).epsilon(1e-12));
    }
  }

  TEST_CASE("mismatched shapes are rejected naming the argument") {
    const Tensor<double, 3> Q({1, 2, 4}), K({1, 2, 5}), V({1, 2, 4});
    CHECK_THROWS_WITH_AS(fa2::reference_attention<double>(Q.cview(), K.cview(), V.cview(), false),
                         doctest::Contains("K:"), std::invalid_argument);
  }
}
