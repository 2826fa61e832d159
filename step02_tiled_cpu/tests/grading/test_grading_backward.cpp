// The grader's tests of step 2's tiled backward (not in the starter kit): odd shapes and tiles,
// N_q far from N_k both ways, causal or not, against the float64 reference gradients, with O and
// L from the float64 reference forward (so that the forward's grade does not enter here).
//   ctest --preset cpu-only -R step02_backward_grading   (in the instructor's repository)
#include <algorithm>
#include <cmath>

#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/reference_backward.hpp"
#include "common/testing.hpp"
#include "step02_tiled_cpu/tiled_backward.hpp"

namespace {

using fa2::index_t;
using fa2::Tensor;

struct Case {
  index_t B, Nq, Nk, D, Dv, block_q, block_k;
};

double largest(const Tensor<double, 3>& t) {
  double m = 0.0;
  for (const double x : t.storage()) m = std::max(m, std::fabs(x));
  return m;
}

void check_case(const Case& c, bool causal, fa2::Rng& rng) {
  const auto Q = fa2::random_normal<double, 3>({c.B, c.Nq, c.D}, rng);
  const auto K = fa2::random_normal<double, 3>({c.B, c.Nk, c.D}, rng);
  const auto V = fa2::random_normal<double, 3>({c.B, c.Nk, c.Dv}, rng);
  const auto dO = fa2::random_normal<double, 3>({c.B, c.Nq, c.Dv}, rng);
  const auto fwd = fa2::reference_attention(Q.cview(), K.cview(), V.cview(), causal);
  const fa2::tiled::TileOptions options{.block_q = c.block_q, .block_k = c.block_k, .causal = causal};
  const auto got = fa2::tiled::tiled_attention_backward<double>(Q.cview(), K.cview(), V.cview(), fwd.O.cview(),
                                                                fwd.L.cview(), dO.cview(), options);
  const auto ref = fa2::reference_attention_backward(Q.cview(), K.cview(), V.cview(), dO.cview(), causal);
  const double scale = std::max({largest(ref.dQ), largest(ref.dK), largest(ref.dV), 1.0});
  const fa2::Tolerance tol{1e-10 * scale, 1e-10};
  INFO("B ", c.B, " Nq ", c.Nq, " Nk ", c.Nk, " D ", c.D, " Dv ", c.Dv, " tiles ", c.block_q, "x", c.block_k,
       " causal ", causal);
  FA2_CHECK_CLOSE(got.dQ.cview(), ref.dQ.cview(), tol, "dQ");
  FA2_CHECK_CLOSE(got.dK.cview(), ref.dK.cview(), tol, "dK");
  FA2_CHECK_CLOSE(got.dV.cview(), ref.dV.cview(), tol, "dV");
}

}  // namespace

TEST_SUITE("tiled_cpu+backward+grading") {
  TEST_CASE("grading: backward over odd shapes and tiles, causal or not, matches the float64 gradients") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const Case& c : {Case{1, 1, 1, 1, 1, 16, 16}, Case{2, 1, 29, 6, 3, 4, 5}, Case{1, 29, 1, 5, 7, 3, 2},
                          Case{2, 8, 41, 9, 4, 3, 7}, Case{1, 41, 8, 4, 9, 7, 3}, Case{2, 24, 24, 8, 8, 1, 24},
                          Case{1, 19, 23, 3, 5, 50, 50}}) {
      for (bool causal : {false, true}) check_case(c, causal, rng);
    }
  }
}
