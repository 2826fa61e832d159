// Variant 5: the same algorithm as step05's kernel (FlashAttention-2's forward, one query tile
// per block, the key tiles streamed through), written directly against the tensor cores instead
// of through tile pointers and WMMA. Everything lives in registers between the two products (S,
// P and O never touch shared memory), the tensor cores are driven with mma.sync m16n8k16,
// operands reach them through ldmatrix, K and V tiles stream in with cp.async while the previous
// tile is being computed, and shared memory is XOR-swizzled so that ldmatrix reads are free of
// bank conflicts. It keeps variants 2 to 4: causal tile skipping, exp2 with the scale folded into
// one multiply-add, and masks only on the tiles that need them. (The article's Triton kernel, the
// same design as step05, ran at 48 TFLOP/s on an H200; this one at 265: step07's README.)
// GUIDE.md in step07 explains each of these ideas in turn.
//
// Layout of the work: a thread block owns BLOCK_M = 16 * WARP_M * NUM_WARPS query rows of one
// (batch, head); warp w owns 16 * WARP_M of them and loops over all key tiles of BLOCK_N keys.
// bf16 only (the benchmark's dtype), head dims 32, 64, 128. Host side: fa2_fast_launch.cuh
// (parameters, launch, instantiation), fa2_fast.cu (argument checks, the tuned choice).
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/fast/mma_primitives.cuh"

