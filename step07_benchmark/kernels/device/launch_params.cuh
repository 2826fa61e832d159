// Host side that every kernel's launch shares (sm80/launch.cuh, sm90/launch.cuh): the kernels'
// parameters from a plan's arguments, the shared-memory opt-in once per kernel and device, and the
// choice of a configuration's bf16 or fp16 twin.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/cuda/cuda_check.hpp"
#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/backward_params.cuh"
#include "step07_benchmark/kernels/device/forward_params.cuh"
#include "step07_benchmark/kernels/product/plan.hpp"

namespace fa2::flash {

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
  p.window_left = static_cast<int>(std::min(kernel_window(a.window).left, a.q_shape[1]));
  p.window_right = static_cast<int>(std::min(kernel_window(a.window).right, a.k_shape[1]));
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
  p.kv_group = static_cast<int>(kv_group(a));
  p.heads_per_block = p.kv_group, p.group_splits = 1;  // v6b's launch may spread the group
  p.windowed = a.window.bounded();
  p.window_left = static_cast<int>(std::min(kernel_window(a.window).left, a.q_shape[1]));
  p.window_right = static_cast<int>(std::min(kernel_window(a.window).right, a.k_shape[1]));
  p.scale = softmax_scale(a);
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

// Runs launch.template operator()<C>() with C the configuration compiled for `dtype`: Cfg (bf16)
// or its fp16 twin, Cfg::Float16 (which has its own window and deterministic twins). v5's and
// v6's launches below and in sm90/launch.cuh all choose through it.
template <class Cfg, class Launch>
void with_element_twin(DType dtype, Launch&& launch) {
  if (dtype == DType::float16) {
    launch.template operator()<typename Cfg::Float16>();
  } else {
    launch.template operator()<Cfg>();
  }
}

}  // namespace fa2::flash
