// Running a program body as a CUDA kernel: one thread block per program id, Body::num_threads
// threads per block, the body's Shared struct in dynamic shared memory. See launch.hpp for
// what a body is; the same body also runs on the host through run_on_host.
//
//   launch<Body>(DeviceLauncher{stream}, grid, params)   the GPU twin of launch<Body>(HostLauncher{}, ...)
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "common/cuda/cuda_check.hpp"
#include "step03_tile_pointer/program_device.cuh"
#include "step04_weighted_sum/launch.hpp"

namespace fa2 {

template <class Body>
__global__ void __launch_bounds__(Body::num_threads) program_kernel(const typename Body::Params params, int first_x) {
  extern __shared__ __align__(128) std::byte shared_memory[];
  const DeviceProgram<Body::num_threads> prog(shared_memory, first_x, input_precision_of(params));
  Body{}(prog, params);
}

template <class Body>
constexpr std::size_t shared_bytes() {
  return sizeof(typename Body::Shared);
}

// Launches grid.x * grid.y * grid.z programs on `stream` (ids on axis 0 from grid.first_x). Host-side work only:
// shared-memory size, the opt-in for more than 48 KB, the launch and its error check.
template <KernelBody Body>
void launch_on_device(const Grid& grid, const typename Body::Params& params, cudaStream_t stream) {
  constexpr std::size_t smem = shared_bytes<Body>();
  if constexpr (smem > 48 * 1024) {
    static const bool opted_in = [] {
      FA2_CUDA_CHECK(cudaFuncSetAttribute(program_kernel<Body>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
      return true;
    }();
    (void)opted_in;
  }
  const dim3 blocks(static_cast<unsigned>(grid.x), static_cast<unsigned>(grid.y), static_cast<unsigned>(grid.z));
  program_kernel<Body><<<blocks, Body::num_threads, smem, stream>>>(params, grid.first_x);
  FA2_CUDA_CHECK_LAUNCH();
}

// The GPU launcher: one thread block per program, on `stream`.
struct DeviceLauncher {
  cudaStream_t stream = nullptr;
};

template <KernelBody Body>
void launch(DeviceLauncher launcher, const Grid& grid, const typename Body::Params& params) {
  launch_on_device<Body>(grid, params, launcher.stream);
}

}  // namespace fa2
