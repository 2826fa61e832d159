// v6's shared memory as one struct: the Q tile, the ring of K and V stages, O's tile (STORE_TMA)
// and the mbarriers (TMA). Both kernels (lab/sm90_cp_async.cuh, sm90/forward_kernel.cuh) take their dynamic
// shared memory as a SharedStorage; HopperConfig::smem_bytes is its size, checked here.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "step07_benchmark/kernels/sm90/config.cuh"

namespace fa2::flash {

// The mbarriers of the warp-specialised kernel. Q is a ring of one stage: q_full counts the copy
// engine's bytes, q_empty one arrival per computing warp done reading it. The K/V ring has, per
// stage, K landed and V landed (the copy engine's bytes), and every computing warp done with K,
// with V. K and V are handed back separately: K_{j+1} is free once S_{j+1} is computed, half an
// iteration before V_j is.
template <int STAGES>
struct RingBarriers {
  std::uint64_t q_full;
  std::uint64_t q_empty;
  std::uint64_t full_k[STAGES];
  std::uint64_t full_v[STAGES];
  std::uint64_t empty_k[STAGES];
  std::uint64_t empty_v[STAGES];
};

// What a configuration leaves out takes no room ([[no_unique_address]] on an empty member).
struct NoOutputTile {};
struct NoBarriers {};

// Every tile is in wgmma's 128-byte-swizzle layout (sw128_offset): a (ROWS, D) tile is D / 64
// column blocks of (ROWS, 64), and every tile starts on a TILE_ALIGN (1024-byte) swizzle atom,
// since the hardware computes the swizzle from address bits. The tiles' sizes are multiples of
// an atom, so members laid out one after the other stay on atoms (storage_matches_config checks
// it); shared_storage() aligns the start.
template <class Cfg>
struct SharedStorage {
  static constexpr int kQElems = Cfg::BLOCK_M * Cfg::D, kKvElems = Cfg::BLOCK_N * Cfg::D;
  struct OutputTile {
    elem16 rows[kQElems];  // (BLOCK_M, D): O / l in bf16, read by the TMA store
  };

  elem16 q[kQElems];                // (BLOCK_M, D)
  elem16 k[Cfg::STAGES][kKvElems];  // STAGES x (BLOCK_N, D)
  elem16 v[Cfg::STAGES][kKvElems];  // STAGES x (BLOCK_N, D)
  [[no_unique_address]] std::conditional_t<Cfg::STORE_TMA, OutputTile, NoOutputTile> o;
  [[no_unique_address]] std::conditional_t<Cfg::TMA, RingBarriers<Cfg::STAGES>, NoBarriers> bar;
};

// The layout above is the one HopperConfig budgets for: tiles_bytes of tiles, each on an atom,
// then the barriers, and TILE_ALIGN to spare for aligning the start.
template <class Cfg>
constexpr bool storage_matches_config() {
  using S = SharedStorage<Cfg>;
  constexpr std::size_t atom = Cfg::TILE_ALIGN;
  constexpr std::size_t tiles_end = Cfg::STORE_TMA ? offsetof(S, o) + sizeof(S::o) : offsetof(S, v) + sizeof(S::v);
  constexpr bool on_atoms = offsetof(S, k) % atom == 0 && sizeof(S::k[0]) % atom == 0 && offsetof(S, v) % atom == 0 &&
                            (!Cfg::STORE_TMA || offsetof(S, o) % atom == 0);
  if constexpr (Cfg::TMA) {
    return on_atoms && tiles_end == Cfg::tiles_bytes && offsetof(S, bar) == Cfg::tiles_bytes &&
           offsetof(S, bar) + sizeof(S::bar) + Cfg::TILE_ALIGN == Cfg::smem_bytes;
  } else {
    return on_atoms && tiles_end == Cfg::tiles_bytes && tiles_end + Cfg::TILE_ALIGN == Cfg::smem_bytes;
  }
}

// The kernels address SharedStorage through these pointers to its members, each at its offsetof
// from the block's aligned start (every kernel rounds its dynamic shared memory up to TILE_ALIGN
// itself, in its own body: ptxas schedules the kernels' address arithmetic best that way). A
// stage of K or V is one (BLOCK_N, D) tile after the one before it.
template <class Cfg>
struct SmemTiles {
  using S = SharedStorage<Cfg>;
  static constexpr int kQElems = S::kQElems, kKvElems = S::kKvElems;
  elem16* q;  // SharedStorage::q
  elem16* k;  // SharedStorage::k[0]
  elem16* v;  // SharedStorage::v[0]
  elem16* o;  // SharedStorage::o (STORE_TMA)

  __device__ __forceinline__ explicit SmemTiles(unsigned char* start)
      : q(reinterpret_cast<elem16*>(start)),
        k(q + offsetof(S, k) / sizeof(elem16)),
        v(q + offsetof(S, v) / sizeof(elem16)),
        o(q + tiles_o_offset() / sizeof(elem16)) {
    static_assert(storage_matches_config<Cfg>(), "SharedStorage and HopperConfig::smem_bytes disagree");
  }
  __device__ __forceinline__ elem16* k_stage(int stage) const { return k + stage * kKvElems; }
  __device__ __forceinline__ elem16* v_stage(int stage) const { return v + stage * kKvElems; }

 private:
  static constexpr std::size_t tiles_o_offset() {
    if constexpr (Cfg::STORE_TMA) return offsetof(S, o);
    return offsetof(S, v) + sizeof(S::v);  // unused: the configuration has no O tile
  }
};

// The same for SharedStorage::bar (TMA): Q's two barriers and the ring's four arrays.
struct RingBarrierPtrs {
  std::uint64_t* q_full;
  std::uint64_t* q_empty;
  std::uint64_t* full_k;
  std::uint64_t* full_v;
  std::uint64_t* empty_k;
  std::uint64_t* empty_v;
};
template <class Cfg>
__device__ __forceinline__ RingBarrierPtrs ring_barriers(unsigned char* start) {
  using B = RingBarriers<Cfg::STAGES>;
  constexpr std::size_t word = sizeof(std::uint64_t);
  auto* q_full = reinterpret_cast<std::uint64_t*>(start + offsetof(SharedStorage<Cfg>, bar));
  return {q_full,
          q_full + offsetof(B, q_empty) / word,
          q_full + offsetof(B, full_k) / word,
          q_full + offsetof(B, full_v) / word,
          q_full + offsetof(B, empty_k) / word,
          q_full + offsetof(B, empty_v) / word};
}

}  // namespace fa2::flash
