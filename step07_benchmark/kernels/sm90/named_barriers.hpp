// The named barriers (bar.sync / bar.arrive ids) of v6's warp-specialised kernel, one enum so that
// no two uses share an id by accident. consumer.cuh takes the ping-pong turns, epilogue.cuh the
// barriers around a warpgroup's rows of O in shared memory.
#pragma once

#include "common/host_device.hpp"

namespace fa2::flash {

// Id 0 is __syncthreads'; the hardware has 16.
enum class NamedBarrier : int {
  turn_wg0 = 1,      // ping-pong: warpgroup 0 may issue its products
  turn_wg1 = 2,      // ping-pong: warpgroup 1 may
  epilogue_wg0 = 3,  // O stored by TMA: warpgroup wg's rows of sO (epilogue_wg0 + wg, up to 3 warpgroups)
};
inline constexpr int kMaxWarpgroups = 3;
static_assert(static_cast<int>(NamedBarrier::epilogue_wg0) + kMaxWarpgroups <= 16, "16 named barriers");

// Ping-pong (two warpgroups): warpgroup wg's own turn, and the other one's.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int turn_barrier(int wg) {
  return static_cast<int>(NamedBarrier::turn_wg0) + wg;
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int other_turn_barrier(int wg) {
  return static_cast<int>(NamedBarrier::turn_wg1) - wg;
}
// Warpgroup wg's epilogue barrier.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int epilogue_barrier(int wg) {
  return static_cast<int>(NamedBarrier::epilogue_wg0) + wg;
}

}  // namespace fa2::flash