namespace fa2::fast {

// What each step of the ablation switches on (defaults: the tuned kernel's choices).
struct FastOptions {
  bool swizzle = true;        // XOR-swizzled shared memory (false only to measure what it buys)
  int stages = 2;             // 2: tile j+1 loads while tile j computes; 1: load, then compute
  bool split_kv = true;       // wait for K and V separately: V lands while S = Q K^T computes
  bool q_in_regs = true;      // Q fragments live in registers; false: re-read from shared memory
                              // each tile, which frees registers for larger tiles
  bool o_via_smem = false;    // stage O through shared memory for coalesced 16-byte stores
  bool causal_pairs = false;  // causal: a block does query tiles i and n-1-i (equal work per block)
  bool overlap = false;       // S of tile j+1 is computed before the softmax of tile j, so the
                              // tensor cores and the exp unit work at the same time
};

template <int D_, int WARP_M_, int NUM_WARPS_, int BLOCK_N_, bool CAUSAL_, FastOptions OPT = FastOptions{}>
struct FastConfig {
  static constexpr int D = D_;
  static constexpr int WARP_M = WARP_M_;  // 16-row mma tiles per warp: B fragments are reused WARP_M times
  static constexpr int NUM_WARPS = NUM_WARPS_;
  static constexpr int NUM_THREADS = 32 * NUM_WARPS;
  static constexpr int BLOCK_M = 16 * WARP_M * NUM_WARPS;
  static constexpr int BLOCK_N = BLOCK_N_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr bool SWIZZLE = OPT.swizzle;
  static constexpr int STAGES = OPT.stages;
  static constexpr bool SPLIT_KV = OPT.split_kv && OPT.stages == 2;
  static constexpr bool Q_IN_REGS = OPT.q_in_regs;
  static constexpr bool O_VIA_SMEM = OPT.o_via_smem;
  static constexpr bool CAUSAL_PAIRS = OPT.causal_pairs && CAUSAL_;
  static constexpr bool OVERLAP = OPT.overlap;
  static_assert(!OVERLAP || (STAGES == 2 && OPT.split_kv), "the overlapped loop needs split, double-buffered K/V");
  static constexpr int CHUNKS = D / 8;  // 16-byte chunks per row of Q, K, V
  // Two blocks of 8 warps per SM cap registers at 128 per thread: worth it (16 warps to hide
  // latency) while the accumulators fit, i.e. for head dims up to 64.
  static constexpr int MIN_BLOCKS_PER_SM = (NUM_THREADS == 256 && D <= 64 && !OPT.overlap) ? 2 : 1;
  static constexpr std::size_t smem_bytes =
      static_cast<std::size_t>(BLOCK_M + 2 * STAGES * BLOCK_N) * D * sizeof(__nv_bfloat16);
  static_assert(D == 32 || D == 64 || D == 128, "head dims 32, 64 and 128");
  static_assert(BLOCK_N % 16 == 0 && BLOCK_N >= 16, "key tiles are multiples of 16");
  static_assert(STAGES == 1 || STAGES == 2, "single or double buffering");
};

// The kernel's arguments, named as step05's FlashFwdParams names them (the head dim is
// contiguous here, so only batch and row strides are passed). Lengths are int: the fast kernel
// takes sequences shorter than 2^31, and 32-bit row arithmetic saves registers.
struct FastParams {
  const __nv_bfloat16* Q;
  const __nv_bfloat16* K;
  const __nv_bfloat16* V;
  __nv_bfloat16* O;
  float* L;
  index_t stride_qb, stride_qq;
  index_t stride_kb, stride_kk;
  index_t stride_vb, stride_vk;
  index_t stride_ob, stride_oq;
  index_t stride_lb, stride_lq;
  int N_QUERIES, N_KEYS;
  int n_q_tiles;     // cdiv(N_QUERIES, BLOCK_M)
  float scale_log2;  // softmax scale * log2(e): scores go straight into exp2
};

// Element offset of 16-byte chunk `chunk` of row `row` in a tile. Without the swizzle, the
// eight rows an ldmatrix reads at one column would all sit in the same four banks (rows are
// 64, 128 or 256 bytes long); XOR-ing the chunk index with the row spreads them over all 32.
template <class Cfg>
__device__ __forceinline__ int tile_offset(int row, int chunk) {
  int c = chunk;
  if constexpr (Cfg::SWIZZLE) {
    if constexpr (Cfg::CHUNKS >= 8) {
      c = chunk ^ (row & 7);
    } else {
      c = chunk ^ ((row >> 1) & 3);  // 4 chunks per row: two rows share a 128-byte line
    }
  }
  return row * Cfg::D + c * 8;
}

// ROWS rows of a (N, D) tensor starting at row0, global -> shared, in the background. Rows
// past n_rows are zero-filled: a zero key scores 0 (masked later) and a zero value adds 0.
template <class Cfg, int ROWS>
__device__ __forceinline__ void load_tile_async(__nv_bfloat16* tile, const __nv_bfloat16* base, index_t row_stride,
                                                int row0, int n_rows) {
  constexpr int total = ROWS * Cfg::CHUNKS;
#pragma unroll
  for (int i = static_cast<int>(threadIdx.x); i < total; i += Cfg::NUM_THREADS) {
    const int r = i / Cfg::CHUNKS, c = i % Cfg::CHUNKS;
    const bool valid = row0 + r < n_rows;
    const __nv_bfloat16* src = valid ? base + static_cast<index_t>(row0 + r) * row_stride + c * 8 : base;
    cp_async_16(smem_address(tile + tile_offset<Cfg>(r, c)), src, valid);
  }
}

// Address lane `lane` gives ldmatrix for a 16 x 16 block at (row0, chunk0) when the four 8x8
// matrices are taken in the order (rows 0-7, chunk 0), (rows 8-15, chunk 0), (rows 0-7,
// chunk 1), (rows 8-15, chunk 1): the A-operand order, and the transposed B order for V.
template <class Cfg>
__device__ __forceinline__ std::uint32_t addr_rows_then_chunks(const __nv_bfloat16* tile, int row0, int chunk0,
                                                               int lane) {
  return smem_address(tile + tile_offset<Cfg>(row0 + (lane & 7) + 8 * ((lane >> 3) & 1), chunk0 + (lane >> 4)));
}
// The order (rows 0-7, chunk 0), (rows 0-7, chunk 1), (rows 8-15, chunk 0), (rows 8-15,
// chunk 1): B fragments of two neighbouring 8-key tiles of K.
template <class Cfg>
__device__ __forceinline__ std::uint32_t addr_chunks_then_rows(const __nv_bfloat16* tile, int row0, int chunk0,
                                                               int lane) {
  return smem_address(tile + tile_offset<Cfg>(row0 + (lane & 7) + 8 * (lane >> 4), chunk0 + ((lane >> 3) & 1)));
}

// ---- the pieces of the loop, per warp -------------------------------------------------------
// Fragments of this warp's rows: S (and then P) is WARP_M x (BLOCK_N / 8) mma tiles of 16 x 8,
// O is WARP_M x (D / 8) of them. Lane (g = lane / 4, c = 2 (lane % 4)) holds rows g and g + 8,
// columns c and c + 1 of each tile.
template <class Cfg>
using ScoreFrags = float[Cfg::WARP_M][Cfg::BLOCK_N / 8][4];
template <class Cfg>
using QFrags = std::uint32_t[Cfg::Q_IN_REGS ? Cfg::WARP_M : 1][Cfg::Q_IN_REGS ? Cfg::D / 16 : 1][4];

template <class Cfg>
struct RowState {
  float o[Cfg::WARP_M][Cfg::D / 8][4];  // O accumulator, unnormalised, fp32
  float m[Cfg::WARP_M][2];              // running max, in log2 units
  float l[Cfg::WARP_M][2];              // this lane's share of the running sum
};

struct WarpPlace {
  int lane, warp_row0, q0_warp;  // lane; the warp's first row in the block, and its first query
};

// S = Q K_j^T for the warp's rows, fp32, in registers.
template <class Cfg>
__device__ __forceinline__ void compute_scores(ScoreFrags<Cfg>& s, const QFrags<Cfg>& qf, const __nv_bfloat16* sQ,
                                               const __nv_bfloat16* sKj, const WarpPlace& w) {
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
        mma_bf16_16816(s[mt][2 * nn], qa[mt], b[0], b[1]);
        mma_bf16_16816(s[mt][2 * nn + 1], qa[mt], b[2], b[3]);
      }
    }
  }
}

