// The producer of v6's warp-specialised kernel (sm90/forward_kernel.cuh): one thread of the producer
// warpgroup loads every Q, K and V tile of the block's work items with TMA into SharedStorage,
// each stage once the computing warps have handed back the tile it held.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cstdint>

#include "step07_benchmark/kernels/device/forward_params.cuh"
#include "step07_benchmark/kernels/device/packed_schedule.hpp"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"
#include "step07_benchmark/kernels/ptx/tma.cuh"
#include "step07_benchmark/kernels/sm90/pipeline.hpp"
#include "step07_benchmark/kernels/sm90/shared_storage.cuh"

namespace fa2::flash {

// The tensor maps of Q, K, V and O (product/forward_sm90.cu makes them): each a 3-D (D, N, batch) view
// whose box is 64 columns (128 bytes, the swizzle's row) by BLOCK_M (Q), BLOCK_N (K, V) or 64 (O:
// one warpgroup's rows; only with STORE_TMA) rows.
struct HopperMaps {
  CUtensorMap q, k, v, o;
};

// The key tiles of the work item whose query tile starts at q0, as the producer loads them and the
// warpgroups walk them: every tile up to the tile's last query under the causal mask, with a
// sliding window (the Cfg::Windowed twins) only the tiles some query's window reaches, and never
// none (at_least_one_tile: a row that sees no key ends with l = 0, so O = 0 and L = +inf). In a
// packed batch a sequence may have no key at all.
template <class Cfg>
__device__ __forceinline__ KeyTileRange item_key_tiles(const FastParams& p, int q0) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N;
  const KeyTileRange range =
      query_tile_key_tiles<Cfg::CAUSAL, Cfg::WINDOW>(p.N_KEYS, BN, q0, BM, p.N_QUERIES, p.window_left, p.window_right);
  // Without a window or packed sequences, never empty.
  return Cfg::WINDOW || Cfg::PACKED ? at_least_one_tile(range, p.N_KEYS, BN) : range;
}

// A packed work item's parameters (Cfg::PACKED): its sequence's lengths, its window turned to the
// kernel's top-left alignment (packed_window), and O and L from the sequence's first row. Every
// function of the item then reads them as a dense kernel reads its one sequence's.
template <class Cfg>
__device__ __forceinline__ FastParams item_params(const FastParams& p, const PackedSequence& s) {
  FastParams ip = p;
  ip.N_QUERIES = s.n_q;
  ip.N_KEYS = s.n_k;
  if constexpr (Cfg::WINDOW) {
    const WindowBounds w = packed_window(p.window_left, p.window_right, s);
    ip.window_left = w.left;
    ip.window_right = w.right;
  }
  ip.O = p.O + static_cast<index_t>(s.q_start) * p.stride_oq;
  ip.L = p.L + static_cast<index_t>(s.q_start) * p.stride_lq;
  return ip;
}

// Runs fn(item's parameters, its query rows, its key rows) for work item wt: the dense kernels'
// parameters as they are (the rows unused), a packed item's from its sequence.
template <class Cfg, class Fn>
__device__ __forceinline__ void with_item(const FastParams& p, const WorkTile& wt, Fn&& fn) {
  if constexpr (Cfg::PACKED) {
    const PackedSequence s = p.sequences[wt.seq];
    fn(item_params<Cfg>(p, s), RaggedRows{s.q_start, s.n_q}, RaggedRows{s.k_start, s.n_k});
  } else {
    fn(p, RaggedRows{}, RaggedRows{});
  }
}

