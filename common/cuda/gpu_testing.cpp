// gpu_ready_or_skip(): the one place that decides whether a GPU test runs, skips or fails.
#include <doctest/doctest.h>

#include "common/cuda/gpu.hpp"
#include "common/testing.hpp"

namespace fa2::testing {

bool gpu_ready_or_skip() {
  const auto& status = fa2::cuda::gpu_status();
  if (status.available) return true;
  if (fa2::cuda::gpu_required()) {
    FAIL("FA2_REQUIRE_GPU=1 but " << status.reason);
    return false;
  }
  mark_skipped("GPU test: " + status.reason + " (set FA2_REQUIRE_GPU=1 to make this a failure)");
  return false;
}

}  // namespace fa2::testing
