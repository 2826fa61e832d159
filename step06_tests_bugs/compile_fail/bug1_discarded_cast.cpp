// Must NOT compile under the project's warning flags (ctest:
// step06_bug1_discarded_cast_is_flagged): bug 1's float32 kernel is arithmetically fine, but
// each cast whose result is thrown away trips [[nodiscard]], and warnings are errors here.
#include "step05_fa2_kernel/flash_fwd_launch.hpp"
#include "step06_tests_bugs/kernels/flash_fwd_kernel_bug1.hpp"

namespace fa2 {
FA2_FLASH_KERNEL_FAMILY(Bug1Kernels, FlashFwdKernel)
}  // namespace fa2
using fa2::Bug1Kernels;

void build_bug1_for_float32(const fa2::FlashFwdArgs& args) {
  fa2::dispatch_flash<Bug1Kernels, fa2::TileSizes<>, float>(args, fa2::HostLauncher{}, "bug 1, float32");
}
