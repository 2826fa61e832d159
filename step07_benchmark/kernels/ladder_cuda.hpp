// GPU launchers of the ladder variants (see ladder.hpp), same order as ladder_variants().
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "step05_fa2_kernel/flash_fwd_cuda.hpp"

namespace fa2::ladder {

const std::vector<CudaLaunchFn>& ladder_cuda_launchers();

}  // namespace fa2::ladder
