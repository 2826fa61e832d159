// Host side of the fast kernel: FastParams from FlashFwdArgs, the launch, and the choice of
// instantiation (head dim, causal flag). Included by the fa2_fast*.cu files.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/cuda/cuda_check.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast.cuh"
#include "step07_benchmark/kernels/fast/fa2_fast.hpp"

namespace fa2::fast {

// The kernel's arguments from FlashFwdArgs, for query tiles of block_m rows (v5 and v6 share them).
inline FastParams make_fast_params(const FlashFwdArgs& a, int block_m) {
  FastParams p{};
  p.Q = static_cast<const __nv_bfloat16*>(a.q);
  p.K = static_cast<const __nv_bfloat16*>(a.k);
  p.V = static_cast<const __nv_bfloat16*>(a.v);
  p.O = static_cast<__nv_bfloat16*>(a.o);
  p.L = a.l;
  p.stride_qb = a.q_strides[0], p.stride_qq = a.q_strides[1];
  p.stride_kb = a.k_strides[0], p.stride_kk = a.k_strides[1];
  p.stride_vb = a.v_strides[0], p.stride_vk = a.v_strides[1];
  p.stride_ob = a.o_strides[0], p.stride_oq = a.o_strides[1];
  p.stride_lb = a.l_strides[0], p.stride_lq = a.l_strides[1];
  p.N_QUERIES = static_cast<int>(a.q_shape[1]);
  p.N_KEYS = static_cast<int>(a.k_shape[1]);
  p.n_q_tiles = static_cast<int>(cdiv<index_t>(a.q_shape[1], block_m));
  p.scale_log2 = softmax_scale(a) * 1.4426950408889634f;
  return p;
}

template <class Cfg>
void launch_fast(const FlashFwdArgs& a, cudaStream_t stream) {
  const FastParams p = make_fast_params(a, Cfg::BLOCK_M);
  static const bool opted_in = [] {
    FA2_CUDA_CHECK(cudaFuncSetAttribute(fast_fwd_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(Cfg::smem_bytes)));
    return true;
  }();
  (void)opted_in;
  const int blocks_x = Cfg::CAUSAL_PAIRS ? (p.n_q_tiles + 1) / 2 : p.n_q_tiles;
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(a.q_shape[0]));
  fast_fwd_kernel<Cfg><<<grid, Cfg::NUM_THREADS, Cfg::smem_bytes, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();
}

// Checks the arguments, then launches the configuration's instantiation for their head dim
// (one of Ds) and causal flag, through the repository's one dispatcher (flash_fwd_dispatch.hpp).
template <int WM, int NW, int BN, FastOptions OPT, int... Ds>
void launch_config(const FlashFwdArgs& a, cudaStream_t stream) {
  validate(a);
  if (const auto why = unsupported_reason(a); !why.empty()) throw std::invalid_argument(why);
  dispatch_flash(
      a, DTypes<bf16>{}, HeadDims<Ds...>{}, "this fast configuration", [&](auto, auto head_dim, auto causal) {
        launch_fast<FastConfig<decltype(head_dim)::value, WM, NW, BN, decltype(causal)::value, OPT>>(a, stream);
      });
}

// The options of each step of the ablation (see fa2_fast.cu for the table).
inline constexpr FastOptions kNoSwizzleOneStage{.swizzle = false, .stages = 1, .split_kv = false};
inline constexpr FastOptions kOneStage{.stages = 1, .split_kv = false};
inline constexpr FastOptions kJointWait{.split_kv = false};
inline constexpr FastOptions kSplitWait{};
inline constexpr FastOptions kOViaSmem{.o_via_smem = true};
inline constexpr FastOptions kPairs{.causal_pairs = true};
inline constexpr FastOptions kQInSmem{.q_in_regs = false};
inline constexpr FastOptions kOPairs{.o_via_smem = true, .causal_pairs = true};
inline constexpr FastOptions kAll{.q_in_regs = false, .o_via_smem = true, .causal_pairs = true};
inline constexpr FastOptions kOPairsOverlap{.o_via_smem = true, .causal_pairs = true, .overlap = true};
inline constexpr FastOptions kAllOverlap{.q_in_regs = false, .o_via_smem = true, .causal_pairs = true, .overlap = true};

}  // namespace fa2::fast
