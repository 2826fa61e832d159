// The grader's tests of step 1's OnlineSoftmaxState (not in the starter kit), one group per idea
// the step grades (scripts/lib/grading/course.json): the online update on rows of finite scores,
// a masked score and the empty state, and combine on states built from their definition, never
// through update(), so that a bug in one idea fails that idea's tests only.
//   ctest --preset cpu-only -R step01_grading   (in the instructor's repository)
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/random.hpp"
#include "common/testing.hpp"
#include "step01_online_softmax/online_softmax.hpp"

namespace {

using fa2::online::OnlineSoftmaxState;

// m and log(l) of a row, in float64 from the definition (the maximum, then a plain sum).
struct Exact {
  double m, log_l;
};
Exact exact(const std::vector<double>& row) {
  double m = -std::numeric_limits<double>::infinity();
  for (const double x : row) m = std::max(m, x);
  double l = 0.0;
  for (const double x : row) l += std::exp(x - m);
  return {m, std::log(l)};
}

// The state of a row from its definition: m the maximum, l the sum of exp(x - m) in float64.
template <class T>
OnlineSoftmaxState<T> state_of(const std::vector<double>& row) {
  const Exact e = exact(row);
  if (!std::isfinite(e.m)) return {};
  return {static_cast<T>(e.m), static_cast<T>(std::exp(e.log_l))};
}

std::vector<double> random_row(fa2::Rng& rng, int n, double spread, double masked_share) {
  std::vector<double> row(static_cast<std::size_t>(n));
  for (auto& x : row) {
    x = rng.uniform(0.0, 1.0) < masked_share ? -std::numeric_limits<double>::infinity() : rng.normal(0.0, spread);
  }
  return row;
}

}  // namespace

