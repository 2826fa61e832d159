// step06 on the host path (runs in CI): the harness that misses both bugs, and the tests
// that catch them. `ctest --preset default -L bug1` (or `-L bug2`) runs one bug's story.
#include "step06_tests_bugs/tests/bug_stories.hpp"

using fa2::testing::FlashRunner;
using fa2::testing::Variant;

namespace {

template <class T>
FlashRunner<T> host_runner(Variant v) {
  return fa2::testing::host_runner<T>(fa2::variants::host_launcher(v));
}

}  // namespace

TEST_SUITE("bug1") {
  TEST_CASE("the assignment's harness passes the original kernel: float32 hides the discarded casts") {
    fa2::testing::assignment_harness_passes(host_runner<float>, Variant::original);
  }
  TEST_CASE("in float32 the discarded casts change nothing: bug 1 alone passes every float32 case") {
    fa2::testing::article_test_file<float>(host_runner<float>, Variant::bug1);
  }
}

TEST_SUITE("bug2") {
  TEST_CASE("the assignment's harness passes the original kernel: 128 keys fill whole tiles") {
    fa2::testing::assignment_harness_passes(host_runner<float>, Variant::original);
  }
  TEST_CASE_TEMPLATE("padded keys vote when N_k is not a multiple of 16 and the fix removes them", T, float,
                     fa2::bf16) {
    fa2::testing::padded_keys_vote<T>(host_runner<T>, {2, 100, 100, 64});
    fa2::testing::padded_keys_vote<T>(host_runner<T>, {1, 37, 53, 32});
  }
  TEST_CASE("each padded key acts as a key with score 0 and value 0") {
    fa2::testing::padded_keys_are_zero_score_zero_value_keys(host_runner<float>);
  }
  TEST_CASE("with whole key tiles the buggy and fixed kernels compute the same numbers") {
    // Same arithmetic in the same order on the host: identical results.
    fa2::testing::whole_tiles_hide_bug2(host_runner<float>, fa2::Tolerance{0.0, 0.0});
  }
  TEST_CASE("a causal test on a square shape hides bug 2 as well") {
    fa2::testing::causal_square_hides_bug2(host_runner<float>);
  }
}

TEST_SUITE("article") {
  TEST_CASE_TEMPLATE("the article's test file passes on the fixed kernel", T, float, fa2::bf16) {
    fa2::testing::article_test_file<T>(host_runner<T>, Variant::fixed);
  }
  TEST_CASE("the article's test file fails the original kernel exactly where bug 2 shows") {
    fa2::testing::article_test_file<float>(host_runner<float>, Variant::original);
  }
  TEST_CASE_TEMPLATE("the article's test file fails bug 2 exactly on padded non-causal cases", T, float, fa2::bf16) {
    fa2::testing::article_test_file<T>(host_runner<T>, Variant::bug2);
  }
}
