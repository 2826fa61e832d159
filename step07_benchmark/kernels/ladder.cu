// The ladder variants on the GPU: the same kernel bodies as ladder_host.cpp, launched by
// step05's DeviceLauncher.
#include "step05_fa2_kernel/flash_fwd_launch.cuh"
#include "step07_benchmark/kernels/ladder_cuda.hpp"
#include "step07_benchmark/kernels/ladder_families.hpp"

namespace fa2::ladder {
namespace {

template <Features F>
void run_cuda(const FlashFwdArgs& args, cudaStream_t stream) {
  dispatch_flash<Family<F>, Tiles, float, bf16>(args, DeviceLauncher{stream}, "the ladder kernel");
}

}  // namespace

const std::vector<CudaLaunchFn>& ladder_cuda_launchers() {
  static const std::vector<CudaLaunchFn> launchers = {&run_cuda<kV2>, &run_cuda<kV3>, &run_cuda<kV4>};
  return launchers;
}

}  // namespace fa2::ladder
