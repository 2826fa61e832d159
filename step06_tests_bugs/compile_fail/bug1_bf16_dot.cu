// Must NOT compile (ctest: step06_bug1_bf16_device_does_not_compile): the same as
// bug1_bf16_dot.cpp, for the GPU build of the kernel.
#include "step05_fa2_kernel/flash_fwd_launch.cuh"
#include "step06_tests_bugs/kernels/flash_fwd_kernel_bug1.hpp"

namespace fa2 {
FA2_FLASH_KERNEL_FAMILY(Bug1Kernels, FlashFwdKernel)
}  // namespace fa2
using fa2::Bug1Kernels;

void build_bug1_for_bf16_on_gpu(const fa2::FlashFwdArgs& args) {
  fa2::dispatch_flash<Bug1Kernels, fa2::TileSizes<>, fa2::bf16>(args, fa2::DeviceLauncher{nullptr}, "bug 1, bf16");
}
