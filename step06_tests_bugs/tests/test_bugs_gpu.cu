// step06 on the GPU: the same stories as test_bugs_host.cpp, with the variants' CUDA launches.
// Skipped (with the reason) where there is no GPU; FA2_REQUIRE_GPU=1 makes that a failure.
#include "common/cuda/gpu.hpp"
#include "step05_fa2_kernel/tests/flash_test_support_cuda.hpp"
#include "step06_tests_bugs/tests/bug_stories.hpp"
#include "step06_tests_bugs/variants_cuda.hpp"

using fa2::testing::FlashRunner;
using fa2::testing::Variant;

namespace {

template <class T>
FlashRunner<T> gpu_runner(Variant v) {
  return fa2::testing::gpu_runner<T>(fa2::variants::cuda_launcher(v));
}

}  // namespace

TEST_SUITE("gpu+bug1") {
  TEST_CASE("GPU: the assignment's harness passes the original kernel: float32 hides the discarded casts") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::assignment_harness_passes(gpu_runner<float>, Variant::original);
  }
  TEST_CASE("GPU: in float32 the discarded casts change nothing") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::article_test_file<float>(gpu_runner<float>, Variant::bug1);
  }
}

TEST_SUITE("gpu+bug2") {
  TEST_CASE("GPU: the assignment's harness passes the original kernel: 128 keys fill whole tiles") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::assignment_harness_passes(gpu_runner<float>, Variant::original);
  }
  TEST_CASE_TEMPLATE("GPU: padded keys vote when N_k is not a multiple of 16 and the fix removes them", T, float,
                     fa2::bf16) {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::padded_keys_vote<T>(gpu_runner<T>, {2, 100, 100, 64});
    fa2::testing::padded_keys_vote<T>(gpu_runner<T>, {1, 37, 53, 32});
  }
  TEST_CASE("GPU: each padded key acts as a key with score 0 and value 0") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::padded_keys_are_zero_score_zero_value_keys(gpu_runner<float>);
  }
  TEST_CASE("GPU: with whole key tiles the buggy and fixed kernels agree") {
    FA2_SKIP_WITHOUT_GPU();
    // The compiler may fuse a multiply and an add differently once the mask is gone, so the
    // two can differ in the last bits: agreement, not identity.
    fa2::testing::whole_tiles_hide_bug2(gpu_runner<float>, fa2::Tolerance{1e-5, 1e-5});
  }
  TEST_CASE("GPU: a causal test on a square shape hides bug 2 as well") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::causal_square_hides_bug2(gpu_runner<float>);
  }
}

TEST_SUITE("gpu+article") {
  TEST_CASE_TEMPLATE("GPU: the article's test file passes on the fixed kernel", T, float, fa2::bf16) {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::article_test_file<T>(gpu_runner<T>, Variant::fixed);
  }
  TEST_CASE("GPU: the article's test file fails the original kernel exactly where bug 2 shows") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::article_test_file<float>(gpu_runner<float>, Variant::original);
  }
  TEST_CASE_TEMPLATE("GPU: the article's test file fails bug 2 exactly on padded non-causal cases", T, float,
                     fa2::bf16) {
    FA2_SKIP_WITHOUT_GPU();
    fa2::testing::article_test_file<T>(gpu_runner<T>, Variant::bug2);
  }
}
