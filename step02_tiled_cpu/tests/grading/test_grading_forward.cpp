// The grader's tests of step 2's tiled forward (not in the starter kit): shapes the kit's tests
// do not use (one query, one key, N_q far from N_k, Dv != D, tiles of every odd size, scores of
// +-100), against the float64 reference, on outputs that start as NaN.
//   ctest --preset cpu-only -R step02_grading   (in the instructor's repository)
#include <optional>
#include <type_traits>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/testing.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"

namespace {

using fa2::index_t;
using fa2::tiled::TileOptions;

struct Case {
  index_t B, Nq, Nk, D, Dv, block_q, block_k;
};

template <class T>
void check_case(const Case& c, bool causal, double qk_stddev, fa2::Rng& rng) {
  const auto Q = fa2::random_normal<T, 3>({c.B, c.Nq, c.D}, rng, 0.0, qk_stddev);
  const auto K = fa2::random_normal<T, 3>({c.B, c.Nk, c.D}, rng, 0.0, qk_stddev);
  const auto V = fa2::random_normal<T, 3>({c.B, c.Nk, c.Dv}, rng);
  const TileOptions options{.block_q = c.block_q, .block_k = c.block_k, .causal = causal};
  const auto out = fa2::tiled::tiled_attention_forward<T>(Q.cview(), K.cview(), V.cview(), options);
  const auto ref = fa2::reference_attention<T>(Q.cview(), K.cview(), V.cview(), causal);
  // float: the kit's tolerance, scaled up for the larger scores (their rounding grows with them).
  const double tol = std::is_same_v<T, float> ? 2e-5 * qk_stddev * qk_stddev : 1e-11 * qk_stddev * qk_stddev;
  INFO("B ", c.B, " Nq ", c.Nq, " Nk ", c.Nk, " D ", c.D, " Dv ", c.Dv, " tiles ", c.block_q, "x", c.block_k,
       " causal ", causal, " score spread ", qk_stddev * qk_stddev);
  FA2_CHECK_CLOSE(out.O.cview(), ref.O.cview(), (fa2::Tolerance{tol, tol}), "O");
  FA2_CHECK_CLOSE(out.L.cview(), ref.L.cview(), (fa2::Tolerance{tol, tol}), "L");
}

constexpr Case kCases[] = {
    {1, 1, 1, 1, 1, 16, 16}, {2, 1, 37, 8, 3, 4, 5},   {1, 37, 1, 5, 9, 7, 2},   {3, 9, 70, 16, 16, 2, 9},
    {1, 70, 9, 12, 4, 9, 2}, {2, 33, 33, 7, 7, 33, 1}, {1, 64, 65, 3, 2, 1, 64}, {1, 20, 20, 4, 4, 100, 100},
};

}  // namespace

TEST_SUITE("tiled_cpu+grading") {
  TEST_CASE_TEMPLATE("grading: odd shapes and tiles, causal or not, match the float64 reference", T, float, double) {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const Case& c : kCases) {
      for (bool causal : {false, true}) check_case<T>(c, causal, 1.0, rng);
    }
  }

  TEST_CASE("grading: scores of about +-100 neither overflow nor lose the keys that count") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (bool causal : {false, true}) {
      check_case<double>({2, 45, 31, 16, 8, 8, 4}, causal, 10.0, rng);
      check_case<float>({1, 30, 50, 16, 16, 16, 16}, causal, 3.0, rng);
    }
  }

  TEST_CASE("grading: every element of O and L is written, one query row per tile") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    check_case<double>({2, 13, 17, 6, 5, 1, 3}, true, 1.0, rng);
    check_case<double>({2, 13, 17, 6, 5, 13, 17}, false, 1.0, rng);
  }
}
