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
//
// Deferred turns (Cfg::DEFER_TURNS, the defer_turns option): waiting for a part's adds to land
// before its turn passes costs a trip to L2 and back per part, and the writer does nothing else
// meanwhile. Deferred, a step's turns pass at the end of the next step, once the writer has issued
// that step's adds: the previous adds land while it waits for the next turn and issues. Both
// warpgroups' parts of a step add to the same query tile (one counter). Split by keys, the second
// part's turn follows the first's in this very block, so the writer lands and passes what it holds
// before it waits there. No cycle of waits: a writer that holds a turn waits only for key tiles
// before its own in the order (its own held turn it passes first), and the first key tile of each
// order never waits (tests/test_deferred_turns.cpp checks it over every interleaving).
//
// But deferral chains the blocks: key tile n's turn at a query tile passes only once its writer
// has issued the next step's adds, which waits for key tile n + 1 to pass its turn there, which
// waits for n + 2's next adds, and so on. Blocks that run side by side then pass a step's turns
// one after the other, a writer's wait, issue and pass each. Joint turns (Cfg::JOINT_TURNS, the
// joint_turns option, where the warpgroups' parts are disjoint): the writer issues both parts'
// adds after one wait, lets their tiles go as soon as they are read, waits once for both to land
// and passes the step's turn for both warpgroups. A turn then waits only for the same step of the
// key tile before it in the order, never for a next step: with the causal mask that block started
// earlier and is a step ahead, so no block waits once the writer's round trip is shorter than a
// step.
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

// A turn the dQ writer holds (deferred turns): its counter, as the offset in dq_semaphores plus one
// (0: none), to be counted up by WARPS once passed.
template <int WARPS>
__device__ __forceinline__ void pass_held_turn(std::int32_t* semaphores, std::uint32_t& held) {
  if (held != 0) pass_turn<WARPS>(semaphores + (held - 1));
  held = 0;
}

