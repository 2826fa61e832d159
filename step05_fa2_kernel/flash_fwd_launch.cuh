// The GPU launcher for dispatch_flash (flash_fwd_launch.hpp): one thread block per program,
// on the caller's stream.
#pragma once

#include <cuda_runtime.h>

#include "step04_weighted_sum/launch_device.cuh"
#include "step05_fa2_kernel/flash_fwd_launch.hpp"
#include "step05_fa2_kernel/tile_dot_device.cuh"

namespace fa2 {

struct DeviceLauncher {
  cudaStream_t stream;
  template <class Body>
  void operator()(const Grid& grid, const typename Body::Params& params) const {
    launch_on_device<Body>(grid, params, stream);
  }
};

}  // namespace fa2