// Keys past N_KEYS (the padded last tile) and, when causal, keys after the query become -inf.
// Only the tiles that need it pay for it.
template <class Cfg>
__device__ __forceinline__ void mask_scores(ScoreFrags<Cfg>& s, int k0, int N_KEYS, const WarpPlace& w) {
  const bool ragged = k0 + Cfg::BLOCK_N > N_KEYS;
  const bool straddles = Cfg::CAUSAL && k0 + Cfg::BLOCK_N - 1 > w.q0_warp;  // crosses this warp's diagonal
  if (!ragged && !straddles) return;
  const int g = w.lane / 4, c = 2 * (w.lane % 4);
#pragma unroll
  for (int mt = 0; mt < Cfg::WARP_M; ++mt)
#pragma unroll
    for (int t = 0; t < Cfg::BLOCK_N / 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = k0 + t * 8 + c + (e & 1);
        const int query = w.q0_warp + mt * 16 + g + 8 * (e >> 1);
        if (key >= N_KEYS || (Cfg::CAUSAL && key > query)) s[mt][t][e] = -INFINITY;
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

// O += P V_j. The S accumulators are already in the A-operand layout of the second mma:
// two neighbouring 16x8 tiles of P make one 16x16 A fragment once packed to bf16.
template <class Cfg>
__device__ __forceinline__ void accumulate_pv(RowState<Cfg>& st, const ScoreFrags<Cfg>& s, const __nv_bfloat16* sVj,
                                              int lane) {
  constexpr int WM = Cfg::WARP_M;
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_N / 16; ++kk) {
    std::uint32_t pa[WM][4];
#pragma unroll
    for (int mt = 0; mt < WM; ++mt) {
      pa[mt][0] = pack_bf16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][1] = pack_bf16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][2] = pack_bf16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][3] = pack_bf16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dd = 0; dd < Cfg::D / 16; ++dd) {
      std::uint32_t b[4];
      ldmatrix_x4_trans(b, addr_rows_then_chunks<Cfg>(sVj, kk * 16, 2 * dd, lane));
#pragma unroll
      for (int mt = 0; mt < WM; ++mt) {
        mma_bf16_16816(st.o[mt][2 * dd], pa[mt], b[0], b[1]);
        mma_bf16_16816(st.o[mt][2 * dd + 1], pa[mt], b[2], b[3]);
      }
    }
  }
}

