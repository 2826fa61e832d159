// v6.1 to v6.5: the first generation of v6, loading with cp.async into a ring of stages that the
// whole block waits on with __syncthreads (v5's scheme), each warpgroup computing its key tiles
// with wgmma (key_tile.cuh). product/forward_sm90.cu launches hopper_fwd_kernel for the configurations
// without TMA; step07's APPENDIX.md (part D) measures them.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "step07_benchmark/kernels/device/forward_params.cuh"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/device/smem_tiles.cuh"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"
#include "step07_benchmark/kernels/device/warp_softmax.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"
#include "step07_benchmark/kernels/ptx/wgmma.cuh"
#include "step07_benchmark/kernels/sm90/key_tile.cuh"
#include "step07_benchmark/kernels/sm90/shared_storage.cuh"

namespace fa2::flash {

// ROWS rows of a (N, D) tensor from row0 into a (ROWS, D) tile in the 128-byte swizzle wgmma
// reads, in the background; rows past n_rows are zero-filled.
template <class Cfg, int ROWS>
__device__ __forceinline__ void load_tile_sw128(elem16* tile, const elem16* base, index_t row_stride, int row0,
                                                int n_rows) {
  load_rows_async<Cfg, ROWS>(tile, base, row_stride, row0, n_rows,
                             [](int r, int c) { return sw128_offset<ROWS>(r, c); });
}

// The overlapped loop (FlashAttention-3's intra-warpgroup pipelining): iteration j issues
// S_{j+1} = Q K_{j+1}^T and O += P_j V_j back to back, waits for S_{j+1} alone, computes its
// softmax in fp32 while O's product is still running, then waits for that, rescales O and packs
// P_{j+1} into the registers P_j held. (Writing the packed P during the wait would redefine
// registers an in-flight wgmma reads: ptxas would then serialise every wgmma.)
// Loads: tile t (K_t and V_t, one cp.async group; Q rides with tile 0) goes to stage t % STAGES.
// The first STAGES tiles are requested up front; iteration j >= 1 requests tile j - 1 + STAGES
// into the stage tile j - 1 left (S_{j-1} and P_{j-1} V_{j-1} finished before its barrier).
// n_seen: the tiles this warpgroup takes part in (causal: up to its last row; the block's
// n_tiles otherwise), at least 1.
template <class Cfg, class KStage, class VStage, class LoadTile>
__device__ __forceinline__ void hopper_key_loop_overlapped(const FastParams& p, int n_tiles, int n_seen,
                                                           RowState<Cfg>& st, const elem16* sQ, int wg,
                                                           const KStage& K_stage, const VStage& V_stage,
                                                           const LoadTile& load_tile, const WarpPlace& w) {
  constexpr int BN = Cfg::BLOCK_N, STAGES = Cfg::STAGES;
#pragma unroll
  for (int t = 0; t < STAGES; ++t) {
    if (t < n_tiles) load_tile(t);
    cp_async_commit();  // empty groups keep the count the waits below rely on
  }
  cp_async_wait<STAGES - 1>();  // Q and tile 0
  fence_proxy_async();
  __syncthreads();
  PFrags<Cfg> pa;
  {
    ScoreFrags<Cfg> s;
    issue_scores<Cfg>(s, sQ, wg, K_stage(0));  // every warpgroup sees tile 0
    wgmma_wait<0>();
    fence_accumulators(s[0]);
    float alpha[2];
    softmax_probabilities<Cfg>(s, st, alpha, 0, p, w);  // O is still 0
    pack_probabilities<Cfg>(s, pa);
  }
  for (int j = 0; j < n_tiles; ++j) {
    // Tile j + 1 must have landed: of the groups committed so far (STAGES, plus one per
    // iteration from the second on), only those after it may still be in flight.
    if (j == 0) {
      cp_async_wait<STAGES - 2>();
    } else {
      cp_async_wait<STAGES - 3>();
    }
    fence_proxy_async();
    __syncthreads();
    if (j > 0) {
      if (j - 1 + STAGES < n_tiles) load_tile(j - 1 + STAGES);
      cp_async_commit();
    }
    // Every branch below issues and waits the same way on every path (ptxas serialises wgmma it
    // cannot follow through conditional issues); the branch taken is the warpgroup's.
    if (j + 1 < n_seen) {
      ScoreFrags<Cfg> s;
      issue_scores<Cfg>(s, sQ, wg, K_stage(j + 1));
      issue_pv<Cfg>(st, pa, V_stage(j));
      wgmma_wait<1>();  // S_{j+1}; O += P_j V_j may still run
      fence_accumulators(s[0]);
      float alpha[2];
      softmax_probabilities<Cfg>(s, st, alpha, (j + 1) * BN, p, w);
      wgmma_wait<0>();  // P_j (pa) and O are free again
      fence_accumulators(st.o[0]);
      fence_fragments(pa);
      rescale_output<Cfg>(st, alpha);
      pack_probabilities<Cfg>(s, pa);
    } else if (j + 1 == n_seen) {
      issue_pv<Cfg>(st, pa, V_stage(j));  // the warpgroup's last tile
      wgmma_wait<0>();
      fence_accumulators(st.o[0]);
    }
  }
}

// The key loop. Groups of cp.async in flight at the start, oldest first: {Q, K_0}, {V_0}. Every
// tile: wait for K_j, S_j (wgmma), softmax, wait for V_j, O += P V_j (wgmma), with the loads of
// tile j + 1 issued behind each wait. A warpgroup whose rows all come before tile j skips it
// (the decision is the warpgroup's: wgmma needs all four warps).
template <class Cfg>
__device__ __forceinline__ void hopper_key_loop(const FastParams& p, index_t bh, int n_tiles, int wg_last_query,
                                                RowState<Cfg>& st, const SmemTiles<Cfg>& smem, int wg,
                                                const WarpPlace& w) {
  constexpr int BN = Cfg::BLOCK_N;
  const index_t kv = bh / p.kv_group;  // grouped-query attention: the head's K and V
  const elem16* Kb = p.K + kv * p.stride_kb;
  const elem16* Vb = p.V + kv * p.stride_vb;
  const elem16* sQ = smem.q;
  // Tile j lands in stage j % STAGES.
  const auto K_stage = [&](int j) { return smem.k_stage(j % Cfg::STAGES); };
  const auto V_stage = [&](int j) { return smem.v_stage(j % Cfg::STAGES); };
  const auto load_K = [&](int j) { load_tile_sw128<Cfg, BN>(K_stage(j), Kb, p.stride_kk, j * BN, p.N_KEYS); };
  const auto load_V = [&](int j) { load_tile_sw128<Cfg, BN>(V_stage(j), Vb, p.stride_vk, j * BN, p.N_KEYS); };
  const auto sees = [&](int j) { return !Cfg::CAUSAL || causal_tile_needed(j, wg_last_query, BN); };

  if constexpr (!Cfg::OVERLAP) {
    load_K(0);
    cp_async_commit();
    load_V(0);
    cp_async_commit();
    for (int j = 0; j < n_tiles; ++j) {
      const bool has_next = j + 1 < n_tiles;
      cp_async_wait<1>();  // K_j (and Q) landed
      fence_proxy_async();
      __syncthreads();
      if (has_next) load_K(j + 1);
      cp_async_commit();
      ScoreFrags<Cfg> s;
      if (sees(j)) {
        issue_scores<Cfg>(s, sQ, wg, K_stage(j));
        wgmma_wait<0>();
        fence_accumulators(s[0]);
        mask_scores<Cfg>(s, j * BN, p, w);
        online_softmax<Cfg>(s, st, p.scale_log2);
      }
      cp_async_wait<1>();  // V_j landed
      fence_proxy_async();
      __syncthreads();
      if (has_next) load_V(j + 1);
      cp_async_commit();
      if (sees(j)) {
        PFrags<Cfg> pa;
        pack_probabilities<Cfg>(s, pa);
        issue_pv<Cfg>(st, pa, V_stage(j));
        wgmma_wait<0>();
        fence_accumulators(st.o[0]);
      }
    }
  } else {
    const int n_seen = Cfg::CAUSAL ? causal_key_tiles(wg_last_query, BN, n_tiles) : n_tiles;
    const auto load_tile = [&](int j) {
      load_K(j);
      load_V(j);
    };
    hopper_key_loop_overlapped<Cfg>(p, n_tiles, n_seen, st, sQ, wg, K_stage, V_stage, load_tile, w);
  }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NUM_THREADS, Cfg::MIN_BLOCKS_PER_SM) hopper_fwd_kernel(const FastParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N;
  extern __shared__ unsigned char smem_raw[];
  // wgmma's swizzle is computed from address bits: every tile starts on a 1024-byte boundary.
  const std::uint32_t misalign = smem_address(smem_raw) % Cfg::TILE_ALIGN;
  const SmemTiles<Cfg> smem(smem_raw + (misalign ? Cfg::TILE_ALIGN - misalign : 0));

  // Non-causal blocks go in the order of their query tile, head by head (the blocks running
  // together share K and V in L2). Causal: the grid is (batch, query tiles), so the heaviest
  // tiles of every head start first and the light ones fill the tail.
  const int q_tile = query_tile_at<Cfg::CAUSAL>(static_cast<int>(Cfg::CAUSAL ? blockIdx.y : blockIdx.x), p.n_q_tiles);
  const index_t bh = Cfg::CAUSAL ? blockIdx.x : blockIdx.y;
  const int q0 = q_tile * BM;
  const int warp = static_cast<int>(threadIdx.x) / 32, wg = warp / 4;
  const WarpPlace w{static_cast<int>(threadIdx.x) % 32, warp * 16, q0 + warp * 16};

  const int n_tiles = key_tiles<Cfg::CAUSAL>(p.N_KEYS, BN, q0, BM, p.N_QUERIES);

  RowState<Cfg> st;
  init_row_state<Cfg>(st);
  load_tile_sw128<Cfg, BM>(smem.q, p.Q + bh * p.stride_qb, p.stride_qq, q0, p.N_QUERIES);  // lands with K_0
  hopper_key_loop<Cfg>(p, bh, n_tiles, q0 + 64 * wg + 63, st, smem, wg, w);
  cp_async_wait<0>();
  write_output<Cfg>(p, st, w, q0, bh, smem.q);
#else
  (void)p;  // built for another target: the launcher never starts it there
#endif
}

}  // namespace fa2::flash
