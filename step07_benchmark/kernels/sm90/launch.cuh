// Host side of v6's kernels (sm90/forward.cuh) and v6b's (sm90/backward.cuh): the launch of one
// configuration on a plan's arguments, with the TMA views of Q, K, V and O for the
// warp-specialised kernels and of dQ_accum for v6b's reduce-adds. Included by the generated
// translation units (instances/sm90.cuh), compiled for sm_90a alone.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/backward_phases.cuh"
#include "step07_benchmark/kernels/device/launch_params.cuh"
#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/sm90/backward.cuh"
#include "step07_benchmark/kernels/sm90/forward.cuh"

namespace fa2::flash {

// The TMA view of a (batch, N, D) bf16 (or, float16, fp16) tensor with a contiguous head dim: dims
// (D, N, batch), innermost first, byte strides for rows and batches; a box of 64 columns (the
// 128-byte swizzle's row) by box_rows rows, rows past N read as zeros (product/forward_sm90.cu).
CUtensorMap tile_map(const void* data, index_t batch, index_t N, index_t D, index_t row_stride, index_t batch_stride,
                     int box_rows, bool float16);
// The ragged view of a packed (rows, heads, D) bf16 (or fp16) tensor with a contiguous head dim,
// for v6's packed twins: five coordinates (ptx/tma.cuh, tma_load_ragged) whose boxes of 64 columns
// by box_rows rows of one head end at the end of a sequence's rows, zeros past it.
CUtensorMap ragged_tile_map(const void* data, index_t rows, index_t heads, index_t D, index_t row_stride,
                            index_t head_stride, int box_rows, bool float16);
// The same for a packed float32 (rows, heads, D) tensor (the packed backward's dQ_accum): boxes of
// 32 columns by box_rows rows; reduce-adds past a sequence's end are left out.
CUtensorMap ragged_accum_map(const float* data, index_t rows, index_t heads, index_t D, index_t row_stride,
                             index_t head_stride, int box_rows);
// The same for a float32 (batch, N, D) tensor (dQ_accum): boxes of 32 columns (128 bytes) by
// box_rows rows in the 128-byte swizzle; rows outside the tensor are neither read nor written.
CUtensorMap accum_tile_map(const float* data, index_t batch, index_t N, index_t D, index_t row_stride,
                           index_t batch_stride, int box_rows);

// v6.1 to v6.5's kernel, cp.async loads without a producer, is the lab's (lab/sm90_cp_async.cuh):
// declared here so that the launch can name it; only the lab's translation units, which include its
// definition, launch a configuration without TMA.
template <class Cfg>
__global__ void hopper_fwd_kernel(const FastParams p);

// One configuration: the cp.async kernel, or the warp-specialised one with its tensor maps. With a
// sliding window, the twin built for one (Cfg::Windowed), which only the warp-specialised kernels
// of two warpgroups have; the lab's other rows refuse it.
template <class Cfg>
void launch_hopper_config(const ForwardPlan& plan, cudaStream_t stream) {
  const FlashFwdArgs& a = plan.args;
  if constexpr (!Cfg::WINDOW) {
    if (a.window.bounded()) {
      if constexpr (Cfg::TAKES_WINDOW) {
        launch_hopper_config<typename Cfg::Windowed>(plan, stream);
        return;
      } else {
        throw std::invalid_argument("window: " + std::string(plan.kernel) +
                                    " takes no sliding window (v6's TMA rows of two warpgroups do)");
      }
    }
  }
  const auto kernel = [] {
    if constexpr (Cfg::TMA) {
      return hopper_ws_fwd_kernel<Cfg>;
    } else {
      return hopper_fwd_kernel<Cfg>;
    }
  }();
  const DeviceInfo& device = current_device();
  static std::atomic<std::uint64_t> opted_in{0};
  opt_in_shared_memory(kernel, Cfg::smem_bytes, device, opted_in, plan.kernel);
  FastParams p = make_fast_params(a, Cfg::BLOCK_M);
  const index_t B = a.q_shape[0], D = a.q_shape[2];
  if constexpr (Cfg::L2_ORDER) {
    p.l2_heads = l2_head_group(device.l2_bytes, a.k_shape[1], static_cast<int>(D), p.kv_group, static_cast<int>(B));
  }
  const auto tiles = static_cast<unsigned>(p.n_q_tiles), heads = static_cast<unsigned>(B);
  if constexpr (Cfg::TMA) {
    // One block per work item (query tile, head), or, persistent, one per SM walking them.
    const int items = p.n_q_tiles * static_cast<int>(B);
    const int blocks = Cfg::PERSISTENT ? std::min(items, device.sm_count) : items;
    HopperMaps maps{
        tile_map(a.q, B, a.q_shape[1], D, a.q_strides[1], a.q_strides[0], Cfg::BLOCK_M, Cfg::FLOAT16),
        tile_map(a.k, a.k_shape[0], a.k_shape[1], D, a.k_strides[1], a.k_strides[0], Cfg::BLOCK_N, Cfg::FLOAT16),
        tile_map(a.v, a.v_shape[0], a.k_shape[1], D, a.v_strides[1], a.v_strides[0], Cfg::BLOCK_N, Cfg::FLOAT16),
        {}};
    if constexpr (Cfg::STORE_TMA)
      maps.o = tile_map(a.o, B, a.q_shape[1], D, a.o_strides[1], a.o_strides[0], 64, Cfg::FLOAT16);
    kernel<<<static_cast<unsigned>(blocks), Cfg::BLOCK_THREADS, Cfg::smem_bytes, stream>>>(p, maps,
                                                                                           static_cast<int>(B));
  } else {
    const dim3 grid = Cfg::CAUSAL ? dim3(heads, tiles) : dim3(tiles, heads);
    kernel<<<grid, Cfg::NUM_THREADS, Cfg::smem_bytes, stream>>>(p);
  }
  FA2_CUDA_CHECK_LAUNCH();
}

// `kernel` on (grid, block, smem bytes) in `stream`, the ordinary way, or (early) so that it may
// start before the kernel ahead of it in the stream has ended: programmatic dependent launch,
// whose waits the kernels make (ptx/grid_dependency.cuh).
template <class... Params, class... Args>
void launch_kernel(bool early, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                   const Args&... args) {
  if (!early) {
    kernel<<<grid, block, smem, stream>>>(args...);
    FA2_CUDA_CHECK_LAUNCH();
    return;
  }
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  FA2_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

// One configuration of v6b: v5's preprocess and dQ conversion around the wgmma key-tile kernel
// (warp-specialised with the producer), with the TMA views its options read. With a sliding
// window, the twin built for one (Cfg::Windowed).
template <class Cfg>
void launch_hopper_bwd_config(const BackwardPlan& plan, cudaStream_t stream) {
  static_assert(Cfg::BLOCK_N == kBackwardKeyTile, "the plan's checks and the group split count v6b's key tiles");
  const FlashBwdArgs& a = plan.args;
  if constexpr (!Cfg::WINDOW) {
    if (a.window.bounded()) {
      launch_hopper_bwd_config<typename Cfg::Windowed>(plan, stream);
      return;
    }
  }
  const index_t key_blocks = cdiv<index_t>(a.k_shape[1], Cfg::BLOCK_N);  // at most 65535: the plan checked it
  FastBwdParams p = make_fast_bwd_params(a);
  const index_t B = a.q_shape[0], N_q = a.q_shape[1], N_k = a.k_shape[1], D = a.q_shape[2];
  if (a.dkv_partial != nullptr && plan.group_splits > 1) {  // few kv heads: each group over several blocks
    p.group_splits = plan.group_splits;
    p.heads_per_block = p.kv_group / p.group_splits;
    p.dk_partial = a.dkv_partial;
    p.dv_partial = a.dkv_partial + a.k_shape[0] * p.group_splits * N_k * D;
  }
  const auto batch = static_cast<unsigned>(B);
  const auto row_blocks = static_cast<unsigned>(cdiv<index_t>(N_q * Cfg::CHUNKS, 256));
  fast_bwd_preprocess<Cfg::D, Cfg::FLOAT16, Cfg::PDL><<<dim3(row_blocks, batch), 256, 0, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();

  HopperBwdMaps maps{};
  if constexpr (Cfg::PRODUCER) {
    maps.q = tile_map(a.q, B, N_q, D, a.q_strides[1], a.q_strides[0], Cfg::BLOCK_M, Cfg::FLOAT16);
    maps.dO = tile_map(a.do_, B, N_q, D, a.do_strides[1], a.do_strides[0], Cfg::BLOCK_M, Cfg::FLOAT16);
    maps.k = tile_map(a.k, a.k_shape[0], N_k, D, a.k_strides[1], a.k_strides[0], Cfg::BLOCK_N, Cfg::FLOAT16);
    maps.v = tile_map(a.v, a.v_shape[0], N_k, D, a.v_strides[1], a.v_strides[0], Cfg::BLOCK_N, Cfg::FLOAT16);
  }
  if constexpr (Cfg::DQ_TMA) {
    maps.dq_accum = accum_tile_map(a.dq_accum, B, N_q, D, a.dq_accum_strides[1], a.dq_accum_strides[0], Cfg::DQ_ROWS);
  }
  // The configuration as asked, or its twin compiled for deterministic dQ.
  const auto key_tiles = [&]<class C>() {
    const auto kernel = [] {
      if constexpr (C::PRODUCER) {
        return hopper_bwd_ws_kernel<C>;
      } else {
        return hopper_bwd_kernel<C>;
      }
    }();
    constexpr std::size_t smem = BwdLayout<C>::smem_bytes;
    static std::atomic<std::uint64_t> opted_in{0};
    opt_in_shared_memory(kernel, smem, current_device(), opted_in, plan.kernel);
    // (batch of K x parts of its group, key tiles)
    const dim3 grid(static_cast<unsigned>(a.k_shape[0] * p.group_splits), static_cast<unsigned>(key_blocks));
    FastBwdParams cp = p;
    // Q, dO (2 bytes an element) and dQ's accumulators (4) of a block's query heads
    const long long slot_bytes = static_cast<long long>(p.heads_per_block) * N_q * D * 8;
    cp.head_group = C::head_group(key_blocks, static_cast<int>(grid.x), slot_bytes, current_device().l2_bytes);
    launch_kernel(C::PDL, kernel, grid, C::BLOCK_THREADS, smem, stream, cp, maps);
  };
  if (a.deterministic) {
    key_tiles.template operator()<typename Cfg::Deterministic>();
  } else {
    key_tiles.template operator()<Cfg>();
  }

  launch_kernel(Cfg::PDL, fast_bwd_convert_dq<Cfg::D, Cfg::FLOAT16, Cfg::PDL>, dim3(row_blocks, batch), 256, 0, stream,
                p);
  if (p.group_splits > 1) {
    const auto key_row_blocks = static_cast<unsigned>(cdiv<index_t>(N_k * Cfg::CHUNKS, 256));
    fast_bwd_sum_group_parts<Cfg::D, Cfg::FLOAT16>
        <<<dim3(key_row_blocks, static_cast<unsigned>(a.k_shape[0])), 256, 0, stream>>>(p);
    FA2_CUDA_CHECK_LAUNCH();
  }
}

// v6 and v6b as the plans call them (with_element_twin: sm80/launch.cuh).
template <class Cfg>
void launch_hopper(const ForwardPlan& plan, cudaStream_t stream) {
  with_element_twin<Cfg>(plan.args.dtype, [&]<class C>() { launch_hopper_config<C>(plan, stream); });
}
template <class Cfg>
void launch_hopper_bwd(const BackwardPlan& plan, cudaStream_t stream) {
  with_element_twin<Cfg>(plan.args.dtype, [&]<class C>() { launch_hopper_bwd_config<C>(plan, stream); });
}

}  // namespace fa2::flash
