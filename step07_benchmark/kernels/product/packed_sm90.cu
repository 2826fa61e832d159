// The sm90 path's packed forward and backward (flash_attention.hpp's plan_packed_forward and
// plan_packed_backward): the launches of v6.11's packed twins (sm90/forward_kernel.cuh with
// Cfg::PACKED) and of v6b.8's (sm90/backward.cuh with Cfg::PACKED) on a plan's schedule, with the
// ragged TMA views of the packed tensors. Compiled for sm_90a alone, in the product's sm_90a units.
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

// The row of kernels.def whose packed twins run the packed backward, at head dim D.
template <int D>
constexpr HopperBwdOptions packed_backward_options() {
  constexpr int row = row_index<ProductRows, Family::sm90_backward>(kPackedBackwardRow);
  static_assert(row >= 0, "kernels.def: the packed backward's row must be one of the sm90 backward rows");
  return Sm90Options<ProductRows>::backward[row].at(D);
}

// v5's preprocess (D_i, dQ_accum cleared) and dQ conversion on the packed rows as they lie (every
// head of every row of q: the "batch" strides are head strides), the packed key-tile kernel between.
template <class Cfg>
void launch_packed_backward_config(const PackedBackwardPlan& plan, cudaStream_t stream) {
  static_assert(Cfg::PACKED && Cfg::BLOCK_M == kPackedBackwardBlockM && Cfg::BLOCK_N == kBackwardKeyTile,
                "the plan's schedule counts the packed twin's tiles");
  const FlashVarlenBwdArgs& a = plan.args;
  const index_t T_q = a.q_shape[0], T_k = a.k_shape[0], H = a.q_shape[1], H_kv = a.k_shape[1], D = a.q_shape[2];
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
  p.stride_qb = a.q_strides[1], p.stride_qq = a.q_strides[0];
  p.stride_kb = a.k_strides[1], p.stride_kk = a.k_strides[0];
  p.stride_vb = a.v_strides[1], p.stride_vk = a.v_strides[0];
  p.stride_ob = a.o_strides[1], p.stride_oq = a.o_strides[0];
  p.stride_dob = a.do_strides[1], p.stride_doq = a.do_strides[0];
  p.stride_lb = a.l_strides[0], p.stride_lq = a.l_strides[1];
  p.stride_Db = T_q, p.stride_Dq = 1;        // d_rows: (H, T_q), contiguous
  p.stride_accb = D, p.stride_accq = H * D;  // dq_accum: (T_q, H, D), contiguous
  p.stride_dqb = a.dq_strides[1], p.stride_dqq = a.dq_strides[0];
  p.stride_dkb = a.dk_strides[1], p.stride_dkk = a.dk_strides[0];
  p.stride_dvb = a.dv_strides[1], p.stride_dvk = a.dv_strides[0];
  p.N_QUERIES = static_cast<int>(T_q);  // the preprocess and the conversion: every row
  p.N_KEYS = static_cast<int>(T_k);
  p.kv_group = static_cast<int>(H / H_kv);
  p.heads_per_block = p.kv_group, p.group_splits = 1;
  const WindowBounds bounds = packed_kernel_bounds(a);
  p.windowed = plan.mask == PackedMask::window;
  p.window_left = bounds.left, p.window_right = bounds.right;
  p.scale = softmax_scale(a);
  p.scale_log2 = p.scale * kLog2e;
  p.deterministic = false;  // the counters are cleared below, not by the preprocess
  p.dq_semaphores = a.dq_semaphores;
  p.stride_semb = cdiv<index_t>(T_q, 32) + a.batch;
  const auto n_sequences = static_cast<index_t>(plan.schedule.sequences.size());
  p.sequences = static_cast<const PackedSequence*>(a.schedule);
  p.packed_tiles = reinterpret_cast<const PackedKeyTile*>(static_cast<const unsigned char*>(a.schedule) +
                                                          n_sequences * static_cast<index_t>(sizeof(PackedSequence)));
  p.kv_heads = static_cast<int>(H_kv);

  const auto heads = static_cast<unsigned>(H);
  const auto row_blocks = static_cast<unsigned>(cdiv<index_t>(T_q * Cfg::CHUNKS, 256));
  if (T_q > 0) {
    fast_bwd_preprocess<Cfg::D, Cfg::FLOAT16><<<dim3(row_blocks, heads), 256, 0, stream>>>(p);
    FA2_CUDA_CHECK_LAUNCH();
  }
  if (a.deterministic) {
    FA2_CUDA_CHECK(cudaMemsetAsync(
        a.dq_semaphores, 0,
        static_cast<std::size_t>(packed_dq_semaphore_count(a.q_shape, a.batch)) * sizeof(std::int32_t), stream));
  }
  const auto items = static_cast<unsigned>(plan.schedule.tiles.size() * static_cast<std::size_t>(H_kv));
  if (items > 0) {
    const HopperBwdMaps maps{
        ragged_tile_map(a.q, T_q, H, D, a.q_strides[0], a.q_strides[1], Cfg::BLOCK_M, Cfg::FLOAT16),
        ragged_tile_map(a.do_, T_q, H, D, a.do_strides[0], a.do_strides[1], Cfg::BLOCK_M, Cfg::FLOAT16),
        ragged_tile_map(a.k, T_k, H_kv, D, a.k_strides[0], a.k_strides[1], Cfg::BLOCK_N, Cfg::FLOAT16),
        ragged_tile_map(a.v, T_k, H_kv, D, a.v_strides[0], a.v_strides[1], Cfg::BLOCK_N, Cfg::FLOAT16),
        ragged_accum_map(a.dq_accum, T_q, H, D, H * D, D, 64)};
    const auto key_tiles = [&]<class C>() {
      const auto kernel = hopper_bwd_ws_kernel<C>;
      constexpr std::size_t smem = BwdLayout<C>::smem_bytes;
      static std::atomic<std::uint64_t> opted_in{0};
      opt_in_shared_memory(kernel, smem, current_device(), opted_in, plan.kernel);
      kernel<<<items, C::BLOCK_THREADS, smem, stream>>>(p, maps);
      FA2_CUDA_CHECK_LAUNCH();
    };
    if (a.deterministic) {
      key_tiles.template operator()<typename Cfg::Deterministic>();
    } else {
      key_tiles.template operator()<Cfg>();
    }
  }
  if (T_q > 0) {
    fast_bwd_convert_dq<Cfg::D, Cfg::FLOAT16><<<dim3(row_blocks, heads), 256, 0, stream>>>(p);
    FA2_CUDA_CHECK_LAUNCH();
  }
}

// The twin of the plan's mask at head dim D, as launch_packed_at chooses the forward's.
template <int D>
void launch_packed_backward_at(const PackedBackwardPlan& plan, cudaStream_t stream) {
  using Plain = HopperBwdConfig<D, false, packed_backward_options<D>()>;
  using Causal = HopperBwdConfig<D, true, packed_backward_options<D>()>;
  const auto launch = [&]<class C>() { launch_packed_backward_config<C>(plan, stream); };
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

void launch_packed_backward_sm90(const PackedBackwardPlan& plan, cudaStream_t stream) {
  if (plan.args.q_shape[2] == 64) {
    launch_packed_backward_at<64>(plan, stream);
  } else {
    launch_packed_backward_at<128>(plan, stream);
  }
}

void launch_packed_sm90(const PackedPlan& plan, cudaStream_t stream) {
  if (plan.args.q_shape[2] == 64) {
    launch_packed_at<64>(plan, stream);
  } else {
    launch_packed_at<128>(plan, stream);
  }
}

}  // namespace fa2::flash
