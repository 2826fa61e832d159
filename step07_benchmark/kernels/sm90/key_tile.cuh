// One key tile's work for a warpgroup of v6, shared by both generations (lab/sm90_cp_async.cuh,
// consumer.cuh): S_j = Q K_j^T and O += P_j V_j issued as wgmma (ptx/wgmma.cuh), and the
// online softmax between them in registers (v5's, sm80/forward.cuh, without O's rescale, which waits
// for the product still accumulating into O).
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "step07_benchmark/kernels/device/exp2_fma.hpp"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/device/warp_softmax.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"
#include "step07_benchmark/kernels/ptx/wgmma.cuh"

namespace fa2::flash {

// S = Q K_j^T for the warpgroup's 64 rows: D / 16 wgmma, issued and committed as one group (not
// waited for). sQ is the (BLOCK_M, D) Q tile, whose rows 64 wg .. 64 wg + 63 are the warpgroup's.
template <class Cfg>
__device__ __forceinline__ void issue_scores(ScoreFrags<Cfg>& s, const elem16* sQ, int wg, const elem16* sKj) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < Cfg::D / 16; ++kk) {
    // Slice kk: column block kk / 4, 32 bytes further per slice inside the 128-byte row.
    const int block = kk / 4, within = (kk % 4) * 16;
    const std::uint64_t a = sw128_descriptor(sQ + block * BM * 64 + wg * 64 * 64 + within, 16, 1024);
    const std::uint64_t b = sw128_descriptor(sKj + block * BN * 64 + within, 16, 1024);
    wgmma_ss<BN, Cfg::FLOAT16>(s[0], a, b, kk > 0);
  }
  wgmma_commit();
}

template <class Cfg>
using PFrags = std::uint32_t[Cfg::BLOCK_N / 16][4];

// The online softmax of one tile for the overlapped loop: v5's online_softmax without the O
// rescale, since a wgmma may still be accumulating into O. S becomes P (fp32) in place, m and l
// move, and alpha returns the factor O must be multiplied by once that wgmma is done. The tile's
// keys start at k0.
template <class Cfg>
__device__ __forceinline__ void softmax_probabilities(ScoreFrags<Cfg>& s, RowState<Cfg>& st, float (&alpha)[2], int k0,
                                                      const FastParams& p, const WarpPlace& w) {
  constexpr int BN = Cfg::BLOCK_N;
  const float scale_log2 = p.scale_log2;
  mask_scores<Cfg>(s, k0, p, w);
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

// P (fp32, this warp's 16 rows) packed to bf16 A fragments for O += P V, one per 16 keys, each
// register from the accumulators layouts.hpp's p_source_* name.
template <class Cfg>
__device__ __forceinline__ void pack_probabilities(const ScoreFrags<Cfg>& s, PFrags<Cfg>& pa) {
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_N / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int t = 2 * kk + p_source_tile(r), e = p_source_element(r);
      pa[kk][r] = pack_x2<Cfg::FLOAT16>(s[0][t][e], s[0][t][e + 1]);
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
__device__ __forceinline__ void issue_pv(RowState<Cfg>& st, const PFrags<Cfg>& pa, const elem16* sVj) {
  constexpr int BN = Cfg::BLOCK_N;
  fence_accumulators(st.o[0]);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    wgmma_rs_tb<Cfg::D, Cfg::FLOAT16>(st.o[0], pa[kk], sw128_descriptor(sVj + kk * 16 * 64, BN * 128, 1024));
  }
  wgmma_commit();
}

}  // namespace fa2::flash
