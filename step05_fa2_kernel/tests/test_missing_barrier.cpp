// The barrier students forget: step05's kernel with its prog.sync() removed (generated at build
// time by cmake/Fa2RemoveBarrier.cmake) must fail on the host, where one thread plays the whole
// block, with the race compute-sanitizer's racecheck reports on the GPU. The intact kernel and
// the weighted-sum kernels pass the same checks (their own suites run them).
#include "common/random.hpp"
#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step05_fa2_kernel/tests/flash_test_support.hpp"

#define FA2_KERNEL_NAMESPACE without_barrier
#include "step05_fa2_kernel/flash_fwd_kernel_without_barrier.hpp"

namespace {

void flash_fwd_without_barrier_host(const fa2::FlashFwdArgs& args) {
  fa2::launch_flash<fa2::without_barrier::FlashFwdKernel>(args, fa2::HostLauncher{}, fa2::DTypes<float, fa2::bf16>{},
                                                          fa2::AllHeadDims{}, "step05's kernel without its barrier");
}

}  // namespace

TEST_SUITE("host+barrier") {
  // Without the barrier, the first product reads Q_i (the tile at byte 0 of Shared): warp 0,
  // played by its thread 0, reads row 1, which thread 64 loaded (element 64 of 128 threads).
  TEST_CASE("step05's kernel without its prog.sync() fails on the host with the race, its tile and its threads") {
    for (bool causal : {false, true}) {
      fa2::Rng rng(fa2::fresh_seed());
      INFO("seed ", rng.seed(), ", causal ", causal);
      const auto Q = fa2::random_normal<float, 3>({1, 40, 64}, rng);
      CHECK_THROWS_WITH_AS(
          fa2::run_with_host_tensors<float>(&flash_fwd_without_barrier_host, Q.cview(), Q.cview(), Q.cview(), causal),
          doctest::Contains("shared-memory race in program (0, 0, 0): thread 0 read element (1, 0) of the 16 x 64 "
                            "float tile at byte 0 of shared memory"),
          fa2::SharedMemoryHazard);
      CHECK_THROWS_WITH_AS(
          fa2::run_with_host_tensors<float>(&flash_fwd_without_barrier_host, Q.cview(), Q.cview(), Q.cview(), causal),
          doctest::Contains("which thread 64 wrote after the last prog.sync()"), fa2::SharedMemoryHazard);
    }
  }

  TEST_CASE("the intact kernel passes the host's race checks on ragged and causal shapes") {
    for (const fa2::testing::FlashShape shape : {fa2::testing::FlashShape{2, 70, 33, 64}, {1, 17, 90, 128}}) {
      for (bool causal : {false, true}) {
        const auto c = fa2::testing::run_and_compare<fa2::bf16>(
            fa2::testing::host_runner<fa2::bf16>(&fa2::flash_fwd_host), shape, causal);
        CHECK_MESSAGE(c.O.ok, c.O.summary());
      }
    }
  }
}
