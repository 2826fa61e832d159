// Variant 6: v5's forward (fa2_fast.cuh) with its two products moved from mma.sync to Hopper's
// wgmma (wgmma_primitives.cuh). A warpgroup of four warps owns 64 query rows and multiplies them
// in one instruction per 16-deep slice, Q and K straight from shared memory; P stays in
// registers and feeds O += P V as the A operand. wgmma runs in the background, so the first
// change it allows is overlap: S_{j+1} = Q K_{j+1}^T is issued before the softmax of tile j and
// computes while the exponentials do (OVERLAP). The online softmax, the masks and the epilogue
// are v5's functions, unchanged: a warp's 16 rows of a wgmma accumulator have mma.sync's layout.
//
// Shared memory holds every tile in wgmma's 128-byte-swizzle layout: a (ROWS, D) tile is D / 64
// column blocks of (ROWS, 64), each 1024-byte aligned; for D = 64 that is v5's own layout.
// bf16, head dims 64 and 128, sm_90a only (fa2_hopper.cu; the kernel body is empty elsewhere).
#pragma once

#include <cuda_bf16.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "step07_benchmark/kernels/fast/exp2_fma.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast.cuh"  // FastParams, RowState, the softmax and epilogue
#include "step07_benchmark/kernels/fast/mma_primitives.cuh"
#include "step07_benchmark/kernels/fast/tma_primitives.cuh"
#include "step07_benchmark/kernels/fast/wgmma_primitives.cuh"

