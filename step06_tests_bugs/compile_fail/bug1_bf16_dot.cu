// Must NOT compile (ctest: step06_bug1_bf16_device_does_not_compile): the same as
// bug1_bf16_dot.cpp, for the GPU build of the kernel.
#include "step04_weighted_sum/launch_device.cuh"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"

#define FA2_KERNEL_NAMESPACE bug1
#include "step06_tests_bugs/kernels/flash_fwd_kernel_bug1.hpp"

void build_bug1_for_bf16_on_gpu(const fa2::FlashFwdArgs& args) {
  fa2::launch_flash<fa2::bug1::FlashFwdKernel>(args, fa2::DeviceLauncher{}, fa2::DTypes<fa2::bf16>{},
                                               fa2::AllHeadDims{}, "bug 1, bf16");
}
