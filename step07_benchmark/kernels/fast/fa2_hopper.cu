// Host side of v6 (fa2_hopper.cuh): when it can run, its launch, and its configurations. CMake
// compiles this file for sm_90a alone when 90 is among the CUDA architectures and then defines
// FA2_HOPPER_SM90A; otherwise the launchers exist but refuse, naming the reason.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
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
  int device = 0, major = 0, minor = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it for whoever asks next
    return std::string("v6: no CUDA device (") + cudaGetErrorString(e) + ")";
  }
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major != 9 || minor != 0) {
    return "v6: wgmma needs an sm_90 GPU (Hopper); this one is sm_" + std::to_string(10 * major + minor);
  }
  return {};
#endif
}

std::string hopper_unsupported_reason(const FlashFwdArgs& a) {
  if (auto why = unsupported_reason(a); !why.empty()) return why;
  if (a.q_shape[2] != 64 && a.q_shape[2] != 128) return "head_dim: v6 takes 64 or 128";
  // The grid is (query tiles, batch) or, causal, (batch, query tiles): CUDA caps y at 65535.
  if (a.q_shape[0] > 65535) return "batch: v6 takes at most 65535 (batch x heads)";
  if (a.causal && cdiv<index_t>(a.q_shape[1], 128) > 65535) return "seq: causal v6 takes at most 65535 * 128 queries";
  // The warp-specialised kernels number their (query tile, head) items with an int.
  if (a.q_shape[0] * cdiv<index_t>(a.q_shape[1], 64) >= (index_t{1} << 31)) {
    return "batch x seq: v6 takes fewer than 2^31 query tiles of 64 rows";
  }
  return hopper_unavailable();
}

namespace {

#ifdef FA2_HOPPER_SM90A
// cuTensorMapEncodeTiled, from the driver the runtime has loaded (no link to libcuda: a machine
// without a driver still runs every host program of the project).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    FA2_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
      throw std::runtime_error("v6: the CUDA driver does not offer cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// The TMA view of a (batch, N, D) bf16 tensor with a contiguous head dim: dims (D, N, batch),
// innermost first, byte strides for rows and batches; a box of 64 columns (the 128-byte swizzle's
// row) by box_rows rows, rows past N read as zeros.
CUtensorMap tile_map(const void* data, index_t batch, index_t N, index_t D, index_t row_stride, index_t batch_stride,
                     int box_rows) {
  constexpr index_t kBytes = 2;
  // With one batch element its stride is never used; give the map a well-formed one.
  const index_t batch_bytes = batch == 1 ? std::max<index_t>(N * row_stride, 8) * kBytes : batch_stride * kBytes;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(D), static_cast<cuuint64_t>(N), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_stride * kBytes), static_cast<cuuint64_t>(batch_bytes)};
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t steps[3] = {1, 1, 1};
  CUtensorMap map{};
  const CUresult r =
      tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(data), dims, strides, box,
                           steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("v6: cuTensorMapEncodeTiled failed, error " + std::to_string(r));
  return map;
}

