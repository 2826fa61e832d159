// The grader's tests of step 5's forward kernel on the host path (not in the starter kit), one
// group per idea the part grades (scripts/lib/grading/course.json). Each group runs the student's
// kernel where the other ideas have nothing to do, so that a bug fails the tests of its own idea:
//   tiles       one key tile, no mask, whole key tiles: the loads, the barrier, O divided and stored
//   key loop    many whole key tiles, no mask: the pointers moved and the online softmax
//   L           the logsumexp, no mask, whole key tiles
//   causal      the causal mask, whole key tiles, N_q = N_k and N_q != N_k
//   padded      ragged key counts, no mask (step 6's bug 2 catcher)
//   casts       bfloat16 and float16, no mask, whole key tiles (step 6's bug 1 catcher)
//   window      sliding windows without the causal mask, whole key tiles
// and shapes that mix them (one query or one key, causal with N_q != N_k, ragged), which the
// grader charges only when no idea above explains the failure.
//   ctest --preset cpu-only -R step05_grading   (in the instructor's repository)
#include <string>

#include "common/testing.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"

namespace {

using fa2::index_t;
using fa2::testing::FlashShape;

enum class Check { O, L, both };

template <class T>
void require_close(const FlashShape& shape, bool causal, Check what = Check::both,
                   fa2::Tolerance tol = fa2::testing::flash_tolerance<T>(), fa2::Window window = {}) {
  const auto run = window.bounded() ? fa2::testing::window_runner<T>(&fa2::flash_fwd_host, window)
                                    : fa2::testing::host_runner<T>(&fa2::flash_fwd_host);
  const auto c = fa2::testing::run_and_compare<T>(run, shape, causal, tol, window);
  if (what != Check::L) CHECK_MESSAGE(c.O.ok, c.O.summary());
  if (what != Check::O) CHECK_MESSAGE(c.L.ok, c.L.summary());
}

// Scores of about +-25 (Q and K of standard deviation 5): rows whose maximum moves by many units
// from one key tile to the next, so that a missing or wrong rescale shows.
template <class T>
void large_scores(const FlashShape& shape, bool causal, Check what) {
  fa2::Rng rng(fa2::fresh_seed());
  const auto Q = fa2::random_normal<T, 3>({shape.B, shape.N_q, shape.D}, rng, 0.0, 5.0);
  const auto K = fa2::random_normal<T, 3>({shape.B, shape.N_k, shape.D}, rng, 0.0, 5.0);
  const auto V = fa2::random_normal<T, 3>({shape.B, shape.N_k, shape.D}, rng);
  const auto out = fa2::flash_attention_host<T>(Q.cview(), K.cview(), V.cview(), causal);
  const auto ref = fa2::reference_attention<T>(Q.cview(), K.cview(), V.cview(), causal);
  // O is a convex mix of rows of V whatever the scores; L grows with them, and its TF32 or bf16
  // rounding with it (25 * 2^-9 ~ 0.05 in bf16).
  INFO("seed ", rng.seed(), " ", shape.name(), causal ? " causal" : " non-causal");
  if (what != Check::L) FA2_CHECK_CLOSE(out.O.cview(), ref.O.cview(), (fa2::Tolerance{6e-2, 2e-2}), "O");
  if (what != Check::O) FA2_CHECK_CLOSE(out.L.cview(), ref.L.cview(), (fa2::Tolerance{1e-1, 1e-2}), "L");
}

}  // namespace

TEST_SUITE("host+grading") {
  TEST_CASE("tiles: one key tile without a mask gives every query row its O, ragged query counts included") {
    for (const FlashShape shape : {FlashShape{1, 40, 16, 64}, {2, 37, 16, 32}, {1, 1, 16, 16}, {3, 16, 16, 128}}) {
      require_close<float>(shape, false, Check::O);
    }
  }

  TEST_CASE("key loop: many whole key tiles without a mask give O, the online softmax across them") {
    for (const FlashShape shape : {FlashShape{1, 33, 64, 64}, {2, 16, 160, 32}, {1, 50, 256, 128}, {1, 7, 32, 16}}) {
      require_close<float>(shape, false, Check::O);
    }
  }

  TEST_CASE("key loop: scores of about +-25 across many whole key tiles keep O close to the reference") {
    large_scores<float>({1, 50, 128, 64}, false, Check::O);
    large_scores<float>({2, 17, 64, 32}, false, Check::O);
  }

  TEST_CASE("L: the logsumexp of every row, one key tile or many, without a mask") {
    for (const FlashShape shape : {FlashShape{1, 40, 16, 64}, {2, 33, 96, 32}, {1, 20, 256, 128}}) {
      require_close<float>(shape, false, Check::L);
    }
    large_scores<float>({1, 30, 96, 64}, false, Check::L);
  }

  TEST_CASE("causal mask: whole key tiles, N_q = N_k and N_q != N_k both ways, float32") {
    for (const FlashShape shape :
         {FlashShape{1, 64, 64, 64}, {1, 16, 16, 16}, {1, 48, 96, 32}, {2, 96, 48, 64}, {1, 40, 128, 128}}) {
      require_close<float>(shape, true);
    }
  }

  TEST_CASE("window: sliding windows without the causal mask, whole key tiles, rows that see no key included") {
    // With window (16, -1) and 70 queries over 48 keys, queries 64 to 69 see no key: O = 0, L = +inf.
    for (const fa2::Window window : fa2::testing::test_windows()) {
      for (const FlashShape shape : {FlashShape{2, 70, 48, 32}, {1, 48, 80, 64}, {1, 32, 32, 16}}) {
        require_close<float>(shape, false, Check::both, fa2::testing::flash_tolerance<float>(), window);
      }
    }
  }

  TEST_CASE_TEMPLATE("all together: one query, one key, and causal attention with N_q != N_k both ways", T, float,
                     fa2::bf16) {
    for (const FlashShape shape :
         {FlashShape{1, 1, 1, 16}, {2, 1, 40, 32}, {1, 40, 1, 64}, {1, 23, 70, 32}, {2, 70, 23, 16}}) {
      for (bool causal : {false, true}) require_close<T>(shape, causal);
    }
  }

  TEST_CASE_TEMPLATE("all together: scores of about +-25, causal or not, ragged", T, float, fa2::bf16) {
    for (bool causal : {false, true}) large_scores<T>({1, 50, 61, 64}, causal, Check::both);
  }
}

TEST_SUITE("host+grading+bug2") {
  TEST_CASE_TEMPLATE(
      "padded-key mask: every N_k that leaves a ragged last key tile, without the causal mask (bug 2 catcher)", T,
      float, fa2::bf16) {
    for (const index_t N_k : {1, 2, 15, 17, 31, 47, 100}) {
      for (const index_t N_q : {1, 16, 33}) require_close<T>({1, N_q, N_k, 32}, false);
    }
  }
}

TEST_SUITE("host+grading+bug1") {
  TEST_CASE_TEMPLATE("casts: O and L at every head dim without a mask, whole key tiles (bug 1 catcher)", T, fa2::bf16,
                     fa2::fp16) {
    for (const index_t D : {16, 32, 64, 128}) require_close<T>({2, 48, 48, D}, false);
  }
}
