// v6b: the backward on Hopper's wgmma (sm_90a). The same three phases and the same KV-outer loop
// as v5's backward (fa2_fast_bwd.cuh, whose preprocess and dQ conversion it launches), with the
// five products of a step issued as warpgroup-wide wgmma instead of warp-wide mma.sync.
//
// A block owns BLOCK_N = 128 keys; each of its two warpgroups owns 64 of them and computes
// everything whose rows are keys, as v5's warps do, so that P^T and dS^T come out of one product
// already in the register layout the next one takes as its A operand (shapes for BLOCK_M queries
// per step):
//   S^T  = K_w Q_i^T    (64 keys x BLOCK_M)      wgmma, both operands in shared memory
//   dP^T = V_w dO_i^T   (64 keys x BLOCK_M)      wgmma, both operands in shared memory
//   P^T  = 2^(S^T scale log2 e - L_i log2 e), 0 where masked; dS^T = P^T (dP^T - D_i)
//   dV_w += P^T dO_i    (64 keys x D)            wgmma, A = P^T from registers
//   dK_w += dS^T Q_i    (64 keys x D)            wgmma, A = dS^T from registers
//   dQ_i += dS K_j      (BLOCK_M queries x D)    wgmma, both operands in shared memory: dS^T goes
//                                                there (bf16), and both are read transposed
// The last product has queries as rows: the warpgroups split it (HopperBwdConfig says how) and
// add their parts to the float32 dQ_accum, so every key tile adds to one query tile, in an order
// the run decides: with vector atomics from registers, or (dq_tma) through shared memory with
// one TMA reduce-add per 32 columns, FlashAttention-3's way.
//
// Loads: K_j and V_j once, Q_i, dO_i, L_i and D_i double-buffered with cp.async into wgmma's
// 128-byte swizzle; the block meets once per query tile, when the next one has landed.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "step07_benchmark/kernels/fast/fa2_fast_bwd.cuh"  // FastBwdParams, kLog2e, the row phases
#include "step07_benchmark/kernels/fast/layouts.hpp"
#include "step07_benchmark/kernels/fast/mma_primitives.cuh"
#include "step07_benchmark/kernels/fast/tma_primitives.cuh"  // named barriers
#include "step07_benchmark/kernels/fast/wgmma_primitives.cuh"