namespace fa2::fast {

struct HopperOptions {
  int warpgroups = 2;         // 64 query rows each; they share the K and V tiles of the block
  int block_n = 128;          // keys per tile (the N of S's wgmma): 64, 128, or 176 with TMA
  bool overlap = false;       // S_{j+1} and O += P_j V_j compute during the softmax of tile j + 1
  int stages = 2;             // K/V tiles in shared memory: the overlapped loop loads stages - 1 ahead
  int min_blocks = 1;         // blocks per SM the registers must leave room for
  bool tma = false;           // warp specialisation: a producer warpgroup (one thread of it) loads Q,
                              // K, V with TMA into a ring of stages guarded by mbarriers; the other
                              // warpgroups only compute, with the producer's registers
  bool pingpong = false;      // (TMA, 2 warpgroups) the warpgroups take turns to issue their products,
                              // so that one's softmax runs while the other's products do
  bool store_tma = false;     // (TMA) O leaves through shared memory: each warpgroup writes its rows
                              // there and one thread stores them with TMA, in the background
  bool persistent = false;    // (TMA) one block per SM, walking the query tiles heaviest first; the
                              // producer loads the next tile's Q and K/V during this one's epilogue
  bool lazy_rescale = false;  // skip O *= alpha in a warp whose rows all kept their maximum
  bool early_q = false;       // (persistent) each warp hands Q back after its last S, not after its
                              // last product: the next item's Q loads during this one's last tile
  int exp_fma_eighths = 0;    // of every 8 column groups of S (8 keys each), how many take 2^x
                              // from a cubic on the FMA units (exp2_fma.hpp) instead of MUFU
};

template <int D_, bool CAUSAL_, HopperOptions OPT>
struct HopperConfig {
  static constexpr int D = D_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr int WARPGROUPS = OPT.warpgroups;
  static constexpr bool TMA = OPT.tma;
  static constexpr int NUM_WARPS = 4 * WARPGROUPS;                     // the computing warps
  static constexpr int NUM_THREADS = 32 * NUM_WARPS;                   // what the cp.async loads split over
  static constexpr int BLOCK_THREADS = NUM_THREADS + (TMA ? 128 : 0);  // + the producer warpgroup
  // Registers after setmaxnreg (the block starts with 65536 / BLOCK_THREADS each, rounded down to
  // a multiple of 8): the producer keeps few, the computing warpgroups share the rest. Two
  // warpgroups: 40 and 232, or 24 and 240 for the larger S of 176-key tiles; three: 24 and 160.
  static constexpr int PRODUCER_REGS = WARPGROUPS == 2 && OPT.block_n != 176 ? 40 : 24;
  static constexpr int CONSUMER_REGS = WARPGROUPS == 2 ? (OPT.block_n == 176 ? 240 : 232) : 160;
  static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * NUM_THREADS <= 65536, "the register file");
  static constexpr int BLOCK_M = 64 * WARPGROUPS;
  // 176-key tiles are for the unmasked case: under the causal mask their extra registers spill,
  // and the configuration takes 128-key tiles instead (FlashAttention-3 does the same).
  static constexpr int BLOCK_N = CAUSAL && OPT.block_n == 176 ? 128 : OPT.block_n;
  static constexpr bool OVERLAP = OPT.overlap;
  // What v5's functions read (online_softmax, mask_scores, write_output): one 16-row tile per
  // warp, O stored straight from registers.
  static constexpr int WARP_M = 1;
  static constexpr bool O_VIA_SMEM = false;
  static constexpr int CHUNKS = D / 8;
  static constexpr int STAGES = OPT.stages;
  static constexpr int MIN_BLOCKS_PER_SM = OPT.min_blocks;
  static constexpr int TILE_ALIGN = 1024;  // a swizzle atom: 8 rows of 128 bytes
  static constexpr bool STORE_TMA = OPT.store_tma;
  static constexpr bool PERSISTENT = OPT.persistent;
  static constexpr bool LAZY_RESCALE = OPT.lazy_rescale;
  static constexpr int EXP_FMA_EIGHTHS = OPT.exp_fma_eighths;
  static constexpr bool EARLY_Q = OPT.early_q;
  // Q, the K/V stages and (STORE_TMA) O's own tile, so that the next Q can land during the epilogue.
  static constexpr std::size_t tiles_bytes =
      static_cast<std::size_t>((STORE_TMA ? 2 : 1) * BLOCK_M + 2 * STAGES * BLOCK_N) * D * sizeof(__nv_bfloat16);
  // The tiles, then (TMA) the mbarriers: Q full, Q empty, and per stage K full, V full, K empty,
  // V empty.
  static constexpr std::size_t smem_bytes = tiles_bytes + (TMA ? (2 + 4 * STAGES) * 8 : 0) + TILE_ALIGN;
  static_assert(smem_bytes <= 227 * 1024, "an H100/H200 block has at most 227 KiB of shared memory");
  static_assert(TMA || (!STORE_TMA && !PERSISTENT), "the TMA store and the persistent loop need the producer");
  static_assert(D == 64 || D == 128, "head dims 64 and 128");
  static_assert(BLOCK_N == 64 || BLOCK_N == 128 || (BLOCK_N == 176 && TMA), "key tiles of 64, 128 or (TMA) 176");
  static_assert(WARPGROUPS == 2 || WARPGROUPS == 3, "two or three warpgroups");
  static_assert(!EARLY_Q || PERSISTENT, "handing Q back early pays only when a block loads another");
  static_assert(EXP_FMA_EIGHTHS >= 0 && EXP_FMA_EIGHTHS <= 8, "a share of the exponentials in eighths");
  static_assert(TMA || (OVERLAP ? (STAGES == 3 || STAGES == 4) : STAGES == 2),
                "the overlapped loop keeps 3 or 4 K/V stages, the plain loop 2");
  static_assert(!TMA || (OVERLAP && STAGES >= 2), "the producer warp feeds the overlapped loop");
  static constexpr bool PINGPONG = OPT.pingpong;
  static_assert(!PINGPONG || (TMA && WARPGROUPS == 2), "ping-pong between the two warpgroups of a TMA block");
};

// Element offset of 16-byte chunk `chunk` of row `row` in a (ROWS, D) tile in the 128-byte-swizzle
// layout: column block chunk / 8, then the row, then the chunk XOR-ed with the row's place in its
// 8-row atom.
template <int ROWS>
__device__ __forceinline__ int sw128_offset(int row, int chunk) {
  return (chunk / 8) * ROWS * 64 + row * 64 + ((chunk % 8) ^ (row % 8)) * 8;
}

// ROWS rows of a (N, D) tensor from row0 into a (ROWS, D) tile, in the background; rows past
// n_rows are zero-filled (as v5's load_tile_async).
template <class Cfg, int ROWS>
__device__ __forceinline__ void load_tile_sw128(__nv_bfloat16* tile, const __nv_bfloat16* base, index_t row_stride,
                                                int row0, int n_rows) {
  constexpr int total = ROWS * Cfg::CHUNKS;
#pragma unroll
  for (int i = static_cast<int>(threadIdx.x); i < total; i += Cfg::NUM_THREADS) {
    const int r = i / Cfg::CHUNKS, c = i % Cfg::CHUNKS;
    const bool valid = row0 + r < n_rows;
    const __nv_bfloat16* src = valid ? base + static_cast<index_t>(row0 + r) * row_stride + c * 8 : base;
    cp_async_16(smem_address(tile + sw128_offset<ROWS>(r, c)), src, valid);
  }
}

