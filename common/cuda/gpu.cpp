// The lazy GPU probe behind gpu_status(): what the CUDA runtime reports, and one plain
// sentence for a user when the GPU tests cannot run here.
#include "common/cuda/gpu.hpp"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

namespace fa2::cuda {

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

GpuStatus classify(const GpuProbe& probe) {
  GpuStatus s;
  if (probe.driver_version == 0) {
    // The runtime reports "driver version is insufficient" here too, but there is no driver
    // to upgrade: say what is really missing.
    s.reason = "no NVIDIA driver on this machine";
    return s;
  }
  if (probe.count_error == static_cast<int>(cudaErrorInsufficientDriver)) {
    s.reason = "NVIDIA driver too old: it supports CUDA " + cuda_version_string(probe.driver_version) +
               ", this program was built with CUDA " + cuda_version_string(probe.runtime_version);
    return s;
  }
  if (probe.count_error == static_cast<int>(cudaErrorNoDevice) || (probe.count_error == 0 && probe.device_count == 0)) {
    s.reason = "no GPU: the NVIDIA driver sees no CUDA device";
    return s;
  }
  if (probe.count_error != 0) {
    s.reason =
        "GPU unusable: cudaGetDeviceCount failed with " + probe.count_error_name + " (" + probe.count_error_text + ")";
    return s;
  }
  if (!probe.properties_error_name.empty()) {
    s.reason = "GPU unusable: cudaGetDeviceProperties failed with " + probe.properties_error_name;
    return s;
  }
  s.name = probe.name;
  s.cc_major = probe.cc_major;
  s.cc_minor = probe.cc_minor;
  s.sm_count = probe.sm_count;
  if (probe.cc_major < kMinComputeCapabilityMajor) {
    s.reason = "GPU too old: " + probe.name + " is sm_" + std::to_string(probe.cc_major) +
               std::to_string(probe.cc_minor) + ", needs sm_" + std::to_string(kMinComputeCapabilityMajor) +
               "0 (bf16 tensor cores)";
    return s;
  }
  s.available = true;
  return s;
}

const GpuStatus& gpu_status() {
  static const GpuStatus status = [] {
    GpuProbe probe;
    cudaDriverGetVersion(&probe.driver_version);
    cudaRuntimeGetVersion(&probe.runtime_version);
    const cudaError_t err = cudaGetDeviceCount(&probe.device_count);
    probe.count_error = static_cast<int>(err);
    if (err != cudaSuccess) {
      probe.count_error_name = cudaGetErrorName(err);
      probe.count_error_text = cudaGetErrorString(err);
      probe.device_count = 0;
      cudaGetLastError();  // clear the sticky error so later calls start clean
    } else if (probe.device_count > 0) {
      cudaDeviceProp prop{};
      const cudaError_t prop_err = cudaGetDeviceProperties(&prop, 0);
      if (prop_err == cudaSuccess) {
        probe.name = prop.name;
        probe.cc_major = prop.major;
        probe.cc_minor = prop.minor;
        probe.sm_count = prop.multiProcessorCount;
      } else {
        probe.properties_error_name = cudaGetErrorName(prop_err);
        cudaGetLastError();
      }
    }
    return classify(probe);
  }();
  return status;
}

bool gpu_required() {
  const char* env = std::getenv("FA2_REQUIRE_GPU");
  return env != nullptr && std::string(env) == "1";
}

}  // namespace fa2::cuda