namespace fa2::fast {

// What v6b's rows vary (kernels/variants.def).
struct HopperBwdOptions {
  int block_m = 64;     // queries per step: the N of S^T and dP^T (64, or 128 at head dim 64)
  bool dq_tma = false;  // dQ's share leaves through shared memory by TMA reduce-add, not atomics
};

template <int D_, bool CAUSAL_, HopperBwdOptions OPT = HopperBwdOptions{}>
struct HopperBwdConfig {
  static constexpr int D = D_;
  static constexpr bool CAUSAL = CAUSAL_;
  static constexpr int WARPGROUPS = 2;
  static constexpr int NUM_THREADS = 128 * WARPGROUPS;  // what the cp.async loads split over
  static constexpr int WG_KEYS = 64;                    // the M of every key-row product
  static constexpr int BLOCK_N = WG_KEYS * WARPGROUPS;  // keys per block
  static constexpr int BLOCK_M = OPT.block_m;
  static constexpr bool DQ_TMA = OPT.dq_tma;
  static constexpr int CHUNKS = D / kChunkElems;  // what the loader reads
  // dQ's share, BLOCK_M queries x D per step, split between the warpgroups three ways:
  //   by queries (128-query steps): each its 64 queries, all keys, all of D;
  //   by columns (head dim 128): each all queries and keys, its 64-column block of D; a whole
  //     share per warpgroup would cost 32 more registers than a thread has;
  //   by keys (otherwise): each its own 64 keys, all queries and D: a warpgroup then waits only
  //     for its own dS^T rows, but both add a whole share.
  // Every part is 64 queries x 64 columns.
  enum class DqSplit { by_queries, by_columns, by_keys };
  static constexpr DqSplit DQ_SPLIT = BLOCK_M == 128 ? DqSplit::by_queries
                                      : D == 128     ? DqSplit::by_columns
                                                     : DqSplit::by_keys;
  static constexpr int DQ_KEYS = DQ_SPLIT == DqSplit::by_keys ? WG_KEYS : BLOCK_N;
  static constexpr int DQ_COLS = 64;
  static constexpr bool DQ_NEEDS_BLOCK = DQ_SPLIT != DqSplit::by_keys;  // reads the other warpgroup's dS^T
  static constexpr int TILE_ALIGN = 1024;  // a swizzle atom
  // K_j, V_j; Q_i and dO_i in two stages; dS^T (BLOCK_N keys x BLOCK_M queries, BLOCK_M / 64
  // column blocks); with dq_tma, two stages of each warpgroup's float32 part of dQ (64 x 64, two
  // boxes of 32 columns); then L_i and D_i in two stages. Every tile a whole number of atoms.
  static constexpr std::size_t kv_elems = static_cast<std::size_t>(BLOCK_N) * D;
  static constexpr std::size_t q_elems = static_cast<std::size_t>(BLOCK_M) * D;
  static constexpr std::size_t ds_elems = static_cast<std::size_t>(BLOCK_N) * BLOCK_M;
  static constexpr std::size_t dq_part_bytes = 64 * DQ_COLS * sizeof(float);
  static constexpr std::size_t tiles_bytes = (2 * kv_elems + 4 * q_elems + ds_elems) * sizeof(__nv_bfloat16) +
                                             (DQ_TMA ? 2 * WARPGROUPS * dq_part_bytes : 0);
  static constexpr std::size_t smem_bytes = tiles_bytes + 4 * BLOCK_M * sizeof(float) + TILE_ALIGN;
  static_assert(D == 64 || D == 128, "head dims 64 and 128");
  static_assert(BLOCK_M == 64 || (BLOCK_M == 128 && D == 64), "64-query steps, or 128 at head dim 64");
  static_assert(D == 64 || DQ_SPLIT == DqSplit::by_columns, "every part of dQ's share is 64 columns wide");
  static_assert(smem_bytes <= 227 * 1024, "an H100/H200 block has at most 227 KiB of shared memory");
};

// The named barriers of v6b (0 is __syncthreads').
enum class BwdBarrier : int {
  block_ds = 1,  // the block's dS^T is in shared memory (dQ by queries or columns)
  wg_ds0 = 2,    // warpgroup wg's dS^T rows are (dQ by keys): wg_ds0 + wg
  wg_dq0 = 4,    // warpgroup wg's part of dQ is in shared memory (dq_tma): wg_dq0 + wg
};

// A warpgroup's key-row tiles, each warp its 16 rows in the accumulator layout of wgmma_primitives.cuh.
template <class Cfg>
using KeysByQueries = float[Cfg::BLOCK_M / 8][4];  // S^T, P^T, dP^T, dS^T
template <class Cfg>
using KeysByDims = float[Cfg::D / 8][4];  // dK_w, dV_w
template <class Cfg>
using QueryShare = float[Cfg::DQ_COLS / 8][4];  // a warpgroup's part of dQ_i's share, 64 queries
template <class Cfg>
using KeyRowFrags = std::uint32_t[Cfg::BLOCK_M / 16][4];  // P^T or dS^T as bf16 A fragments

// Where a thread of a warpgroup stands.
struct BwdThread {
  int wg;       // its warpgroup: keys 64 wg .. 64 wg + 63 of the block
  int row;      // its first row inside the warpgroup's 64 (16 (warp % 4) + lane / 4); the other is row + 8
  int col;      // its first column inside an 8-column accumulator tile: 2 (lane % 4)
  int key0;     // the warpgroup's first key in the sequence
};

// A descriptor moved on by `bytes` (a multiple of 16) in shared memory: the start address is its
// low field. The add is volatile, so it stays between the wgmma around it: ptxas otherwise makes
// every descriptor of a product before its first wgmma and holds them all (at head dim 128, 64
// registers for S^T's and dP^T's).
__device__ __forceinline__ std::uint64_t advance(std::uint64_t desc, int bytes) {
  std::uint64_t out;
  asm volatile("add.s64 %0, %1, %2;\n" : "=l"(out) : "l"(desc), "l"(static_cast<std::uint64_t>(bytes >> 4)));
  return out;
}

// Shared-memory accesses by 32-bit address.
__device__ __forceinline__ float2 ld_shared_f32x2(std::uint32_t address) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(address));
  return v;
}
__device__ __forceinline__ void st_shared_u32(std::uint32_t address, std::uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(address), "r"(v) : "memory");
}

