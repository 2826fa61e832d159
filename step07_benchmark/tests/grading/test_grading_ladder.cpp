// The grader's tests of the ladder's variants v2-v4 on the host path (not in the starter kit):
// one query or one key, the causal diagonal crossing a 64-key tile at every offset, key lengths
// that leave a ragged last tile, and scores of +-25 in log2 units, in float32 and bfloat16.
//   ctest --preset cpu-only -R step07_grading   (in the instructor's repository)
#include "common/testing.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"
#include "step07_benchmark/kernels/variants.hpp"

using fa2::testing::FlashShape;
using fa2::testing::host_runner;

TEST_SUITE("variants+grading") {
  TEST_CASE_TEMPLATE("grading: the ladder on odd shapes, causal or not", T, float, fa2::bf16) {
    for (const auto& v : fa2::variants::kernel_variants()) {
      if (v.host == nullptr || v.family != "ladder") continue;
      INFO(v.name());
      for (const FlashShape shape : {FlashShape{1, 1, 1, 64},
                                     {1, 1, 90, 64},
                                     {2, 90, 1, 64},
                                     {1, 63, 129, 64},
                                     {1, 129, 63, 64},
                                     {1, 100, 100, 64},
                                     {1, 77, 77, 128}}) {
        for (bool causal : {false, true}) {
          const auto c = fa2::testing::run_and_compare<T>(host_runner<T>(v.host), shape, causal);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
      }
    }
  }
}
