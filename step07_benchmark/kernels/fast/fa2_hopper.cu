// Host side of v6 (fa2_hopper.cuh): when it can run, its launch, and its configurations. CMake
// compiles this file for sm_90a alone when 90 is among the CUDA architectures and then defines
// FA2_HOPPER_SM90A; otherwise the launchers exist but refuse, naming the reason.
#include <cuda_runtime.h>

#include <array>
#include <stdexcept>
#include <string>

#include "common/cuda/cuda_check.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast_launch.cuh"
#include "step07_benchmark/kernels/fast/fa2_hopper.cuh"

namespace fa2::fast {

std::string hopper_unavailable() {
#ifndef FA2_HOPPER_SM90A
  return "v6: this build has no sm_90a code (configure with 90 in CMAKE_CUDA_ARCHITECTURES)";
#else
  // The compute capability of each device, asked once: the launchers call this on every launch.
  static std::array<int, 64> capability = [] {
    std::array<int, 64> c{};
    c.fill(-1);
    return c;
  }();
  int device = 0;
  FA2_CUDA_CHECK(cudaGetDevice(&device));
  if (device >= static_cast<int>(capability.size())) return "v6: device ordinals past 63 are not supported";
  int& cc = capability[static_cast<std::size_t>(device)];
  if (cc < 0) {
    int major = 0, minor = 0;
    FA2_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    FA2_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    cc = 10 * major + minor;
  }
  if (cc != 90) return "v6: wgmma needs an sm_90 GPU (Hopper); this one is sm_" + std::to_string(cc);
  return {};
#endif
}

std::string hopper_unsupported_reason(const FlashFwdArgs& a) {
  if (auto why = unsupported_reason(a); !why.empty()) return why;
  if (a.q_shape[2] != 64 && a.q_shape[2] != 128) return "head_dim: v6 takes 64 or 128";
  // The grid is (query tiles, batch) or, causal, (batch, query tiles): CUDA caps y at 65535.
  if (a.q_shape[0] > 65535) return "batch: v6 takes at most 65535 (batch x heads)";
  if (a.causal && cdiv<index_t>(a.q_shape[1], 128) > 65535) return "seq: causal v6 takes at most 65535 * 128 queries";
  return hopper_unavailable();
}

namespace {

#ifdef FA2_HOPPER_SM90A
template <class Cfg>
void launch_hopper(const FlashFwdArgs& a, cudaStream_t stream) {
  const FastParams p = make_fast_params(a, Cfg::BLOCK_M);
  static const bool opted_in = [] {
    FA2_CUDA_CHECK(cudaFuncSetAttribute(hopper_fwd_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(Cfg::smem_bytes)));
    return true;
  }();
  (void)opted_in;
  const auto tiles = static_cast<unsigned>(p.n_q_tiles), heads = static_cast<unsigned>(a.q_shape[0]);
  const dim3 grid = Cfg::CAUSAL ? dim3(heads, tiles) : dim3(tiles, heads);
  hopper_fwd_kernel<Cfg><<<grid, Cfg::NUM_THREADS, Cfg::smem_bytes, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();
}
#endif

// Checks the arguments, then launches the configuration for their head dim and causal flag.
template <HopperOptions OPT64, HopperOptions OPT128, int... Ds>
void launch_hopper_config(const FlashFwdArgs& a, cudaStream_t stream) {
  validate(a);
  if (const auto why = hopper_unsupported_reason(a); !why.empty()) throw std::invalid_argument(why);
#ifdef FA2_HOPPER_SM90A
  dispatch_flash(a, DTypes<bf16>{}, HeadDims<Ds...>{}, "this v6 configuration", [&](auto, auto head_dim, auto causal) {
    constexpr int D = decltype(head_dim)::value;
    launch_hopper<HopperConfig<D, decltype(causal)::value, D == 64 ? OPT64 : OPT128>>(a, stream);
  });
#else
  (void)stream;
#endif
}

// The configurations of the sweep (variants.cpp has one row per launcher below).
constexpr HopperOptions kLockstep{};
constexpr HopperOptions kOverlap3{.overlap = true, .stages = 3};
constexpr HopperOptions kOverlap4Bn64{.block_n = 64, .overlap = true, .stages = 4};
constexpr HopperOptions kOverlap4Bn64TwoBlocks{.block_n = 64, .overlap = true, .stages = 4, .min_blocks = 2};
constexpr HopperOptions kOverlap4Wg3{.warpgroups = 3, .overlap = true, .stages = 4};
constexpr HopperOptions kOverlap4Wg3Bn64{.warpgroups = 3, .block_n = 64, .overlap = true, .stages = 4};

}  // namespace

void v6_lockstep(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kLockstep, kLockstep, 64, 128>(a, s);
}
void v6_overlap(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kOverlap3, kOverlap3, 64, 128>(a, s);
}
void v6_overlap_bn64(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kOverlap4Bn64TwoBlocks, kOverlap4Bn64, 64, 128>(a, s);
}
void v6_overlap_wg3(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kOverlap4Wg3, kOverlap3, 64>(a, s);
}
void v6_overlap_wg3_bn64(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kOverlap4Wg3Bn64, kOverlap4Wg3Bn64, 64, 128>(a, s);
}

void flash_fwd_hopper(const FlashFwdArgs& a, cudaStream_t s) {
  // The configuration by head dim and by the amount of work, counted in query rows over all
  // (batch, head) pairs: large tiles need many rows to fill the 132 SMs in whole waves. From the
  // sweep of step07's README (H200, B x H = 32, so 2^15 rows is N = 1024):
  //   head dim 64   >= 2^18 rows: v6.4 (192-row blocks); >= 2^15 (causal: 2^16): v6.3 (64-key
  //                 tiles, two blocks per SM); fewer: v6.2
  //   head dim 128  >= 2^16 rows: v6.5 (192-row blocks, 64-key tiles); fewer: v6.2
  const index_t rows = a.q_shape[0] * a.q_shape[1];
  if (a.q_shape[2] == 128) {
    rows >= (index_t{1} << 16) ? v6_overlap_wg3_bn64(a, s) : v6_overlap(a, s);
  } else if (rows >= (index_t{1} << 18)) {
    v6_overlap_wg3(a, s);
  } else if (rows >= (index_t{1} << (a.causal ? 16 : 15))) {
    v6_overlap_bn64(a, s);
  } else {
    v6_overlap(a, s);
  }
}

}  // namespace fa2::fast
