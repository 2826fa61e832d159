// Variants 2 to 4 of the benchmark's ladder (ladder_kernel.hpp), each launchable on the host
// (the tests in CI) and on the GPU, with the signatures of step05's flash_fwd_host/_cuda.
#pragma once

#include <string>
#include <vector>

#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::ladder {

// The tile configuration the ladder climbs from: variant 1's choice (see step07's README).
inline constexpr int kQTile = 64, kKTile = 64, kWarps = 8;

struct LadderVariant {
  std::string name;         // "v2 causal skip", ...
  std::string key;          // "v2", ...
  std::string description;  // the one idea it adds
  HostLaunchFn host;
};
// v2 (causal tile skipping), v3 (+ exp2), v4 (+ masks only where needed), in order.
const std::vector<LadderVariant>& ladder_variants();

}  // namespace fa2::ladder
