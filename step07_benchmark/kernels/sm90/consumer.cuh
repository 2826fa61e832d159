// The consumers' main loop of v6's warp-specialised kernel (sm90/forward_kernel.cuh): a computing
// warpgroup walks one work item's key tiles through the K/V ring, issuing S = Q K^T and O += P V
// as wgmma and computing the softmax between them (key_tile.cuh), waiting for each tile on its
// stage's `full` barriers and handing it back on its `empty` barriers.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "step07_benchmark/kernels/device/forward_params.cuh"
#include "step07_benchmark/kernels/device/warp_softmax.cuh"
#include "step07_benchmark/kernels/ptx/tma.cuh"
#include "step07_benchmark/kernels/ptx/wgmma.cuh"
#include "step07_benchmark/kernels/sm90/key_tile.cuh"
#include "step07_benchmark/kernels/sm90/named_barriers.hpp"
#include "step07_benchmark/kernels/sm90/pipeline.hpp"
#include "step07_benchmark/kernels/sm90/shared_storage.cuh"

namespace fa2::flash {

// The computing warpgroups' loop: hopper_key_loop_overlapped with every cp.async wait and
// __syncthreads replaced by waits on the stage's mbarriers, and each K and V tile handed back (an
// arrival per warp on empty_k or empty_v) as soon as no wgmma reads it. The two warpgroups no
// longer meet at a barrier: one's softmax can run while the other's products do. The ring does
// not restart with a query tile: tile j of this one is the ring's tile ring0 + j (persistent
// blocks; the producer numbers them alike, producer.cuh). With EARLY_Q, Q too is handed back here (an arrival per warp
// on q_empty), as soon as the warp's last S is computed: a tile's softmax and product and the epilogue before the item
// ends, time in which the producer loads the next item's Q. (Otherwise the kernel hands Q back after this loop, and the
// next item's first wait covers more of Q's load.) The item's tile j holds keys from (first_tile + j) * BLOCK_N:
// a sliding window's items skip the tiles before their first query's window (sm90/forward_kernel.cuh).
// WG >= 0: the loop of warpgroup WG only (Cfg::LOOP_PER_WARPGROUP), the argument wg ignored.
template <class Cfg, int WG = -1>
__device__ __forceinline__ void hopper_consumer_loop(const FastParams& p, int first_tile, int n_tiles, int n_seen,
                                                     PipelineState<Cfg::STAGES> ring0, RowState<Cfg>& st,
                                                     const SmemTiles<Cfg>& smem, const RingBarrierPtrs& bar, int wg_arg,
                                                     const WarpPlace& w) {
  const int wg = WG >= 0 ? WG : wg_arg;
  constexpr int BN = Cfg::BLOCK_N;
  const elem16* sQ = smem.q;
  const auto first_key = [&](int j) { return (first_tile + j) * BN; };  // of the item's tile j
  // Tile j's stage, and the phase of its `full` barriers that its waits name.
  const auto stage = [&](int j) { return (ring0 + j).stage(); };
  const auto phase = [&](int j) { return (ring0 + j).phase(); };
  const auto K_stage = [&](int j) { return smem.k_stage(stage(j)); };
  const auto V_stage = [&](int j) { return smem.v_stage(stage(j)); };
  const auto release = [&](std::uint64_t* empty, int j) {
    __syncwarp();
    if (w.lane == 0) mbarrier_arrive(&empty[stage(j)]);
  };
  // K_j handed back and, with EARLY_Q, Q too when S_j was this warp's last S: one warp-wide
  // sync serves both, Q's arrival predicated on the same lane, so the loop gains no second sync.
  const auto release_k = [&](int j) {
    __syncwarp();
    if (w.lane == 0) {
      mbarrier_arrive(&bar.empty_k[stage(j)]);
      if (Cfg::EARLY_Q && j + 1 == n_seen) mbarrier_arrive(bar.q_empty);
    }
  };
  PFrags<Cfg> pa;
  {
    mbarrier_wait(&bar.full_k[stage(0)], phase(0));
    ScoreFrags<Cfg> s;
    issue_scores<Cfg>(s, sQ, wg, K_stage(0));  // every warpgroup sees tile 0
    wgmma_wait<0>();
    fence_accumulators(s[0]);
    release_k(0);
    float alpha[2];
    softmax_probabilities<Cfg>(s, st, alpha, first_key(0), p, w);  // O is still 0
    pack_probabilities<Cfg>(s, pa);
  }
  // Turns (ping-pong; a round robin with three warpgroups): warpgroup w issues its products after
  // its turn barrier and then opens the next one's; the last warpgroup opens warpgroup 0's once
  // first, so warpgroup 0 starts. Every iteration takes its turn (skipped tiles included), and the
  // last warpgroup does not pass after its last tile, so each barrier sees as many arrivals as
  // waits (named_barriers.hpp; tests/test_ring_protocol.cpp walks every interleaving). Each turn
  // barrier joins two warpgroups: the one that waits and the one that opens it.
  constexpr int kTurnThreads = 2 * 128, WGS = Cfg::WARPGROUPS;
  if constexpr (Cfg::PINGPONG) {
    if (opens_first_turn(wg, WGS)) named_barrier_arrive(turn_barrier(0), kTurnThreads);
  }
  const auto take_turn = [&] {
    if constexpr (Cfg::PINGPONG) named_barrier_sync(turn_barrier(wg), kTurnThreads);
  };
  const auto pass_turn = [&](int j) {
    if constexpr (Cfg::PINGPONG) {
      if (passes_turn(wg, WGS, j, n_tiles)) named_barrier_arrive(next_turn_barrier(wg, WGS), kTurnThreads);
    }
  };
  // With EARLY_ALPHA, the alpha of the last softmax, applied to O before the next O += P V
  // is issued (after the first tile O is 0, so 1 will do).
  float alpha_due[2] = {1.0f, 1.0f};
  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_seen) {
      mbarrier_wait(&bar.full_k[stage(j + 1)], phase(j + 1));
      mbarrier_wait(&bar.full_v[stage(j)], phase(j));
      ScoreFrags<Cfg> s;
      take_turn();
      issue_scores<Cfg>(s, sQ, wg, K_stage(j + 1));
      if constexpr (Cfg::EARLY_ALPHA) rescale_output<Cfg>(st, alpha_due);  // while S_{j+1} computes
      issue_pv<Cfg>(st, pa, V_stage(j));
      pass_turn(j);
      wgmma_wait<1>();  // S_{j+1}; O += P_j V_j may still run
      fence_accumulators(s[0]);
      release_k(j + 1);
      float alpha[2];
      softmax_probabilities<Cfg>(s, st, alpha, first_key(j + 1), p, w);
      // P_j (pa), O and V_j are free again. A plain wait, ptxas lifts above the softmax, which then
      // runs after the product (APPENDIX D.12); held, it waits after the row sums, the softmax's
      // last values (Cfg::HOLD_SOFTMAX).
      if constexpr (Cfg::HOLD_SOFTMAX) {
        wgmma_wait_after<0>(fminf(st.l[0][0], st.l[0][1]));
      } else {
        wgmma_wait<0>();
      }
      fence_accumulators(st.o[0]);
      fence_fragments(pa);
      release(bar.empty_v, j);
      if constexpr (Cfg::EARLY_ALPHA) {
        alpha_due[0] = alpha[0];
        alpha_due[1] = alpha[1];
      } else {
        rescale_output<Cfg>(st, alpha);
      }
      pack_probabilities<Cfg>(s, pa);
    } else if (j + 1 == n_seen) {
      mbarrier_wait(&bar.full_v[stage(j)], phase(j));
      take_turn();
      if constexpr (Cfg::EARLY_ALPHA) rescale_output<Cfg>(st, alpha_due);
      issue_pv<Cfg>(st, pa, V_stage(j));  // the warpgroup's last tile
      pass_turn(j);
      wgmma_wait<0>();
      fence_accumulators(st.o[0]);
      release(bar.empty_v, j);
    } else {
      take_turn();
      pass_turn(j);
      // Causal or windowed: a tile past this warpgroup's rows; the producer still counts on its release. It
      // is released only once it has landed, as every other: an arrival on a stage's empty
      // barrier then always belongs to the phase the producer waits for next. (Released unseen,
      // the arrival could land in the phase of the tile STAGES earlier in the stage, which a
      // slower warpgroup may still be reading: the phase would complete early and the producer
      // overwrite that tile. tests/test_ring_protocol.cpp finds that interleaving.)
      mbarrier_wait(&bar.full_k[stage(j)], phase(j));
      release(bar.empty_k, j);
      mbarrier_wait(&bar.full_v[stage(j)], phase(j));
      release(bar.empty_v, j);
    }
  }
}

}  // namespace fa2::flash
