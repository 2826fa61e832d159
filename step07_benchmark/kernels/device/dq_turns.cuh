// Deterministic dQ for the fast backwards (v5's, sm80/backward.cuh, and v6b, sm90/backward.cuh):
// the key tiles that add to a query tile take turns, in an order fixed before the run, so that
// every element of dQ_accum sums its shares in the same order on every run.
//
// One int32 counter per (batch element, query tile) in FlashBwdArgs::dq_semaphores, cleared by
// the preprocess, counts the warps that have added their part. The key tiles a query tile meets
// are 0 .. last (all of them, or causal those whose first key is not after the tile's last
// query); they add from the last down to 0. A block (or one of its warpgroups) waits until the
// counter has counted every warp of the key tiles before it in that order, adds, and each of its
// warps increments the counter once its own adds are done: no barrier of the block is needed to
// hand the turn on.
//
// Why this order cannot deadlock, and why no block idles waiting for its first turn: the
// deterministic grid starts the highest key tile first, so a writer only ever waits for blocks
// that started before it. And in this order no key tile waits at the start: causal, key tile n
// meets query tile m at step m - first(n), later than key tile n + 1 does, so turns follow the
// order in which the blocks arrive anyway; without the mask, all the blocks of a head walk the
// query tiles in step and each waits only for its predecessor's adds to land.
#pragma once

#include <cstdint>

#include "step07_benchmark/kernels/device/tile_scheduler.hpp"  // last_key_tile

namespace fa2::flash {

// A configuration's options (FastBwdOptions, HopperBwdOptions) with deterministic dQ: the kernels
// are compiled both ways, so that the turns cost nothing when they are not asked for.
template <class Options>
constexpr Options deterministic_twin(Options o) {
  o.deterministic = true;
  return o;
}

// Spins (one thread) until *counter >= count, with acquire semantics at GPU scope: once it
// returns, the adds the counter has counted are visible. The caller's barrier then passes this on
// to the threads that add.
__device__ __forceinline__ void wait_for_turn(const std::int32_t* counter, int count) {
  int seen;
  do {
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
  } while (seen < count);
}

// Counts a warp's adds as done (lane 0, after __syncwarp, which orders the other lanes' adds
// before it), or WARPS warps' when one thread added for them (v6b's dQ writer): the fence orders
// them before the increment the next writer waits for.
template <int WARPS = 1>
__device__ __forceinline__ void pass_turn(std::int32_t* counter) {
  asm volatile(
      "fence.acq_rel.gpu;\n"
      "red.relaxed.gpu.global.add.s32 [%0], %1;\n" ::"l"(counter),
      "n"(WARPS)
      : "memory");
}

}  // namespace fa2::flash
