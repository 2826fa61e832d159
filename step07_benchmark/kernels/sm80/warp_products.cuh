// v5's per-warp products (sm80/forward.cuh): S = Q K_j^T and O += P V_j on mma.sync, with Q's
// fragments in registers or read from shared memory, and the K/V stages of the key loop
// (KeyStream). The softmax, the masks and the store they feed are device/warp_softmax.cuh's,
// which v6 shares.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/device/smem_tiles.cuh"
#include "step07_benchmark/kernels/device/tile_scheduler.hpp"
#include "step07_benchmark/kernels/device/warp_softmax.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"

namespace fa2::flash {

// Q's fragments of this warp's rows (Cfg::Q_IN_REGS), else one unused slot.

template <class Cfg>
using QFrags = std::uint32_t[Cfg::Q_IN_REGS ? Cfg::WARP_M : 1][Cfg::Q_IN_REGS ? Cfg::D / 16 : 1][4];

// S = Q K_j^T for the warp's rows, fp32, in registers.
template <class Cfg>
__device__ __forceinline__ void compute_scores(ScoreFrags<Cfg>& s, const QFrags<Cfg>& qf, const elem16* sQ,
                                               const elem16* sKj, const WarpPlace& w) {
  constexpr int WM = Cfg::WARP_M;
#pragma unroll
  for (int mt = 0; mt < WM; ++mt)
#pragma unroll
    for (int t = 0; t < Cfg::BLOCK_N / 8; ++t) s[mt][t][0] = s[mt][t][1] = s[mt][t][2] = s[mt][t][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < Cfg::D / 16; ++kk) {
    std::uint32_t qa[WM][4];
#pragma unroll
    for (int mt = 0; mt < WM; ++mt) {
      if constexpr (Cfg::Q_IN_REGS) {
#pragma unroll
        for (int r = 0; r < 4; ++r) qa[mt][r] = qf[mt][kk][r];
      } else {
        ldmatrix_x4(qa[mt], addr_rows_then_chunks<Cfg>(sQ, w.warp_row0 + mt * 16, 2 * kk, w.lane));
      }
    }
#pragma unroll
    for (int nn = 0; nn < Cfg::BLOCK_N / 16; ++nn) {
      std::uint32_t b[4];
      ldmatrix_x4(b, addr_chunks_then_rows<Cfg>(sKj, nn * 16, 2 * kk, w.lane));
#pragma unroll
      for (int mt = 0; mt < WM; ++mt) {
        mma_16816<Cfg::FLOAT16>(s[mt][2 * nn], qa[mt], b[0], b[1]);
        mma_16816<Cfg::FLOAT16>(s[mt][2 * nn + 1], qa[mt], b[2], b[3]);
      }
    }
  }
}

// O += P V_j. The S accumulators are already in the A-operand layout of the second mma:
// two neighbouring 16x8 tiles of P make one 16x16 A fragment once packed to bf16, register r
// from the accumulators layouts.hpp's p_source_* name.
template <class Cfg>
__device__ __forceinline__ void accumulate_pv(RowState<Cfg>& st, const ScoreFrags<Cfg>& s, const elem16* sVj,
                                              int lane) {
  constexpr int WM = Cfg::WARP_M;
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_N / 16; ++kk) {
    std::uint32_t pa[WM][4];
#pragma unroll
    for (int mt = 0; mt < WM; ++mt)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int t = 2 * kk + p_source_tile(r), e = p_source_element(r);
        pa[mt][r] = pack_x2<Cfg::FLOAT16>(s[mt][t][e], s[mt][t][e + 1]);
      }
#pragma unroll
    for (int dd = 0; dd < Cfg::D / 16; ++dd) {
      std::uint32_t b[4];
      ldmatrix_x4_trans(b, addr_rows_then_chunks<Cfg>(sVj, kk * 16, 2 * dd, lane));
#pragma unroll
      for (int mt = 0; mt < WM; ++mt) {
        mma_16816<Cfg::FLOAT16>(st.o[mt][2 * dd], pa[mt], b[0], b[1]);
        mma_16816<Cfg::FLOAT16>(st.o[mt][2 * dd + 1], pa[mt], b[2], b[3]);
      }
    }
  }
}

// ---- the key loop's shared-memory stages -----------------------------------------------------
// Where K_j and V_j land (two stages with double buffering), how they are requested, and which
// key tiles a warp takes part in.
template <class Cfg>
struct KeyStream {
  const FastParams& p;
  const elem16* Kb;  // this (batch, head)'s K and V
  const elem16* Vb;
  elem16* sK;
  elem16* sV;
  int last_query_of_warp;  // causal: the warp's last query row
  int first_tile;          // the loops' tile j is key tile first_tile + j (a window skips those before)

  __device__ __forceinline__ elem16* K_stage(int j) const {
    return sK + (Cfg::STAGES == 2 ? (j & 1) : 0) * Cfg::BLOCK_N * Cfg::D;
  }
  __device__ __forceinline__ elem16* V_stage(int j) const {
    return sV + (Cfg::STAGES == 2 ? (j & 1) : 0) * Cfg::BLOCK_N * Cfg::D;
  }
  __device__ __forceinline__ void load_K(int j) const {
    load_tile_async<Cfg, Cfg::BLOCK_N>(K_stage(j), Kb, p.stride_kk, (first_tile + j) * Cfg::BLOCK_N, p.N_KEYS);
  }
  __device__ __forceinline__ void load_V(int j) const {
    load_tile_async<Cfg, Cfg::BLOCK_N>(V_stage(j), Vb, p.stride_vk, (first_tile + j) * Cfg::BLOCK_N, p.N_KEYS);
  }
  // A warp whose queries all come before a tile's first key has nothing to do with that tile.
  __device__ __forceinline__ bool sees(int j) const {
    return !Cfg::CAUSAL || causal_tile_needed(first_tile + j, last_query_of_warp, Cfg::BLOCK_N);
  }
  // S_j = Q K_j^T for this warp's rows, masked (mask_scores): K_j must have landed.
  __device__ __forceinline__ void scores(ScoreFrags<Cfg>& s, int j, const QFrags<Cfg>& qf, const elem16* sQ,
                                         const WarpPlace& w) const {
    compute_scores<Cfg>(s, qf, sQ, K_stage(j), w);
    mask_scores<Cfg>(s, (first_tile + j) * Cfg::BLOCK_N, p, w);
  }
};

// With Q_IN_REGS, this warp's Q fragments go to registers once, for every key tile.
template <class Cfg>
__device__ __forceinline__ void load_q_fragments(QFrags<Cfg>& qf, const elem16* sQ, const WarpPlace& w) {
  if constexpr (Cfg::Q_IN_REGS) {
#pragma unroll
    for (int mt = 0; mt < Cfg::WARP_M; ++mt)
#pragma unroll
      for (int kk = 0; kk < Cfg::D / 16; ++kk)
        ldmatrix_x4(qf[mt][kk], addr_rows_then_chunks<Cfg>(sQ, w.warp_row0 + mt * 16, 2 * kk, w.lane));
  }
}

}  // namespace fa2::flash
