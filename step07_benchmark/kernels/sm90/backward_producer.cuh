// The producer of v6b's warp-specialised kernel (sm90/backward.cuh), and what it shares with
// the computing warpgroups: the TMA views, where a block stands in the grid.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/backward_params.cuh"
#include "step07_benchmark/kernels/ptx/grid_dependency.cuh"
#include "step07_benchmark/kernels/ptx/tma.cuh"
#include "step07_benchmark/kernels/sm90/backward_config.cuh"
#include "step07_benchmark/kernels/sm90/pipeline.hpp"

namespace fa2::flash {

// The TMA views v6b reads (product/forward_sm90.cu makes them): Q, dO, K, V (bf16, boxes of 64 columns by
// BLOCK_M or BLOCK_N rows; only with the producer) and dQ_accum (float32, boxes of 32 columns by
// 64 rows; only with dq_tma). Packed, the ragged views of the packed tensors (ptx/tma.cuh).
struct HopperBwdMaps {
  CUtensorMap q, dO, k, v, dq_accum;
};

// Where a block stands: its key tile, its batch element of K and V, the query tiles it walks
// (causal, top-left: the tile's first key k0 is first seen by query k0; with a sliding window,
// only those whose queries' windows reach the tile; with grouped-query attention, those of every
// query head of the group or of its part of the group: QueryWalk) and
// its thread's place. One block per (batch element of K, part of its group, key tile), the key
// tile the slow index: causal, the heaviest blocks of every head start first (as v5's backward);
// deterministic, the last key tile first.
// Packed (Cfg::PACKED), one block per item of the schedule, whose key tile and kv head the
// block's copy of the parameters holds (bwd_item_params); head by head (Cfg::HEAD_MAJOR) likewise
// (head_major_params).
template <class Cfg>
struct BwdBlock {
  using Walk = BwdWalk<Cfg>;
  int k0;
  __device__ __forceinline__ explicit BwdBlock(const FastBwdParams& p) : k0(Walk::key_tile(p) * Cfg::BLOCK_N) {}
  // Its batch element of K and V, remade at each use (Walk::fresh) rather than held through the loop.
  __device__ __forceinline__ static index_t kv(const FastBwdParams& p) {
    return Walk::fresh(Walk::kv_slot(p)) / Walk::fresh(p.group_splits);
  }
  // The thread's place; with Cfg::UNIFORM_WG its warpgroup as lane 0 holds it (backward_config.cuh).
  __device__ __forceinline__ BwdThread thread(unsigned thread_index = threadIdx.x) const {
    const int tid = static_cast<int>(thread_index), lane = tid % 32;
    const int wg = Cfg::UNIFORM_WG ? __shfl_sync(0xffffffffu, tid / 128, 0) : tid / 128;
    return {wg, 16 * ((tid / 32) % 4) + lane / 4, 2 * (lane % 4), k0 + wg * Cfg::WG_KEYS};
  }
  // Where the walk starts: the first query tile of its first query head.
  __device__ __forceinline__ static StepPlace first(const FastBwdParams& p) {
    return {static_cast<int>(Walk::bh(p, 0)), Walk::m_begin(p) * Cfg::BLOCK_M};
  }
  // Where the walk goes after step `at`: the next query tile, or the first of the next query head
  // (no division on the way, as Walk::m and Walk::bh need).
  __device__ __forceinline__ static StepPlace next(const FastBwdParams& p, StepPlace at) {
    at.q0 += Cfg::BLOCK_M;
    if (at.q0 >= (Cfg::WINDOW ? Walk::m_end(p) * Cfg::BLOCK_M : p.N_QUERIES))
      at = {at.bh + 1, Walk::m_begin(p) * Cfg::BLOCK_M};
    return at;
  }
};

// Query row q of query batch element bh of L (WHICH 0) or D_i (WHICH 1), 0 where `valid` is false
// (rows past N_QUERIES). The pointers and strides are read from the kernel's parameters at each use.
template <int WHICH>
__device__ __forceinline__ float row_stat(const FastBwdParams& p, index_t bh, index_t q, bool valid) {
  if constexpr (WHICH == 0) {
    return valid ? p.L[bh * p.stride_lb + q * p.stride_lq] : 0.0f;
  } else {
    return valid ? p.D_rows[bh * p.stride_Db + q * p.stride_Dq] : 0.0f;
  }
}

// The producer's loads for one block: K_j and V_j once, then each step's Q_i and dO_i by TMA and
// its L_i and D_i by the warp's lanes (ordinary loads and stores: L and D may be strided, and a
// row of them is 256 bytes), into stage t % 2 once the computing warps have handed that stage
// back. Query rows past N_QUERIES arrive as zeros either way. A block whose walk is empty (its
// keys past every query, causal or windowed) loads nothing: it must not end with copies in flight.
template <class Cfg>
__device__ __forceinline__ void backward_producer(const FastBwdParams& p, const HopperBwdMaps& maps,
                                                  const BwdBlock<Cfg>& blk, std::uint32_t tiles, std::uint64_t* kv_full,
                                                  std::uint64_t* full, std::uint64_t* empty, int lane) {
  using L = BwdLayout<Cfg>;
  using Walk = typename BwdBlock<Cfg>::Walk;
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N, D = Cfg::D;
  const int kv = static_cast<int>(blk.kv(p));
  // The box of `map` at column col, row `row` of batch element (packed: head) `outer`: a dense
  // map's 3-D box, or the ragged map's box of the item's sequence (its rows `seq`).
  const auto load = [&](std::uint32_t dst, const CUtensorMap* map, int col, int row, int outer, RaggedRows seq,
                        std::uint64_t* bar) {
    if constexpr (Cfg::PACKED) {
      tma_load_ragged_at(dst, map, col, row, outer, seq, bar);
    } else {
      (void)seq;
      tma_load_3d_at(dst, map, col, row, outer, bar);
    }
  };
  if (lane == 0 && Walk::steps(p) > 0) {
    const RaggedRows keys{p.item_k_start, p.N_KEYS};
    mbarrier_arrive_expect_bytes(kv_full, 2 * L::kv_bytes);
    for (int cb = 0; cb < D / 64; ++cb) {
      load(tiles + L::k + cb * BN * 128, &maps.k, cb * 64, blk.k0, kv, keys, kv_full);
      load(tiles + L::v + cb * BN * 128, &maps.v, cb * 64, blk.k0, kv, keys, kv_full);
    }
  }
  if constexpr (Cfg::PDL) wait_for_prior_grids();  // D_i is the preprocess's (sm90/backward.cuh)
  for (int t = 0; t < Walk::steps(p); ++t) {
    const PipelineState<2> ring{t};
    const int s = ring.stage(), q0 = Walk::m(p, t) * BM;
    const index_t bh = Walk::bh(p, t);
    if (ring.refills()) mbarrier_wait(&empty[s], ring.release_phase());
    if constexpr (!Cfg::ROW_LOADERS) {
#pragma unroll
      for (int i = lane; i < BM; i += 32) {
        const bool valid = q0 + i < p.N_QUERIES;
        const index_t q = q0 + i;
        const float l = row_stat<0>(p, bh, q, valid);
        const float d = row_stat<1>(p, bh, q, valid);
        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tiles + L::L + s * L::row_bytes + 4 * i), "f"(l) : "memory");
        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tiles + L::D + s * L::row_bytes + 4 * i), "f"(d) : "memory");
      }
    }
    // Every lane's arrival releases its own stores; lane 0's also counts the copy engine's bytes.
    if (lane == 0) {
      store_step_place<Cfg>(tiles, t, {static_cast<int>(bh), q0});  // released by the arrival below
      mbarrier_arrive_expect_bytes(&full[s], 2 * L::q_bytes);
      const RaggedRows queries{p.item_q_start, p.N_QUERIES};
      for (int cb = 0; cb < D / 64; ++cb) {
        load(tiles + L::q + s * L::q_bytes + cb * BM * 128, &maps.q, cb * 64, q0, static_cast<int>(bh), queries,
             &full[s]);
        load(tiles + L::dO + s * L::q_bytes + cb * BM * 128, &maps.dO, cb * 64, q0, static_cast<int>(bh), queries,
             &full[s]);
      }
    } else {
      mbarrier_arrive(&full[s]);
    }
  }
}

