// The lazy GPU probe behind gpu_status() and the test helper gpu_ready_or_skip().
#include "common/cuda/gpu.hpp"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

namespace fa2::cuda {

const GpuStatus& gpu_status() {
  static const GpuStatus status = [] {
    GpuStatus s;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      s.reason = std::string("no usable GPU (cudaGetDeviceCount: ") + cudaGetErrorString(err) + ")";
      cudaGetLastError();  // clear the sticky error so later calls start clean
      return s;
    }
    if (count == 0) {
      s.reason = "no CUDA device present";
      return s;
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
      s.reason = "cudaGetDeviceProperties failed";
      return s;
    }
    s.name = prop.name;
    s.cc_major = prop.major;
    s.cc_minor = prop.minor;
    s.sm_count = prop.multiProcessorCount;
    if (prop.major < 8) {
      s.reason = s.name + " is sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
                 ": the kernels need bf16 tensor cores (sm_80 or newer)";
      return s;
    }
    s.available = true;
    return s;
  }();
  return status;
}

bool gpu_required() {
  const char* env = std::getenv("FA2_REQUIRE_GPU");
  return env != nullptr && std::string(env) == "1";
}

}  // namespace fa2::cuda
