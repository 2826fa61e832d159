// Is there a usable GPU? Asked lazily (never during static initialisation), answered once.
// Tests call fa2::testing::gpu_ready_or_skip(), which turns "no GPU" into a visible skip,
// or into a failure when FA2_REQUIRE_GPU=1 (for runs on the GPU machine).
#pragma once

#include <string>

namespace fa2::cuda {

struct GpuStatus {
  bool available = false;
  std::string reason;  // why not, when !available
  std::string name;    // e.g. "NVIDIA H200"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
};

const GpuStatus& gpu_status();

// FA2_REQUIRE_GPU=1 in the environment: a missing GPU is an error, not a skip.
bool gpu_required();

}  // namespace fa2::cuda

namespace fa2::testing {
// true: run the GPU test. false: no GPU here, the skip has been recorded and printed.
// With FA2_REQUIRE_GPU=1 and no GPU, the current test case fails instead.
bool gpu_ready_or_skip();
}  // namespace fa2::testing

#define FA2_SKIP_WITHOUT_GPU()                        \
  do {                                                \
    if (!::fa2::testing::gpu_ready_or_skip()) return; \
  } while (0)