// S = Q K_j^T for the warpgroup's 64 rows: D / 16 wgmma, issued and committed as one group (not
// waited for). sQ_wg is the warpgroup's first row of the (BLOCK_M, D) Q tile.
template <class Cfg>
__device__ __forceinline__ void issue_scores(ScoreFrags<Cfg>& s, const __nv_bfloat16* sQ, int wg,
                                             const __nv_bfloat16* sKj) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < Cfg::D / 16; ++kk) {
    // Slice kk: column block kk / 4, 32 bytes further per slice inside the 128-byte row.
    const int block = kk / 4, within = (kk % 4) * 16;
    const std::uint64_t a = sw128_descriptor(sQ + block * BM * 64 + wg * 64 * 64 + within, 16, 1024);
    const std::uint64_t b = sw128_descriptor(sKj + block * BN * 64 + within, 16, 1024);
    wgmma_ss<BN>(s[0], a, b, kk > 0);
  }
  wgmma_commit();
}

template <class Cfg>
using PFrags = std::uint32_t[Cfg::BLOCK_N / 16][4];

// The online softmax of one tile for the overlapped loop: v5's online_softmax without the O
// rescale, since a wgmma may still be accumulating into O. S becomes P (fp32) in place, m and l
// move, and alpha returns the factor O must be multiplied by once that wgmma is done.
template <class Cfg>
__device__ __forceinline__ void softmax_probabilities(ScoreFrags<Cfg>& s, RowState<Cfg>& st, float (&alpha)[2], int k0,
                                                      int N_KEYS, float scale_log2, const WarpPlace& w) {
  constexpr int BN = Cfg::BLOCK_N;
  mask_scores<Cfg>(s, k0, N_KEYS, w);
  float row_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int t = 0; t < BN / 8; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) row_max[e >> 1] = fmaxf(row_max[e >> 1], s[0][t][e]);
  float neg_m[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row_max[h] = fmaxf(row_max[h], __shfl_xor_sync(0xffffffffu, row_max[h], 1));
    row_max[h] = fmaxf(row_max[h], __shfl_xor_sync(0xffffffffu, row_max[h], 2));
    const float m_new = fmaxf(st.m[0][h], row_max[h] * scale_log2);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet: no NaN
    alpha[h] = exp2_approx(st.m[0][h] - m_use);
    st.m[0][h] = m_new;
    st.l[0][h] *= alpha[h];
    neg_m[h] = -m_use;
  }
#pragma unroll
  for (int t = 0; t < BN / 8; ++t) {
    // Column groups t with (t * share) mod 8 < share take the cubic: share of every 8, spread
    // evenly (share 2: t = 0, 4, 8, ...) so the two kinds of work interleave. Decided at compile
    // time: the loop is unrolled.
    constexpr int share = Cfg::EXP_FMA_EIGHTHS;
    const bool on_fma = (t * share) % 8 < share;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float x = fmaf(s[0][t][e], scale_log2, neg_m[e >> 1]);
      const float pr = on_fma ? exp2_fma(x) : exp2_approx(x);
      s[0][t][e] = pr;
      st.l[0][e >> 1] += pr;
    }
  }
}