// ROWS rows of a (N, D) tensor from row0 into the tile at shared address `tile`, in wgmma's
// 128-byte swizzle (sw128_offset), in the background; rows past n_rows are zero-filled.
template <class Cfg, int ROWS>
__device__ __forceinline__ void load_rows_sw128(std::uint32_t tile, const __nv_bfloat16* base, index_t row_stride,
                                                int row0, int n_rows) {
  constexpr int total = ROWS * Cfg::CHUNKS;
  static_assert(total % Cfg::NUM_THREADS == 0, "every thread loads as many chunks");
#pragma unroll
  for (int i = static_cast<int>(threadIdx.x); i < total; i += Cfg::NUM_THREADS) {
    const int r = i / Cfg::CHUNKS, c = i % Cfg::CHUNKS;
    const bool valid = row0 + r < n_rows;
    const __nv_bfloat16* src = valid ? base + static_cast<index_t>(row0 + r) * row_stride + c * kChunkElems : base;
    cp_async_16(tile + 2 * sw128_offset<ROWS>(r, c), src, valid);
  }
}

// acc = X_w Y_i^T: X_w the warpgroup's 64 rows of K_j or V_j, Y_i the stage's Q_i or dO_i, both
// K-major in the 128-byte swizzle (as S = Q K^T in the forward, issue_scores). Committed, not
// waited for.
template <class Cfg>
__device__ __forceinline__ void issue_keys_times_rows(KeysByQueries<Cfg>& acc, std::uint32_t sX, std::uint32_t sY,
                                                      int wg) {
  constexpr int BN = Cfg::BLOCK_N, BM = Cfg::BLOCK_M;
  // Slice kk: column block kk / 4, 32 bytes further per slice inside the 128-byte row.
  const auto a_offset = [](int kk) { return ((kk / 4) * BN * 64 + (kk % 4) * 16) * 2; };
  const auto b_offset = [](int kk) { return ((kk / 4) * BM * 64 + (kk % 4) * 16) * 2; };
  std::uint64_t a = sw128_descriptor(sX + wg * Cfg::WG_KEYS * 128, 16, 1024);
  std::uint64_t b = sw128_descriptor(sY, 16, 1024);
#pragma unroll
  for (int kk = 0; kk < Cfg::D / 16; ++kk) {
    if (kk > 0) {
      a = advance(a, a_offset(kk) - a_offset(kk - 1));
      b = advance(b, b_offset(kk) - b_offset(kk - 1));
    }
    wgmma_ss<BM>(acc, a, b, kk > 0);
  }
  wgmma_commit();
}

// acc (keys x D) += X^T Y_i: X^T (P^T or dS^T) packed in registers, Y_i (dO_i or Q_i, queries x D)
// read MN-major, as V in the forward's O += P V (issue_pv). Committed, not waited for.
template <class Cfg>
__device__ __forceinline__ void issue_keys_by_dims(KeysByDims<Cfg>& acc, const KeyRowFrags<Cfg>& x,
                                                   std::uint32_t sY) {
  constexpr int BM = Cfg::BLOCK_M;
  fence_accumulators(acc);
  wgmma_fence();
  std::uint64_t b = sw128_descriptor(sY, BM * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < BM / 16; ++kk) {
    if (kk > 0) b = advance(b, 16 * 128);  // 16 query rows further
    wgmma_rs_tb<Cfg::D>(acc, x[kk], b);
  }
  wgmma_commit();
}