// O / l once and L = ln 2 * (m + log2 l), rows past N_QUERIES skipped. With O_VIA_SMEM the tile goes
// through shared memory (sQ, no longer needed) and leaves in whole 16-byte chunks.
template <class Cfg>
__device__ __forceinline__ void write_output(const FastParams& p, const RowState<Cfg>& st, const WarpPlace& w, int q0,
                                             index_t bh, __nv_bfloat16* sQ) {
  constexpr float kLn2 = 0.6931471805599453f;
  const int g = w.lane / 4, c = 2 * (w.lane % 4);
  __nv_bfloat16* Ob = p.O + bh * p.stride_ob;
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
      const float inv = 1.0f / sum;
      if constexpr (Cfg::O_VIA_SMEM) {
#pragma unroll
        for (int t = 0; t < Cfg::D / 8; ++t) {
          *reinterpret_cast<std::uint32_t*>(sQ + tile_offset<Cfg>(row, t) + c) =
              pack_bf16x2(st.o[mt][t][2 * h] * inv, st.o[mt][t][2 * h + 1] * inv);
        }
      } else if (query < p.N_QUERIES) {
        __nv_bfloat16* out_row = Ob + static_cast<index_t>(query) * p.stride_oq;
#pragma unroll
        for (int t = 0; t < Cfg::D / 8; ++t) {
          *reinterpret_cast<std::uint32_t*>(out_row + t * 8 + c) =
              pack_bf16x2(st.o[mt][t][2 * h] * inv, st.o[mt][t][2 * h + 1] * inv);
        }
      }
      if (query < p.N_QUERIES && (w.lane & 3) == 0) {
        Lb[static_cast<index_t>(query) * p.stride_lq] = (st.m[mt][h] + log2f(sum)) * kLn2;
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

// ---- the key loop's shared-memory stages -----------------------------------------------------
// Where K_j and V_j land (two stages with double buffering), how they are requested, and which
// key tiles a warp takes part in.
template <class Cfg>
struct KeyStream {
  const FastParams& p;
  const __nv_bfloat16* Kb;  // this (batch, head)'s K and V
  const __nv_bfloat16* Vb;
  __nv_bfloat16* sK;
  __nv_bfloat16* sV;
  int last_query_of_warp;  // causal: the warp's last query row

  __device__ __forceinline__ __nv_bfloat16* K_stage(int j) const {
    return sK + (Cfg::STAGES == 2 ? (j & 1) : 0) * Cfg::BLOCK_N * Cfg::D;
  }
  __device__ __forceinline__ __nv_bfloat16* V_stage(int j) const {
    return sV + (Cfg::STAGES == 2 ? (j & 1) : 0) * Cfg::BLOCK_N * Cfg::D;
  }
  __device__ __forceinline__ void load_K(int j) const {
    load_tile_async<Cfg, Cfg::BLOCK_N>(K_stage(j), Kb, p.stride_kk, j * Cfg::BLOCK_N, p.N_KEYS);
  }
  __device__ __forceinline__ void load_V(int j) const {
    load_tile_async<Cfg, Cfg::BLOCK_N>(V_stage(j), Vb, p.stride_vk, j * Cfg::BLOCK_N, p.N_KEYS);
  }
  // A warp whose queries all come before a tile's first key has nothing to do with that tile.
  __device__ __forceinline__ bool sees(int j) const { return !Cfg::CAUSAL || j * Cfg::BLOCK_N <= last_query_of_warp; }
  // S_j = Q K_j^T for this warp's rows, masked (mask_scores): K_j must have landed.
  __device__ __forceinline__ void scores(ScoreFrags<Cfg>& s, int j, const QFrags<Cfg>& qf, const __nv_bfloat16* sQ,
                                         const WarpPlace& w) const {
    compute_scores<Cfg>(s, qf, sQ, K_stage(j), w);
    mask_scores<Cfg>(s, j * Cfg::BLOCK_N, p.N_KEYS, w);
  }
};

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

// With Q_IN_REGS, this warp's Q fragments go to registers once, for every key tile.
template <class Cfg>
__device__ __forceinline__ void load_q_fragments(QFrags<Cfg>& qf, const __nv_bfloat16* sQ, const WarpPlace& w) {
  if constexpr (Cfg::Q_IN_REGS) {
#pragma unroll
    for (int mt = 0; mt < Cfg::WARP_M; ++mt)
#pragma unroll
      for (int kk = 0; kk < Cfg::D / 16; ++kk)
        ldmatrix_x4(qf[mt][kk], addr_rows_then_chunks<Cfg>(sQ, w.warp_row0 + mt * 16, 2 * kk, w.lane));
  }
}

// The overlapped loop: S_{j+1} is computed before the softmax of tile j, so the tensor cores and
// the exp unit work at the same time. Groups in flight at the start, oldest first: {Q, K_0},
// {K_1}, {V_0}.
template <class Cfg>
__device__ __forceinline__ void key_loop_overlapped(const KeyStream<Cfg>& ks, int n_tiles, RowState<Cfg>& st,
                                                    QFrags<Cfg>& qf, const __nv_bfloat16* sQ, const WarpPlace& w) {
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
                                                     QFrags<Cfg>& qf, const __nv_bfloat16* sQ, const WarpPlace& w) {
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
                                                    QFrags<Cfg>& qf, const __nv_bfloat16* sQ, const WarpPlace& w) {
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
__device__ __forceinline__ void attend_query_tile(const FastParams& p, const int q_tile, const index_t bh,
                                                  __nv_bfloat16* sQ, __nv_bfloat16* sK, __nv_bfloat16* sV) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int q0 = q_tile * BM;
  const WarpPlace w{static_cast<int>(threadIdx.x) % 32, warp * 16 * Cfg::WARP_M, q0 + warp * 16 * Cfg::WARP_M};
  const KeyStream<Cfg> ks{p, p.K + bh * p.stride_kb, p.V + bh * p.stride_vb, sK, sV, w.q0_warp + 16 * Cfg::WARP_M - 1};

  // Causal: keys after the block's last real query are invisible to all of it.
  int n_tiles = (p.N_KEYS + BN - 1) / BN;
  if constexpr (Cfg::CAUSAL) n_tiles = min(n_tiles, (min(q0 + BM, p.N_QUERIES) - 1) / BN + 1);

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
  write_output<Cfg>(p, st, w, q0, bh, sQ);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NUM_THREADS, Cfg::MIN_BLOCKS_PER_SM) fast_fwd_kernel(const FastParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto* sQ = reinterpret_cast<__nv_bfloat16*>(smem_raw);         // (BLOCK_M, D)
  __nv_bfloat16* sK = sQ + Cfg::BLOCK_M * Cfg::D;                // STAGES x (BLOCK_N, D)
  __nv_bfloat16* sV = sK + Cfg::STAGES * Cfg::BLOCK_N * Cfg::D;  // STAGES x (BLOCK_N, D)
  const index_t bh = blockIdx.y;
  if constexpr (Cfg::CAUSAL_PAIRS) {
    // Causal work grows with the query tile: tile i needs about i + 1 key-tile steps. Pairing
    // tile n-1-i with tile i gives every block the same amount of work. (A loop, not two
    // calls: one copy of the body keeps the register allocation of the unpaired kernel.)
    const int heavy = p.n_q_tiles - 1 - static_cast<int>(blockIdx.x);
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
    const int q_tile = Cfg::CAUSAL ? p.n_q_tiles - 1 - static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.x);
    attend_query_tile<Cfg>(p, q_tile, bh, sQ, sK, sV);
  }
}

}  // namespace fa2::fast
