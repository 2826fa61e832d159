// The float64 reference backward: checked against central finite differences of the forward
// reference, a one-key case done by hand, and the identity rowsum(dO * O) = rowsum(P * dP).
//   cmake --build --preset default --target common_tests && ctest --preset default -L common
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/reference_backward.hpp"
#include "common/testing.hpp"

namespace {

using fa2::index_t;
using fa2::Tensor;

struct Shape {
  index_t B, Nq, Nk, D, Dv;
};

// sum(dO * O), with O from the float64 forward reference: its gradient with respect to O is dO,
// so its gradients with respect to Q, K and V are what the backward reference returns.
double loss(const Tensor<double, 3>& Q, const Tensor<double, 3>& K, const Tensor<double, 3>& V,
            const Tensor<double, 3>& dO, bool causal, std::optional<double> scale) {
  const auto ref = fa2::reference_attention(Q.cview(), K.cview(), V.cview(), causal, scale);
  double sum = 0.0;
  fa2::for_each_index<3>(dO.shape(), [&](const fa2::Extents<3>& i) { sum += dO.view().at(i) * ref.O.view().at(i); });
  return sum;
}

// d f / d x, element by element, by central differences: (f(x + h) - f(x - h)) / (2h), with
// the step actually taken (x + h - x is not exactly h in floating point). x is restored.
Tensor<double, 3> central_difference(Tensor<double, 3>& x, const std::function<double()>& f, double h) {
  Tensor<double, 3> grad(x.shape());
  fa2::for_each_index<3>(x.shape(), [&](const fa2::Extents<3>& i) {
    double& element = x.view().at(i);
    const double keep = element;
    const double up = keep + h, down = keep - h;
    element = up;
    const double f_up = f();
    element = down;
    const double f_down = f();
    element = keep;
    grad.view().at(i) = (f_up - f_down) / (up - down);
  });
  return grad;
}

}  // namespace