// From S^T and dP^T (fp32 accumulators) to the bf16 A fragments of P^T and dS^T, 16 queries at a
// time, so that the fp32 tiles die as the fragments fill (at head dim 128 the thread has no
// registers for both at once):
//   P^T  = 2^(S^T scale_log2 - L_i log2 e), exactly 0 for keys past N_KEYS and, causal, keys after
//          their query (the padded query rows need no mask: their dO, L and D_i are zero, so
//          their dS is 0, and their P meets a zero dO row in dV);
//   dS^T = P^T (dP^T - D_i).
// Accumulator tile t (queries 8t + col, + 1; elements 0-1 in row `row`, 2-3 in row + 8) becomes
// registers 2 (t % 2) and 2 (t % 2) + 1 of fragment t / 2 (layouts.hpp's p_source_*).
template <class Cfg>
__device__ __forceinline__ void key_row_gradients(const KeysByQueries<Cfg>& s, const KeysByQueries<Cfg>& dp,
                                                  KeyRowFrags<Cfg>& pf, KeyRowFrags<Cfg>& dsf, std::uint32_t sL,
                                                  std::uint32_t sD, int q0, int N_KEYS, float scale_log2,
                                                  const BwdThread& th) {
  const bool ragged = th.key0 + Cfg::WG_KEYS > N_KEYS;
  const bool straddles = Cfg::CAUSAL && th.key0 + Cfg::WG_KEYS - 1 > q0;
  // Row h's key is masked out past N_KEYS, and, causal, in column 8t + i when
  // key - (q0 + col) > 8t + i: two numbers per row instead of an index per element.
  bool key_out[2];
  int key_ahead[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int key = th.key0 + th.row + 8 * h;
    key_out[h] = key >= N_KEYS;
    key_ahead[h] = key - (q0 + th.col);
  }
#pragma unroll
  for (int t = 0; t < Cfg::BLOCK_M / 8; ++t) {
    const float2 L = ld_shared_f32x2(sL + 4 * (t * 8 + th.col));
    const float2 Di = ld_shared_f32x2(sD + 4 * (t * 8 + th.col));
    const float neg_l[2] = {-L.x * kLog2e, -L.y * kLog2e};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float x[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        x[i] = fmaf(s[t][2 * h + i], scale_log2, neg_l[i]);
        if (ragged || straddles) {
          if (key_out[h] || (Cfg::CAUSAL && key_ahead[h] > t * 8 + i)) x[i] = -INFINITY;
        }
      }
      const float p0 = exp2_approx(x[0]), p1 = exp2_approx(x[1]);
      const int kk = t / 2, r = 2 * (t % 2) + h;
      static_assert(p_source_tile(2) == 1 && p_source_element(1) == 2, "the register order assumed here");
      pf[kk][r] = pack_bf16x2(p0, p1);
      dsf[kk][r] = pack_bf16x2(p0 * (dp[t][2 * h] - Di.x), p1 * (dp[t][2 * h + 1] - Di.y));
    }
  }
}

// dS^T (the bf16 fragments) into its tile, keys as rows, in the 128-byte swizzle: chunk t of a
// row holds queries 8t .. 8t + 7. The eight rows of a store land in eight different chunks: no
// bank conflict.
template <class Cfg>
__device__ __forceinline__ void store_key_rows(std::uint32_t sdS, const KeyRowFrags<Cfg>& dsf, const BwdThread& th) {
  const int row0 = th.wg * Cfg::WG_KEYS + th.row;
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_M / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int t = 2 * kk + p_source_tile(r), row = row0 + 8 * (p_source_element(r) >> 1);
      st_shared_u32(sdS + 2 * (sw128_offset<Cfg::BLOCK_N>(row, t) + th.col), dsf[kk][r]);
    }
}

// Where warpgroup wg's part of dQ_i's share lies: its first query inside the step's tile, its
// first key inside the block's (the K-dim of its product), its first column of D.
template <class Cfg>
struct QueryPart {
  int query0, key0, col0;
  __device__ __forceinline__ explicit QueryPart(int wg)
      : query0(Cfg::DQ_SPLIT == Cfg::DqSplit::by_queries ? 64 * wg : 0),
        key0(Cfg::DQ_SPLIT == Cfg::DqSplit::by_keys ? Cfg::WG_KEYS * wg : 0),
        col0(Cfg::DQ_SPLIT == Cfg::DqSplit::by_columns ? Cfg::DQ_COLS * wg : 0) {}
};

