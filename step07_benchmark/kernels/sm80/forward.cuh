// Variant 5: the same algorithm as step05's kernel (FlashAttention-2's forward, one query tile
// per block, the key tiles streamed through), written directly against the tensor cores instead
// of through tile pointers and WMMA. Everything lives in registers between the two products (S,
// P and O never touch shared memory), the tensor cores are driven with mma.sync m16n8k16,
// operands reach them through ldmatrix, K and V tiles stream in with cp.async while the previous
// tile is being computed, and shared memory is XOR-swizzled so that ldmatrix reads are free of
// bank conflicts. It keeps variants 2 to 4: causal tile skipping, exp2 with the scale folded into
// one multiply-add, and masks only on the tiles that need them. step07's GUIDE.md explains each
// idea in turn; its README gives the measurements.
//
// Layout of the work: a thread block owns BLOCK_M = 16 * WARP_M * NUM_WARPS query rows of one
// (batch, head); warp w owns 16 * WARP_M of them and loops over all key tiles of BLOCK_N keys.
// bf16 or fp16 (Cfg::FLOAT16), head dims 32, 64, 128. The parts:
//   sm80/forward_config.cuh    FastOptions and FastConfig (device/forward_params.cuh: FastParams;
//                              device/smem_tiles.cuh: the tiles' shared-memory addressing)
//   sm80/warp_products.cuh     one warp's S = Q K^T and O += P V; the K/V stages
//   device/warp_softmax.cuh    one warp's masks, online softmax and store (shared with sm90/)
//   this file                  the key loops and the kernel
//   sm80/launch.cuh            its launch; instances/sm80.cuh, the kernels the tables ask for
//   product/forward.cu         the argument checks and the plans (product/plan.hpp)
#pragma once

#include <cuda_bf16.h>

#include "step07_benchmark/kernels/device/tile_scheduler.hpp"
#include "step07_benchmark/kernels/device/warp_softmax.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"
#include "step07_benchmark/kernels/sm80/forward_config.cuh"
#include "step07_benchmark/kernels/sm80/warp_products.cuh"

namespace fa2::flash {

// The overlapped loop: S_{j+1} is computed before the softmax of tile j, so the tensor cores and
// the exp unit work at the same time. Groups in flight at the start, oldest first: {Q, K_0},
// {K_1}, {V_0}.
template <class Cfg>
__device__ __forceinline__ void key_loop_overlapped(const KeyStream<Cfg>& ks, int n_tiles, RowState<Cfg>& st,
                                                    QFrags<Cfg>& qf, const elem16* sQ, const WarpPlace& w) {
  constexpr int BN = Cfg::BLOCK_N;
  ks.load_K(0);
  cp_async_commit();
  if (n_tiles > 1) ks.load_K(1);
  cp_async_commit();
  ks.load_V(0);
  cp_async_commit();
  cp_async_wait<2>();
  __syncthreads();
  load_q_fragments<Cfg>(qf, sQ, w);
  ScoreFrags<Cfg> s;
  if (ks.sees(0)) ks.scores(s, 0, qf, sQ, w);
  for (int j = 0; j < n_tiles; ++j) {
    const bool has_next = j + 1 < n_tiles;
    // K_{j+1} has landed (only V_j may still be in flight); K_j's stage was last read when
    // S_j was computed, before this barrier: it takes K_{j+2}.
    cp_async_wait<1>();
    __syncthreads();
    if (j + 2 < n_tiles) ks.load_K(j + 2);
    cp_async_commit();
    ScoreFrags<Cfg> s_next;
    // S_{j+1} does not depend on the softmax of tile j below: the two overlap.
    if (has_next && ks.sees(j + 1)) ks.scores(s_next, j + 1, qf, sQ, w);
    if (ks.sees(j)) online_softmax<Cfg>(s, st, ks.p.scale_log2);
    // V_j has landed (only K_{j+2} may still be in flight); V_{j-1}'s stage is free.
    cp_async_wait<1>();
    __syncthreads();
    if (has_next) ks.load_V(j + 1);
    cp_async_commit();
    if (ks.sees(j)) accumulate_pv<Cfg>(st, s, ks.V_stage(j), w.lane);
#pragma unroll
    for (int mt = 0; mt < Cfg::WARP_M; ++mt)
#pragma unroll
      for (int t = 0; t < BN / 8; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][t][e] = s_next[mt][t][e];
  }
}

// Split waits: K and V of a tile are separate cp.async groups, so the wait before S needs only
// K_j, and V_j lands while S computes. Groups at the start: {Q, K_0}, {V_0}.
template <class Cfg>
__device__ __forceinline__ void key_loop_split_waits(const KeyStream<Cfg>& ks, int n_tiles, RowState<Cfg>& st,
                                                     QFrags<Cfg>& qf, const elem16* sQ, const WarpPlace& w) {
  ks.load_K(0);
  cp_async_commit();
  ks.load_V(0);
  cp_async_commit();
  for (int j = 0; j < n_tiles; ++j) {
    const bool has_next = j + 1 < n_tiles;
    // K_j (with Q on the first tile) has landed; V_j may still be in flight. Every warp has
    // finished tile j - 1, so the other K stage is free for K_{j+1}.
    cp_async_wait<1>();
    __syncthreads();
    if (has_next) ks.load_K(j + 1);
    cp_async_commit();
    if (j == 0) load_q_fragments<Cfg>(qf, sQ, w);
    ScoreFrags<Cfg> s;
    if (ks.sees(j)) {
      ks.scores(s, j, qf, sQ, w);
      online_softmax<Cfg>(s, st, ks.p.scale_log2);
    }
    // V_j has landed (only K_{j+1} may still be in flight); the other V stage held V_{j-1},
    // finished before this iteration's first barrier.
    cp_async_wait<1>();
    __syncthreads();
    if (has_next) ks.load_V(j + 1);
    cp_async_commit();
    if (ks.sees(j)) accumulate_pv<Cfg>(st, s, ks.V_stage(j), w.lane);
  }
}

// One wait for K and V together: with two stages, tile j + 1 loads while tile j computes; with
// one, load, wait, compute, in turn (the ablation's first steps).
template <class Cfg>
__device__ __forceinline__ void key_loop_joint_wait(const KeyStream<Cfg>& ks, int n_tiles, RowState<Cfg>& st,
                                                    QFrags<Cfg>& qf, const elem16* sQ, const WarpPlace& w) {
  ks.load_K(0);
  ks.load_V(0);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  for (int j = 0; j < n_tiles; ++j) {
    const bool has_next = j + 1 < n_tiles;
    if constexpr (Cfg::STAGES == 2) {
      // The other stage held tile j - 1, finished by every warp before the barrier that ended
      // the previous iteration: it takes tile j + 1 while tile j computes.
      if (has_next) {
        ks.load_K(j + 1);
        ks.load_V(j + 1);
      }
      cp_async_commit();
    }
    if (j == 0) load_q_fragments<Cfg>(qf, sQ, w);
    ScoreFrags<Cfg> s;
    if (ks.sees(j)) {
      ks.scores(s, j, qf, sQ, w);
      online_softmax<Cfg>(s, st, ks.p.scale_log2);
      accumulate_pv<Cfg>(st, s, ks.V_stage(j), w.lane);
    }
    if (has_next) {
      if constexpr (Cfg::STAGES == 1) {
        __syncthreads();  // everyone is done with the only stage
        ks.load_K(j + 1);
        ks.load_V(j + 1);
        cp_async_commit();
      }
      cp_async_wait<0>();
      __syncthreads();  // tile j + 1 is visible to all, and tile j is no longer read
    }
  }
}

// ---- one query tile of one (batch, head): the whole forward for BLOCK_M rows ----------------
template <class Cfg>
__device__ __forceinline__ void attend_query_tile(const FastParams& p, const int q_tile, const index_t bh, elem16* sQ,
                                                  elem16* sK, elem16* sV) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int q0 = q_tile * BM;
  const WarpPlace w{static_cast<int>(threadIdx.x) % 32, warp * 16 * Cfg::WARP_M, q0 + warp * 16 * Cfg::WARP_M};
  const index_t kv = bh / p.kv_group;  // grouped-query attention: the head's K and V

