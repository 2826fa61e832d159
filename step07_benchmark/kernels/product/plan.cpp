// The parts of a plan that the product and the lab share: the GPU's attributes, read once per
// device; the head-dim refusal; the product's kernels, looked up in the tables of its generated
// translation units (FA2_HOPPER_SM90A: the build has v6's, compiled for sm_90a).
#include "step07_benchmark/kernels/product/plan.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/cuda/cuda_check.hpp"

namespace fa2::flash {

namespace {

DeviceInfo read_device(int ordinal) {
  DeviceInfo d;
  d.ordinal = ordinal;
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&d.sm_count, cudaDevAttrMultiProcessorCount, ordinal));
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, ordinal));
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, ordinal));
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&d.smem_optin_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal));
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&d.l2_bytes, cudaDevAttrL2CacheSize, ordinal));
  return d;
}

// The attributes of `ordinal`, read on its first use; std::map keeps each entry where it is.
const DeviceInfo& cached_device(int ordinal) {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> devices;
  const std::lock_guard lock(mutex);
  auto it = devices.find(ordinal);
  if (it == devices.end()) it = devices.emplace(ordinal, read_device(ordinal)).first;
  return it->second;
}

}  // namespace

const DeviceInfo& current_device() {
  int ordinal = 0;
  FA2_CUDA_CHECK(cudaGetDevice(&ordinal));
  return cached_device(ordinal);
}

const DeviceInfo* current_device_or(std::string& why_not) {
  int ordinal = 0;
  if (const cudaError_t e = cudaGetDevice(&ordinal); e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it for whoever asks next
    why_not = std::string("no CUDA device (") + cudaGetErrorString(e) + ")";
    return nullptr;
  }
  return &cached_device(ordinal);
}

std::string head_dim_refusal(std::string_view kernel, const HeadDimSet& head_dims, long long head_dim) {
  if (head_dims.has(head_dim)) return {};
  std::string dims;
  for (int i = 0; i < head_dims.count; ++i) dims += (i == 0 ? "" : ", ") + std::to_string(head_dims.dims[i]);
  return "head_dim: " + std::string(kernel) + " is built for head dims " + dims + ", got " + std::to_string(head_dim);
}

ForwardLaunch product_forward(Family family, int row, long long head_dim, bool causal) {
  return part_forward<ProductRows, Part::product>(family, row, head_dim, causal);
}

BackwardLaunch product_backward(Family family, int row, long long head_dim, bool causal) {
  return part_backward<ProductRows, Part::product>(family, row, head_dim, causal);
}

}  // namespace fa2::flash