TEST_SUITE("reference+backward") {
  TEST_CASE("the backward reference matches central finite differences of the loss sum of dO times O on tiny shapes") {
    Shape s{};
    SUBCASE("B=1 Nq=3 Nk=5 D=2 Dv=3") {
      s = {1, 3, 5, 2, 3};
    }
    SUBCASE("B=2 Nq=5 Nk=3 D=4 Dv=2") {
      s = {2, 5, 3, 4, 2};
    }
    SUBCASE("B=2 Nq=3 Nk=1 D=4 Dv=4, one key") {
      s = {2, 3, 1, 4, 4};
    }
    SUBCASE("B=1 Nq=1 Nk=5 D=4 Dv=2, one query") {
      s = {1, 1, 5, 4, 2};
    }
    SUBCASE("B=2 Nq=5 Nk=5 D=2 Dv=1") {
      s = {2, 5, 5, 2, 1};
    }
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed(), ", shape (B, Nq, Nk, D, Dv) = (", s.B, ", ", s.Nq, ", ", s.Nk, ", ", s.D, ", ", s.Dv,
         ")");
    auto Q = fa2::random_normal<double, 3>({s.B, s.Nq, s.D}, rng);
    auto K = fa2::random_normal<double, 3>({s.B, s.Nk, s.D}, rng);
    auto V = fa2::random_normal<double, 3>({s.B, s.Nk, s.Dv}, rng);
    const auto dO = fa2::random_normal<double, 3>({s.B, s.Nq, s.Dv}, rng);
    // Step h = 1e-5 on inputs of order 1: the truncation error is h^2/6 |f'''| ~ 2e-11 |f'''|
    // and the rounding error about eps |f| / h ~ 2e-11 |f|, with |f| and |f'''| of order 1..10
    // here, so a correct gradient is within ~1e-9 (the largest error seen over many runs was
    // 2e-10). The tolerance, 1e-7 + 1e-6 |grad|, leaves a margin of 100x or more; a wrong
    // formula (no D term, a missing scale, a mask on the wrong side) is off by 1e-3 or more:
    // even D scaled by 0.999 fails.
    const double h = 1e-5;
    const fa2::Tolerance tol{1e-7, 1e-6};
    for (const bool causal : {false, true}) {
      for (const std::optional<double> scale : {std::optional<double>{}, std::optional<double>{0.7}}) {
        CAPTURE(causal);
        CAPTURE(scale.value_or(0.0));  // 0 stands for the default 1/sqrt(D)
        const auto grad = fa2::reference_attention_backward(Q.cview(), K.cview(), V.cview(), dO.cview(), causal, scale);
        const std::function<double()> f = [&] { return loss(Q, K, V, dO, causal, scale); };
        FA2_CHECK_CLOSE(grad.dQ.cview(), central_difference(Q, f, h).cview(), tol, "dQ");
        FA2_CHECK_CLOSE(grad.dK.cview(), central_difference(K, f, h).cview(), tol, "dK");
        FA2_CHECK_CLOSE(grad.dV.cview(), central_difference(V, f, h).cview(), tol, "dV");
      }
    }
  }

  TEST_CASE("with a single key dQ and dK are exactly 0 and dV is the sum of the rows of dO") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto Q = fa2::random_normal<double, 3>({2, 4, 3}, rng);
    const auto K = fa2::random_normal<double, 3>({2, 1, 3}, rng);
    const auto V = fa2::random_normal<double, 3>({2, 1, 5}, rng);
    const auto dO = fa2::random_normal<double, 3>({2, 4, 5}, rng);
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      // One key: every P entry is exactly 1, whatever the scores, so moving Q or K changes nothing.
      const auto grad = fa2::reference_attention_backward(Q.cview(), K.cview(), V.cview(), dO.cview(), causal);
      const Tensor<double, 3> zero_q({2, 4, 3}), zero_k({2, 1, 3});
      FA2_CHECK_CLOSE(grad.dQ.cview(), zero_q.cview(), (fa2::Tolerance{0.0, 0.0}), "dQ");
      FA2_CHECK_CLOSE(grad.dK.cview(), zero_k.cview(), (fa2::Tolerance{0.0, 0.0}), "dK");
      Tensor<double, 3> sum_of_rows({2, 1, 5});
      for (index_t b = 0; b < 2; ++b) {
        for (index_t q = 0; q < 4; ++q) {
          for (index_t d = 0; d < 5; ++d) sum_of_rows(b, 0, d) += dO(b, q, d);
        }
      }
      FA2_CHECK_CLOSE(grad.dV.cview(), sum_of_rows.cview(), (fa2::Tolerance{1e-14, 1e-14}), "dV");
    }
  }

  TEST_CASE("the rowsum of dO times O equals the rowsum of P times dP with P = exp(S - L) from the forward's L") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const index_t B = 2, Nq = 9, Nk = 6, D = 5, Dv = 3;
    const auto Q = fa2::random_normal<double, 3>({B, Nq, D}, rng);
    const auto K = fa2::random_normal<double, 3>({B, Nk, D}, rng);
    const auto V = fa2::random_normal<double, 3>({B, Nk, Dv}, rng);
    const auto dO = fa2::random_normal<double, 3>({B, Nq, Dv}, rng);
    const double scale = 0.4;
    for (const bool causal : {false, true}) {
      CAPTURE(causal);
      const auto fwd = fa2::reference_attention(Q.cview(), K.cview(), V.cview(), causal, scale);
      for (index_t b = 0; b < B; ++b) {
        for (index_t q = 0; q < Nq; ++q) {
          CAPTURE(b);
          CAPTURE(q);
          long double P_sum = 0.0L, P_dot_dP = 0.0L, dO_dot_O = 0.0L;
          const index_t visible = causal ? std::min(q + 1, Nk) : Nk;  // masked keys have P = 0
          for (index_t k = 0; k < visible; ++k) {
            long double S = 0.0L, dP = 0.0L;
            for (index_t d = 0; d < D; ++d) S += static_cast<long double>(Q(b, q, d)) * K(b, k, d);
            for (index_t d = 0; d < Dv; ++d) dP += static_cast<long double>(dO(b, q, d)) * V(b, k, d);
            const long double P = std::exp(S * scale - fwd.L(b, q));
            P_sum += P;
            P_dot_dP += P * dP;
          }
          for (index_t d = 0; d < Dv; ++d) dO_dot_O += static_cast<long double>(dO(b, q, d)) * fwd.O(b, q, d);
          // L normalises P: no division by the row sum is needed, which is what the backward relies on.
          CHECK(static_cast<double>(P_sum) == doctest::Approx(1.0).epsilon(1e-13));
          // O = P V, so dO . O = sum_k P_k (dO . V_k) = sum_k P_k dP_k: the same sum in another order.
          CHECK(static_cast<double>(dO_dot_O) == doctest::Approx(static_cast<double>(P_dot_dP)).epsilon(1e-12));
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("float and bf16 inputs are widened exactly: the same gradients as the float64 overload", T, float,
                     fa2::bf16) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto Q = fa2::random_normal<T, 3>({2, 7, 4}, rng);
    const auto K = fa2::random_normal<T, 3>({2, 5, 4}, rng);
    const auto V = fa2::random_normal<T, 3>({2, 5, 3}, rng);
    const auto dO = fa2::random_normal<T, 3>({2, 7, 3}, rng);
    const auto wide = [](const Tensor<T, 3>& t) { return fa2::converted<double, T, 3>(t.cview()); };
    const auto q = wide(Q), k = wide(K), v = wide(V), dout = wide(dO);
    const auto narrow = fa2::reference_attention_backward<T>(Q.cview(), K.cview(), V.cview(), dO.cview(), true);
    const auto exact = fa2::reference_attention_backward(q.cview(), k.cview(), v.cview(), dout.cview(), true);
    FA2_CHECK_CLOSE(narrow.dQ.cview(), exact.dQ.cview(), (fa2::Tolerance{0.0, 0.0}), "dQ");
    FA2_CHECK_CLOSE(narrow.dK.cview(), exact.dK.cview(), (fa2::Tolerance{0.0, 0.0}), "dK");
    FA2_CHECK_CLOSE(narrow.dV.cview(), exact.dV.cview(), (fa2::Tolerance{0.0, 0.0}), "dV");
  }

  TEST_CASE("backward shapes that do not fit together are rejected naming the argument") {
    const Tensor<double, 3> Q({2, 4, 3}), K({2, 5, 3}), V({2, 5, 6}), dO({2, 4, 6});
    const auto call = [](const Tensor<double, 3>& q, const Tensor<double, 3>& k, const Tensor<double, 3>& v,
                         const Tensor<double, 3>& dout) {
      return fa2::reference_attention_backward(q.cview(), k.cview(), v.cview(), dout.cview(), false);
    };
    CHECK_NOTHROW(call(Q, K, V, dO));
    CHECK_THROWS_WITH_AS(call(Tensor<double, 3>({2, 0, 3}), K, V, dO), doctest::Contains("Q: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, Tensor<double, 3>({2, 5, 4}), V, dO), doctest::Contains("K: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, K, Tensor<double, 3>({2, 4, 6}), dO), doctest::Contains("V: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, K, V, Tensor<double, 3>({2, 4, 3})),
                         "dO: shape must be (B, Nq, Dv) = (2, 4, 6) from Q and V, got (2, 4, 3)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, K, V, Tensor<double, 3>({2, 5, 6})), doctest::Contains("dO: shape must be"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(call(Q, K, V, Tensor<double, 3>({1, 4, 6})), doctest::Contains("dO: shape must be"),
                         std::invalid_argument);
  }
}