  // Causal: keys after the block's last real query are invisible to all of it. A sliding
  // window: so are the keys before its first query's window and after its last query's.
  const KeyTileRange range =
      query_tile_key_tiles<Cfg::CAUSAL, Cfg::WINDOW>(p.N_KEYS, BN, q0, BM, p.N_QUERIES, p.window_left, p.window_right);
  const int first_tile = range.first, n_tiles = range.count();
  const KeyStream<Cfg> ks{
      p, p.K + kv * p.stride_kb, p.V + kv * p.stride_vb, sK, sV, w.q0_warp + 16 * Cfg::WARP_M - 1, first_tile};

  RowState<Cfg> st;
  init_row_state<Cfg>(st);
  QFrags<Cfg> qf;
  load_tile_async<Cfg, BM>(sQ, p.Q + bh * p.stride_qb, p.stride_qq, q0, p.N_QUERIES);  // lands with K_0
  if constexpr (Cfg::OVERLAP) {
    key_loop_overlapped<Cfg>(ks, n_tiles, st, qf, sQ, w);
  } else if constexpr (Cfg::SPLIT_KV) {
    key_loop_split_waits<Cfg>(ks, n_tiles, st, qf, sQ, w);
  } else {
    key_loop_joint_wait<Cfg>(ks, n_tiles, st, qf, sQ, w);
  }
  cp_async_wait<0>();  // nothing may still be landing in shared memory when the block moves on
  write_output<Cfg, Cfg::WINDOW>(p, st, w, q0, bh, sQ);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NUM_THREADS, Cfg::MIN_BLOCKS_PER_SM) fast_fwd_kernel(const FastParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto* sQ = reinterpret_cast<elem16*>(smem_raw);         // (BLOCK_M, D)
  elem16* sK = sQ + Cfg::BLOCK_M * Cfg::D;                // STAGES x (BLOCK_N, D)
  elem16* sV = sK + Cfg::STAGES * Cfg::BLOCK_N * Cfg::D;  // STAGES x (BLOCK_N, D)
  const index_t bh = blockIdx.y;
  if constexpr (Cfg::CAUSAL_PAIRS) {
    // Causal work grows with the query tile: tile i needs about i + 1 key-tile steps. Pairing
    // tile n-1-i with tile i gives every block the same amount of work. (A loop, not two
    // calls: one copy of the body keeps the register allocation of the unpaired kernel.)
    const int heavy = query_tile_at<true>(static_cast<int>(blockIdx.x), p.n_q_tiles);
    const int light = static_cast<int>(blockIdx.x);
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) {
        if (light >= heavy) break;
        __syncthreads();  // the first tile's epilogue may still be reading shared memory
      }
      attend_query_tile<Cfg>(p, pass == 0 ? heavy : light, bh, sQ, sK, sV);
    }
  } else {
    // Causal blocks near the bottom have the most key tiles: start those first.
    const int q_tile = query_tile_at<Cfg::CAUSAL>(static_cast<int>(blockIdx.x), p.n_q_tiles);
    attend_query_tile<Cfg>(p, q_tile, bh, sQ, sK, sV);
  }
}

}  // namespace fa2::flash
