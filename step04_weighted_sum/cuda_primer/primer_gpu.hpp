// The CUDA primer on a GPU (no CUDA headers needed: the demo and the GPU tests call these): the
// kernels of primer.hpp run by the hardware, and the hardware's own answers to the questions the
// models of hardware_model.hpp answer on paper. Built only with CUDA (fa2::cuda_primer_gpu); every
// function expects a usable GPU (fa2::cuda::gpu_status()).
//   ctest --preset default -L gpu
#pragma once

#include <string>
#include <vector>

#include "step04_weighted_sum/cuda_primer/hardware_model.hpp"

namespace fa2::cuda_primer {

// The kernels of primer_kernels.cuh, with the same arguments and results as their _on_host twins.
std::vector<int> write_own_index_on_gpu(int n, int threads_per_block, int guard);
std::vector<float> reverse_each_block_on_gpu(const std::vector<float>& in, int threads_per_block);
std::vector<float> gather_with_stride_on_gpu(const std::vector<float>& in, int n, int stride, int threads_per_block);
std::vector<float> read_shared_column_on_gpu(const std::vector<float>& table, int width, int column);

// For each thread of one block of (block_x, block_y, block_z), by linear index: the lane the
// hardware reports and the linear index of the first thread of its warp.
struct WarpPlacesOnGpu {
  std::vector<int> lane;
  std::vector<int> first_thread_of_warp;
};
WarpPlacesOnGpu warp_places_on_gpu(int block_x, int block_y, int block_z);

// Clock cycles one warp takes for `reads_per_lane` reads of word lane * stride_words of shared
// memory (the fastest of `launches` launches, so that another kernel on the same SM does not count).
long long shared_read_cycles_on_gpu(int stride_words, int reads_per_lane, int launches = 5);

// Seconds for gather_with_stride over n elements (the fastest of `launches`, after a warm-up).
double gather_seconds_on_gpu(int n, int stride, int launches = 5);

// The kernels whose occupancy the GPU tests and the demo ask about.
enum class OccupancyProbe {
  write_own_index,
  reverse_each_block,
  hold_many_values,
  use_dynamic_shared,  // opted in to the SM's largest dynamic shared memory per block
  weighted_sum_plain_f32_16x64,
  weighted_sum_plain_bf16_32x128,
};
std::string to_string(OccupancyProbe probe);

// What cudaFuncGetAttributes says the compiled kernel needs.
struct KernelFacts {
  int registers_per_thread = 0;
  int static_shared_bytes = 0;
};
KernelFacts kernel_facts_on_gpu(OccupancyProbe probe);

// The SM limits of device 0, from cudaGetDeviceProperties; `opted_in` uses the per-block shared
// memory limit a kernel gets after cudaFuncAttributeMaxDynamicSharedMemorySize.
SmLimits sm_limits_on_gpu(bool opted_in);

// cudaOccupancyMaxActiveBlocksPerMultiprocessor: the runtime's answer for the model's question.
int runtime_blocks_per_sm(OccupancyProbe probe, int threads_per_block, int dynamic_shared_bytes);

// The model's answer for the same kernel on device 0.
Occupancy model_occupancy_on_gpu(OccupancyProbe probe, int threads_per_block, int dynamic_shared_bytes);

}  // namespace fa2::cuda_primer
