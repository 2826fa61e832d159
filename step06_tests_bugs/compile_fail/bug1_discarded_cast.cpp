// Must NOT compile with -Werror=unused-result (ctest: step06_bug1_discarded_cast_is_flagged):
// bug 1's float32 kernel is arithmetically fine, but each cast whose result is thrown away
// trips [[nodiscard]], and the test turns that warning into an error.
#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"

#define FA2_KERNEL_NAMESPACE bug1
#include "step06_tests_bugs/kernels/flash_fwd_kernel_bug1.hpp"

void build_bug1_for_float32(const fa2::FlashFwdArgs& args) {
  fa2::launch_flash<fa2::bug1::FlashFwdKernel>(args, fa2::HostLauncher{}, fa2::DTypes<float>{}, fa2::AllHeadDims{},
                                               "bug 1, float32");
}
