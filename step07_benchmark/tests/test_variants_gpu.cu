// Every row of the variants table on the GPU, against the float64 reference: step05's kernel at
// larger tiles, the ladder (v2-v4, float32 and bf16) and the fast kernel's configurations (v5,
// bf16). A variant that fails here is wrong, whatever its speed.
#include <algorithm>
#include <stdexcept>

#include "common/cuda/gpu.hpp"
#include "step05_fa2_kernel/tests/flash_test_support_cuda.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast.hpp"
#include "step07_benchmark/kernels/variants.hpp"

using fa2::testing::gpu_runner;
using fa2::variants::kernel_variants;

namespace {

// Shapes beyond the article's: causal with N_q != N_k (both ways), lengths that are not
// multiples of the 64 and 128 tiles, a single query, one key, and every supported head dim.
const std::vector<fa2::testing::FlashShape>& extra_shapes() {
  static const std::vector<fa2::testing::FlashShape> shapes = {{1, 130, 70, 64}, {1, 70, 130, 64}, {2, 1000, 1000, 64},
                                                               {1, 1, 333, 128}, {3, 257, 1, 32},  {2, 300, 300, 128},
                                                               {1, 129, 129, 32}};
  return shapes;
}

void check_extra(const fa2::testing::FlashRunner<fa2::bf16>& run, const std::vector<int>& head_dims = {}) {
  for (const auto& shape : extra_shapes()) {
    if (!fa2::testing::takes_head_dim(head_dims, shape.D)) continue;
    for (bool causal : {false, true}) {
      const auto c = fa2::testing::run_and_compare<fa2::bf16>(run, shape, causal);
      CHECK_MESSAGE(c.O.ok, c.O.summary());
      CHECK_MESSAGE(c.L.ok, c.L.summary());
    }
  }
}

}  // namespace

TEST_SUITE("gpu+variants") {
  TEST_CASE_TEMPLATE("GPU: every variant passes the article's test file in the dtypes it is built for", T, float,
                     fa2::bf16) {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& v : kernel_variants()) {
      if (v.cuda == nullptr || std::find(v.dtypes.begin(), v.dtypes.end(), fa2::dtype_of<T>()) == v.dtypes.end())
        continue;
      INFO(v.name());
      fa2::testing::check_article_matrix<T>(gpu_runner<T>(v.cuda), v.head_dims);
    }
  }

  TEST_CASE("GPU: every bf16 variant handles causal N_q != N_k, ragged tiles and odd lengths") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& v : kernel_variants()) {
      if (v.cuda == nullptr || v.family == "ours") continue;  // step05's kernel: step05's own GPU tests
      INFO(v.name());
      check_extra(gpu_runner<fa2::bf16>(v.cuda), v.head_dims);
    }
  }
}

TEST_SUITE("gpu+sanitizer") {
  // Small enough for compute-sanitizer's memcheck and racecheck: every fast configuration on
  // a few ragged shapes, causal and not.
  TEST_CASE("GPU: fast configurations on small ragged shapes") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& v : kernel_variants()) {
      if (v.cuda == nullptr || v.family != "fast") continue;
      INFO(v.name());
      for (const fa2::testing::FlashShape shape :
           {fa2::testing::FlashShape{1, 130, 70, 64}, {1, 65, 129, 128}, {2, 33, 33, 32}}) {
        if (!fa2::testing::takes_head_dim(v.head_dims, shape.D)) continue;
        for (bool causal : {false, true}) {
          const auto c = fa2::testing::run_and_compare<fa2::bf16>(gpu_runner<fa2::bf16>(v.cuda), shape, causal);
          CHECK_MESSAGE(c.O.ok, c.O.summary());
          CHECK_MESSAGE(c.L.ok, c.L.summary());
        }
      }
    }
  }
}

TEST_SUITE("variants") {
  TEST_CASE("the fast kernel refuses what it does not support instead of computing it wrong") {
    // Runs without a GPU: the checks come before any CUDA call.
    fa2::Tensor<float, 3> q({1, 8, 64});
    fa2::Tensor<float, 2> l({1, 8});
    auto a = fa2::make_flash_args<float>(q.cview(), q.cview(), q.cview(), q.view(), l.view(), false);
    CHECK_THROWS_WITH_AS(fa2::fast::flash_fwd_fast(a), doctest::Contains("bfloat16 only"), std::invalid_argument);
    fa2::Tensor<fa2::bf16, 3> h({1, 8, 16});
    fa2::Tensor<float, 2> lh({1, 8});
    auto b = fa2::make_flash_args<fa2::bf16>(h.cview(), h.cview(), h.cview(), h.view(), lh.view(), false);
    CHECK_THROWS_WITH_AS(fa2::fast::flash_fwd_fast(b), doctest::Contains("32, 64 or 128"), std::invalid_argument);
    fa2::Tensor<fa2::bf16, 3> h64({1, 8, 64});
    auto c =
        fa2::make_flash_args<fa2::bf16>(h64.cview(), h64.cview(), h64.cview(), h64.view(), lh.view(), false, -1.0f);
    CHECK_THROWS_WITH_AS(fa2::fast::flash_fwd_fast(c), doctest::Contains("positive"), std::invalid_argument);
    // A configuration built for head dim 64 only refuses 128 rather than launching nothing.
    fa2::Tensor<fa2::bf16, 3> h128({1, 8, 128});
    auto d = fa2::make_flash_args<fa2::bf16>(h128.cview(), h128.cview(), h128.cview(), h128.view(), lh.view(), false);
    CHECK_THROWS_WITH_AS(fa2::variants::kernel_variant("v5.1").cuda(d, nullptr),
                         doctest::Contains("built for head dims 64"), std::invalid_argument);
  }
}
