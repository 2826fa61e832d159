// Is there a usable GPU? Asked lazily (never during static initialisation), answered once.
// Tests call fa2::testing::gpu_ready_or_skip(), which turns "no GPU" into a visible skip,
// or into a failure when FA2_REQUIRE_GPU=1 (for runs on a GPU machine).
#pragma once

#include <string>

namespace fa2::cuda {

// The oldest GPU the kernels run on: bf16 tensor cores arrived with Ampere (sm_80).
inline constexpr int kMinComputeCapabilityMajor = 8;

struct GpuStatus {
  bool available = false;
  std::string reason;  // why not, when !available: one line a user can act on
  std::string name;    // e.g. "NVIDIA H200"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
};

// What the CUDA runtime said when asked, the raw facts behind a GpuStatus.
struct GpuProbe {
  int driver_version = 0;   // cudaDriverGetVersion: 0 when no NVIDIA driver is installed
  int runtime_version = 0;  // cudaRuntimeGetVersion: the CUDA version this program was built with
  int count_error = 0;      // the cudaError_t of cudaGetDeviceCount (0: success)
  std::string count_error_name;
  std::string count_error_text;
  int device_count = 0;
  std::string properties_error_name;  // cudaGetDeviceProperties(device 0) failed with this
  std::string name;                   // device 0, when there is one
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
};

// Turns the facts into a status whose reason names the real cause: no driver at all, a
// driver older than the runtime, no device, or a device older than sm_80. No CUDA calls:
// testable without a GPU.
GpuStatus classify(const GpuProbe& probe);

// Asks the CUDA runtime once and classifies the answer.
const GpuStatus& gpu_status();

// "13.0" from a CUDA version number such as 13000.
std::string cuda_version_string(int version);

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