// One configuration: the cp.async kernel, or the warp-specialised one with its tensor maps.
template <class Cfg>
void launch_hopper(const FlashFwdArgs& a, cudaStream_t stream) {
  const auto kernel = [] {
    if constexpr (Cfg::TMA) {
      return hopper_ws_fwd_kernel<Cfg>;
    } else {
      return hopper_fwd_kernel<Cfg>;
    }
  }();
  static const bool opted_in = [&] {
    FA2_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::smem_bytes)));
    return true;
  }();
  (void)opted_in;
  const FastParams p = make_fast_params(a, Cfg::BLOCK_M);
  const index_t B = a.q_shape[0], D = a.q_shape[2];
  const auto tiles = static_cast<unsigned>(p.n_q_tiles), heads = static_cast<unsigned>(B);
  if constexpr (Cfg::TMA) {
    // One block per work item (query tile, head), or, persistent, one per SM walking them.
    const int items = p.n_q_tiles * static_cast<int>(B);
    int blocks = items;
    if constexpr (Cfg::PERSISTENT) {
      int device = 0, sms = 0;
      FA2_CUDA_CHECK(cudaGetDevice(&device));
      FA2_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
      blocks = std::min(items, sms);
    }
    HopperMaps maps{tile_map(a.q, B, a.q_shape[1], D, a.q_strides[1], a.q_strides[0], Cfg::BLOCK_M),
                    tile_map(a.k, B, a.k_shape[1], D, a.k_strides[1], a.k_strides[0], Cfg::BLOCK_N),
                    tile_map(a.v, B, a.k_shape[1], D, a.v_strides[1], a.v_strides[0], Cfg::BLOCK_N),
                    {}};
    if constexpr (Cfg::STORE_TMA) maps.o = tile_map(a.o, B, a.q_shape[1], D, a.o_strides[1], a.o_strides[0], 64);
    kernel<<<static_cast<unsigned>(blocks), Cfg::BLOCK_THREADS, Cfg::smem_bytes, stream>>>(p, maps,
                                                                                           static_cast<int>(B));
  } else {
    const dim3 grid = Cfg::CAUSAL ? dim3(heads, tiles) : dim3(tiles, heads);
    kernel<<<grid, Cfg::NUM_THREADS, Cfg::smem_bytes, stream>>>(p);
  }
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
constexpr HopperOptions kTma4{.overlap = true, .stages = 4, .tma = true};
constexpr HopperOptions kTma3{.overlap = true, .stages = 3, .tma = true};
constexpr HopperOptions kPingpong4{.overlap = true, .stages = 4, .tma = true, .pingpong = true};
constexpr HopperOptions kPingpong3{.overlap = true, .stages = 3, .tma = true, .pingpong = true};
constexpr HopperOptions kTma4Bn64{.block_n = 64, .overlap = true, .stages = 4, .tma = true};
constexpr HopperOptions kTma4Wg3{.warpgroups = 3, .overlap = true, .stages = 4, .tma = true};
constexpr HopperOptions kTma4Wg3Bn64{.warpgroups = 3, .block_n = 64, .overlap = true, .stages = 4, .tma = true};
// The later steps, each as a change to a configuration above (`with` applies it to a copy).
constexpr HopperOptions with(HopperOptions o, auto change) {
  change(o);
  return o;
}
// v6.10: v6.9 with O stored by TMA. With O's tile beside them, 2 K/V stages of 128 keys fit at
// head dim 128.
constexpr HopperOptions kPingpongStore4 = with(kPingpong4, [](HopperOptions& o) { o.store_tma = true; });
constexpr HopperOptions kPingpongStore2 = with(kPingpongStore4, [](HopperOptions& o) { o.stages = 2; });
// v6.11: persistent; v6.13: skipping O's rescale.
constexpr HopperOptions kPingpongPersistent4 = with(kPingpongStore4, [](HopperOptions& o) { o.persistent = true; });
constexpr HopperOptions kPingpongPersistent2 = with(kPingpongStore2, [](HopperOptions& o) { o.persistent = true; });
constexpr HopperOptions kPingpongPersistentLazy4 =
    with(kPingpongPersistent4, [](HopperOptions& o) { o.lazy_rescale = true; });
constexpr HopperOptions kPingpongPersistentLazy2 =
    with(kPingpongPersistent2, [](HopperOptions& o) { o.lazy_rescale = true; });
// v6.14: v6.11 with 176-key tiles (FlashAttention-3's choice at head dim 128) and O from
// registers: its tile no longer fits beside two stages of 176 keys.
constexpr HopperOptions kPingpongPersistentBn176x4 = with(kPingpongPersistent4, [](HopperOptions& o) {
  o.block_n = 176;
  o.store_tma = false;
});
constexpr HopperOptions kPingpongPersistentBn176x2 =
    with(kPingpongPersistentBn176x4, [](HopperOptions& o) { o.stages = 2; });
// v6.15: v6.11 with an eighth of the exponentials on the FMA units (a quarter measured slower).
constexpr HopperOptions kPingpongPersistentFmaExp4 =
    with(kPingpongPersistent4, [](HopperOptions& o) { o.exp_fma_eighths = 1; });
constexpr HopperOptions kPingpongPersistentFmaExp2 =
    with(kPingpongPersistent2, [](HopperOptions& o) { o.exp_fma_eighths = 1; });
