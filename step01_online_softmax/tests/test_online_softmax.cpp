// Tests of step 1: the online softmax against a long double reference, its -inf corner
// cases, and the combine of partial (m, l) states.
//   cmake --build --preset default --target step01_tests && ctest --preset default -L step01
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/random.hpp"
#include "common/testing.hpp"
#include "step01_online_softmax/online_softmax.hpp"

namespace {

using fa2::online::minus_inf;
using fa2::online::OnlineSoftmaxState;

template <class T>
fa2::TensorView<const T, 1> view_of(const Eigen::VectorX<T>& v) {
  return {v.data(), fa2::Extents<1>{static_cast<fa2::index_t>(v.size())}};
}

// Tolerances for a softmax computed in T against the long double reference. The error
// comes from summing up to ~1000 terms (worst case n * eps relative to l, typically
// sqrt(n) * eps) and from exp(x - m), whose relative error grows with |x - m| * eps
// (|x - m| reaches ~40 for the rows below). float: eps = 1.2e-7, so 3e-5 leaves a margin
// of 10x over the typical error; double: eps = 2.2e-16, so 1e-12. The absolute part only
// matters for probabilities that are tiny anyway.
template <class T>
fa2::Tolerance probability_tolerance() {
  if constexpr (std::is_same_v<T, float>) {
    return {1e-12, 3e-5};
  } else {
    return {1e-300, 1e-12};
  }
}

// L = m + log(l): its absolute error is about the relative error of l.
template <class T>
double logsumexp_atol() {
  return std::is_same_v<T, float> ? 3e-5 : 1e-12;
}

template <class T>
Eigen::VectorX<T> random_row(fa2::Rng& rng, Eigen::Index n, double mean, double stddev) {
  Eigen::VectorX<T> x(n);
  for (Eigen::Index i = 0; i < n; ++i) x(i) = static_cast<T>(rng.normal(mean, stddev));
  return x;
}

// The reference: the three-pass softmax of the same (already rounded) scores, in long double.
template <class T>
Eigen::VectorX<long double> reference_softmax(const Eigen::VectorX<T>& x) {
  return fa2::online::naive_softmax(x.template cast<long double>());
}

template <class T>
long double reference_logsumexp(const Eigen::VectorX<T>& x) {
  long double row_max = -std::numeric_limits<long double>::infinity();
  for (Eigen::Index i = 0; i < x.size(); ++i) row_max = std::max(row_max, static_cast<long double>(x(i)));
  long double sum = 0.0L;
  for (Eigen::Index i = 0; i < x.size(); ++i) sum += std::exp(static_cast<long double>(x(i)) - row_max);
  return row_max + std::log(sum);
}

template <class T>
bool all_nan(const Eigen::VectorX<T>& v) {
  return v.unaryExpr([](T e) { return std::isnan(e); }).all();
}

template <class T>
bool same_bits(const Eigen::VectorX<T>& a, const Eigen::VectorX<T>& b) {
  return a.size() == b.size() && (a.array() == b.array()).all();
}

}  // namespace

