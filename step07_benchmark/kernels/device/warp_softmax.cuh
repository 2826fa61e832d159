// v5's per-warp pieces (sm80/forward.cuh): S = Q K_j^T on mma.sync, the masks, the online softmax on
// a warp's rows, O += P V_j and the store of O and L; the K/V stages of the key loop (KeyStream).
// v6 (sm90/) reuses the softmax, the masks and the store: a warp's 16 rows of a wgmma
// accumulator have mma.sync's layout.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/forward_params.cuh"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/device/smem_tiles.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"

namespace fa2::flash {

// ---- the pieces of the loop, per warp -------------------------------------------------------
// Fragments of this warp's rows: S (and then P) is WARP_M x (BLOCK_N / 8) mma tiles of 16 x 8,
// O is WARP_M x (D / 8) of them. Lane (g = lane / 4, c = 2 (lane % 4)) holds rows g and g + 8,
// columns c and c + 1 of each tile.
template <class Cfg>
using ScoreFrags = float[Cfg::WARP_M][Cfg::BLOCK_N / 8][4];

template <class Cfg>
struct RowState {
  float o[Cfg::WARP_M][Cfg::D / 8][4];  // O accumulator, unnormalised, fp32
  float m[Cfg::WARP_M][2];              // running max, in log2 units
  float l[Cfg::WARP_M][2];              // this lane's share of the running sum
};

struct WarpPlace {
  int lane, warp_row0, q0_warp;  // lane; the warp's first row in the block, and its first query
};

// Keys past N_KEYS (the padded last tile), when causal keys after the query, and in the twins built
// for a sliding window (Cfg::WINDOW) keys outside it become -inf. The tile's keys start at k0.
// Only the tiles that need it pay for it. (The two loops below stay apart: folded into one through
// a callable, the unwindowed kernels' compiled code changed.)
template <class Cfg>
__device__ __forceinline__ void mask_scores(ScoreFrags<Cfg>& s, int k0, const FastParams& p, const WarpPlace& w) {
  const int N_KEYS = p.N_KEYS;
  const bool ragged = k0 + Cfg::BLOCK_N > N_KEYS;
  const bool straddles = Cfg::CAUSAL && k0 + Cfg::BLOCK_N - 1 > w.q0_warp;  // crosses this warp's diagonal
  if constexpr (!Cfg::WINDOW) {
    if (!ragged && !straddles) return;
#pragma unroll
    for (int mt = 0; mt < Cfg::WARP_M; ++mt)
#pragma unroll
      for (int t = 0; t < Cfg::BLOCK_N / 8; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const RowCol at = mma_c_element(w.lane, e);  // in the 16 x 8 accumulator tile (mt, t)
          const int key = k0 + t * 8 + at.col;
          const int query = w.q0_warp + mt * 16 + at.row;
          if (key >= N_KEYS || (Cfg::CAUSAL && key > query)) s[mt][t][e] = -INFINITY;
        }
  } else {
    // A window's edge crosses the tile for some row of the warp: its left edge (the last row's
    // first key) or its right edge (the first row's last key).
    const bool window_edge =
        k0 < w.q0_warp + 16 * Cfg::WARP_M - 1 - p.window_left || k0 + Cfg::BLOCK_N - 1 > w.q0_warp + p.window_right;
    if (!ragged && !straddles && !window_edge) return;
    // Each row sees one run of the tile's columns, first .. first + width - 1 (width 0: none of
    // them), its bounds met once per row (two rows per thread and 16-row tile). A column is
    // outside when (unsigned)(column - first) >= width: one comparison per score, where testing
    // each edge apart costs the twins registers they do not have.
    int first[Cfg::WARP_M][2], width[Cfg::WARP_M][2];
#pragma unroll
    for (int mt = 0; mt < Cfg::WARP_M; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int query = w.q0_warp + mt * 16 + mma_c_element(w.lane, 2 * h).row;
        int last = N_KEYS - 1 < query + p.window_right ? N_KEYS - 1 : query + p.window_right;
        if (Cfg::CAUSAL && query < last) last = query;
        first[mt][h] = query - p.window_left - k0;
        width[mt][h] = last - k0 - first[mt][h] + 1 > 0 ? last - k0 - first[mt][h] + 1 : 0;
      }
#pragma unroll
    for (int mt = 0; mt < Cfg::WARP_M; ++mt)
#pragma unroll
      for (int t = 0; t < Cfg::BLOCK_N / 8; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = t * 8 + mma_c_element(w.lane, e).col;
          if (static_cast<unsigned>(col - first[mt][e >> 1]) >= static_cast<unsigned>(width[mt][e >> 1])) {
            s[mt][t][e] = -INFINITY;
          }
        }
  }
}

// The online softmax step in log2 units: m grows to cover the tile, O and l are rescaled by
// alpha = 2^(m_old - m_new), and s becomes P = 2^(s * scale * log2 e - m) (one FFMA, one EX2).
template <class Cfg>
__device__ __forceinline__ void online_softmax(ScoreFrags<Cfg>& s, RowState<Cfg>& st, float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < Cfg::WARP_M; ++mt) {
    float row_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < Cfg::BLOCK_N / 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) row_max[e >> 1] = fmaxf(row_max[e >> 1], s[mt][t][e]);
    float neg_m[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // The four lanes of a quad hold one row between them.
      row_max[h] = fmaxf(row_max[h], __shfl_xor_sync(0xffffffffu, row_max[h], 1));
      row_max[h] = fmaxf(row_max[h], __shfl_xor_sync(0xffffffffu, row_max[h], 2));
      const float m_new = fmaxf(st.m[mt][h], row_max[h] * scale_log2);
      // A row that has seen only masked keys keeps m = -inf; use 0 so -inf - m is not NaN.
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = exp2_approx(st.m[mt][h] - m_use);  // 0 on the first tile
      st.m[mt][h] = m_new;
      st.l[mt][h] *= alpha;
#pragma unroll
      for (int t = 0; t < Cfg::D / 8; ++t) {
        st.o[mt][t][2 * h] *= alpha;
        st.o[mt][t][2 * h + 1] *= alpha;
      }
      neg_m[h] = -m_use;
    }
#pragma unroll
    for (int t = 0; t < Cfg::BLOCK_N / 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float pr = exp2_approx(fmaf(s[mt][t][e], scale_log2, neg_m[e >> 1]));
        s[mt][t][e] = pr;
        st.l[mt][e >> 1] += pr;
      }
  }
}

