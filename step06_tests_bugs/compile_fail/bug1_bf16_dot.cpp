// Must NOT compile (ctest: step06_bug1_bf16_does_not_compile): bug 1's kernel built for
// bfloat16 hands the dot a float32 P and a bfloat16 V, which tl.dot and our dot refuse.
#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"

#define FA2_KERNEL_NAMESPACE bug1
#include "step06_tests_bugs/kernels/flash_fwd_kernel_bug1.hpp"

void build_bug1_for_bf16(const fa2::FlashFwdArgs& args) {
  fa2::launch_flash<fa2::bug1::FlashFwdKernel>(args, fa2::HostLauncher{}, fa2::DTypes<fa2::bf16>{}, fa2::AllHeadDims{},
                                               "bug 1, bf16");
}
