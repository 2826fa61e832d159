// Kernels for the benchmark's inputs and checks (see bench_device.hpp): a counter-based normal
// generator (splitmix64 + Box-Muller) and a grid-wide assert_close reduction.
#include "step07_benchmark/harness/bench_device.hpp"

#include <cuda_bf16.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/numeric.hpp"

namespace fa2::bench {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;  // grid-stride loops: enough blocks to fill any current GPU

__host__ __device__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Each thread turns one 64-bit hash into two normals (Box-Muller), elements 2p and 2p+1.
__global__ void fill_normal_kernel(__nv_bfloat16* x, std::size_t n, std::uint64_t key) {
  const std::size_t pairs = (n + 1) / 2;
  for (std::size_t p = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; p < pairs;
       p += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t r = splitmix64(key + p);
    const auto hi = static_cast<std::uint32_t>(r >> 32);
    const auto lo = static_cast<std::uint32_t>(r & 0xffffffffu);
    const float u1 = (static_cast<float>(hi >> 8) + 0.5f) * (1.0f / 16777216.0f);  // (0, 1): log is finite
    const float u2 = static_cast<float>(lo >> 8) * (1.0f / 16777216.0f);           // [0, 1)
    const float radius = sqrtf(-2.0f * logf(u1));
    float s = 0.0f, c = 0.0f;
    sincospif(2.0f * u2, &s, &c);
    x[2 * p] = __float2bfloat16_rn(radius * c);
    if (2 * p + 1 < n) x[2 * p + 1] = __float2bfloat16_rn(radius * s);
  }
}

struct CompareAccum {
  unsigned long long mismatched;
  unsigned long long nan_count;
  unsigned int max_abs_bits;     // a non-negative float's bits order like the float
  unsigned long long worst_key;  // (excess float bits << 32) | index
};

__global__ void compare_kernel(const __nv_bfloat16* a, const __nv_bfloat16* e, std::size_t n, float atol, float rtol,
                               CompareAccum* acc) {
  unsigned long long mismatched = 0, nans = 0, worst = 0;
  float max_abs = 0.0f;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float x = __bfloat162float(a[i]);
    const float y = __bfloat162float(e[i]);
    const bool nan = isnan(x) || isnan(y);
    const float diff = fabsf(x - y);
    const float allowed = atol + rtol * fabsf(y);
    const bool bad = nan || (x != y && !(diff <= allowed));  // equal infinities pass, as in compare_close
    if (nan) ++nans;
    if (!nan && isfinite(diff)) max_abs = fmaxf(max_abs, diff);
    if (bad) {
      ++mismatched;
      const float excess = (nan || !isfinite(diff)) ? INFINITY : diff - allowed;
      const unsigned long long key = (static_cast<unsigned long long>(__float_as_uint(excess)) << 32) |
                                     static_cast<unsigned long long>(i & 0xffffffffu);
      worst = key > worst ? key : worst;
    }
  }
  // Reduce within the warp, then one atomic per warp.
  for (int offset = 16; offset > 0; offset /= 2) {
    mismatched += __shfl_xor_sync(0xffffffffu, mismatched, offset);
    nans += __shfl_xor_sync(0xffffffffu, nans, offset);
    max_abs = fmaxf(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, offset));
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, worst, offset);
    worst = other > worst ? other : worst;
  }
  if ((threadIdx.x & 31u) == 0) {
    if (mismatched != 0) {
      atomicAdd(&acc->mismatched, mismatched);
      atomicMax(&acc->worst_key, worst);
    }
    if (nans != 0) atomicAdd(&acc->nan_count, nans);
    atomicMax(&acc->max_abs_bits, __float_as_uint(max_abs));
  }
}

int blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

}  // namespace

void fill_normal_bf16(bf16* x, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  fill_normal_kernel<<<blocks_for((n + 1) / 2), kThreads, 0, stream>>>(reinterpret_cast<__nv_bfloat16*>(x), n,
                                                                       splitmix64(seed));
  FA2_CUDA_CHECK_LAUNCH();
}

DeviceCompare compare_bf16(const bf16* actual, const bf16* expected, std::size_t n, double atol, double rtol,
                           cudaStream_t stream) {
  if (n >= (std::size_t{1} << 32)) throw std::invalid_argument("compare_bf16: n must be below 2^32");
  DeviceCompare out;
  out.checked = n;
  if (n == 0) return out;
  cuda::DeviceBuffer<CompareAccum> acc(1);
  FA2_CUDA_CHECK(cudaMemsetAsync(acc.data(), 0, sizeof(CompareAccum), stream));
  compare_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(actual), reinterpret_cast<const __nv_bfloat16*>(expected), n,
      static_cast<float>(atol), static_cast<float>(rtol), acc.data());
  FA2_CUDA_CHECK_LAUNCH();
  CompareAccum host{};
  FA2_CUDA_CHECK(cudaMemcpyAsync(&host, acc.data(), sizeof host, cudaMemcpyDeviceToHost, stream));
  FA2_CUDA_CHECK(cudaStreamSynchronize(stream));
  out.mismatched = host.mismatched;
  out.nan_count = host.nan_count;
  float max_abs = 0.0f;
  static_assert(sizeof max_abs == sizeof host.max_abs_bits, "float is 32 bits");
  std::memcpy(&max_abs, &host.max_abs_bits, sizeof max_abs);
  out.max_abs_error = static_cast<double>(max_abs);
  if (out.mismatched > 0) out.worst_index = static_cast<std::int64_t>(host.worst_key & 0xffffffffull);
  return out;
}

}  // namespace fa2::bench