// The K/V ring's tiles, numbered across the block's items in the order they are loaded: item by
// item, key tile by key tile. Ring tile r (PipelineState{r}) goes to its stage once the computing
// warps have handed back the tile that stage held one round before; K_j and V_j wait for their
// own hand-back. Item k's Q, a ring of one stage, waits until every warp has handed back item
// k - 1's Q, and is loaded after the item's K_0 and V_0, so that those land while the warpgroups
// finish the item before (Q is read to the end of it).
template <class Cfg, class Scheduler>
__device__ __forceinline__ void hopper_producer(const FastParams& p, const HopperMaps& maps, const Scheduler& sched,
                                                int items, const SmemTiles<Cfg>& smem, const RingBarrierPtrs& bar) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N, D = Cfg::D;
  constexpr std::uint32_t tile_bytes = BN * D * sizeof(elem16);
  const auto block_item = [&](int k) {
    return sched.item(k, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));
  };
  // With CACHE_HINTS, K and V stay in L2 for the other query tiles that read them; Q, read by one
  // item only, leaves first.
  std::uint64_t keep = 0, pass = 0;
  if constexpr (Cfg::CACHE_HINTS) keep = l2_policy_evict_last(), pass = l2_policy_evict_first();
  // The box of `map` at column col and row `row` of batch element (or, packed, head) `outer`: a
  // dense map's 3-D box, or the ragged map's box of the sequence's rows `seq`.
  const auto load = [&](void* dst, const CUtensorMap* map, int col, int row, int outer, RaggedRows seq,
                        std::uint64_t* bar, std::uint64_t policy) {
    if constexpr (Cfg::PACKED) {
      if constexpr (Cfg::CACHE_HINTS) {
        tma_load_ragged_hinted(dst, map, col, row, outer, seq, bar, policy);
      } else {
        (void)policy;
        tma_load_ragged(dst, map, col, row, outer, seq, bar);
      }
    } else if constexpr (Cfg::CACHE_HINTS) {
      (void)seq;
      tma_load_3d_hinted(dst, map, col, row, outer, bar, policy);
    } else {
      (void)seq;
      (void)policy;
      tma_load_3d(dst, map, col, row, outer, bar);
    }
  };
  PipelineState<Cfg::STAGES> ring{};
  for (int k = 0, t = block_item(0); t < items; t = block_item(++k)) {
    const WorkTile wt = sched.work_tile(t);
    with_item<Cfg>(p, wt, [&](const FastParams& ip, RaggedRows q_rows, RaggedRows k_rows) {
      const int q0 = wt.q_tile * BM;
      const KeyTileRange range = item_key_tiles<Cfg>(ip, q0);
      const int n_tiles = range.end - range.first;  // never 0 (item_key_tiles)
      const int kv = wt.bh / ip.kv_group;           // grouped-query attention: the head's K and V
      for (int j = 0; j < n_tiles; ++j, ring += 1) {
        const int key0 = (range.first + j) * BN;
        const int s = ring.stage();
        // K_j, then V_j: each (D, BN) tile is D / 64 boxes of 64 columns, (BN, 64) blocks of the tile.
        if (ring.refills()) mbarrier_wait(&bar.empty_k[s], ring.release_phase());
        mbarrier_arrive_expect_bytes(&bar.full_k[s], tile_bytes);
        for (int cb = 0; cb < D / 64; ++cb) {
          load(smem.k_stage(s) + cb * BN * 64, &maps.k, cb * 64, key0, kv, k_rows, &bar.full_k[s], keep);
        }
        if (ring.refills()) mbarrier_wait(&bar.empty_v[s], ring.release_phase());
        mbarrier_arrive_expect_bytes(&bar.full_v[s], tile_bytes);
        for (int cb = 0; cb < D / 64; ++cb) {
          load(smem.v_stage(s) + cb * BN * 64, &maps.v, cb * 64, key0, kv, k_rows, &bar.full_v[s], keep);
        }
        if (j == 0) {
          const PipelineState<1> q{k};
          if (q.refills()) mbarrier_wait(bar.q_empty, q.release_phase());
          mbarrier_arrive_expect_bytes(bar.q_full, BM * D * sizeof(elem16));
          for (int cb = 0; cb < D / 64; ++cb) {
            load(smem.q + cb * BM * 64, &maps.q, cb * 64, q0, wt.bh, q_rows, bar.q_full, pass);
          }
        }
      }
    });
  }
}

}  // namespace fa2::flash