// With 128-query steps (Cfg::ROW_LOADERS) the producer's warp has no registers for 4 rows of L
// and D per lane beside its TMA loads: the warpgroup's two other warps load them, one row each (0:
// L_i, 1: D_i), into stage t % 2 once it has been handed back, and arrive on its `full` barrier
// like the producer's lanes. The barriers are named by shared address: in 24 registers a warp
// has no room for two generic pointers.
template <class Cfg, int WHICH>
__device__ __forceinline__ void backward_row_loader(const FastBwdParams& p, std::uint32_t tiles, int lane) {
  static_assert(Cfg::ROW_LOADERS);
  using L = BwdLayout<Cfg>;
  using Walk = typename BwdBlock<Cfg>::Walk;
  constexpr int BM = Cfg::BLOCK_M;
  const std::uint32_t tile = tiles + (WHICH == 0 ? L::L : L::D);
  StepPlace at = BwdBlock<Cfg>::first(p);
  for (int t = 0; t < Walk::steps(p); ++t) {
    const PipelineState<2> ring{t};
    const int s = ring.stage();
    if (t > 0) at = BwdBlock<Cfg>::next(p, at);
    if (ring.refills()) mbarrier_wait(tiles + L::empty_bars + 8 * s, ring.release_phase());
#pragma unroll
    for (int i = lane; i < BM; i += 32) {
      const float x = row_stat<WHICH>(p, at.bh, at.q0 + i, at.q0 + i < p.N_QUERIES);
      asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tile + s * L::row_bytes + 4 * i), "f"(x) : "memory");
    }
    mbarrier_arrive(tiles + L::full_bars + 8 * s);  // releases this lane's stores
  }
}

}  // namespace fa2::flash
