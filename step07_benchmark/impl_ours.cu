// Our kernels for step07_bench: step05's flash_fwd_cuda as it is, and its kernel body (this is
// the one file of step07 that includes flash_fwd_kernel.hpp) instantiated with larger tiles.
// Only bf16 and head dims 64 and 128 are instantiated: that is what the sweep runs, and each
// extra instantiation costs build time on the benchmark machine.
#include "step07_benchmark/impl_ours.hpp"

#include <string>

#include "common/check_arg.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step05_fa2_kernel/flash_fwd_kernel.hpp"
#include "step05_fa2_kernel/flash_fwd_launch.cuh"

namespace fa2::bench {
namespace {

template <int Q_TILE, int K_TILE, int NUM_WARPS>
void flash_fwd_tiles(const FlashFwdArgs& args, cudaStream_t stream) {
  validate(args);
  require_arg(args.dtype == DType::bfloat16, "dtype", "the tile variants are built for bfloat16 only");
  const index_t D = args.q_shape[2];
  require_arg(D == 64 || D == 128, "head_dim", got_allowed(D, "64 or 128 for the tile variants"));
  const auto params = make_flash_params<bf16>(args);
  // One program per (query tile, batch*head), as in step05's dispatch.
  const Grid grid{static_cast<int>(cdiv<index_t>(args.q_shape[1], Q_TILE)), static_cast<int>(args.q_shape[0]), 1};
  const DeviceLauncher launch{stream};
  const auto go = [&]<int HEAD_DIM, bool CAUSAL>() {
    launch.template operator()<FlashFwdKernel<FlashFwdConfig<bf16, HEAD_DIM, CAUSAL, Q_TILE, K_TILE, NUM_WARPS>>>(
        grid, params);
  };
  if (D == 64) {
    args.causal ? go.template operator()<64, true>() : go.template operator()<64, false>();
  } else {
    args.causal ? go.template operator()<128, true>() : go.template operator()<128, false>();
  }
}

std::string head_dim_64_or_128(const Problem& p) {
  return (p.D == 64 || p.D == 128) ? std::string() : "head dim " + std::to_string(p.D) + " (variants: 64, 128)";
}

std::string step05_supports(const Problem& p) {
  return (p.D == 16 || p.D == 32 || p.D == 64 || p.D == 128) ? std::string()
                                                              : "head dim " + std::to_string(p.D) + " (16, 32, 64, 128)";
}

}  // namespace

// Configurations whose 8 instantiations (head dim 64/128, causal or not) compile without
// register spills on sm_90 (checked with -Xptxas -v, CUDA 13.0); 64x64 with 4 warps and the
// 64x32 / 128x32 ones spill a few bytes, so they are left out.
void flash_fwd_tiles_32x32_w4(const FlashFwdArgs& args, cudaStream_t stream) { flash_fwd_tiles<32, 32, 4>(args, stream); }
void flash_fwd_tiles_64x64_w8(const FlashFwdArgs& args, cudaStream_t stream) { flash_fwd_tiles<64, 64, 8>(args, stream); }
void flash_fwd_tiles_128x64_w16(const FlashFwdArgs& args, cudaStream_t stream) {
  flash_fwd_tiles<128, 64, 16>(args, stream);
}

std::vector<Implementation> our_implementations() {
  std::vector<Implementation> out;
  out.push_back(flash_implementation("ours: step05 kernel, 16x16 tiles, 4 warps", kReferenceKey,
                                     &flash_fwd_cuda, "ours",
                                     step05_supports));
  out.push_back(flash_implementation("ours: 32x32 tiles, 4 warps", "ours32x32", &flash_fwd_tiles_32x32_w4, "ours",
                                     head_dim_64_or_128));
  out.push_back(flash_implementation("ours: 64x64 tiles, 8 warps", "ours64x64", &flash_fwd_tiles_64x64_w8, "ours",
                                     head_dim_64_or_128));
  out.push_back(flash_implementation("ours: 128x64 tiles, 16 warps", "ours128x64", &flash_fwd_tiles_128x64_w16, "ours",
                                     head_dim_64_or_128));
  return out;
}

}  // namespace fa2::bench