// The warpgroup's part of dS K_j (64 queries x 64 columns over DQ_KEYS keys): A is dS^T read
// transposed (16 keys = 16 rows of 128 bytes per slice; the part's queries are column block
// query0 / 64 of the tile), B is K_j's rows read MN-major like V in the forward (column block
// col0 / 64). Committed, not waited for.
template <class Cfg>
__device__ __forceinline__ void issue_query_share(QueryShare<Cfg>& dq, std::uint32_t sdS, std::uint32_t sK,
                                                  const QueryPart<Cfg>& part) {
  constexpr int BN = Cfg::BLOCK_N;
  std::uint64_t a = sw128_descriptor(sdS + (part.query0 / 64) * BN * 128 + part.key0 * 128, BN * 128, 1024);
  std::uint64_t b = sw128_descriptor(sK + (part.col0 / 64) * BN * 128 + part.key0 * 128, BN * 128, 1024);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < Cfg::DQ_KEYS / 16; ++kk) {
    if (kk > 0) {
      a = advance(a, 16 * 128);  // 16 key rows further
      b = advance(b, 16 * 128);
    }
    wgmma_ss_tt<Cfg::DQ_COLS>(dq, a, b, kk > 0);
  }
  wgmma_commit();
}

// dQ_accum[q0 ..] += dq with vector atomics, the rows past N_QUERIES left out.
template <class Cfg>
__device__ __forceinline__ void add_query_share(const FastBwdParams& p, index_t bh, int q0, const QueryShare<Cfg>& dq,
                                                const QueryPart<Cfg>& part, const BwdThread& th) {
  float* const base = p.dQ_accum + bh * p.stride_accb;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int query = q0 + part.query0 + th.row + 8 * h;
    if (query >= p.N_QUERIES) continue;
    float* const row = base + static_cast<index_t>(query) * p.stride_accq + part.col0 + th.col;
#pragma unroll
    for (int t = 0; t < Cfg::DQ_COLS / 8; ++t) atomic_add_f32x2(row + t * 8, dq[t][2 * h], dq[t][2 * h + 1]);
  }
}

// dq (float32) into the warpgroup's staging tile for the TMA reduce-add: two boxes of 64 rows by
// 32 floats (128 bytes), each in the 128-byte swizzle (16-byte chunk c of row r at c ^ (r % 8)).
// A warp's 8-byte stores of one column group cover every chunk of its eight rows twice: two
// wavefronts, the least 256 bytes take.
template <class Cfg>
__device__ __forceinline__ void stage_query_share(std::uint32_t tile, const QueryShare<Cfg>& dq, const BwdThread& th) {
#pragma unroll
  for (int t = 0; t < Cfg::DQ_COLS / 8; ++t) {
    const int box = t / 4, chunk = 2 * (t % 4) + th.col / 4, byte = (th.col % 4) * 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = th.row + 8 * h;
      const std::uint32_t at = tile + box * 64 * 128 + row * 128 + ((chunk ^ (row % 8)) * 16) + byte;
      asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(at), "f"(dq[t][2 * h]), "f"(dq[t][2 * h + 1])
                   : "memory");
    }
  }
}

// dK_w (times the scale) and dV_w, rows past N_KEYS left out.
template <class Cfg>
__device__ __forceinline__ void write_key_rows(const FastBwdParams& p, index_t bh, const KeysByDims<Cfg>& dk,
                                               const KeysByDims<Cfg>& dv, const BwdThread& th) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int key = th.key0 + th.row + 8 * h;
    if (key >= p.N_KEYS) continue;
    __nv_bfloat16* const dk_row = p.dK + bh * p.stride_dkb + static_cast<index_t>(key) * p.stride_dkk + th.col;
    __nv_bfloat16* const dv_row = p.dV + bh * p.stride_dvb + static_cast<index_t>(key) * p.stride_dvk + th.col;
#pragma unroll
    for (int t = 0; t < Cfg::D / 8; ++t) {
      *reinterpret_cast<std::uint32_t*>(dk_row + t * 8) =
          pack_bf16x2(dk[t][2 * h] * p.scale, dk[t][2 * h + 1] * p.scale);
      *reinterpret_cast<std::uint32_t*>(dv_row + t * 8) = pack_bf16x2(dv[t][2 * h], dv[t][2 * h + 1]);
    }
  }
}

// The same value, which the compiler may no longer see through.
__device__ __forceinline__ std::uint32_t opaque(std::uint32_t x) {
  asm volatile("" : "+r"(x));
  return x;
}

template <class Cfg>
__device__ __forceinline__ void zero(float (&x)[Cfg::D / 8][4]) {
#pragma unroll
  for (int t = 0; t < Cfg::D / 8; ++t) x[t][0] = x[t][1] = x[t][2] = x[t][3] = 0.0f;
}