// P (fp32, this warp's 16 rows) packed to bf16 A fragments for O += P V, one per 16 keys.
template <class Cfg>
__device__ __forceinline__ void pack_probabilities(const ScoreFrags<Cfg>& s, PFrags<Cfg>& pa) {
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_N / 16; ++kk) {
    pa[kk][0] = pack_bf16x2(s[0][2 * kk][0], s[0][2 * kk][1]);
    pa[kk][1] = pack_bf16x2(s[0][2 * kk][2], s[0][2 * kk][3]);
    pa[kk][2] = pack_bf16x2(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
    pa[kk][3] = pack_bf16x2(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
  }
}

// O *= alpha, row by row. Once the running maxima settle, most tiles leave them unchanged
// (alpha = 1 in every row); with LAZY_RESCALE the warp then skips the multiplications, a uniform
// branch.
template <class Cfg>
__device__ __forceinline__ void rescale_output(RowState<Cfg>& st, const float (&alpha)[2]) {
  if constexpr (Cfg::LAZY_RESCALE) {
    if (!__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) return;
  }
#pragma unroll
  for (int t = 0; t < Cfg::D / 8; ++t) {
    st.o[0][t][0] *= alpha[0];
    st.o[0][t][1] *= alpha[0];
    st.o[0][t][2] *= alpha[1];
    st.o[0][t][3] *= alpha[1];
  }
}

// O += P V_j: BLOCK_N / 16 wgmma, P (this warp's 16 rows, packed by pack_probabilities) as the
// A operand, V_j read keys x D (MN-major: 16 keys are 16 rows of 128 bytes, 2048 bytes per
// slice; the D / 64 column blocks BLOCK_N * 128 bytes apart). Issued and committed as one group.
template <class Cfg>
__device__ __forceinline__ void issue_pv(RowState<Cfg>& st, const PFrags<Cfg>& pa, const __nv_bfloat16* sVj) {
  constexpr int BN = Cfg::BLOCK_N;
  fence_accumulators(st.o[0]);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    wgmma_rs_tb<Cfg::D>(st.o[0], pa[kk], sw128_descriptor(sVj + kk * 16 * 64, BN * 128, 1024));
  }
  wgmma_commit();
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
                                                           RowState<Cfg>& st, const __nv_bfloat16* sQ, int wg,
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
    softmax_probabilities<Cfg>(s, st, alpha, 0, p.N_KEYS, p.scale_log2, w);  // O is still 0
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
      softmax_probabilities<Cfg>(s, st, alpha, (j + 1) * BN, p.N_KEYS, p.scale_log2, w);
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
                                                RowState<Cfg>& st, const __nv_bfloat16* sQ, int wg, __nv_bfloat16* sK,
                                                __nv_bfloat16* sV, const WarpPlace& w) {
  constexpr int BN = Cfg::BLOCK_N, D = Cfg::D;
  const __nv_bfloat16* Kb = p.K + bh * p.stride_kb;
  const __nv_bfloat16* Vb = p.V + bh * p.stride_vb;
  const auto K_stage = [&](int j) { return sK + (j % Cfg::STAGES) * BN * D; };
  const auto V_stage = [&](int j) { return sV + (j % Cfg::STAGES) * BN * D; };
  const auto load_K = [&](int j) { load_tile_sw128<Cfg, BN>(K_stage(j), Kb, p.stride_kk, j * BN, p.N_KEYS); };
  const auto load_V = [&](int j) { load_tile_sw128<Cfg, BN>(V_stage(j), Vb, p.stride_vk, j * BN, p.N_KEYS); };
  const auto sees = [&](int j) { return !Cfg::CAUSAL || j * BN <= wg_last_query; };

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
        mask_scores<Cfg>(s, j * BN, p.N_KEYS, w);
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
    const int n_seen = Cfg::CAUSAL ? min(n_tiles, wg_last_query / BN + 1) : n_tiles;
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
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N, D = Cfg::D;
  extern __shared__ unsigned char smem_raw[];
  // wgmma's swizzle is computed from address bits: every tile starts on a 1024-byte boundary.
  const std::uint32_t misalign = smem_address(smem_raw) % Cfg::TILE_ALIGN;
  auto* sQ = reinterpret_cast<__nv_bfloat16*>(smem_raw + (misalign ? Cfg::TILE_ALIGN - misalign : 0));  // (BM, D)
  __nv_bfloat16* sK = sQ + BM * D;                // STAGES x (BN, D)
  __nv_bfloat16* sV = sK + Cfg::STAGES * BN * D;  // STAGES x (BN, D)

  // Non-causal blocks go in the order of their query tile, head by head (the blocks running
  // together share K and V in L2). Causal: the grid is (batch, query tiles), so the heaviest
  // tiles of every head start first and the light ones fill the tail.
  const int q_tile = Cfg::CAUSAL ? p.n_q_tiles - 1 - static_cast<int>(blockIdx.y) : static_cast<int>(blockIdx.x);
  const index_t bh = Cfg::CAUSAL ? blockIdx.x : blockIdx.y;
  const int q0 = q_tile * BM;
  const int warp = static_cast<int>(threadIdx.x) / 32, wg = warp / 4;
  const WarpPlace w{static_cast<int>(threadIdx.x) % 32, warp * 16, q0 + warp * 16};

  int n_tiles = (p.N_KEYS + BN - 1) / BN;
  if constexpr (Cfg::CAUSAL) n_tiles = min(n_tiles, (min(q0 + BM, p.N_QUERIES) - 1) / BN + 1);

  RowState<Cfg> st;
  init_row_state<Cfg>(st);
  load_tile_sw128<Cfg, BM>(sQ, p.Q + bh * p.stride_qb, p.stride_qq, q0, p.N_QUERIES);  // lands with K_0
  hopper_key_loop<Cfg>(p, bh, n_tiles, q0 + 64 * wg + 63, st, sQ, wg, sK, sV, w);
  cp_async_wait<0>();
  write_output<Cfg>(p, st, w, q0, bh, sQ);
#else
  (void)p;  // built for another target: the launcher never starts it there
#endif
}