// v6.17: v6.11 handing Q back after each warp's last S (at 3 warpgroups' 160 registers the
// release's bookkeeping spills).
constexpr HopperOptions kPingpongPersistentEarlyQ4 =
    with(kPingpongPersistent4, [](HopperOptions& o) { o.early_q = true; });
constexpr HopperOptions kPingpongPersistentEarlyQ2 =
    with(kPingpongPersistent2, [](HopperOptions& o) { o.early_q = true; });
// v6.12: v6.8 persistent (with O from registers: the TMA store's registers spill at 3 warpgroups).
constexpr HopperOptions kWg3Persistent = with(kTma4Wg3, [](HopperOptions& o) { o.persistent = true; });
constexpr HopperOptions kWg3Bn64Persistent = with(kTma4Wg3Bn64, [](HopperOptions& o) { o.persistent = true; });
// v6.16: v6.12 with an eighth of the exponentials on the FMA units.
constexpr HopperOptions kWg3PersistentFmaExp = with(kWg3Persistent, [](HopperOptions& o) { o.exp_fma_eighths = 1; });
constexpr HopperOptions kWg3Bn64PersistentFmaExp =
    with(kWg3Bn64Persistent, [](HopperOptions& o) { o.exp_fma_eighths = 1; });

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

void v6_tma(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kTma4, kTma3, 64, 128>(a, s);
}
void v6_tma_bn64(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kTma4Bn64, kTma4Bn64, 64, 128>(a, s);
}
void v6_tma_wg3(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kTma4Wg3, kTma4Wg3Bn64, 64, 128>(a, s);
}

void v6_tma_pingpong(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kPingpong4, kPingpong3, 64, 128>(a, s);
}

void v6_store_tma(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kPingpongStore4, kPingpongStore2, 64, 128>(a, s);
}
void v6_persistent(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kPingpongPersistent4, kPingpongPersistent2, 64, 128>(a, s);
}
void v6_persistent_lazy(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kPingpongPersistentLazy4, kPingpongPersistentLazy2, 64, 128>(a, s);
}
void v6_persistent_bn176(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kPingpongPersistentBn176x4, kPingpongPersistentBn176x2, 64, 128>(a, s);
}
void v6_persistent_fma_exp(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kPingpongPersistentFmaExp4, kPingpongPersistentFmaExp2, 64, 128>(a, s);
}
void v6_persistent_wg3(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kWg3Persistent, kWg3Bn64Persistent, 64, 128>(a, s);
}
void v6_persistent_wg3_fma_exp(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kWg3PersistentFmaExp, kWg3Bn64PersistentFmaExp, 64, 128>(a, s);
}
void v6_persistent_early_q(const FlashFwdArgs& a, cudaStream_t s) {
  launch_hopper_config<kPingpongPersistentEarlyQ4, kPingpongPersistentEarlyQ2, 64, 128>(a, s);
}

void flash_fwd_hopper(const FlashFwdArgs& a, cudaStream_t s) {
  // The configuration by head dim, causal flag and amount of work, counted in query rows over all
  // (batch, head) pairs. From the sweep of step07's README (H200, B x H = 32: 2^17 rows is
  // N = 4096, 2^18 is N = 8192):
  //   head dim 64   < 2^18 rows: v6.17 (persistent ping-pong, Q handed back early); from 2^18:
  //                 v6.12 (persistent, 3 warpgroups) without a mask, v6.8 (3 warpgroups) with the
  //                 causal one
  //   head dim 128  v6.17; without a mask from 2^17 rows, v6.14 (v6.11 with 176-key tiles)
  const index_t rows = a.q_shape[0] * a.q_shape[1];
  if (a.q_shape[2] == 64 && rows >= (index_t{1} << 18)) {
    a.causal ? v6_tma_wg3(a, s) : v6_persistent_wg3(a, s);
  } else if (a.q_shape[2] == 128 && !a.causal && rows >= (index_t{1} << 17)) {
    v6_persistent_bn176(a, s);
  } else {
    v6_persistent_early_q(a, s);
  }
}

}  // namespace fa2::fast
