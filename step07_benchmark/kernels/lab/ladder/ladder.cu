// The ladder's variants on the GPU: the same kernel bodies as ladder_host.cpp, one thread block
// per program.
#include "step04_weighted_sum/launch_device.cuh"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step07_benchmark/kernels/lab/ladder/ladder.hpp"
#include "step07_benchmark/kernels/lab/ladder/ladder_kernel.hpp"

namespace fa2::ladder {

using Tiles = TileSizes<kQTile, kKTile, kWarps>;

void v2_cuda(const FlashFwdArgs& args, cudaStream_t stream) {
  launch_flash<V2Kernel, Tiles>(args, DeviceLauncher{stream}, DTypes<float, bf16>{}, AllHeadDims{}, "ladder v2");
}
void v3_cuda(const FlashFwdArgs& args, cudaStream_t stream) {
  launch_flash<V3Kernel, Tiles>(args, DeviceLauncher{stream}, DTypes<float, bf16>{}, AllHeadDims{}, "ladder v3");
}
void v4_cuda(const FlashFwdArgs& args, cudaStream_t stream) {
  launch_flash<V4Kernel, Tiles>(args, DeviceLauncher{stream}, DTypes<float, bf16>{}, AllHeadDims{}, "ladder v4");
}

}  // namespace fa2::ladder
