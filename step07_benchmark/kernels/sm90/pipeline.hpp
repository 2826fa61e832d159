// Where a tile sits in a ring of STAGES shared-memory stages guarded by mbarriers: its stage and
// the phase its waits name. The producer and the consumers of v6's warp-specialised kernel
// (producer.cuh, consumer.cuh) advance it alike; tests/test_ring_protocol.cpp drives this same
// type through every interleaving of a host model of the ring.
#pragma once

#include <cstdint>

#include "common/host_device.hpp"

namespace fa2::flash {

// The ring's tiles are numbered 0, 1, 2, ... in the order the producer loads them; tile `count`
// goes to stage count % STAGES in round count / STAGES. An mbarrier completes one phase per round
// and a waiter names a phase by its parity, so the round's parity is the phase to wait for.
// The state is the count, and stage and phase are read from it: a consumer may jump to tile
// count + j (the ring runs on across the query tiles of a persistent block, and a warpgroup
// reaches a tile at its own pace), which an (index, phase) pair advanced by one could not do
// without a loop. Q is a ring of one stage: item k's Q is tile k.
template <int STAGES>
struct PipelineState {
  static_assert(STAGES >= 1, "a ring has at least one stage");
  int count = 0;

  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int stage() const { return count % STAGES; }
  // The parity of the phase in which this tile's `full` barrier completes: consumers wait for it.
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr std::uint32_t phase() const {
    return static_cast<std::uint32_t>((count / STAGES) & 1);
  }
  // Whether the stage held a tile in an earlier round, which the consumers must hand back (on the
  // stage's `empty` barrier) before this one may be loaded over it.
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr bool refills() const { return count >= STAGES; }
  // The parity of that hand-back's phase: the round before this one. The producer waits for it.
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr std::uint32_t release_phase() const {
    return static_cast<std::uint32_t>((count / STAGES - 1) & 1);
  }
  // The tile j places further on.
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr PipelineState operator+(int j) const { return {count + j}; }
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr PipelineState& operator+=(int j) {
    count += j;
    return *this;
  }
};

}  // namespace fa2::flash
