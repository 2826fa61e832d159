// The grader's tests of step 5's backward kernel on the host path (not in the starter kit): one
// query or one key, causal with N_q != N_k both ways, every head dim, bfloat16, against the
// float64 gradients, with O and L from the float64 reference forward.
//   ctest --preset cpu-only -R step05_backward_grading   (in the instructor's repository)
#include "common/testing.hpp"
#include "step05_fa2_kernel/tests/flash_bwd_test_support.hpp"

using fa2::testing::FlashShape;

TEST_SUITE("host+backward+grading") {
  TEST_CASE_TEMPLATE("grading: backward over one query, one key and N_q != N_k, causal or not, every head dim", T,
                     float, fa2::bf16) {
    for (const FlashShape shape : {FlashShape{1, 1, 1, 16},
                                   {2, 1, 33, 32},
                                   {1, 33, 1, 64},
                                   {1, 21, 50, 128},
                                   {2, 50, 21, 32},
                                   {1, 48, 48, 16}}) {
      for (bool causal : {false, true}) {
        fa2::testing::require_close(
            fa2::testing::run_backward_and_compare<T>(fa2::testing::host_passes<T>(), shape, causal));
      }
    }
  }
}
