// The CUDA primer on a GPU (primer_gpu.hpp): the primer's kernels launched for real, and the
// hardware's answers (lanes, shared-memory timings, occupancy) for the tests and the demo.
//   cmake --build --preset default --target step04_cuda_primer_gpu_tests && ctest --preset default -L gpu
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/bf16.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "step04_weighted_sum/cuda_primer/primer_gpu.hpp"
#include "step04_weighted_sum/cuda_primer/primer_kernels.cuh"
#include "step04_weighted_sum/cuda_primer/primer_kernels_gpu.cuh"
#include "step04_weighted_sum/weighted_sum_plain.cuh"

namespace fa2::cuda_primer {

namespace {

unsigned blocks_for(int n, int threads_per_block) {
  return static_cast<unsigned>((n + threads_per_block - 1) / threads_per_block);
}

template <class T>
cuda::DeviceBuffer<T> to_device(const std::vector<T>& host) {
  cuda::DeviceBuffer<T> buffer(host.size());
  buffer.upload(host);
  return buffer;
}

// Waits for the launch and turns a fault inside it into an exception here.
void finish() {
  FA2_CUDA_CHECK_LAUNCH();
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
}

// The kernel behind each probe, as the runtime's occupancy calls want it.
const void* kernel_of(OccupancyProbe probe) {
  switch (probe) {
    case OccupancyProbe::write_own_index:
      return reinterpret_cast<const void*>(write_own_index);
    case OccupancyProbe::reverse_each_block:
      return reinterpret_cast<const void*>(reverse_each_block);
    case OccupancyProbe::hold_many_values:
      return reinterpret_cast<const void*>(hold_many_values);
    case OccupancyProbe::use_dynamic_shared:
      return reinterpret_cast<const void*>(use_dynamic_shared);
    case OccupancyProbe::weighted_sum_plain_f32_16x64:
      return reinterpret_cast<const void*>(weighted_sum_fwd_plain<float, 16, 64>);
    case OccupancyProbe::weighted_sum_plain_bf16_32x128:
      return reinterpret_cast<const void*>(weighted_sum_fwd_plain<bf16, 32, 128>);
  }
  throw std::invalid_argument("probe: not an OccupancyProbe");
}

// use_dynamic_shared may ask for all the dynamic shared memory a block can have (an opt-in past 48 KB).
void opt_in_once() {
  static const bool done = [] {
    cudaDeviceProp prop{};
    FA2_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaFuncAttributes attributes{};
    FA2_CUDA_CHECK(cudaFuncGetAttributes(&attributes, use_dynamic_shared));
    const int largest = static_cast<int>(prop.sharedMemPerBlockOptin) - static_cast<int>(attributes.sharedSizeBytes);
    FA2_CUDA_CHECK(cudaFuncSetAttribute(use_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, largest));
    return true;
  }();
  (void)done;
}

}  // namespace

std::vector<int> write_own_index_on_gpu(int n, int threads_per_block, int guard) {
  const std::vector<int> poisoned(static_cast<std::size_t>(n + guard), -1);
  auto d_out = to_device(poisoned);
  write_own_index<<<blocks_for(n, threads_per_block), static_cast<unsigned>(threads_per_block)>>>(d_out.data(), n);
  finish();
  return d_out.download();
}

std::vector<float> reverse_each_block_on_gpu(const std::vector<float>& in, int threads_per_block) {
  if (threads_per_block < 1 || threads_per_block > kMaxReverseThreads ||
      in.size() % static_cast<std::size_t>(threads_per_block) != 0) {
    throw std::invalid_argument("threads_per_block: 1 to 256, dividing the size of in");
  }
  const auto d_in = to_device(in);
  cuda::DeviceBuffer<float> d_out(in.size());
  const auto blocks = static_cast<unsigned>(in.size() / static_cast<std::size_t>(threads_per_block));
  reverse_each_block<<<blocks, static_cast<unsigned>(threads_per_block)>>>(d_in.data(), d_out.data());
  finish();
  return d_out.download();
}

std::vector<float> gather_with_stride_on_gpu(const std::vector<float>& in, int n, int stride, int threads_per_block) {
  const auto d_in = to_device(in);
  cuda::DeviceBuffer<float> d_out(static_cast<std::size_t>(n));
  gather_with_stride<<<blocks_for(n, threads_per_block), static_cast<unsigned>(threads_per_block)>>>(
      d_in.data(), d_out.data(), n, stride);
  finish();
  return d_out.download();
}

std::vector<float> read_shared_column_on_gpu(const std::vector<float>& table, int width, int column) {
  const auto d_table = to_device(table);
  cuda::DeviceBuffer<float> d_out(kBankTableRows);
  read_shared_column<<<1, kBankTableRows>>>(d_table.data(), width, column, d_out.data());
  finish();
  return d_out.download();
}

WarpPlacesOnGpu warp_places_on_gpu(int block_x, int block_y, int block_z) {
  const auto threads = static_cast<std::size_t>(block_x * block_y * block_z);
  cuda::DeviceBuffer<int> d_lane(threads), d_first(threads);
  report_warp_places<<<1, dim3(static_cast<unsigned>(block_x), static_cast<unsigned>(block_y),
                               static_cast<unsigned>(block_z))>>>(d_lane.data(), d_first.data());
  finish();
  return {d_lane.download(), d_first.download()};
}

long long shared_read_cycles_on_gpu(int stride_words, int reads_per_lane, int launches) {
  if (stride_words < 0 || stride_words > 33) throw std::invalid_argument("stride_words: 0 to 33");
  cuda::DeviceBuffer<long long> d_cycles(1);
  cuda::DeviceBuffer<float> d_sink(kBankTableRows);
  long long fastest = std::numeric_limits<long long>::max();
  for (int i = 0; i < launches; ++i) {
    time_shared_reads<<<1, kBankTableRows>>>(stride_words, reads_per_lane, d_cycles.data(), d_sink.data());
    finish();
    fastest = std::min(fastest, d_cycles.download()[0]);
  }
  return fastest;
}

double gather_seconds_on_gpu(int n, int stride, int launches) {
  cuda::DeviceBuffer<float> d_in(static_cast<std::size_t>(n) * static_cast<std::size_t>(std::max(stride, 1)));
  cuda::DeviceBuffer<float> d_out(static_cast<std::size_t>(n));
  d_in.fill_bytes(0);
  cudaEvent_t start = nullptr, stop = nullptr;
  FA2_CUDA_CHECK(cudaEventCreate(&start));
  FA2_CUDA_CHECK(cudaEventCreate(&stop));
  float fastest_ms = std::numeric_limits<float>::max();
  for (int i = 0; i <= launches; ++i) {  // launch 0 is a warm-up
    FA2_CUDA_CHECK(cudaEventRecord(start));
    gather_with_stride<<<blocks_for(n, 256), 256>>>(d_in.data(), d_out.data(), n, stride);
    FA2_CUDA_CHECK_LAUNCH();
    FA2_CUDA_CHECK(cudaEventRecord(stop));
    FA2_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    FA2_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i > 0) fastest_ms = std::min(fastest_ms, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return static_cast<double>(fastest_ms) * 1e-3;
}

std::string to_string(OccupancyProbe probe) {
  switch (probe) {
    case OccupancyProbe::write_own_index:
      return "write_own_index";
    case OccupancyProbe::reverse_each_block:
      return "reverse_each_block";
    case OccupancyProbe::hold_many_values:
      return "hold_many_values";
    case OccupancyProbe::use_dynamic_shared:
      return "use_dynamic_shared (opted in)";
    case OccupancyProbe::weighted_sum_plain_f32_16x64:
      return "weighted_sum_fwd_plain<float, 16, 64>";
    case OccupancyProbe::weighted_sum_plain_bf16_32x128:
      return "weighted_sum_fwd_plain<bf16, 32, 128>";
  }
  return "unknown probe";
}

KernelFacts kernel_facts_on_gpu(OccupancyProbe probe) {
  if (probe == OccupancyProbe::use_dynamic_shared) opt_in_once();
  cudaFuncAttributes attributes{};
  FA2_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel_of(probe)));
  return {attributes.numRegs, static_cast<int>(attributes.sharedSizeBytes)};
}

