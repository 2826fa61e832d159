// Host side of v5's kernels (fa2_fast.cuh, and the backward's fa2_fast_bwd.cuh): their
// parameters from a plan's arguments, the launch of one configuration, and the shared-memory
// opt-in once per kernel and device. Included by the generated translation units
// (fa2_fast_instances.cuh) and by v6's launch (fa2_hopper_launch.cuh).
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
#include "step07_benchmark/kernels/fast/fa2_fast.cuh"
#include "step07_benchmark/kernels/fast/fa2_fast_bwd.cuh"
#include "step07_benchmark/kernels/fast/launch_plan.hpp"

namespace fa2::fast {

// The kernel's arguments from FlashFwdArgs, for query tiles of block_m rows (v5 and v6 share them).
inline FastParams make_fast_params(const FlashFwdArgs& a, int block_m) {
  FastParams p{};
  p.Q = static_cast<const elem16*>(a.q);
  p.K = static_cast<const elem16*>(a.k);
  p.V = static_cast<const elem16*>(a.v);
  p.O = static_cast<elem16*>(a.o);
  p.L = a.l;
  p.stride_qb = a.q_strides[0], p.stride_qq = a.q_strides[1];
  p.stride_kb = a.k_strides[0], p.stride_kk = a.k_strides[1];
  p.stride_vb = a.v_strides[0], p.stride_vk = a.v_strides[1];
  p.stride_ob = a.o_strides[0], p.stride_oq = a.o_strides[1];
  p.stride_lb = a.l_strides[0], p.stride_lq = a.l_strides[1];
  p.N_QUERIES = static_cast<int>(a.q_shape[1]);
  p.N_KEYS = static_cast<int>(a.k_shape[1]);
  p.kv_group = static_cast<int>(kv_group(a));
  p.windowed = a.window.bounded();
  p.window_left = static_cast<int>(std::min(kernel_window(a).left, a.q_shape[1]));
  p.window_right = static_cast<int>(std::min(kernel_window(a).right, a.k_shape[1]));
  p.n_q_tiles = static_cast<int>(cdiv<index_t>(a.q_shape[1], block_m));
  p.scale_log2 = softmax_scale(a) * 1.4426950408889634f;
  return p;
}

// The backward's arguments from FlashBwdArgs.
inline FastBwdParams make_fast_bwd_params(const FlashBwdArgs& a) {
  FastBwdParams p{};
  p.Q = static_cast<const elem16*>(a.q);
  p.K = static_cast<const elem16*>(a.k);
  p.V = static_cast<const elem16*>(a.v);
  p.O = static_cast<const elem16*>(a.o);
  p.dO = static_cast<const elem16*>(a.do_);
  p.L = a.l;
  p.D_rows = a.d_rows;
  p.dQ_accum = a.dq_accum;
  p.dQ = static_cast<elem16*>(a.dq);
  p.dK = static_cast<elem16*>(a.dk);
  p.dV = static_cast<elem16*>(a.dv);
  p.stride_qb = a.q_strides[0], p.stride_qq = a.q_strides[1];
  p.stride_kb = a.k_strides[0], p.stride_kk = a.k_strides[1];
  p.stride_vb = a.v_strides[0], p.stride_vk = a.v_strides[1];
  p.stride_ob = a.o_strides[0], p.stride_oq = a.o_strides[1];
  p.stride_dob = a.do_strides[0], p.stride_doq = a.do_strides[1];
  p.stride_lb = a.l_strides[0], p.stride_lq = a.l_strides[1];
  p.stride_Db = a.d_rows_strides[0], p.stride_Dq = a.d_rows_strides[1];
  p.stride_accb = a.dq_accum_strides[0], p.stride_accq = a.dq_accum_strides[1];
  p.stride_dqb = a.dq_strides[0], p.stride_dqq = a.dq_strides[1];
  p.stride_dkb = a.dk_strides[0], p.stride_dkk = a.dk_strides[1];
  p.stride_dvb = a.dv_strides[0], p.stride_dvk = a.dv_strides[1];
  p.N_QUERIES = static_cast<int>(a.q_shape[1]);
  p.N_KEYS = static_cast<int>(a.k_shape[1]);
  p.kv_group = static_cast<int>(kv_group(forward_args(a)));
  p.heads_per_block = p.kv_group, p.group_splits = 1;  // v6b's launch may spread the group
  p.windowed = a.window.bounded();
  p.window_left = static_cast<int>(std::min(kernel_window(forward_args(a)).left, a.q_shape[1]));
  p.window_right = static_cast<int>(std::min(kernel_window(forward_args(a)).right, a.k_shape[1]));
  p.scale = softmax_scale(forward_args(a));
  p.scale_log2 = p.scale * kLog2e;
  p.deterministic = a.deterministic;
  p.dq_semaphores = a.dq_semaphores;
  p.stride_semb = cdiv<index_t>(a.q_shape[1], 32);
  return p;
}

// Raises `kernel`'s dynamic shared memory limit to `bytes` on `device`. The limit belongs to the
// device's context, so it is set once per kernel and device: `opted_in` is the kernel's set of
// devices done (ordinals past 63 are set at every launch).
template <class Kernel>
void opt_in_shared_memory(Kernel* kernel, std::size_t bytes, const DeviceInfo& device,
                          std::atomic<std::uint64_t>& opted_in, std::string_view name) {
  const std::uint64_t bit = device.ordinal < 64 ? std::uint64_t{1} << device.ordinal : 0;
  if (bit != 0 && (opted_in.load(std::memory_order_acquire) & bit) != 0) return;
  if (bytes > static_cast<std::size_t>(device.smem_optin_bytes)) {
    throw std::runtime_error(std::string(name) + " needs " + std::to_string(bytes) +
                             " bytes of shared memory per block; this GPU offers " +
                             std::to_string(device.smem_optin_bytes));
  }
  FA2_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  opted_in.fetch_or(bit, std::memory_order_release);
}

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

// Runs launch.template operator()<C>() with C the configuration compiled for `dtype`: Cfg (bf16)
// or its fp16 twin, Cfg::Float16 (which has its own window and deterministic twins). v5's and
// v6's launches below and in fa2_hopper_launch.cuh all choose through it.
template <class Cfg, class Launch>
void with_element_twin(DType dtype, Launch&& launch) {
  if (dtype == DType::float16) {
    launch.template operator()<typename Cfg::Float16>();
  } else {
    launch.template operator()<Cfg>();
  }
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

}  // namespace fa2::fast