// One block per (batch element, key tile), the key tile the slow index: causal, the heaviest
// blocks of every head start first (as v5's backward). dq_map: dQ_accum's TMA view (float32,
// boxes of 32 columns by 64 rows, 128-byte swizzle), read only with dq_tma.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::NUM_THREADS, 1)
    hopper_bwd_kernel(const FastBwdParams p, const __grid_constant__ CUtensorMap dq_map) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N;
  extern __shared__ unsigned char smem_raw[];
  // The tiles, as shared-memory byte addresses from the first 1024-byte swizzle atom (the
  // hardware swizzles by address bits): K_j, V_j, two stages of Q_i, two of dO_i, dS^T, (dq_tma)
  // two stages of the warpgroups' parts of dQ, then two stages of L_i and of D_i. 32-bit
  // addresses: generic pointers would hold twice the registers through the loop, and at head
  // dim 128 dK and dV leave none to spare.
  constexpr std::uint32_t kKvBytes = Cfg::kv_elems * 2, kQBytes = Cfg::q_elems * 2, kRowBytes = BM * 4;
  constexpr std::uint32_t kDqBytes = Cfg::DQ_TMA ? Cfg::dq_part_bytes : 0;
  constexpr std::uint32_t kOffK = 0, kOffV = kKvBytes, kOffQ = 2 * kKvBytes, kOffdO = kOffQ + 2 * kQBytes,
                          kOffdS = kOffdO + 2 * kQBytes, kOffdQ = kOffdS + Cfg::ds_elems * 2,
                          kOffL = kOffdQ + 2 * Cfg::WARPGROUPS * kDqBytes, kOffD = kOffL + 2 * kRowBytes;
  static_assert(kOffD + 2 * kRowBytes + Cfg::TILE_ALIGN == Cfg::smem_bytes, "HopperBwdConfig::smem_bytes");
  const std::uint32_t base = (smem_address(smem_raw) + Cfg::TILE_ALIGN - 1) & ~(Cfg::TILE_ALIGN - 1);

  const int k0 = static_cast<int>(blockIdx.y) * BN;
  const index_t bh = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32;
  const int wg = tid / 128;
  const bool leader = tid % 128 == 0;  // the warpgroup's thread that issues its TMA reduce-adds
  const BwdThread th{wg, 16 * ((tid / 32) % 4) + lane / 4, 2 * (lane % 4), k0 + wg * Cfg::WG_KEYS};

  // Causal (top-left): this tile's first key k0 is first seen by query k0.
  const int m_begin = Cfg::CAUSAL ? k0 / BM : 0;
  const int m_end = (p.N_QUERIES + BM - 1) / BM;

  // Q_i, dO_i, L_i and D_i into stage `stage`; rows past N_QUERIES zero-filled. The row
  // pointers are made from the parameters at every load rather than kept through the loop.
  const auto load_query_tile = [&](int m, int stage) {
    const int q0 = m * BM;
    const std::uint32_t tiles = opaque(base);
    load_rows_sw128<Cfg, BM>(tiles + kOffQ + stage * kQBytes, p.Q + bh * p.stride_qb, p.stride_qq, q0, p.N_QUERIES);
    load_rows_sw128<Cfg, BM>(tiles + kOffdO + stage * kQBytes, p.dO + bh * p.stride_dob, p.stride_doq, q0,
                             p.N_QUERIES);
    if (tid < BM) {
      const bool valid = q0 + tid < p.N_QUERIES;
      const index_t q = valid ? q0 + tid : 0;
      cp_async_4(tiles + kOffL + stage * kRowBytes + 4 * tid, p.L + bh * p.stride_lb + q * p.stride_lq, valid);
      cp_async_4(tiles + kOffD + stage * kRowBytes + 4 * tid, p.D_rows + bh * p.stride_Db + q * p.stride_Dq, valid);
    }
  };

  KeysByDims<Cfg> dk, dv;
  zero<Cfg>(dk);
  zero<Cfg>(dv);
  if (m_begin < m_end) {
    load_rows_sw128<Cfg, BN>(base + kOffK, p.K + bh * p.stride_kb, p.stride_kk, k0, p.N_KEYS);
    load_rows_sw128<Cfg, BN>(base + kOffV, p.V + bh * p.stride_vb, p.stride_vk, k0, p.N_KEYS);
    load_query_tile(m_begin, 0);
    cp_async_commit();
  }
  for (int m = m_begin; m < m_end; ++m) {
    const int stage = (m - m_begin) & 1;
    // Tile m has landed, and every warpgroup is done with tile m - 1 (its products waited for):
    // the other stage is free.
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
    if (m + 1 < m_end) load_query_tile(m + 1, stage ^ 1);
    cp_async_commit();
    // The tiles' shared-memory addresses, from one register the compiler cannot see through:
    // the descriptors made from it are remade at every step instead of held across the loop.
    const std::uint32_t tiles = opaque(base);
    const std::uint32_t aK = tiles + kOffK, aV = tiles + kOffV, adS = tiles + kOffdS;
    const std::uint32_t aQ = tiles + kOffQ + stage * kQBytes, adO = tiles + kOffdO + stage * kQBytes;
    const int q0 = m * BM;

    KeysByQueries<Cfg> s, dp;
    wgmma_fence();
    issue_keys_times_rows<Cfg>(s, aK, aQ, wg);    // S^T = K_w Q_i^T
    issue_keys_times_rows<Cfg>(dp, aV, adO, wg);  // dP^T = V_w dO_i^T
    wgmma_wait<0>();
    fence_accumulators(s);
    fence_accumulators(dp);
    KeyRowFrags<Cfg> pf, dsf;
    key_row_gradients<Cfg>(s, dp, pf, dsf, tiles + kOffL + stage * kRowBytes, tiles + kOffD + stage * kRowBytes, q0,
                           p.N_KEYS, p.scale_log2, th);
    store_key_rows<Cfg>(adS, dsf, th);
    issue_keys_by_dims<Cfg>(dv, pf, adO);  // dV_w += P^T dO_i
    issue_keys_by_dims<Cfg>(dk, dsf, aQ);  // dK_w += dS^T Q_i
    // P^T's and dS^T's fragments are read until dV's and dK's products end: waiting for them
    // here frees those registers for dQ's share (at head dim 128, 64 more per thread).
    wgmma_wait<0>();
    fence_fragments(pf);
    fence_fragments(dsf);
    fence_accumulators(dv);
    fence_accumulators(dk);
    // dq_tma: the reduce-add of two steps ago has read the staging tile this step writes (the
    // leader's bulk groups complete in order; the barrier below passes that on).
    if constexpr (Cfg::DQ_TMA) {
      if (leader) bulk_wait_read<1>();
    }
    // The dS^T rows dQ's share reads are in shared memory, visible to wgmma: the warpgroup's
    // own, or the whole block's.
    fence_proxy_async();
    if constexpr (Cfg::DQ_NEEDS_BLOCK) {
      named_barrier_sync(static_cast<int>(BwdBarrier::block_ds), Cfg::NUM_THREADS);
    } else {
      named_barrier_sync(static_cast<int>(BwdBarrier::wg_ds0) + wg, 128);
    }
    QueryShare<Cfg> dq;
    const QueryPart<Cfg> part(wg);
    issue_query_share<Cfg>(dq, adS, aK, part);  // dq = dS K_j, the warpgroup's part
    wgmma_wait<0>();
    fence_accumulators(dq);
    if constexpr (Cfg::DQ_TMA) {
      const std::uint32_t staged = tiles + kOffdQ + (2 * wg + stage) * kDqBytes;
      stage_query_share<Cfg>(staged, dq, th);
      fence_proxy_async();
      named_barrier_sync(static_cast<int>(BwdBarrier::wg_dq0) + wg, 128);
      if (leader) {
#pragma unroll
        for (int box = 0; box < Cfg::DQ_COLS / 32; ++box) {
          tma_reduce_add_3d(&dq_map, staged + box * 64 * 128, part.col0 + 32 * box, q0 + part.query0,
                            static_cast<int>(bh));
        }
        bulk_commit();
      }
    } else {
      add_query_share<Cfg>(p, bh, q0, dq, part, th);
    }
  }
  cp_async_wait<0>();  // nothing may still be landing when the block ends
  if constexpr (Cfg::DQ_TMA) {
    if (leader) bulk_wait();  // the reduce-adds are complete before the block ends
  }
  write_key_rows<Cfg>(p, bh, dk, dv, th);
}

}  // namespace fa2::fast