TEST_SUITE("online_softmax+grading") {
  TEST_CASE_TEMPLATE("online update: rows of up to 3000 finite scores of spread up to 1e4 give the exact maximum and l",
                     T, float, double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const int n : {1, 2, 7, 300, 3000}) {
      for (const double spread : {1.0, 50.0, 1e4}) {
        std::vector<double> row = random_row(rng, n, spread, 0.0);
        for (auto& x : row) x = static_cast<double>(static_cast<T>(x));  // exactly representable in T
        OnlineSoftmaxState<T> state;
        for (const double x : row) state.update(static_cast<T>(x));
        const Exact want = exact(row);
        INFO("n ", n, " spread ", spread);
        CHECK(static_cast<double>(state.m) == want.m);
        const double tol = std::is_same_v<T, float> ? 2e-5 * std::log2(n + 1.0) + 1e-6 : 1e-12;
        CHECK(std::fabs(std::log(static_cast<double>(state.l)) - want.log_l) <= tol);
      }
    }
  }

  TEST_CASE("online update: update returns exp(m_old - m_new), 1 while the maximum stays and 0 at the first score") {
    OnlineSoftmaxState<double> state;
    CHECK(state.update(3.0) == 0.0);
    CHECK(state.m == 3.0);
    CHECK(state.l == 1.0);
    CHECK(state.update(1.0) == 1.0);
    CHECK(state.update(5.5) == doctest::Approx(std::exp(3.0 - 5.5)).epsilon(1e-15));
    CHECK(state.m == 5.5);
    CHECK(state.l == doctest::Approx(std::exp(3.0 - 5.5) + std::exp(1.0 - 5.5) + 1.0).epsilon(1e-15));
    // From a state given by its definition, one larger score rescales l exactly once.
    OnlineSoftmaxState<double> given{2.0, 4.0};
    CHECK(given.update(6.0) == doctest::Approx(std::exp(-4.0)).epsilon(1e-15));
    CHECK(given.l == doctest::Approx(4.0 * std::exp(-4.0) + 1.0).epsilon(1e-15));
  }

  TEST_CASE_TEMPLATE("masked score: a minus-infinity score leaves the state as it was and returns 1, empty or not", T,
                     float, double) {
    const T inf = std::numeric_limits<T>::infinity();
    OnlineSoftmaxState<T> empty;
    CHECK(empty.update(-inf) == T{1});
    CHECK(empty.empty());
    CHECK(empty.l == T{0});  // not NaN: nothing was added
    OnlineSoftmaxState<T> given{T{1.5}, T{2.25}};
    for (int i = 0; i < 3; ++i) CHECK(given.update(-inf) == T{1});
    CHECK(given.m == T{1.5});
    CHECK(given.l == T{2.25});
  }

  TEST_CASE_TEMPLATE("masked score: rows with masked scores mixed in give the maximum and l of their finite scores", T,
                     float, double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const int n : {1, 5, 300}) {
      for (const double masked_share : {0.3, 0.9, 1.0}) {
        std::vector<double> row = random_row(rng, n, 20.0, masked_share);
        for (auto& x : row) x = static_cast<double>(static_cast<T>(x));
        OnlineSoftmaxState<T> state;
        for (const double x : row) state.update(static_cast<T>(x));
        const Exact want = exact(row);
        INFO("n ", n, " masked share ", masked_share);
        if (!std::isfinite(want.m)) {
          CHECK(state.empty());
          CHECK(state.l == T{0});
        } else {
          CHECK(static_cast<double>(state.m) == want.m);
          const double tol = std::is_same_v<T, float> ? 2e-4 : 1e-12;
          CHECK(std::fabs(std::log(static_cast<double>(state.l)) - want.log_l) <= tol);
        }
      }
    }
  }

  TEST_CASE("combine: random splits, merged in random orders, give the state of the whole row") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (int trial = 0; trial < 40; ++trial) {
      const int n = 1 + static_cast<int>(rng.uniform(0.0, 400.0));
      const auto row = random_row(rng, n, 30.0, trial % 3 == 0 ? 0.6 : 0.0);
      // Cut the row into pieces of random lengths (some empty), each state from its definition.
      std::vector<OnlineSoftmaxState<double>> pieces;
      for (int start = 0; start < n;) {
        const int len = std::min(n - start, static_cast<int>(rng.uniform(0.0, 40.0)));
        pieces.push_back(state_of<double>(std::vector<double>(row.begin() + start, row.begin() + start + len)));
        start += len;
      }
      // Merge random neighbours until one state is left: a random tree of combines.
      while (pieces.size() > 1) {
        const auto i = static_cast<std::size_t>(rng.uniform(0.0, static_cast<double>(pieces.size() - 1)));
        pieces[i] = OnlineSoftmaxState<double>::combine(pieces[i], pieces[i + 1]);
        pieces.erase(pieces.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      }
      const Exact want = exact(row);
      INFO("trial ", trial, " n ", n);
      CHECK(pieces[0].m == want.m);
      if (std::isfinite(want.m)) {
        CHECK(std::fabs(std::log(pieces[0].l) - want.log_l) <= 1e-12);
      } else {
        CHECK(pieces[0].empty());
        CHECK(pieces[0].l == 0.0);
      }
    }
  }

  TEST_CASE("combine: the same bits in either order, and an empty state changes nothing") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (int trial = 0; trial < 50; ++trial) {
      const OnlineSoftmaxState<float> a{static_cast<float>(rng.normal(0.0, 20.0)),
                                        static_cast<float>(rng.uniform(1.0, 9.0))};
      const OnlineSoftmaxState<float> b{static_cast<float>(rng.normal(5.0, 20.0)),
                                        static_cast<float>(rng.uniform(1.0, 9.0))};
      const auto ab = OnlineSoftmaxState<float>::combine(a, b), ba = OnlineSoftmaxState<float>::combine(b, a);
      CHECK(ab.m == ba.m);
      CHECK(ab.l == ba.l);
      const double am = a.m, al = a.l, bm = b.m, bl = b.l, m = std::max(am, bm);
      CHECK(static_cast<double>(ab.m) == m);
      CHECK(static_cast<double>(ab.l) == doctest::Approx(al * std::exp(am - m) + bl * std::exp(bm - m)).epsilon(1e-5));
      for (const auto& with_empty : {OnlineSoftmaxState<float>::combine(OnlineSoftmaxState<float>{}, a),
                                     OnlineSoftmaxState<float>::combine(a, {})}) {
        CHECK(with_empty.m == a.m);
        CHECK(with_empty.l == a.l);
      }
    }
    const auto both_empty = OnlineSoftmaxState<float>::combine({}, {});
    CHECK(both_empty.empty());
    CHECK(both_empty.l == 0.0f);  // not exp(-inf - -inf) = NaN
  }
}
