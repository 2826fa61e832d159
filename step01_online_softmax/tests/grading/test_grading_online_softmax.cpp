// The grader's tests of step 1's OnlineSoftmaxState (not in the starter kit): long rows of
// extreme scores against a float64 sum, the rescale factor update() returns, and combine over
// random splits merged in random orders.
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

std::vector<double> random_row(fa2::Rng& rng, int n, double spread, double masked_share) {
  std::vector<double> row(static_cast<std::size_t>(n));
  for (auto& x : row) {
    x = rng.uniform(0.0, 1.0) < masked_share ? -std::numeric_limits<double>::infinity() : rng.normal(0.0, spread);
  }
  return row;
}

}  // namespace

TEST_SUITE("online_softmax+grading") {
  TEST_CASE_TEMPLATE("grading: rows of up to 3000 scores of spread up to 1e4 give the exact maximum and l", T, float,
                     double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const int n : {1, 2, 7, 300, 3000}) {
      for (const double spread : {1.0, 50.0, 1e4}) {
        std::vector<double> row = random_row(rng, n, spread, 0.2);
        row[static_cast<std::size_t>(n / 2)] = rng.normal(0.0, spread);  // at least one real score
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

  TEST_CASE("grading: update returns exp(m_old - m_new), which is 1 while the maximum stays and 0 at the first score") {
    OnlineSoftmaxState<double> state;
    CHECK(state.update(3.0) == 0.0);
    CHECK(state.update(1.0) == 1.0);
    CHECK(state.update(-std::numeric_limits<double>::infinity()) == 1.0);
    CHECK(state.update(5.5) == doctest::Approx(std::exp(3.0 - 5.5)).epsilon(1e-15));
    CHECK(state.m == 5.5);
    CHECK(state.l == doctest::Approx(std::exp(3.0 - 5.5) + std::exp(1.0 - 5.5) + 1.0).epsilon(1e-15));
  }

  TEST_CASE("grading: combine over random splits, merged in random orders, matches the whole row") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (int trial = 0; trial < 40; ++trial) {
      const int n = 1 + static_cast<int>(rng.uniform(0.0, 400.0));
      const auto row = random_row(rng, n, 30.0, trial % 3 == 0 ? 0.6 : 0.0);
      // Cut the row into pieces of random lengths (some empty), one state each.
      std::vector<OnlineSoftmaxState<double>> pieces;
      for (int start = 0; start < n;) {
        const int len = std::min(n - start, static_cast<int>(rng.uniform(0.0, 40.0)));
        OnlineSoftmaxState<double> s;
        for (int i = start; i < start + len; ++i) s.update(row[static_cast<std::size_t>(i)]);
        pieces.push_back(s);
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

  TEST_CASE("grading: combine gives the same bits in either order, and an empty state changes nothing") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (int trial = 0; trial < 50; ++trial) {
      OnlineSoftmaxState<float> a, b;
      for (int i = 0; i < 1 + trial % 7; ++i) a.update(static_cast<float>(rng.normal(0.0, 20.0)));
      for (int i = 0; i < 1 + trial % 5; ++i) b.update(static_cast<float>(rng.normal(5.0, 20.0)));
      const auto ab = OnlineSoftmaxState<float>::combine(a, b), ba = OnlineSoftmaxState<float>::combine(b, a);
      CHECK(ab.m == ba.m);
      CHECK(ab.l == ba.l);
      const auto with_empty = OnlineSoftmaxState<float>::combine(OnlineSoftmaxState<float>{}, a);
      CHECK(with_empty.m == a.m);
      CHECK(with_empty.l == a.l);
    }
  }
}