// ---- warp specialisation: a producer warp with TMA, the warpgroups computing ------------------
// The tensor maps of Q, K, V and O (fa2_hopper.cu makes them): each a 3-D (D, N, batch) view
// whose box is 64 columns (128 bytes, the swizzle's row) by BLOCK_M (Q), BLOCK_N (K, V) or 64 (O:
// one warpgroup's rows; only with STORE_TMA) rows.
struct HopperMaps {
  CUtensorMap q, k, v, o;
};

// The query tiles of a launch in the order blocks take them: work item t is query tile
// `q_tile` of (batch x head) `bh`. Without a mask, the query tiles of a head one after the other
// (the blocks running together share its K and V in L2). Causal, the last query tile of every
// head first, then the one before it, and so on: the heaviest tiles start first and the lightest
// fill the end (longest processing time first).
struct WorkTile {
  int q_tile, bh;
};
template <class Cfg>
__device__ __forceinline__ WorkTile work_tile(const FastParams& p, int t, int heads) {
  if constexpr (Cfg::CAUSAL) {
    return {p.n_q_tiles - 1 - t / heads, t % heads};
  } else {
    return {t % p.n_q_tiles, t / p.n_q_tiles};
  }
}

// The work item a block computes in its round k (INT_MAX: none). Without PERSISTENT, block b has
// one round, item b. With it, round k holds items k * gridDim.x onwards, taken left to right in
// even rounds and right to left in odd ones: causal items come heaviest first, so the block that
// takes the heaviest of one round takes the lightest of the next, and the blocks' totals stay
// even (block 0 would otherwise take the heaviest of every round).
template <class Cfg>
__device__ __forceinline__ int block_item(int k) {
  const int b = static_cast<int>(blockIdx.x), blocks = static_cast<int>(gridDim.x);
  if constexpr (!Cfg::PERSISTENT) return k == 0 ? b : INT_MAX;
  return k * blocks + (k % 2 == 0 ? b : blocks - 1 - b);
}

// The key tiles of the block whose query tile starts at q0 (causal: up to its last query).
template <class Cfg>
__device__ __forceinline__ int key_tiles(const FastParams& p, int q0) {
  const int n_tiles = (p.N_KEYS + Cfg::BLOCK_N - 1) / Cfg::BLOCK_N;
  return Cfg::CAUSAL ? min(n_tiles, (min(q0 + Cfg::BLOCK_M, p.N_QUERIES) - 1) / Cfg::BLOCK_N + 1) : n_tiles;
}

// The epilogue with STORE_TMA: O / l in bf16 into the warpgroup's 64 rows of sO (Q's swizzled
// layout: one 64 x 64 box per column block), then one thread of the warpgroup hands them to TMA
// and the warpgroup goes on without waiting. L leaves from registers, as in write_output. sO is
// written again only once the previous tile's store has read it.
template <class Cfg>
__device__ __forceinline__ void store_output_tma(const FastParams& p, const RowState<Cfg>& st, const WarpPlace& w,
                                                 int q0, int bh, int wg, __nv_bfloat16* sO, const CUtensorMap* map_o) {
  constexpr float kLn2 = 0.6931471805599453f;
  constexpr int BM = Cfg::BLOCK_M;
  const int barrier = 3 + wg;  // 1 and 2 are the ping-pong's
  const bool leader = threadIdx.x % 128 == 0;
  if (leader) bulk_wait_read();
  named_barrier_sync(barrier, 128);
  const int g = w.lane / 4, c = 2 * (w.lane % 4);
  float* Lb = p.L + static_cast<index_t>(bh) * p.stride_lb;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = st.l[0][h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = w.warp_row0 + g + 8 * h;
    const float inv = 1.0f / sum;
#pragma unroll
    for (int t = 0; t < Cfg::D / 8; ++t) {
      *reinterpret_cast<std::uint32_t*>(sO + sw128_offset<BM>(row, t) + c) =
          pack_bf16x2(st.o[0][t][2 * h] * inv, st.o[0][t][2 * h + 1] * inv);
    }
    const int query = q0 + row;
    if (query < p.N_QUERIES && (w.lane & 3) == 0) {
      Lb[static_cast<index_t>(query) * p.stride_lq] = (st.m[0][h] + log2f(sum)) * kLn2;
    }
  }
  fence_proxy_async();  // the rows are in shared memory; the copy engine reads them next
  named_barrier_sync(barrier, 128);
  if (leader && q0 + 64 * wg < p.N_QUERIES) {
    for (int cb = 0; cb < Cfg::D / 64; ++cb)
      tma_store_3d(map_o, sO + cb * BM * 64 + wg * 64 * 64, cb * 64, q0 + 64 * wg, bh);
    bulk_commit();
  }
}

