// v6.6 onwards: the warp-specialised kernel, which only wires the parts together. A producer
// warpgroup loads (producer.cuh), the computing warpgroups run the main loop (consumer.cuh) and
// the epilogue (epilogue.cuh) for each work item the tile scheduler gives the block, all in one
// SharedStorage. product/forward_sm90.cu launches it for the configurations with TMA.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "step07_benchmark/kernels/device/forward_params.cuh"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"
#include "step07_benchmark/kernels/device/warp_softmax.cuh"
#include "step07_benchmark/kernels/ptx/tma.cuh"
#include "step07_benchmark/kernels/sm90/consumer.cuh"
#include "step07_benchmark/kernels/sm90/epilogue.cuh"
#include "step07_benchmark/kernels/sm90/pipeline.hpp"
#include "step07_benchmark/kernels/sm90/producer.cuh"
#include "step07_benchmark/kernels/sm90/shared_storage.cuh"

namespace fa2::flash {

// Without PERSISTENT, block b computes work item b; with it, there is one block per SM and each
// block computes one item per round (TileScheduler). The ring of K/V stages and the phases of the
// barriers run on from one item to the next, and the producer loads the next item's K_0 and Q
// while the warpgroups finish this one (Q once every warp is done reading it).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::BLOCK_THREADS, 1)
    hopper_ws_fwd_kernel(const FastParams p, const __grid_constant__ HopperMaps maps, const int heads) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BM = Cfg::BLOCK_M, STAGES = Cfg::STAGES;
  extern __shared__ unsigned char smem_raw[];
  // wgmma's swizzle is computed from address bits: SharedStorage starts on a 1024-byte boundary.
  const std::uint32_t misalign = smem_address(smem_raw) % Cfg::TILE_ALIGN;
  unsigned char* start = smem_raw + (misalign ? Cfg::TILE_ALIGN - misalign : 0);
  const SmemTiles<Cfg> smem(start);
  const RingBarrierPtrs bar = ring_barriers<Cfg>(start);

  // The dense order (TileScheduler), or a packed batch's schedule (PackedScheduler).
  const auto sched = [&] {
    if constexpr (Cfg::PACKED) {
      return PackedScheduler<Cfg::PERSISTENT>{p.packed_tiles, p.n_packed_tiles, heads};
    } else {
      return TileScheduler<Cfg::CAUSAL, Cfg::PERSISTENT>{p.n_q_tiles, heads, p.kv_group,
                                                         Cfg::L2_ORDER ? p.l2_heads : 1};
    }
  }();
  const int items = sched.items();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;

  if (threadIdx.x == 0) {
    // Every `full` barrier completes on the producer's one arrival and the copy engine's bytes,
    // every `empty` one on an arrival from each computing warp.
    mbarrier_init(bar.q_full, 1);
    mbarrier_init(bar.q_empty, Cfg::NUM_WARPS);
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(&bar.full_k[s], 1);
      mbarrier_init(&bar.full_v[s], 1);
      mbarrier_init(&bar.empty_k[s], Cfg::NUM_WARPS);
      mbarrier_init(&bar.empty_v[s], Cfg::NUM_WARPS);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp >= Cfg::NUM_WARPS) {
    // The producer warpgroup keeps few registers; one thread of it issues every load.
    setmaxnreg_dec<Cfg::PRODUCER_REGS>();
    if (threadIdx.x == Cfg::NUM_THREADS) hopper_producer<Cfg>(p, maps, sched, items, smem, bar);
  } else {
    setmaxnreg_inc<Cfg::CONSUMER_REGS>();
    // With a loop per warpgroup, the index as lane 0 holds it: the compiler then knows that every
    // lane of the warp takes the same loop, and keeps what the loop computes from its ring (the
    // barriers' addresses, the wgmma descriptors) in uniform registers. From threadIdx.x directly,
    // those loops build their descriptors lane by lane after taking their turn. (The kernels of one
    // loop for every warpgroup compile as well or better without it.)
    const int wg = Cfg::LOOP_PER_WARPGROUP ? __shfl_sync(0xffffffffu, warp / 4, 0) : warp / 4;
    const auto block_item = [&](int k) {
      return sched.item(k, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));
    };
    PipelineState<STAGES> ring{};
    for (int k = 0, t = block_item(0); t < items; t = block_item(++k)) {
      const WorkTile wt = sched.work_tile(t);
      with_item<Cfg>(p, wt, [&](const FastParams& ip, RaggedRows q_rows, RaggedRows) {
        const int q0 = wt.q_tile * BM;
        const KeyTileRange range = item_key_tiles<Cfg>(ip, q0);
        const int n_tiles = range.end - range.first;  // never 0 (item_key_tiles)
        const WarpPlace w{lane, warp * 16, q0 + warp * 16};
        // Causal or windowed: the key tiles up to the warpgroup's last row's bound; it skips the
        // rest of the block's.
        const int seen =
            warpgroup_key_tiles<Cfg::CAUSAL, Cfg::WINDOW>(range, q0 + 64 * wg + 63, Cfg::BLOCK_N, ip.window_right);
        const int n_seen = Cfg::UNIFORM_SEEN ? __shfl_sync(0xffffffffu, seen, 0) : seen;
        RowState<Cfg> st;
        init_row_state<Cfg>(st);
        mbarrier_wait(bar.q_full, PipelineState<1>{k}.phase());
        if constexpr (Cfg::LOOP_PER_WARPGROUP) {
          static_assert(Cfg::WARPGROUPS == 3, "one loop per warpgroup: three of them");
          if (wg == 0) {
            hopper_consumer_loop<Cfg, 0>(ip, range.first, n_tiles, n_seen, ring, st, smem, bar, wg, w);
          } else if (wg == 1) {
            hopper_consumer_loop<Cfg, 1>(ip, range.first, n_tiles, n_seen, ring, st, smem, bar, wg, w);
          } else {
            hopper_consumer_loop<Cfg, 2>(ip, range.first, n_tiles, n_seen, ring, st, smem, bar, wg, w);
          }
        } else {
          hopper_consumer_loop<Cfg>(ip, range.first, n_tiles, n_seen, ring, st, smem, bar, wg, w);
        }
        ring += n_tiles;
        if constexpr (!Cfg::EARLY_Q) {
          __syncwarp();
          if (lane == 0) mbarrier_arrive(bar.q_empty);  // every S of this item is done: Q may be replaced
        }
        hopper_epilogue<Cfg>(ip, st, w, q0, wt.bh, wg, smem, maps, q_rows);
      });
    }
    hopper_epilogue_finish<Cfg>();
  }
#else
  (void)p;
  (void)maps;
  (void)heads;
#endif
}

}  // namespace fa2::flash
