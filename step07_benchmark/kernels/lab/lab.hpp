// The lab (library fa2::flash_attention_lab, built with FA2_BUILD_ABLATIONS for step07_bench and
// its tests): a launcher for every row of v5, v5b, v6 and v6b, the lab's own (lab/variants.def:
// the ablations that explain the product's tuned choices) and the product's (product/kernels.def).
// Each checks its arguments once into a plan, as the product's entries do, and runs the row's kernel.
//   fa2::lab::forward_launcher("v5.4")(args, stream);
#pragma once

#include <string_view>

#include "step05_fa2_kernel/flash_bwd.hpp"  // CudaBwdLaunchFn
#include "step05_fa2_kernel/flash_fwd.hpp"  // CudaLaunchFn

namespace fa2::lab {

// The launcher of the v5 or v6 row with this key (flash_fwd_cuda's signature); null when none has it.
CudaLaunchFn forward_launcher(std::string_view key);
// The launcher of the v5b or v6b row with this key (flash_bwd_cuda's signature); null when none has it.
CudaBwdLaunchFn backward_launcher(std::string_view key);

}  // namespace fa2::lab