// The mbarriers of the ring of K/V stages, one of each per stage: K landed, V landed (the copy
// engine's bytes), and every computing warp done with K, with V. K and V are handed back
// separately: K_{j+1} is free once S_{j+1} is computed, half an iteration before V_j is.
struct RingBarriers {
  std::uint64_t* full_k;
  std::uint64_t* full_v;
  std::uint64_t* empty_k;
  std::uint64_t* empty_v;
};

// The computing warpgroups' loop: hopper_key_loop_overlapped with every cp.async wait and
// __syncthreads replaced by waits on the stage's mbarriers, and each K and V tile handed back (an
// arrival per warp on empty_k or empty_v) as soon as no wgmma reads it. The two warpgroups no
// longer meet at a barrier: one's softmax can run while the other's products do. The ring does
// not restart with a query tile: `ring0` K/V tiles went through it before this one's tile 0
// (persistent blocks). With EARLY_Q, Q too is handed back here (an arrival per warp on q_empty),
// as soon as the warp's last S is computed: a tile's softmax and product and the epilogue before
// the item ends, time in which the producer loads the next item's Q. (Otherwise the kernel hands
// Q back after this loop, and the next item's first wait covers more of Q's load.)
template <class Cfg>
__device__ __forceinline__ void hopper_consumer_loop(const FastParams& p, int n_tiles, int n_seen, int ring0,
                                                     RowState<Cfg>& st, const __nv_bfloat16* sQ, int wg,
                                                     const __nv_bfloat16* sK, const __nv_bfloat16* sV,
                                                     const RingBarriers& bar, std::uint64_t* q_empty,
                                                     const WarpPlace& w) {
  constexpr int BN = Cfg::BLOCK_N, D = Cfg::D, STAGES = Cfg::STAGES;
  // Tile j of this query tile is the ring's (ring0 + j)-th: stage (ring0 + j) % STAGES, in round
  // (ring0 + j) / STAGES, whose parity its waits take.
  const auto stage = [&](int j) { return (ring0 + j) % STAGES; };
  const auto parity = [&](int j) { return static_cast<std::uint32_t>(((ring0 + j) / STAGES) & 1); };
  const auto K_stage = [&](int j) { return sK + stage(j) * BN * D; };
  const auto V_stage = [&](int j) { return sV + stage(j) * BN * D; };
  const auto release = [&](std::uint64_t* empty, int j) {
    __syncwarp();
    if (w.lane == 0) mbarrier_arrive(&empty[stage(j)]);
  };
  // K_j handed back and, with EARLY_Q, Q too when S_j was this warp's last S: one warp-wide
  // sync, the extra arrival predicated (a separate synced release in the loop cost 4.5% on
  // average, up to 9%, from N = 8192, where it saves nothing).
  const auto release_k = [&](int j) {
    __syncwarp();
    if (w.lane == 0) {
      mbarrier_arrive(&bar.empty_k[stage(j)]);
      if (Cfg::EARLY_Q && j + 1 == n_seen) mbarrier_arrive(q_empty);
    }
  };
  PFrags<Cfg> pa;
  {
    mbarrier_wait(&bar.full_k[stage(0)], parity(0));
    ScoreFrags<Cfg> s;
    issue_scores<Cfg>(s, sQ, wg, K_stage(0));  // every warpgroup sees tile 0
    wgmma_wait<0>();
    fence_accumulators(s[0]);
    release_k(0);
    float alpha[2];
    softmax_probabilities<Cfg>(s, st, alpha, 0, p.N_KEYS, p.scale_log2, w);  // O is still 0
    pack_probabilities<Cfg>(s, pa);
  }
  // Ping-pong: warpgroup w issues its products after barrier w and then opens barrier 1 - w for
  // the other; warpgroup 1 opens barrier 0 once first, so warpgroup 0 starts. Every iteration
  // takes its turn (skipped tiles included), and warpgroup 1 does not open barrier 0 after its
  // last, so each barrier sees as many arrivals as waits.
  constexpr int kTurnThreads = 2 * 128;
  if constexpr (Cfg::PINGPONG) {
    if (wg == 1) named_barrier_arrive(1, kTurnThreads);
  }
  const auto take_turn = [&] {
    if constexpr (Cfg::PINGPONG) named_barrier_sync(1 + wg, kTurnThreads);
  };
  const auto pass_turn = [&](int j) {
    if constexpr (Cfg::PINGPONG) {
      if (wg == 0 || j + 1 < n_tiles) named_barrier_arrive(2 - wg, kTurnThreads);
    }
  };
  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_seen) {
      mbarrier_wait(&bar.full_k[stage(j + 1)], parity(j + 1));
      mbarrier_wait(&bar.full_v[stage(j)], parity(j));
      ScoreFrags<Cfg> s;
      take_turn();
      issue_scores<Cfg>(s, sQ, wg, K_stage(j + 1));
      issue_pv<Cfg>(st, pa, V_stage(j));
      pass_turn(j);
      wgmma_wait<1>();  // S_{j+1}; O += P_j V_j may still run
      fence_accumulators(s[0]);
      release_k(j + 1);
      float alpha[2];
      softmax_probabilities<Cfg>(s, st, alpha, (j + 1) * BN, p.N_KEYS, p.scale_log2, w);
      wgmma_wait<0>();  // P_j (pa), O and V_j are free again
      fence_accumulators(st.o[0]);
      fence_fragments(pa);
      release(bar.empty_v, j);
      rescale_output<Cfg>(st, alpha);
      pack_probabilities<Cfg>(s, pa);
    } else if (j + 1 == n_seen) {
      mbarrier_wait(&bar.full_v[stage(j)], parity(j));
      take_turn();
      issue_pv<Cfg>(st, pa, V_stage(j));  // the warpgroup's last tile
      pass_turn(j);
      wgmma_wait<0>();
      fence_accumulators(st.o[0]);
      release(bar.empty_v, j);
    } else {
      take_turn();
      pass_turn(j);
      // Causal: a tile below this warpgroup's rows; the producer still counts on its release. It
      // is released only once it has landed, as every other: an arrival on a stage's empty
      // barrier then always belongs to the phase the producer waits for next. (Released unseen,
      // the arrival could land in the phase of the tile STAGES earlier in the stage, which a
      // slower warpgroup may still be reading: the phase would complete early and the producer
      // overwrite that tile. tests/test_ring_protocol.cpp finds that interleaving.)
      mbarrier_wait(&bar.full_k[stage(j)], parity(j));
      release(bar.empty_k, j);
      mbarrier_wait(&bar.full_v[stage(j)], parity(j));
      release(bar.empty_v, j);
    }
  }
}

