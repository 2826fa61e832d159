// The grader's tests of step 5's backward kernel on the host path (not in the starter kit), one
// group per idea the part grades (scripts/lib/grading/course.json), each where the other ideas
// have nothing to do, with O and L from the float64 reference forward, against the float64
// gradients:
//   gradients  P from S and L and the five products, no mask, whole tiles, float32
//   causal     the causal mask, whole tiles, N_q = N_k and N_q != N_k both ways
//   padded     ragged query and key counts (padded rows and keys must not count), no mask
//   casts      bfloat16 and float16 at every head dim, no mask, whole tiles
//   window     sliding windows without the causal mask, whole tiles
// then odd shapes that mix them (one query, one key, N_q != N_k, causal or not, every head dim).
//   ctest --preset cpu-only -R step05_backward_grading   (in the instructor's repository)
#include "common/testing.hpp"
#include "step05_fa2_kernel/tests/flash_bwd_test_support.hpp"

using fa2::testing::FlashShape;

namespace {

template <class T>
void require_close(const FlashShape& shape, bool causal, fa2::Window window = {}) {
  fa2::testing::require_close(fa2::testing::run_backward_and_compare<T>(
      fa2::testing::host_passes<T>(window), shape, causal, 1.0, fa2::testing::gradient_tolerance<T>(), window));
}

}  // namespace

TEST_SUITE("host+backward+grading") {
  TEST_CASE("backward, gradients: P from S and L and the five products, no mask, whole tiles") {
    for (const FlashShape shape : {FlashShape{1, 32, 48, 64}, {2, 16, 16, 32}, {1, 64, 32, 128}, {1, 48, 96, 16}}) {
      require_close<float>(shape, false);
    }
  }

  TEST_CASE("backward, causal mask: whole tiles, N_q = N_k and N_q != N_k both ways") {
    for (const FlashShape shape : {FlashShape{1, 48, 48, 64}, {1, 32, 64, 32}, {2, 64, 32, 16}, {1, 16, 16, 128}}) {
      require_close<float>(shape, true);
    }
  }

  TEST_CASE("backward, padded rows and keys: ragged query and key counts, no mask") {
    for (const FlashShape shape : {FlashShape{1, 37, 21, 64}, {2, 1, 33, 32}, {1, 33, 1, 64}, {1, 17, 50, 16}}) {
      require_close<float>(shape, false);
    }
  }

  TEST_CASE_TEMPLATE("backward, casts: P and dS in the inputs' dtype at every head dim, no mask, whole tiles", T,
                     fa2::bf16, fa2::fp16) {
    for (const fa2::index_t D : {16, 32, 64, 128}) require_close<T>({2, 32, 48, D}, false);
  }

  TEST_CASE("backward, window: sliding windows without the causal mask, whole tiles") {
    for (const fa2::Window window : fa2::testing::test_windows()) {
      for (const FlashShape shape : {FlashShape{1, 64, 48, 32}, {1, 32, 80, 64}})
        require_close<float>(shape, false, window);
    }
  }

  TEST_CASE_TEMPLATE("backward, all together: one query, one key and N_q != N_k, causal or not, every head dim", T,
                     float, fa2::bf16) {
    for (const FlashShape shape : {FlashShape{1, 1, 1, 16},
                                   {2, 1, 33, 32},
                                   {1, 33, 1, 64},
                                   {1, 21, 50, 128},
                                   {2, 50, 21, 32},
                                   {1, 48, 48, 16}}) {
      for (bool causal : {false, true}) require_close<T>(shape, causal);
    }
  }
}
