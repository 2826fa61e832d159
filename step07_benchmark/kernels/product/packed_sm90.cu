// The sm90 path's packed forward (flash_attention.hpp's plan_packed_forward): the launch of v6.11's
// packed twins (sm90/forward_kernel.cuh with Cfg::PACKED) on a plan's schedule, with the ragged TMA
// views of Q, K, V and O. Compiled for sm_90a alone, in the product's sm_90a units.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "common/cuda/cuda_check.hpp"
#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/product/sm90_rows.cuh"
#include "step07_benchmark/kernels/sm90/launch.cuh"

namespace fa2::flash {

namespace {

// The row of kernels.def whose packed twins run packed batches, at head dim D.
template <int D>
constexpr HopperOptions packed_options() {
  constexpr int row = row_index<ProductRows, Family::sm90_forward>(kPackedRow);
  static_assert(row >= 0, "kernels.def: the packed forward's row must be one of the sm90 forward rows");
  return Sm90Options<ProductRows>::forward[row].at(D);
}

template <class Cfg>
void launch_packed_config(const PackedPlan& plan, cudaStream_t stream) {
  static_assert(Cfg::PACKED && Cfg::BLOCK_M == kPackedBlockM && Cfg::BLOCK_N == kPackedBlockN,
                "the plan's schedule counts the packed twin's tiles");
  const FlashVarlenArgs& a = plan.args;
  const auto kernel = hopper_ws_fwd_kernel<Cfg>;
  const DeviceInfo& device = current_device();
  static std::atomic<std::uint64_t> opted_in{0};
  opt_in_shared_memory(kernel, Cfg::smem_bytes, device, opted_in, plan.kernel);

  // (rows, heads, D) tensors: the "batch" strides of FastParams are the head strides.
  const index_t H = a.q_shape[1], H_kv = a.k_shape[1], D = a.q_shape[2];
  FastParams p{};
  p.Q = static_cast<const elem16*>(a.q);
  p.K = static_cast<const elem16*>(a.k);
  p.V = static_cast<const elem16*>(a.v);
  p.O = static_cast<elem16*>(a.o);
  p.L = a.l;
  p.stride_qb = a.q_strides[1], p.stride_qq = a.q_strides[0];
  p.stride_kb = a.k_strides[1], p.stride_kk = a.k_strides[0];
  p.stride_vb = a.v_strides[1], p.stride_vk = a.v_strides[0];
  p.stride_ob = a.o_strides[1], p.stride_oq = a.o_strides[0];
  p.stride_lb = a.l_strides[0], p.stride_lq = a.l_strides[1];
  p.kv_group = static_cast<int>(H / H_kv);
  const WindowBounds bounds = packed_kernel_bounds(a);
  p.windowed = plan.mask == PackedMask::window;
  p.window_left = bounds.left, p.window_right = bounds.right;
  p.scale_log2 = softmax_scale(a) * 1.4426950408889634f;
  const auto n_sequences = static_cast<index_t>(plan.schedule.sequences.size());
  p.sequences = static_cast<const PackedSequence*>(a.schedule);
  p.packed_tiles = reinterpret_cast<const PackedTile*>(static_cast<const unsigned char*>(a.schedule) +
                                                       n_sequences * static_cast<index_t>(sizeof(PackedSequence)));
  p.n_packed_tiles = static_cast<int>(plan.schedule.tiles.size());

  const int items = p.n_packed_tiles * static_cast<int>(H);
  const int blocks = Cfg::PERSISTENT ? std::min(items, device.sm_count) : items;
  HopperMaps maps{
      ragged_tile_map(a.q, a.q_shape[0], H, D, a.q_strides[0], a.q_strides[1], Cfg::BLOCK_M, Cfg::FLOAT16),
      ragged_tile_map(a.k, a.k_shape[0], H_kv, D, a.k_strides[0], a.k_strides[1], Cfg::BLOCK_N, Cfg::FLOAT16),
      ragged_tile_map(a.v, a.v_shape[0], H_kv, D, a.v_strides[0], a.v_strides[1], Cfg::BLOCK_N, Cfg::FLOAT16),
      {}};
  if constexpr (Cfg::STORE_TMA) {
    maps.o = ragged_tile_map(a.o, a.o_shape[0], H, D, a.o_strides[0], a.o_strides[1], 64, Cfg::FLOAT16);
  }
  kernel<<<static_cast<unsigned>(blocks), Cfg::BLOCK_THREADS, Cfg::smem_bytes, stream>>>(p, maps, static_cast<int>(H));
  FA2_CUDA_CHECK_LAUNCH();
}

// The twin of the plan's mask at head dim D: without a mask the unmasked configuration, with the
// causal mask (every sequence square) the causal one, else the unmasked one's windowed twin, whose
// per-sequence bounds carry the bottom-right alignment.
template <int D>
void launch_packed_at(const PackedPlan& plan, cudaStream_t stream) {
  using Plain = HopperConfig<D, false, packed_options<D>()>;
  using Causal = HopperConfig<D, true, packed_options<D>()>;
  const auto launch = [&]<class C>() { launch_packed_config<C>(plan, stream); };
  switch (plan.mask) {
    case PackedMask::none:
      with_element_twin<typename Plain::Packed>(plan.args.dtype, launch);
      break;
    case PackedMask::causal:
      with_element_twin<typename Causal::Packed>(plan.args.dtype, launch);
      break;
    case PackedMask::window:
      with_element_twin<typename Plain::Windowed::Packed>(plan.args.dtype, launch);
      break;
  }
}

}  // namespace

void launch_packed_sm90(const PackedPlan& plan, cudaStream_t stream) {
  if (plan.args.q_shape[2] == 64) {
    launch_packed_at<64>(plan, stream);
  } else {
    launch_packed_at<128>(plan, stream);
  }
}

}  // namespace fa2::flash
