// The ladder variants on the host path (Triton's interpreter mode), for the CI tests.
#include "step07_benchmark/kernels/ladder_families.hpp"

namespace fa2::ladder {
namespace {

template <Features F>
void run_host(const FlashFwdArgs& args) {
  dispatch_flash<Family<F>, Tiles, float, bf16>(args, HostLauncher{}, "the ladder kernel");
}

}  // namespace

const std::vector<LadderVariant>& ladder_variants() {
  static const std::vector<LadderVariant> variants = {
      {"v2 causal skip", "v2", "the key loop stops at the diagonal", &run_host<kV2>},
      {"v3 exp2", "v3", "v2 + scale * log2(e) folded into the scores, 2^x instead of e^x", &run_host<kV3>},
      {"v4 masks where needed", "v4", "v3 + the mask only on the padded last tile and the diagonal tiles",
       &run_host<kV4>},
  };
  return variants;
}

}  // namespace fa2::ladder