template <class Cfg>
__device__ __forceinline__ void dq_writer(const FastBwdParams& p, const HopperBwdMaps& maps, const BwdBlock<Cfg>& blk,
                                          std::uint32_t tiles, int lane) {
  static_assert(Cfg::DQ_WRITER);
  using L = BwdLayout<Cfg>;
  using Walk = typename BwdBlock<Cfg>::Walk;
  const int steps = Walk::steps(p);
  // Deferred turns (lane 0): the counters of the previous step's parts and of this step's (joint
  // turns: this step's, passed at its end). Both warpgroups add at every step: split by keys the
  // writer holds the second's turn only (4 warps), else both (8).
  [[maybe_unused]] std::uint32_t held = 0, now = 0;
  constexpr int kHeldWarps = Cfg::DQ_SPLIT == Cfg::DqSplit::by_keys ? 4 : 4 * Cfg::WARPGROUPS;
  // Every staging tile starts free (as many arrivals on each barrier as the warpgroups will wait there).
  for (int t = 0; t < Cfg::DQ_STAGES && t < steps; ++t) {
    for (int wg = 0; wg < Cfg::WARPGROUPS; ++wg) {
      named_barrier_arrive(static_cast<int>(BwdBarrier::dq_empty0) + dq_slot<Cfg>(wg, t), kDqHandoverThreads);
    }
  }
#pragma unroll 1
  for (int t = 0; t < steps; ++t) {
    // The warpgroup of the higher keys first: split by keys, that is the order of their turns.
#pragma unroll 1
    for (int wg = Cfg::WARPGROUPS - 1; wg >= 0; --wg) {
      const int id = dq_slot<Cfg>(wg, t);
      named_barrier_sync(static_cast<int>(BwdBarrier::dq_full0) + id, kDqHandoverThreads);
      if (lane == 0) {
        const DqPlace at = ld_shared_dq_place(tiles + L::dq_places + 16 * id);
        const QueryPart<Cfg> part(wg);
        std::int32_t* counter = nullptr;
        if constexpr (Cfg::DETERMINISTIC) {
          counter = query_tile_counter<Cfg>(p, at.bh, at.q0);
          if constexpr (Cfg::DEFER_TURNS && Cfg::DQ_SPLIT == Cfg::DqSplit::by_keys) {
            if (now != 0) {  // this turn comes after the other warpgroup's, held here
              bulk_wait();
              pass_held_turn<4>(p.dq_semaphores, held);
              pass_held_turn<4>(p.dq_semaphores, now);
            }
          }
          // Joint turns: the second part's turn is the first's, already waited for.
          if (!Cfg::JOINT_TURNS || wg == Cfg::WARPGROUPS - 1) {
            if constexpr (Cfg::TURN_IN_PLACE) {
              wait_for_turn(counter, at.turn);
            } else {
              const BwdThread th{wg, 0, 0, blk.k0 + wg * Cfg::WG_KEYS};
              wait_for_turn(counter, dq_turn<Cfg>(p, at.q0, th));
            }
          }
        }
        const std::uint32_t staged = tiles + L::dQ + id * L::dq_bytes;
#pragma unroll
        for (int box = 0; box < Cfg::DQ_COLS / 32; ++box) {
          if constexpr (Cfg::PACKED) {
            tma_reduce_add_ragged(&maps.dq_accum, staged + box * L::dq_box_bytes, part.col0 + 32 * box,
                                  at.q0 + part.query0, at.bh, RaggedRows{p.item_q_start, p.N_QUERIES});
          } else {
            tma_reduce_add_3d(&maps.dq_accum, staged + box * L::dq_box_bytes, part.col0 + 32 * box, at.q0 + part.query0,
                              at.bh);
          }
        }
        bulk_commit();
        if constexpr (Cfg::DETERMINISTIC && Cfg::DEFER_TURNS) {
          bulk_wait_read<0>();
          now = static_cast<std::uint32_t>(counter - p.dq_semaphores) + 1;
        } else if constexpr (Cfg::DETERMINISTIC && Cfg::JOINT_TURNS) {
          bulk_wait_read<0>();
          if (wg == 0) now = static_cast<std::uint32_t>(counter - p.dq_semaphores) + 1;
        } else if constexpr (Cfg::DETERMINISTIC) {
          bulk_wait();  // landed before the turn passes: a warpgroup's 4 warps' worth
          pass_turn<4>(counter);
        } else {
          bulk_wait_read<0>();
        }
      }
      __syncwarp();
      // The tile is free again; its last use needs no arrival (none would be waited for).
      if (t + Cfg::DQ_STAGES < steps)
        named_barrier_arrive(static_cast<int>(BwdBarrier::dq_empty0) + id, kDqHandoverThreads);
    }
    if constexpr (Cfg::DETERMINISTIC && Cfg::JOINT_TURNS) {
      if (lane == 0) {
        bulk_wait();  // both parts landed: the step's turn passes, for both warpgroups' warps
        pass_held_turn<4 * Cfg::WARPGROUPS>(p.dq_semaphores, now);
      }
    }
    if constexpr (Cfg::DETERMINISTIC && Cfg::DEFER_TURNS) {
      if (lane == 0) {
        // The previous step's adds have landed once at most this step's are in flight: its turns pass.
        bulk_wait<Cfg::DQ_SPLIT == Cfg::DqSplit::by_keys ? 1 : Cfg::WARPGROUPS>();
        pass_held_turn<kHeldWarps>(p.dq_semaphores, held);
        held = now;
        now = 0;
      }
    }
  }
  if (lane == 0) {
    bulk_wait();  // the reduce-adds are complete before the block ends
    if constexpr (Cfg::DETERMINISTIC && Cfg::DEFER_TURNS) pass_held_turn<kHeldWarps>(p.dq_semaphores, held);
  }
}

}  // namespace fa2::flash
