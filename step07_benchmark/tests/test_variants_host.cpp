// The ladder variants (v2-v4) on the host path, in CI: each must pass step06's full test
// matrix (the article's test file) before the benchmark may time it, plus the cases the
// ladder's changes touch (causal shapes with N_q != N_k, every head dim, ragged tiles).
#include "step05_fa2_kernel/tests/flash_test_support.hpp"
#include "step07_benchmark/kernels/ladder.hpp"

using fa2::testing::host_runner;

TEST_SUITE("variants") {
  TEST_CASE_TEMPLATE("ladder variants pass the article's test file on the host path", T, float, fa2::bf16) {
    for (const auto& v : fa2::ladder::ladder_variants()) {
      INFO(v.name);
      fa2::testing::check_article_matrix<T>(host_runner<T>(v.host));
    }
  }

  TEST_CASE("ladder variants handle causal N_q != N_k and ragged tiles on the host path") {
    for (const auto& v : fa2::ladder::ladder_variants()) {
      INFO(v.name);
      for (const fa2::testing::FlashShape shape :
           {fa2::testing::FlashShape{1, 130, 70, 64}, {1, 70, 130, 32}, {2, 65, 65, 128}, {1, 3, 200, 16}}) {
        for (bool causal : {false, true}) {
          const auto c = fa2::testing::run_and_compare<float>(host_runner<float>(v.host), shape, causal);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
      }
    }
  }
}
