// The dQ writer of v6b's warp-specialised kernel (the dq_writer option, sm90/backward.cuh): the
// second warp of the producer's warpgroup, which alone adds dQ's shares to dQ_accum, so that the
// computing warpgroups never wait for a reduce-add to read their staging tile out, nor, with
// deterministic gradients, for their turn.
//
// Each step, each computing warpgroup waits for its staging tile of the step's stage to be free
// (dq_empty), stages its part of dQ_i's share there with where it goes and, deterministic, the
// count of its turn (a DqPlace), and arrives on dq_full. The writer waits for dq_full, issues the
// part's TMA reduce-adds (deterministic: after its turn, and it waits for them to land before it
// passes the turn on), waits until they have read the tile, and arrives on dq_empty. Two stages
// per warpgroup: a warpgroup runs up to a step ahead of the writer before it waits.
#pragma once

#include <cuda.h>  // CUtensorMap

#include <cstdint>

#include "step07_benchmark/kernels/device/backward_params.cuh"
#include "step07_benchmark/kernels/device/dq_turns.cuh"
#include "step07_benchmark/kernels/ptx/tma.cuh"
#include "step07_benchmark/kernels/sm90/backward_config.cuh"
#include "step07_benchmark/kernels/sm90/backward_producer.cuh"
#include "step07_benchmark/kernels/sm90/backward_products.cuh"
#include "step07_benchmark/kernels/sm90/backward_step.cuh"

namespace fa2::flash {

template <class Cfg>
__device__ __forceinline__ void dq_writer(const FastBwdParams& p, const HopperBwdMaps& maps, const BwdBlock<Cfg>& blk,
                                          std::uint32_t tiles, int lane) {
  static_assert(Cfg::DQ_WRITER);
  using L = BwdLayout<Cfg>;
  using Walk = typename BwdBlock<Cfg>::Walk;
  const int steps = Walk::steps(p);
  // Both stages start free (as many arrivals on each barrier as the warpgroups will wait there).
  for (int s = 0; s < 2 && s < steps; ++s) {
    for (int wg = 0; wg < Cfg::WARPGROUPS; ++wg) {
      named_barrier_arrive(static_cast<int>(BwdBarrier::dq_empty0) + 2 * wg + s, kDqHandoverThreads);
    }
  }
#pragma unroll 1
  for (int t = 0; t < steps; ++t) {
    const int s = t & 1;
    // The warpgroup of the higher keys first: split by keys, that is the order of their turns.
#pragma unroll 1
    for (int wg = Cfg::WARPGROUPS - 1; wg >= 0; --wg) {
      const int id = 2 * wg + s;
      named_barrier_sync(static_cast<int>(BwdBarrier::dq_full0) + id, kDqHandoverThreads);
      if (lane == 0) {
        const DqPlace at = ld_shared_dq_place(tiles + L::dq_places + 16 * id);
        const QueryPart<Cfg> part(wg);
        std::int32_t* counter = nullptr;
        if constexpr (Cfg::DETERMINISTIC) {
          counter = query_tile_counter<Cfg>(p, at.bh, at.q0);
          if constexpr (Cfg::TURN_IN_PLACE) {
            wait_for_turn(counter, at.turn);
          } else {
            const BwdThread th{wg, 0, 0, blk.k0 + wg * Cfg::WG_KEYS};
            wait_for_turn(counter, dq_turn<Cfg>(at.q0, th, p.window_right));
          }
        }
        const std::uint32_t staged = tiles + L::dQ + id * L::dq_bytes;
#pragma unroll
        for (int box = 0; box < Cfg::DQ_COLS / 32; ++box) {
          tma_reduce_add_3d(&maps.dq_accum, staged + box * 64 * 128, part.col0 + 32 * box, at.q0 + part.query0, at.bh);
        }
        bulk_commit();
        if constexpr (Cfg::DETERMINISTIC) {
          bulk_wait();  // landed before the turn passes: a warpgroup's 4 warps' worth
          pass_turn<4>(counter);
        } else {
          bulk_wait_read<0>();
        }
      }
      __syncwarp();
      // The tile is free again; its last use needs no arrival (none would be waited for).
      if (t + 2 < steps) named_barrier_arrive(static_cast<int>(BwdBarrier::dq_empty0) + id, kDqHandoverThreads);
    }
  }
  if (lane == 0) bulk_wait();  // the reduce-adds are complete before the block ends
}

}  // namespace fa2::flash