// O / l once and L = ln 2 * (m + log2 l), rows past N_QUERIES skipped. With O_VIA_SMEM the tile goes
// through shared memory (sQ, no longer needed) and leaves in whole 16-byte chunks. MAY_SEE_NO_KEY
// (the twins built for a sliding window): a row whose l is 0 saw no key and gets O = 0, L = +inf
// (common/window.hpp); the other kernels, some at the edge of their registers, skip the test.
template <class Cfg, bool MAY_SEE_NO_KEY = false>
__device__ __forceinline__ void write_output(const FastParams& p, const RowState<Cfg>& st, const WarpPlace& w, int q0,
                                             index_t bh, elem16* sQ) {
  constexpr float kLn2 = 0.6931471805599453f;
  const int g = w.lane / 4, c = 2 * (w.lane % 4);
  elem16* Ob = p.O + bh * p.stride_ob;
  float* Lb = p.L + bh * p.stride_lb;
  if constexpr (Cfg::O_VIA_SMEM) __syncthreads();  // sQ is about to hold O: every warp must be done reading Q
#pragma unroll
  for (int mt = 0; mt < Cfg::WARP_M; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = st.l[mt][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int row = w.warp_row0 + mt * 16 + g + 8 * h;  // inside the block
      const int query = q0 + row;
      const float inv = !MAY_SEE_NO_KEY || sum > 0.0f ? 1.0f / sum : 0.0f;
      if constexpr (Cfg::O_VIA_SMEM) {
#pragma unroll
        for (int t = 0; t < Cfg::D / 8; ++t) {
          *reinterpret_cast<std::uint32_t*>(sQ + tile_offset<Cfg>(row, t) + c) =
              pack_x2<Cfg::FLOAT16>(st.o[mt][t][2 * h] * inv, st.o[mt][t][2 * h + 1] * inv);
        }
      } else if (query < p.N_QUERIES) {
        elem16* out_row = Ob + static_cast<index_t>(query) * p.stride_oq;
#pragma unroll
        for (int t = 0; t < Cfg::D / 8; ++t) {
          *reinterpret_cast<std::uint32_t*>(out_row + t * 8 + c) =
              pack_x2<Cfg::FLOAT16>(st.o[mt][t][2 * h] * inv, st.o[mt][t][2 * h + 1] * inv);
        }
      }
      if (query < p.N_QUERIES && (w.lane & 3) == 0) {
        Lb[static_cast<index_t>(query) * p.stride_lq] =
            !MAY_SEE_NO_KEY || sum > 0.0f ? (st.m[mt][h] + log2f(sum)) * kLn2 : INFINITY;
      }
    }
  if constexpr (Cfg::O_VIA_SMEM) {
    __syncthreads();
    constexpr int total = Cfg::BLOCK_M * Cfg::CHUNKS;
#pragma unroll
    for (int i = static_cast<int>(threadIdx.x); i < total; i += Cfg::NUM_THREADS) {
      const int r = i / Cfg::CHUNKS, ch = i % Cfg::CHUNKS;
      if (q0 + r < p.N_QUERIES) {
        *reinterpret_cast<uint4*>(Ob + static_cast<index_t>(q0 + r) * p.stride_oq + ch * 8) =
            *reinterpret_cast<const uint4*>(sQ + tile_offset<Cfg>(r, ch));
      }
    }
  }
}

template <class Cfg>
__device__ __forceinline__ void init_row_state(RowState<Cfg>& st) {
#pragma unroll
  for (int mt = 0; mt < Cfg::WARP_M; ++mt) {
#pragma unroll
    for (int t = 0; t < Cfg::D / 8; ++t) st.o[mt][t][0] = st.o[mt][t][1] = st.o[mt][t][2] = st.o[mt][t][3] = 0.0f;
    st.m[mt][0] = st.m[mt][1] = -INFINITY;
    st.l[mt][0] = st.l[mt][1] = 0.0f;
  }
}

}  // namespace fa2::flash