// The warp-specialised kernel. Without PERSISTENT, block b computes work item b; with it, there
// is one block per SM and each block computes one item per round (block_item). The ring of K/V
// stages and the phases of the barriers run on from one item to the next, and the producer loads
// the next item's K_0 and Q while the warpgroups finish this one (Q once every warp is done
// reading it).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::BLOCK_THREADS, 1)
    hopper_ws_fwd_kernel(const FastParams p, const __grid_constant__ HopperMaps maps, const int heads) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N, D = Cfg::D, STAGES = Cfg::STAGES;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t misalign = smem_address(smem_raw) % Cfg::TILE_ALIGN;
  unsigned char* base = smem_raw + (misalign ? Cfg::TILE_ALIGN - misalign : 0);
  auto* sQ = reinterpret_cast<__nv_bfloat16*>(base);                        // (BM, D)
  __nv_bfloat16* sK = sQ + BM * D;                                          // STAGES x (BN, D)
  __nv_bfloat16* sV = sK + STAGES * BN * D;                                 // STAGES x (BN, D)
  __nv_bfloat16* sO = sV + STAGES * BN * D;                                 // (BM, D), with STORE_TMA
  auto* bar_q = reinterpret_cast<std::uint64_t*>(base + Cfg::tiles_bytes);  // Q landed
  std::uint64_t* q_empty = bar_q + 1;                                       // every computing warp is done with Q
  const RingBarriers ring_bar{bar_q + 2, bar_q + 2 + STAGES, bar_q + 2 + 2 * STAGES, bar_q + 2 + 3 * STAGES};

  const int items = heads * p.n_q_tiles;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;

  if (threadIdx.x == 0) {
    mbarrier_init(bar_q, 1);
    mbarrier_init(q_empty, Cfg::NUM_WARPS);
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(&ring_bar.full_k[s], 1);
      mbarrier_init(&ring_bar.full_v[s], 1);
      mbarrier_init(&ring_bar.empty_k[s], Cfg::NUM_WARPS);
      mbarrier_init(&ring_bar.empty_v[s], Cfg::NUM_WARPS);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp >= Cfg::NUM_WARPS) {
    // The producer warpgroup: one thread issues every load. The ring's tile r goes to stage
    // r % STAGES once the computing warps have handed back tile r - STAGES (that stage's
    // (r / STAGES - 1)-th release). Q of item i waits for the warps' (i - 1)-th release of Q.
    setmaxnreg_dec<Cfg::PRODUCER_REGS>();
    if (threadIdx.x == Cfg::NUM_THREADS) {
      constexpr std::uint32_t tile_bytes = BN * D * sizeof(__nv_bfloat16);
      int ring = 0;
      for (int k = 0, t = block_item<Cfg>(0); t < items; t = block_item<Cfg>(++k)) {
        const WorkTile wt = work_tile<Cfg>(p, t, heads);
        const int q0 = wt.q_tile * BM, n_tiles = key_tiles<Cfg>(p, q0);
        for (int j = 0; j < n_tiles; ++j, ++ring) {
          const int s = ring % STAGES;
          const auto round_before = static_cast<std::uint32_t>((ring / STAGES - 1) & 1);
          if (ring >= STAGES) mbarrier_wait(&ring_bar.empty_k[s], round_before);
          mbarrier_arrive_expect_bytes(&ring_bar.full_k[s], tile_bytes);
          for (int cb = 0; cb < D / 64; ++cb) {
            tma_load_3d(sK + s * BN * D + cb * BN * 64, &maps.k, cb * 64, j * BN, wt.bh, &ring_bar.full_k[s]);
          }
          if (ring >= STAGES) mbarrier_wait(&ring_bar.empty_v[s], round_before);
          mbarrier_arrive_expect_bytes(&ring_bar.full_v[s], tile_bytes);
          for (int cb = 0; cb < D / 64; ++cb) {
            tma_load_3d(sV + s * BN * D + cb * BN * 64, &maps.v, cb * 64, j * BN, wt.bh, &ring_bar.full_v[s]);
          }
          if (j == 0) {
            if (k > 0) mbarrier_wait(q_empty, static_cast<std::uint32_t>((k - 1) & 1));
            mbarrier_arrive_expect_bytes(bar_q, BM * D * sizeof(__nv_bfloat16));
            for (int cb = 0; cb < D / 64; ++cb) tma_load_3d(sQ + cb * BM * 64, &maps.q, cb * 64, q0, wt.bh, bar_q);
          }
        }
      }
    }
  } else {
    setmaxnreg_inc<Cfg::CONSUMER_REGS>();
    const int wg = warp / 4;
    int ring = 0;
    for (int k = 0, t = block_item<Cfg>(0); t < items; t = block_item<Cfg>(++k)) {
      const WorkTile wt = work_tile<Cfg>(p, t, heads);
      const int q0 = wt.q_tile * BM, n_tiles = key_tiles<Cfg>(p, q0);
      const WarpPlace w{lane, warp * 16, q0 + warp * 16};
      const int wg_last_query = q0 + 64 * wg + 63;
      const int n_seen = Cfg::CAUSAL ? min(n_tiles, wg_last_query / BN + 1) : n_tiles;
      RowState<Cfg> st;
      init_row_state<Cfg>(st);
      mbarrier_wait(bar_q, static_cast<std::uint32_t>(k & 1));
      hopper_consumer_loop<Cfg>(p, n_tiles, n_seen, ring, st, sQ, wg, sK, sV, ring_bar, q_empty, w);
      ring += n_tiles;
      if constexpr (!Cfg::EARLY_Q) {
        __syncwarp();
        if (lane == 0) mbarrier_arrive(q_empty);  // every S of this item is done: Q may be replaced
      }
      if constexpr (Cfg::STORE_TMA) {
        store_output_tma<Cfg>(p, st, w, q0, wt.bh, wg, sO, &maps.o);
      } else {
        write_output<Cfg>(p, st, w, q0, wt.bh, sQ);
      }
    }
    if constexpr (Cfg::STORE_TMA) {
      if (threadIdx.x % 128 == 0) bulk_wait();  // shared memory must outlive the stores reading it
    }
  }
#else
  (void)p;
  (void)maps;
  (void)heads;
#endif
}

}  // namespace fa2::fast
