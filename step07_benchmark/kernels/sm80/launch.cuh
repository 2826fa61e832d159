// Host side of v5's kernels (sm80/forward.cuh, and the backward's sm80/backward.cuh): their
// parameters from a plan's arguments, the launch of one configuration, and the shared-memory
// opt-in once per kernel and device. Included by the generated translation units
// (instances/sm80.cuh) and by v6's launch (sm90/launch.cuh).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/cuda/cuda_check.hpp"
#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/launch_params.cuh"
#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/sm80/backward.cuh"
#include "step07_benchmark/kernels/sm80/forward.cuh"

namespace fa2::flash {

// One configuration of v5's forward on the plan's arguments (checked when it was made).
template <class Cfg>
void launch_fast_config(const ForwardPlan& plan, cudaStream_t stream) {
  const FastParams p = make_fast_params(plan.args, Cfg::BLOCK_M);
  const int blocks_x = Cfg::CAUSAL_PAIRS ? (p.n_q_tiles + 1) / 2 : p.n_q_tiles;
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(plan.args.q_shape[0]));
  // The configuration as asked, or its twin compiled for a sliding window.
  const auto launch = [&]<class C>() {
    static std::atomic<std::uint64_t> opted_in{0};
    opt_in_shared_memory(fast_fwd_kernel<C>, C::smem_bytes, current_device(), opted_in, plan.kernel);
    fast_fwd_kernel<C><<<grid, C::NUM_THREADS, C::smem_bytes, stream>>>(p);
    FA2_CUDA_CHECK_LAUNCH();
  };
  if (p.windowed) {
    launch.template operator()<typename Cfg::Windowed>();
  } else {
    launch.template operator()<Cfg>();
  }
}

// One configuration of v5's backward: its three launches.
template <class Cfg>
void launch_fast_bwd_config(const BackwardPlan& plan, cudaStream_t stream) {
  const FlashBwdArgs& a = plan.args;
  // The key-tile kernel's grid is (batch of K, key tiles): the key tile is the slow index, so the
  // heaviest causal blocks of every head start first. CUDA caps a grid's y dimension at 65535.
  const index_t key_blocks = cdiv<index_t>(a.k_shape[1], Cfg::BLOCK_N);
  if (key_blocks > 65535) {
    throw std::invalid_argument("K.shape: N_k = " + std::to_string(a.k_shape[1]) +
                                " needs more than 65535 key tiles of " + std::to_string(Cfg::BLOCK_N) +
                                " (the launch grid's y dimension); the fast backward takes N_k up to " +
                                std::to_string(65535 * Cfg::BLOCK_N));
  }
  const FastBwdParams p = make_fast_bwd_params(a);
  const auto batch = static_cast<unsigned>(a.q_shape[0]);
  // The row phases: one thread per 16-byte chunk of a query row.
  const auto row_blocks = static_cast<unsigned>(cdiv<index_t>(a.q_shape[1] * Cfg::CHUNKS, 256));
  fast_bwd_preprocess<Cfg::D, Cfg::FLOAT16><<<dim3(row_blocks, batch), 256, 0, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();

  // The configuration as asked, or its twin compiled for deterministic dQ, a window or both.
  const auto key_tiles = [&]<class C>() {
    static std::atomic<std::uint64_t> opted_in{0};
    opt_in_shared_memory(fast_bwd_kernel<C>, C::smem_bytes, current_device(), opted_in, plan.kernel);
    const dim3 grid(static_cast<unsigned>(a.k_shape[0]), static_cast<unsigned>(key_blocks));
    fast_bwd_kernel<C><<<grid, C::NUM_THREADS, C::smem_bytes, stream>>>(p);
    FA2_CUDA_CHECK_LAUNCH();
  };
  if (a.window.bounded()) {
    if (a.deterministic) {
      key_tiles.template operator()<typename Cfg::Windowed::Deterministic>();
    } else {
      key_tiles.template operator()<typename Cfg::Windowed>();
    }
  } else if (a.deterministic) {
    key_tiles.template operator()<typename Cfg::Deterministic>();
  } else {
    key_tiles.template operator()<Cfg>();
  }

  fast_bwd_convert_dq<Cfg::D, Cfg::FLOAT16><<<dim3(row_blocks, batch), 256, 0, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();
}

// v5's forward and backward as the plans call them.
template <class Cfg>
void launch_fast(const ForwardPlan& plan, cudaStream_t stream) {
  with_element_twin<Cfg>(plan.args.dtype, [&]<class C>() { launch_fast_config<C>(plan, stream); });
}
template <class Cfg>
void launch_fast_bwd(const BackwardPlan& plan, cudaStream_t stream) {
  with_element_twin<Cfg>(plan.args.dtype, [&]<class C>() { launch_fast_bwd_config<C>(plan, stream); });
}

}  // namespace fa2::flash
