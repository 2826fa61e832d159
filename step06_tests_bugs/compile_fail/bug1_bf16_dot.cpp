// Must NOT compile (ctest: step06_bug1_bf16_does_not_compile): bug 1's kernel built for
// bfloat16 hands the dot a float32 P and a bfloat16 V, which tl.dot and our dot refuse.
#include "step05_fa2_kernel/flash_fwd_launch.hpp"
#include "step06_tests_bugs/kernels/flash_fwd_kernel_bug1.hpp"

namespace fa2 {
FA2_FLASH_KERNEL_FAMILY(Bug1Kernels, FlashFwdKernel)
}  // namespace fa2
using fa2::Bug1Kernels;

void build_bug1_for_bf16(const fa2::FlashFwdArgs& args) {
  fa2::dispatch_flash<Bug1Kernels, fa2::TileSizes<>, fa2::bf16>(args, fa2::HostLauncher{}, "bug 1, bf16");
}
