// Variant 1: step05's kernel body (this is the one file of step07 that includes
// flash_fwd_kernel.hpp) instantiated with larger tiles. Only bf16 and head dims 64 and 128 are
// built: that is what the sweep runs, and each extra instantiation costs build time.
#include "step04_weighted_sum/launch_device.cuh"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step05_fa2_kernel/flash_fwd_kernel.hpp"
#include "step07_benchmark/kernels/lab/step05_tiles.hpp"

namespace fa2::tiles {

// Configurations whose 8 instantiations (head dim 64/128, causal or not) compile without
// register spills on sm_90 (checked with -Xptxas -v, CUDA 13.0); 64x64 with 4 warps and the
// 64x32 / 128x32 ones spill a few bytes, so they are left out.
template <class Tiles>
void launch_tiles(const FlashFwdArgs& args, cudaStream_t stream, const char* kernel) {
  launch_flash<step05::FlashFwdKernel, Tiles>(args, DeviceLauncher{stream}, DTypes<bf16>{}, HeadDims<64, 128>{},
                                              kernel);
}

void step05_32x32_w4(const FlashFwdArgs& args, cudaStream_t stream) {
  launch_tiles<TileSizes<32, 32, 4>>(args, stream, "the step05 kernel at 32 x 32 tiles");
}
void step05_64x64_w8(const FlashFwdArgs& args, cudaStream_t stream) {
  launch_tiles<TileSizes<64, 64, 8>>(args, stream, "the step05 kernel at 64 x 64 tiles");
}
void step05_128x64_w16(const FlashFwdArgs& args, cudaStream_t stream) {
  launch_tiles<TileSizes<128, 64, 16>>(args, stream, "the step05 kernel at 128 x 64 tiles");
}

}  // namespace fa2::tiles
