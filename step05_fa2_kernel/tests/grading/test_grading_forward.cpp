// The grader's tests of step 5's forward kernel on the host path (not in the starter kit). The
// first two suites are step 6's bug catchers, run on the student's own kernel: every length of
// keys that leaves a ragged last tile (bug 2's padded keys), and bfloat16 at every head dim (bug
// 1's dropped cast does not even compile there). Then shapes the kit's tests do not use: one
// query or one key, causal with N_q != N_k both ways, scores of +-25.
//   ctest --preset cpu-only -R step05_grading   (in the instructor's repository)
#include <string>

#include "common/testing.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"

namespace {

using fa2::testing::FlashShape;

template <class T>
void require_close(const FlashShape& shape, bool causal, fa2::Tolerance tol = fa2::testing::flash_tolerance<T>()) {
  const auto c =
      fa2::testing::run_and_compare<T>(fa2::testing::host_runner<T>(&fa2::flash_fwd_host), shape, causal, tol);
  CHECK_MESSAGE(c.O.ok, c.O.summary());
  CHECK_MESSAGE(c.L.ok, c.L.summary());
}

}  // namespace

TEST_SUITE("host+grading+bug2") {
  TEST_CASE_TEMPLATE("bug 2 catcher: every N_k that leaves a ragged last key tile, without the causal mask", T, float,
                     fa2::bf16) {
    for (const fa2::index_t N_k : {1, 2, 15, 17, 31, 47, 100}) {
      for (const fa2::index_t N_q : {1, 16, 33}) require_close<T>({1, N_q, N_k, 32}, false);
    }
  }
}

TEST_SUITE("host+grading+bug1") {
  TEST_CASE("bug 1 catcher: bfloat16 O and L match the reference at every head dim, causal or not") {
    for (const fa2::index_t D : {16, 32, 64, 128}) {
      for (bool causal : {false, true}) require_close<fa2::bf16>({2, 48, 48, D}, causal);
    }
  }
}

TEST_SUITE("host+grading") {
  TEST_CASE_TEMPLATE("grading: one query, one key, and causal attention with N_q != N_k both ways", T, float,
                     fa2::bf16) {
    for (const FlashShape shape :
         {FlashShape{1, 1, 1, 16}, {2, 1, 40, 32}, {1, 40, 1, 64}, {1, 23, 70, 32}, {2, 70, 23, 16}}) {
      for (bool causal : {false, true}) require_close<T>(shape, causal);
    }
  }

  TEST_CASE_TEMPLATE("grading: scores of about +-25 keep O and L finite and close to the reference", T, float,
                     fa2::bf16) {
    for (bool causal : {false, true}) {
      fa2::Rng rng(fa2::fresh_seed());
      const FlashShape shape{1, 50, 61, 64};
      const auto Q = fa2::random_normal<T, 3>({shape.B, shape.N_q, shape.D}, rng, 0.0, 5.0);
      const auto K = fa2::random_normal<T, 3>({shape.B, shape.N_k, shape.D}, rng, 0.0, 5.0);
      const auto V = fa2::random_normal<T, 3>({shape.B, shape.N_k, shape.D}, rng);
      const auto out = fa2::flash_attention_host<T>(Q.cview(), K.cview(), V.cview(), causal);
      const auto ref = fa2::reference_attention<T>(Q.cview(), K.cview(), V.cview(), causal);
      // O is a convex mix of rows of V whatever the scores; L grows with them, and its TF32 or
      // bf16 rounding with it (25 * 2^-9 ~ 0.05 in bf16).
      INFO("seed ", rng.seed(), " causal ", causal);
      FA2_CHECK_CLOSE(out.O.cview(), ref.O.cview(), (fa2::Tolerance{6e-2, 2e-2}), "O");
      FA2_CHECK_CLOSE(out.L.cview(), ref.L.cview(), (fa2::Tolerance{1e-1, 1e-2}), "L");
    }
  }
}
