// The grader's tests of step 7's ladder on the host path (not in the starter kit), one group per
// rung the part grades (scripts/lib/grading/course.json). Each rung is also compiled alone, with
// the other two switched off, so that a bug in one rung fails that rung's tests only:
//   causal skip     the causal key loop stopping at the diagonal (causal shapes, whole key tiles)
//   exp2            the softmax in log2 units, L back in natural log (no mask, whole key tiles)
//   mask last only  the mask only on the tiles that need it (ragged and causal shapes)
// then v2, v3 and v4 as the benchmark runs them, on odd shapes: one query or one key, the causal
// diagonal crossing a 64-key tile at every offset, ragged last tiles, float32 and bfloat16.
//   ctest --preset cpu-only -R step07_grading   (in the instructor's repository)
#include <string>

#include "common/testing.hpp"
#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"
#include "step07_benchmark/kernels/lab/ladder/ladder.hpp"
#include "step07_benchmark/kernels/lab/ladder/ladder_kernel.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"

namespace {

using fa2::testing::FlashShape;
using fa2::testing::host_runner;

template <class Cfg>
using CausalSkipOnly = fa2::ladder::LadderKernel<Cfg, fa2::ladder::Features{.causal_skip = true}>;
template <class Cfg>
using Exp2Only = fa2::ladder::LadderKernel<Cfg, fa2::ladder::Features{.exp2 = true}>;
template <class Cfg>
using MaskLastOnly = fa2::ladder::LadderKernel<Cfg, fa2::ladder::Features{.mask_last_only = true}>;
using Tiles = fa2::TileSizes<fa2::ladder::kQTile, fa2::ladder::kKTile, fa2::ladder::kWarps>;
// Each rung alone is built for the head dims its tests use, which keeps this file's compile short.

void causal_skip_only(const fa2::FlashFwdArgs& args) {
  fa2::launch_flash<CausalSkipOnly, Tiles>(args, fa2::HostLauncher{}, fa2::DTypes<float, fa2::bf16>{},
                                           fa2::HeadDims<16, 32, 64>{}, "ladder, causal skip alone");
}
void exp2_only(const fa2::FlashFwdArgs& args) {
  fa2::launch_flash<Exp2Only, Tiles>(args, fa2::HostLauncher{}, fa2::DTypes<float, fa2::bf16>{},
                                     fa2::HeadDims<32, 64, 128>{}, "ladder, exp2 alone");
}
void mask_last_only(const fa2::FlashFwdArgs& args) {
  fa2::launch_flash<MaskLastOnly, Tiles>(args, fa2::HostLauncher{}, fa2::DTypes<float, fa2::bf16>{},
                                         fa2::HeadDims<32, 64>{}, "ladder, mask last only alone");
}

template <class T>
void require_close(fa2::HostLaunchFn launch, const FlashShape& shape, bool causal) {
  const auto c = fa2::testing::run_and_compare<T>(host_runner<T>(launch), shape, causal);
  CHECK_MESSAGE(c.O.ok, c.O.summary());
  CHECK_MESSAGE(c.L.ok, c.L.summary());
}

}  // namespace

TEST_SUITE("variants+grading") {
  TEST_CASE_TEMPLATE("causal skip: the key loop stops at the diagonal, whole key tiles, N_q = N_k and N_q != N_k", T,
                     float, fa2::bf16) {
    for (const FlashShape shape :
         {FlashShape{1, 128, 128, 64}, {1, 64, 192, 32}, {2, 192, 64, 64}, {1, 256, 256, 16}}) {
      require_close<T>(&causal_skip_only, shape, true);
    }
  }

  TEST_CASE_TEMPLATE("exp2: the softmax in log2 units gives O and L in natural log, no mask, whole key tiles", T, float,
                     fa2::bf16) {
    for (const FlashShape shape : {FlashShape{1, 64, 64, 64}, {2, 100, 192, 32}, {1, 33, 128, 128}}) {
      require_close<T>(&exp2_only, shape, false);
    }
  }

  TEST_CASE_TEMPLATE("mask last only: the padded last tile and the diagonal tiles are masked, the others are not", T,
                     float, fa2::bf16) {
    for (const FlashShape shape :
         {FlashShape{1, 63, 129, 64}, {1, 129, 63, 64}, {1, 100, 100, 32}, {1, 128, 128, 64}}) {
      for (bool causal : {false, true}) require_close<T>(&mask_last_only, shape, causal);
    }
  }

  TEST_CASE_TEMPLATE("all together: v2, v3 and v4 on odd shapes, causal or not", T, float, fa2::bf16) {
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
        for (bool causal : {false, true}) require_close<T>(v.host, shape, causal);
      }
    }
  }
}
