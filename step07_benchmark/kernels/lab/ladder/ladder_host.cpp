// The ladder's variants on the host path (Triton's interpreter mode), for the CI tests.
#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step07_benchmark/kernels/lab/ladder/ladder.hpp"
#include "step07_benchmark/kernels/lab/ladder/ladder_kernel.hpp"

namespace fa2::ladder {

using Tiles = TileSizes<kQTile, kKTile, kWarps>;

void v2_host(const FlashFwdArgs& args) {
  launch_flash<V2Kernel, Tiles>(args, HostLauncher{}, DTypes<float, bf16>{}, AllHeadDims{}, "ladder v2");
}
void v3_host(const FlashFwdArgs& args) {
  launch_flash<V3Kernel, Tiles>(args, HostLauncher{}, DTypes<float, bf16>{}, AllHeadDims{}, "ladder v3");
}
void v4_host(const FlashFwdArgs& args) {
  launch_flash<V4Kernel, Tiles>(args, HostLauncher{}, DTypes<float, bf16>{}, AllHeadDims{}, "ladder v4");
}

}  // namespace fa2::ladder
