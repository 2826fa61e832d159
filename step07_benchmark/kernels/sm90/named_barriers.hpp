// The named barriers (bar.sync / bar.arrive ids) of v6's warp-specialised kernel, one enum so that
// no two uses share an id by accident. consumer.cuh takes the ping-pong turns, epilogue.cuh the
// barriers around a warpgroup's rows of O in shared memory.
#pragma once

#include "common/host_device.hpp"

namespace fa2::flash {

// Id 0 is __syncthreads'; the hardware has 16.
enum class NamedBarrier : int {
  turn_wg0 = 1,      // turns: warpgroup wg may issue its products (turn_wg0 + wg, up to 3 warpgroups)
  epilogue_wg0 = 4,  // O stored by TMA: warpgroup wg's rows of sO (epilogue_wg0 + wg, up to 3 warpgroups)
};
inline constexpr int kMaxWarpgroups = 3;
static_assert(static_cast<int>(NamedBarrier::turn_wg0) + kMaxWarpgroups <= static_cast<int>(NamedBarrier::epilogue_wg0),
              "the turns' barriers end before the epilogue's");
static_assert(static_cast<int>(NamedBarrier::epilogue_wg0) + kMaxWarpgroups <= 16, "16 named barriers");

// Turns (ping-pong, or a round robin of three): warpgroup wg's own turn barrier.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int turn_barrier(int wg) {
  return static_cast<int>(NamedBarrier::turn_wg0) + wg;
}
// The turns go round: warpgroup wg passes to wg + 1, the last to warpgroup 0. At the start of a
// work item the last warpgroup opens warpgroup 0's first turn, and it does not pass after the
// item's last tile (tile j of n_tiles), so that each barrier sees as many openings as waits: every
// warpgroup takes one turn per tile of the item, skipped tiles included (consumer.cuh).
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int next_turn_barrier(int wg, int warpgroups) {
  return turn_barrier((wg + 1) % warpgroups);
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr bool opens_first_turn(int wg, int warpgroups) {
  return wg + 1 == warpgroups;
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr bool passes_turn(int wg, int warpgroups, int j, int n_tiles) {
  return wg + 1 < warpgroups || j + 1 < n_tiles;
}
// Warpgroup wg's epilogue barrier.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int epilogue_barrier(int wg) {
  return static_cast<int>(NamedBarrier::epilogue_wg0) + wg;
}

}  // namespace fa2::flash