SmLimits sm_limits_on_gpu(bool opted_in) {
  cudaDeviceProp prop{};
  FA2_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  SmLimits sm;
  sm.name = prop.name;
  sm.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  sm.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
  sm.registers_per_sm = prop.regsPerMultiprocessor;
  sm.registers_per_block = prop.regsPerBlock;
  sm.shared_bytes_per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor);
  sm.shared_bytes_per_block = static_cast<int>(opted_in ? prop.sharedMemPerBlockOptin : prop.sharedMemPerBlock);
  sm.reserved_shared_bytes_per_block = static_cast<int>(prop.reservedSharedMemPerBlock);
  sm.max_threads_per_block = prop.maxThreadsPerBlock;
  return sm;
}

int runtime_blocks_per_sm(OccupancyProbe probe, int threads_per_block, int dynamic_shared_bytes) {
  if (probe == OccupancyProbe::use_dynamic_shared) opt_in_once();
  int blocks = 0;
  FA2_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel_of(probe), threads_per_block,
                                                               static_cast<std::size_t>(dynamic_shared_bytes)));
  return blocks;
}

Occupancy model_occupancy_on_gpu(OccupancyProbe probe, int threads_per_block, int dynamic_shared_bytes) {
  const KernelFacts facts = kernel_facts_on_gpu(probe);
  const SmLimits sm = sm_limits_on_gpu(probe == OccupancyProbe::use_dynamic_shared);
  return occupancy({threads_per_block, facts.registers_per_thread, facts.static_shared_bytes + dynamic_shared_bytes},
                   sm);
}

}  // namespace fa2::cuda_primer