TEST_SUITE("online_softmax") {
  TEST_CASE("a hand-computed row: weights 1 2 3 give probabilities 1/6 2/6 3/6") {
    const Eigen::Vector3d x(0.0, std::log(2.0), std::log(3.0));
    const Eigen::Vector3d expected(1.0 / 6.0, 2.0 / 6.0, 3.0 / 6.0);
    // A few roundings (log 2, log 3, exp, the sum): 1e-14 relative is ~50 ulps of slack.
    CHECK(fa2::online::naive_softmax(x).isApprox(expected, 1e-14));
    CHECK(fa2::online::unguarded_softmax(x).isApprox(expected, 1e-14));
    CHECK(fa2::online::online_softmax(x).isApprox(expected, 1e-14));
    CHECK(fa2::online::logsumexp(x) == doctest::Approx(std::log(6.0)).epsilon(1e-14));
  }

  TEST_CASE_TEMPLATE("online softmax and logsumexp match a long double reference for lengths 1 2 17 and 1000", T, float,
                     double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const Eigen::Index n : {1, 2, 17, 1000}) {
      for (int trial = 0; trial < 5; ++trial) {
        CAPTURE(n);
        CAPTURE(trial);
        const auto x = random_row<T>(rng, n, rng.uniform(-20.0, 20.0), 5.0);
        const Eigen::VectorX<long double> expected = reference_softmax(x);
        const Eigen::VectorX<T> online = fa2::online::online_softmax(x);
        const Eigen::VectorX<T> naive = fa2::online::naive_softmax(x);
        FA2_CHECK_CLOSE(view_of(online), view_of(expected), probability_tolerance<T>(), "online softmax");
        FA2_CHECK_CLOSE(view_of(naive), view_of(expected), probability_tolerance<T>(), "naive softmax");
        const double L = static_cast<double>(fa2::online::logsumexp(x));
        const double L_ref = static_cast<double>(reference_logsumexp(x));
        CHECK(std::fabs(L - L_ref) <= logsumexp_atol<T>() * (1.0 + std::fabs(L_ref)));
      }
    }
  }

  TEST_CASE_TEMPLATE("scores near plus or minus 1000 overflow the unguarded softmax but not the online one", T, float,
                     double) {
    const Eigen::VectorX<T> high{{T{1000}, T{999}, T{998}}};      // exp(1000) = inf in float and double
    const Eigen::VectorX<T> low{{T{-1000}, T{-1001}, T{-1002}}};  // exp(-1000) = 0 in both
    const Eigen::VectorX<T> shifted{{T{0}, T{-1}, T{-2}}};        // the same row minus its maximum
    // Unguarded: inf / inf and 0 / 0, so every probability is NaN.
    CHECK(all_nan<T>(fa2::online::unguarded_softmax(high)));
    CHECK(all_nan<T>(fa2::online::unguarded_softmax(low)));
    // Online: the row is measured from its maximum, so a shift by a constant changes
    // nothing, bit for bit (x - m is exact for these integers).
    const Eigen::VectorX<T> expected = fa2::online::online_softmax(shifted);
    CHECK(same_bits<T>(fa2::online::online_softmax(high), expected));
    CHECK(same_bits<T>(fa2::online::online_softmax(low), expected));
    FA2_CHECK_CLOSE(view_of(expected), view_of(reference_softmax(shifted)), probability_tolerance<T>(), "p");
    // L carries the shift: log(e^1000 (1 + e^-1 + e^-2)) = 1000 + log(1 + e^-1 + e^-2).
    const double tail = std::log(1.0 + std::exp(-1.0) + std::exp(-2.0));
    CHECK(static_cast<double>(fa2::online::logsumexp(high)) == doctest::Approx(1000.0 + tail).epsilon(1e-7));
    CHECK(static_cast<double>(fa2::online::logsumexp(low)) == doctest::Approx(-1000.0 + tail).epsilon(1e-7));
  }

  TEST_CASE_TEMPLATE("masked scores of minus infinity get probability exactly 0 and leave the rest unchanged", T, float,
                     double) {
    const T inf = std::numeric_limits<T>::infinity();
    const Eigen::VectorX<T> masked{{T{0.5}, -inf, T{1.5}, -inf, T{-0.25}}};
    const Eigen::VectorX<T> kept{{T{0.5}, T{1.5}, T{-0.25}}};
    const Eigen::VectorX<T> p = fa2::online::online_softmax(masked);
    const Eigen::VectorX<T> q = fa2::online::online_softmax(kept);
    CHECK(p(1) == T{0});
    CHECK(p(3) == T{0});
    // The masked updates leave (m, l) untouched, so the other entries are identical.
    CHECK(p(0) == q(0));
    CHECK(p(2) == q(1));
    CHECK(p(4) == q(2));
    CHECK(fa2::online::logsumexp(masked) == fa2::online::logsumexp(kept));
    const Eigen::VectorX<T> naive = fa2::online::naive_softmax(masked);
    CHECK(naive(1) == T{0});
    CHECK(naive(3) == T{0});
  }

  TEST_CASE_TEMPLATE("a row whose first score is minus infinity starts from an empty state without NaN", T, float,
                     double) {
    const T inf = std::numeric_limits<T>::infinity();
    OnlineSoftmaxState<T> state;
    const T alpha = state.update(-inf);
    CHECK(alpha == T{1});  // nothing to rescale
    CHECK(state.empty());
    CHECK(state.l == T{0});
    CHECK(state.update(T{2}) == T{0});  // the first real score: exp(-inf - 2) = 0
    CHECK(state.m == T{2});
    CHECK(state.l == T{1});
    const Eigen::VectorX<T> row{{-inf, T{2}, T{1}}};
    const Eigen::VectorX<T> tail{{T{2}, T{1}}};
    const Eigen::VectorX<T> p = fa2::online::online_softmax(row);
    CHECK(p(0) == T{0});
    CHECK(p.tail(2) == fa2::online::online_softmax(tail));
    CHECK(fa2::online::naive_softmax(row).tail(2) == fa2::online::naive_softmax(tail));
  }

  TEST_CASE_TEMPLATE("a fully masked or empty row has logsumexp minus infinity and all-zero probabilities", T, float,
                     double) {
    const T inf = std::numeric_limits<T>::infinity();
    const Eigen::VectorX<T> all_masked = Eigen::VectorX<T>::Constant(4, -inf);
    const auto state = fa2::online::online_state(all_masked);
    CHECK(state.empty());
    CHECK(state.l == T{0});
    CHECK(state.logsumexp() == -inf);  // log(0): no mass at all
    CHECK(fa2::online::online_softmax(all_masked) == Eigen::VectorX<T>::Zero(4));
    CHECK(fa2::online::naive_softmax(all_masked) == Eigen::VectorX<T>::Zero(4));
    CHECK(all_nan<T>(fa2::online::unguarded_softmax(all_masked)));  // 0 / 0
    const Eigen::VectorX<T> empty(0);
    CHECK(fa2::online::logsumexp(empty) == -inf);
    CHECK(fa2::online::online_softmax(empty).size() == 0);
  }

  TEST_CASE_TEMPLATE("a NaN or plus infinity score makes the result NaN instead of hiding it", T, float, double) {
    const T inf = std::numeric_limits<T>::infinity();
    const T nan = std::numeric_limits<T>::quiet_NaN();
    for (const T bad : {nan, inf}) {
      CAPTURE(bad);
      const Eigen::VectorX<T> x{{T{1}, bad, T{2}}};
      CHECK(std::isnan(fa2::online::logsumexp(x)));
      CHECK(all_nan<T>(fa2::online::online_softmax(x)));
    }
  }

  TEST_CASE_TEMPLATE("rows of equal scores give exactly 1/n whatever the common value", T, float, double) {
    for (const Eigen::Index n : {1, 3, 1000}) {
      for (const T c : {T{-1000}, T{0}, T{7.25}, T{1000}}) {
        CAPTURE(n);
        CAPTURE(c);
        const Eigen::VectorX<T> x = Eigen::VectorX<T>::Constant(n, c);
        const auto state = fa2::online::online_state(x);
        CHECK(state.m == c);
        CHECK(state.l == static_cast<T>(n));  // n additions of exp(0) = 1: exact
        CHECK(state.logsumexp() == c + std::log(static_cast<T>(n)));
        CHECK(same_bits<T>(fa2::online::online_softmax(x), Eigen::VectorX<T>::Constant(n, T{1} / static_cast<T>(n))));
      }
    }
  }

  TEST_CASE_TEMPLATE("the first update from m of minus infinity has rescale factor exactly 0", T, float, double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const T x : {T{-1000}, T{0}, static_cast<T>(rng.normal(0.0, 10.0)), T{1000}}) {
      CAPTURE(x);
      OnlineSoftmaxState<T> state;  // m = -inf, l = 0
      const T alpha = state.update(x);
      CHECK(alpha == T{0});  // exp(-inf - x) == 0, not NaN
      CHECK(state.m == x);
      CHECK(state.l == T{1});
      CHECK(state.update(x - T{1}) == T{1});  // the maximum stays: alpha is exactly 1
      const T bigger = x + T{3};
      const T grew = state.update(bigger);  // the maximum grows by 3: alpha = e^-3
      // In float, x - 1 and x + 3 are rounded (|x| up to ~40): ~1e-6 relative, so 1e-5.
      CHECK(static_cast<double>(grew) == doctest::Approx(std::exp(-3.0)).epsilon(1e-5));
      CHECK(static_cast<double>(state.l) ==
            doctest::Approx((1.0 + std::exp(-1.0)) * std::exp(-3.0) + 1.0).epsilon(1e-5));
    }
  }

  TEST_CASE("combining is exactly order independent for two states and leaves empty states neutral") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto a = fa2::online::online_state(random_row<double>(rng, 20, 0.0, 3.0));
    const auto b = fa2::online::online_state(random_row<double>(rng, 30, 2.0, 3.0));
    const auto ab = OnlineSoftmaxState<double>::combine(a, b);
    const auto ba = OnlineSoftmaxState<double>::combine(b, a);
    CHECK(ab.m == ba.m);
    CHECK(ab.l == ba.l);  // the same two products, added in the other order: same bits
    const OnlineSoftmaxState<double> empty;
    const auto ea = OnlineSoftmaxState<double>::combine(empty, a);
    const auto ae = OnlineSoftmaxState<double>::combine(a, empty);
    CHECK((ea.m == a.m && ea.l == a.l));
    CHECK((ae.m == a.m && ae.l == a.l));
    const auto ee = OnlineSoftmaxState<double>::combine(empty, empty);
    CHECK(ee.empty());
    CHECK(ee.l == 0.0);  // not exp(-inf - -inf) = NaN
  }

  TEST_CASE_TEMPLATE("any split of a row combined in any order gives the one-pass state", T, float, double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Eigen::Index n = 300;
    const auto x = random_row<T>(rng, n, 0.0, 5.0);
    const auto one_pass = fa2::online::online_state(x);
    // Each combine adds a few roundings to l; after ~30 of them the error stays far below
    // the per-dtype tolerance used for the whole softmax.
    const double rtol = probability_tolerance<T>().rtol;
    for (int trial = 0; trial < 50; ++trial) {
      CAPTURE(trial);
      // Random cut points: between 1 and 30 blocks, of random lengths.
      std::vector<Eigen::Index> cuts{0, n};
      const auto n_cuts = static_cast<int>(rng.uniform(0.0, 30.0));
      for (int c = 0; c < n_cuts; ++c)
        cuts.push_back(static_cast<Eigen::Index>(rng.uniform(1.0, static_cast<double>(n))));
      std::sort(cuts.begin(), cuts.end());
      std::vector<OnlineSoftmaxState<T>> blocks;
      for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
        blocks.push_back(fa2::online::online_state(x.segment(cuts[c], cuts[c + 1] - cuts[c])));  // may be empty
      }
      // Left to right, right to left, and a random pairing of the states in a random order.
      OnlineSoftmaxState<T> left, right;
      for (const auto& s : blocks) left = OnlineSoftmaxState<T>::combine(left, s);
      for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) right = OnlineSoftmaxState<T>::combine(*it, right);
      std::vector<OnlineSoftmaxState<T>> pool = blocks;
      while (pool.size() > 1) {
        std::shuffle(pool.begin(), pool.end(), rng.engine());
        const auto merged = OnlineSoftmaxState<T>::combine(pool[pool.size() - 1], pool[pool.size() - 2]);
        pool.pop_back();
        pool.back() = merged;
      }
      REQUIRE(pool.size() == 1);
      for (const auto& s : {left, right, pool.at(0)}) {
        CHECK(s.m == one_pass.m);  // a maximum has no rounding
        CHECK(static_cast<double>(s.l) == doctest::Approx(static_cast<double>(one_pass.l)).epsilon(rtol));
      }
    }
  }

  TEST_CASE_TEMPLATE("blocked statistics match the one-pass statistics for every block size", T, float, double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const Eigen::Index n = 100;
    const auto x = random_row<T>(rng, n, 0.0, 5.0);
    const auto one_pass = fa2::online::online_state(x);
    for (const Eigen::Index block : {1, 2, 3, 7, 16, 100, 105}) {
      CAPTURE(block);
      const auto blocked = fa2::online::online_state_blocked(x, block);
      CHECK(blocked.m == one_pass.m);
      CHECK(static_cast<double>(blocked.l) ==
            doctest::Approx(static_cast<double>(one_pass.l)).epsilon(probability_tolerance<T>().rtol));
    }
    CHECK_THROWS_WITH_AS(fa2::online::online_state_blocked(x, 0), doctest::Contains("block_size: got 0"),
                         std::invalid_argument);
  }

  TEST_CASE("exp of score minus L gives back the probabilities as FlashAttention's backward will use them") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_row<double>(rng, 64, 3.0, 4.0);
    const double L = fa2::online::logsumexp(x);
    const Eigen::VectorXd from_L = (x.array() - L).unaryExpr([](double s) { return std::exp(s); });
    FA2_CHECK_CLOSE(view_of(from_L), view_of(fa2::online::online_softmax(x)), (fa2::Tolerance{1e-300, 1e-12}),
                    "exp(x - L)");
  }

  TEST_CASE("the matrix versions apply the row versions to every row") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    Eigen::MatrixXd X(6, 33);
    for (Eigen::Index r = 0; r < X.rows(); ++r) X.row(r) = random_row<double>(rng, X.cols(), 0.0, 4.0).transpose();
    X(2, 0) = -std::numeric_limits<double>::infinity();              // one masked score
    X.row(4).setConstant(-std::numeric_limits<double>::infinity());  // one fully masked row
    const Eigen::MatrixXd online = fa2::online::online_softmax_rowwise(X);
    const Eigen::MatrixXd naive = fa2::online::naive_softmax_rowwise(X);
    const Eigen::VectorXd L = fa2::online::logsumexp_rowwise(X);
    for (Eigen::Index r = 0; r < X.rows(); ++r) {
      CAPTURE(r);
      CHECK(online.row(r).transpose() == fa2::online::online_softmax(X.row(r)));
      CHECK(naive.row(r).transpose() == fa2::online::naive_softmax(X.row(r)));
      CHECK(L(r) == fa2::online::logsumexp(X.row(r)));
      const double mass = r == 4 ? 0.0 : 1.0;  // the fully masked row has none
      CHECK(online.row(r).sum() == doctest::Approx(mass).epsilon(1e-14));
    }
    CHECK(online.isApprox(naive, 1e-13));
  }
}
