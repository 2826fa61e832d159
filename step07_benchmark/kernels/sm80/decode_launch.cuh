// Host side of the decoding kernel (sm80/decode.cuh): its parameters from a plan, the number of
// parts a configuration cuts the keys into, and its two launches. Included by the product's
// decode.cu and by step07_decode_bench, which times other configurations.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "common/cuda/cuda_check.hpp"
#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/launch_params.cuh"
#include "step07_benchmark/kernels/device/split_kv.hpp"
#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/sm80/decode.cuh"

namespace fa2::flash {

// The least keys of a part: below this a part's fixed costs (Q, the warps' merge, its row of the
// parts) outweigh its keys.
inline constexpr index_t kMinKeysPerPart = 256;

// The configuration's shared memory, opted in once per device.
template <class Cfg>
void opt_in_decode(const DeviceInfo& device) {
  static std::atomic<std::uint64_t> opted_in{0};
  opt_in_shared_memory(decode_kernel<Cfg>, Cfg::smem_bytes, device, opted_in, "decode");
}

// args.num_splits, or split_kv_count's choice for this configuration's resident blocks per SM, at
// most one part per kMinKeysPerPart keys of the longest cache.
template <class Cfg>
int decode_splits(const FlashVarlenArgs& args, const DeviceInfo& device) {
  if (args.num_splits > 0) return args.num_splits;
  opt_in_decode<Cfg>(device);
  // Resident blocks per SM, asked of the runtime once per device (a decoding loop plans every step).
  static std::atomic<int> asked[64] = {};
  int resident = device.ordinal < 64 ? asked[device.ordinal].load(std::memory_order_relaxed) : 0;
  if (resident == 0) {
    FA2_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, decode_kernel<Cfg>, Cfg::NUM_THREADS,
                                                                 Cfg::smem_bytes));
    resident = std::max(resident, 1);
    if (device.ordinal < 64) asked[device.ordinal].store(resident, std::memory_order_relaxed);
  }
  const index_t group = args.q_shape[1] / args.k_shape[1];
  const long long items =
      args.batch * args.k_shape[1] * cdiv<index_t>(group * std::max<index_t>(args.max_q, 1), Cfg::BLOCK_M);
  const int key_parts = static_cast<int>(std::min<index_t>(cdiv<index_t>(args.max_k, kMinKeysPerPart), 1 << 20));
  return split_kv_count(items, key_parts, device.sm_count * resident, 1);
}

// The parts' workspace, in floats: (splits, T_q, H, D) partial O and (splits, H, T_q) partial L
// (FlashVarlenArgs::partial); none for one part.
inline index_t decode_partial_floats(const FlashVarlenArgs& args, int splits) {
  return splits > 1 ? splits * args.q_shape[0] * args.q_shape[1] * (args.q_shape[2] + 1) : 0;
}

template <class Cfg>
DecodeParams make_decode_params(const VarlenPlan& plan) {
  const FlashVarlenArgs& a = plan.args;
  DecodeParams p{};
  p.Q = static_cast<const elem16*>(a.q);
  p.K = static_cast<const elem16*>(a.k);
  p.V = static_cast<const elem16*>(a.v);
  p.O = static_cast<elem16*>(a.o);
  p.L = a.l;
  p.O_part = a.partial;
  p.L_part = a.partial == nullptr ? nullptr : a.partial + plan.splits * a.q_shape[0] * a.q_shape[1] * a.q_shape[2];
  p.cu_seq_q = a.cu_seq_q;
  p.cu_seq_k = a.page_size > 0 ? nullptr : a.cu_seq_k;
  p.seqused_k = a.seqused_k;
  p.block_table = a.block_table;
  p.stride_qt = a.q_strides[0], p.stride_qh = a.q_strides[1];
  p.stride_kt = a.k_strides[0], p.stride_kh = a.k_strides[1];
  p.stride_vt = a.v_strides[0], p.stride_vh = a.v_strides[1];
  p.stride_ot = a.o_strides[0], p.stride_oh = a.o_strides[1];
  p.stride_lh = a.l_strides[0], p.stride_lt = a.l_strides[1];
  p.block_table_stride = a.block_table_stride;
  p.page_size = static_cast<int>(a.page_size);
  p.batch = static_cast<int>(a.batch);
  p.heads = static_cast<int>(a.q_shape[1]);
  p.kv_heads = static_cast<int>(a.k_shape[1]);
  p.kv_group = p.heads / p.kv_heads;
  p.total_q = static_cast<int>(a.q_shape[0]);
  p.total_k = static_cast<int>(a.k_shape[0]);
  p.max_q = static_cast<int>(a.max_q), p.max_k = static_cast<int>(a.max_k);
  // A cache without a whole page has no key to read.
  p.paged_keys = a.page_size > 0 && a.k_shape[0] >= a.page_size ? a.block_table_stride * a.page_size : 0;
  p.row_chunks = static_cast<int>(cdiv<index_t>(static_cast<index_t>(p.kv_group) * a.max_q, Cfg::BLOCK_M));
  p.splits = plan.splits;
  // A bound past every key is no bound: clamp so that the kernel's int arithmetic cannot overflow.
  const index_t reach = a.max_q + a.max_k;
  p.window_left = a.window.left < 0 ? -1 : static_cast<int>(std::min(a.window.left, reach));
  p.window_right = a.window.right < 0 ? -1 : static_cast<int>(std::min(a.window.right, reach));
  p.scale_log2 = softmax_scale(a) * 1.4426950408889634f;
  return p;
}

template <class Cfg>
void launch_decode(const VarlenPlan& plan, cudaStream_t stream) {
  const DecodeParams p = make_decode_params<Cfg>(plan);
  const dim3 grid(static_cast<unsigned>(plan.args.batch * p.kv_heads * p.row_chunks), static_cast<unsigned>(p.splits));
  if (grid.x == 0 || p.total_q == 0) return;
  opt_in_decode<Cfg>(current_device());
  decode_kernel<Cfg><<<grid, Cfg::NUM_THREADS, Cfg::smem_bytes, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();
  if (p.splits > 1) {
    const index_t rows = static_cast<index_t>(p.total_q) * p.heads;
    decode_combine_kernel<Cfg::D, Cfg::FLOAT16><<<static_cast<unsigned>(cdiv<index_t>(rows, 4)), 128, 0, stream>>>(p);
    FA2_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace fa2::flash
