// v6b's products (sm90/backward.cuh), each issued by a warpgroup as wgmma and committed, not
// waited for: S^T and dP^T from shared memory, dV and dK with A from registers, the warpgroup's
// part of dQ's share from shared memory read transposed, and that part's way out to dQ_accum
// (atomics, or staged for a TMA reduce-add). Every descriptor is made from a 32-bit shared
// address and moved on by `advance`; the helpers that move data by such addresses too.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/backward_params.cuh"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/ptx/mma.cuh"
#include "step07_benchmark/kernels/ptx/wgmma.cuh"
#include "step07_benchmark/kernels/sm90/backward_config.cuh"

namespace fa2::flash {

// A descriptor moved on by `bytes` (a multiple of 16) in shared memory: the start address is its
// low field. The add is volatile, so it stays between the wgmma around it: ptxas otherwise makes
// every descriptor of a product before its first wgmma and holds them all (at head dim 128, 64
// registers for S^T's and dP^T's).
__device__ __forceinline__ std::uint64_t advance(std::uint64_t desc, int bytes) {
  std::uint64_t out;
  asm volatile("add.s64 %0, %1, %2;\n" : "=l"(out) : "l"(desc), "l"(static_cast<std::uint64_t>(bytes >> 4)));
  return out;
}

// The same value, which the compiler may no longer see through: what is made from it is remade at
// each use instead of held in registers across the loop.
__device__ __forceinline__ std::uint32_t opaque(std::uint32_t x) {
  asm volatile("" : "+r"(x));
  return x;
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
__device__ __forceinline__ void load_rows_sw128(std::uint32_t tile, const elem16* base, index_t row_stride, int row0,
                                                int n_rows) {
  constexpr int total = ROWS * Cfg::CHUNKS;
  static_assert(total % Cfg::NUM_THREADS == 0, "every thread loads as many chunks");
#pragma unroll
  for (int i = static_cast<int>(threadIdx.x); i < total; i += Cfg::NUM_THREADS) {
    const int r = i / Cfg::CHUNKS, c = i % Cfg::CHUNKS;
    const bool valid = row0 + r < n_rows;
    const elem16* src = valid ? base + static_cast<index_t>(row0 + r) * row_stride + c * kChunkElems : base;
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
    wgmma_ss<BM, Cfg::FLOAT16>(acc, a, b, kk > 0);
  }
  wgmma_commit();
}

// acc (keys x D) += X^T Y_i: X^T (P^T or dS^T) packed in registers, Y_i (dO_i or Q_i, queries x D)
// read MN-major, as V in the forward's O += P V (issue_pv). Committed, not waited for.
template <class Cfg>
__device__ __forceinline__ void issue_keys_by_dims(KeysByDims<Cfg>& acc, const KeyRowFrags<Cfg>& x, std::uint32_t sY) {
  constexpr int BM = Cfg::BLOCK_M;
  fence_accumulators(acc);
  wgmma_fence();
  std::uint64_t b = sw128_descriptor(sY, BM * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < BM / 16; ++kk) {
    if (kk > 0) b = advance(b, 16 * 128);  // 16 query rows further
    wgmma_rs_tb<Cfg::D, Cfg::FLOAT16>(acc, x[kk], b);
  }
  wgmma_commit();
}

// Where warpgroup wg's part of dQ_i's share lies: its first query inside the step's tile, its
// first key inside the block's (the K-dim of its product), its first column of D.
template <class Cfg>
struct QueryPart {
  int query0, key0, col0;
  __device__ __forceinline__ explicit QueryPart(int wg)
      : query0(Cfg::DQ_SPLIT == Cfg::DqSplit::by_queries ? 64 * wg : 0),
        key0(Cfg::DQ_SPLIT == Cfg::DqSplit::by_keys ? Cfg::WG_KEYS * wg : 0),
        col0(Cfg::DQ_SPLIT == Cfg::DqSplit::by_columns || Cfg::DQ_TRANSPOSED ? Cfg::DQ_COLS * wg : 0) {}
};

// The warpgroup's part of dS K_j (64 queries x 64 columns over DQ_KEYS keys): A is dS^T read
// transposed (16 keys = 16 rows of 128 bytes per slice; the part's queries are column block
// query0 / 64 of the tile), B is K_j's rows read MN-major like V in the forward (column block
// col0 / 64). Committed, not waited for.
// Transposed (80-query steps), the part is dQ_i^T = K_j^T dS_i^T (64 columns x BLOCK_M queries): A
// is K_j's column block col0 / 64 read MN-major (as B above), B is dS^T read MN-major, in the
// 32-byte swizzle (16-query column blocks of BLOCK_N x 32 bytes, 8-key groups of 256 bytes).
template <class Cfg>
__device__ __forceinline__ void issue_query_share(QueryShare<Cfg>& dq, std::uint32_t sdS, std::uint32_t sK,
                                                  const QueryPart<Cfg>& part) {
  constexpr int BN = Cfg::BLOCK_N;
  if constexpr (Cfg::DQ_TRANSPOSED) {
    std::uint64_t a = sw128_descriptor(sK + (part.col0 / 64) * BN * 128, BN * 128, 1024);
    std::uint64_t b = sw32_descriptor(sdS, BN * 32, 256);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      if (kk > 0) {
        a = advance(a, 16 * 128);  // 16 key rows further
        b = advance(b, 16 * 32);
      }
      wgmma_ss<Cfg::BLOCK_M, Cfg::FLOAT16, true>(dq, a, b, kk > 0);
    }
    wgmma_commit();
  } else {
    std::uint64_t a = sw128_descriptor(sdS + (part.query0 / 64) * BN * 128 + part.key0 * 128, BN * 128, 1024);
    std::uint64_t b = sw128_descriptor(sK + (part.col0 / 64) * BN * 128 + part.key0 * 128, BN * 128, 1024);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Cfg::DQ_KEYS / 16; ++kk) {
      if (kk > 0) {
        a = advance(a, 16 * 128);  // 16 key rows further
        b = advance(b, 16 * 128);
      }
      wgmma_ss<Cfg::DQ_COLS, Cfg::FLOAT16, true>(dq, a, b, kk > 0);  // both read transposed
    }
    wgmma_commit();
  }
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

// dq (float32) into the warpgroup's staging tile for the TMA reduce-add: two boxes of DQ_ROWS rows
// by 32 floats (128 bytes), each in the 128-byte swizzle (16-byte chunk c of row r at c ^ (r % 8)).
// A warp's 8-byte stores of one column group cover every chunk of its eight rows twice: two
// wavefronts, the least 256 bytes take.
// Transposed, the thread holds columns th.row (+ 8) of queries 8t + th.col (+ 1): one 4-byte store
// per element (box (th.row + 8h) / 32, row = the query). The warp's 32 stores of one (t, h, i)
// cover 8 columns of 4 queries; the swizzle puts them in 32 different banks.
template <class Cfg>
__device__ __forceinline__ void stage_query_share(std::uint32_t tile, const QueryShare<Cfg>& dq, const BwdThread& th) {
  if constexpr (Cfg::DQ_TRANSPOSED) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        // Column th.row + 8h, query 8t + th.col + i: the same chunk for every t, 8t rows further.
        // The base address is made from an opaque place here, once per (h, i), not held across
        // the loop.
        const int place = static_cast<int>(opaque(static_cast<std::uint32_t>(th.row * 8 + th.col)));
        const int column = place / 8 + 8 * h, query = place % 8 + i;  // column of the warpgroup's 64
        const int chunk = ((column % 32) / 4) ^ query;                // query < 8: query % 8 == query
        const std::uint32_t row0 =
            tile + (column / 32) * Cfg::DQ_ROWS * 128 + query * 128 + chunk * 16 + (column % 4) * 4;
#pragma unroll
        for (int t = 0; t < Cfg::BLOCK_M / 8; ++t)
          asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(row0 + t * 1024), "f"(dq[t][2 * h + i]) : "memory");
      }
  } else {
    // The thread's place, opaque: the 16 store addresses are remade here at each step rather than
    // held across the loop (at head dim 128, with the producer, those registers spill).
    const int place = static_cast<int>(opaque(static_cast<std::uint32_t>(th.row * 8 + th.col)));
    const int thread_row = place / 8, thread_col = place % 8;
#pragma unroll
    for (int t = 0; t < Cfg::DQ_COLS / 8; ++t) {
      const int box = t / 4, chunk = 2 * (t % 4) + thread_col / 4, byte = (thread_col % 4) * 4;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = thread_row + 8 * h;
        const std::uint32_t at = tile + box * 64 * 128 + row * 128 + ((chunk ^ (row % 8)) * 16) + byte;
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(at), "f"(dq[t][2 * h]), "f"(dq[t][2 * h + 1])
                     : "memory");
      }
    }
  }
}

}  // namespace fa2::flash
