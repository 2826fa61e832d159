// The ladder's feature sets, one kernel family each (types in an anonymous namespace, so
// every launcher file gets its own instantiations; see step05's flash_fwd_launch.hpp).
#pragma once

#include "step05_fa2_kernel/flash_fwd_launch.hpp"
#include "step07_benchmark/kernels/ladder.hpp"
#include "step07_benchmark/kernels/ladder_kernel.hpp"

namespace fa2::ladder {
namespace {

template <Features F>
struct Family {
  template <class Cfg>
  using type = LadderKernel<Cfg, F>;
};

constexpr Features kV2{.causal_skip = true};
constexpr Features kV3{.causal_skip = true, .exp2 = true};
constexpr Features kV4{.causal_skip = true, .exp2 = true, .mask_last_only = true};

using Tiles = TileSizes<kQTile, kKTile, kWarps>;

}  // namespace
}  // namespace fa2::ladder
