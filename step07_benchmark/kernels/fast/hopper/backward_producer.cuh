// The producer of v6b's warp-specialised kernel (hopper/backward.cuh), and what it shares with
// the computing warpgroups: the TMA views, where a block stands in the grid.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast_bwd.cuh"  // FastBwdParams
#include "step07_benchmark/kernels/fast/hopper/backward_config.cuh"
#include "step07_benchmark/kernels/fast/hopper/pipeline.hpp"
#include "step07_benchmark/kernels/fast/tma_primitives.cuh"

namespace fa2::fast {

// The TMA views v6b reads (fa2_hopper.cu makes them): Q, dO, K, V (bf16, boxes of 64 columns by
// BLOCK_M or BLOCK_N rows; only with the producer) and dQ_accum (float32, boxes of 32 columns by
// 64 rows; only with dq_tma).
struct HopperBwdMaps {
  CUtensorMap q, dO, k, v, dq_accum;
};

// Where a block stands: its key tile, its (batch, head), the query tiles it walks (causal,
// top-left: the tile's first key k0 is first seen by query k0) and its thread's place. One block
// per (batch element, key tile), the key tile the slow index: causal, the heaviest blocks of
// every head start first (as v5's backward); deterministic, the last key tile first.
template <class Cfg>
struct BwdBlock {
  int k0;
  index_t bh;
  int m_begin, m_end;
  __device__ __forceinline__ explicit BwdBlock(const FastBwdParams& p)
      : k0(key_tile_of_block<Cfg::DETERMINISTIC>() * Cfg::BLOCK_N),
        bh(blockIdx.x),
        m_begin(Cfg::CAUSAL ? k0 / Cfg::BLOCK_M : 0),
        m_end((p.N_QUERIES + Cfg::BLOCK_M - 1) / Cfg::BLOCK_M) {}
  __device__ __forceinline__ BwdThread thread() const {
    const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, wg = tid / 128;
    return {wg, 16 * ((tid / 32) % 4) + lane / 4, 2 * (lane % 4), k0 + wg * Cfg::WG_KEYS};
  }
};

// The producer's loads for one block: K_j and V_j once, then each query tile's Q_i and dO_i by
// TMA and its L_i and D_i by the warp's lanes (ordinary loads and stores: L and D may be strided,
// and a row of them is 256 bytes), into stage (m - m_begin) % 2 once the computing warps have
// handed that stage back. Query rows past N_QUERIES arrive as zeros either way.
template <class Cfg>
__device__ __forceinline__ void backward_producer(const FastBwdParams& p, const HopperBwdMaps& maps,
                                                  const BwdBlock<Cfg>& blk, std::uint32_t tiles, std::uint64_t* kv_full,
                                                  std::uint64_t* full, std::uint64_t* empty, int lane) {
  using L = BwdLayout<Cfg>;
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N, D = Cfg::D;
  const int bh = static_cast<int>(blk.bh);
  if (lane == 0) {
    mbarrier_arrive_expect_bytes(kv_full, 2 * L::kv_bytes);
    for (int cb = 0; cb < D / 64; ++cb) {
      tma_load_3d_at(tiles + L::k + cb * BN * 128, &maps.k, cb * 64, blk.k0, bh, kv_full);
      tma_load_3d_at(tiles + L::v + cb * BN * 128, &maps.v, cb * 64, blk.k0, bh, kv_full);
    }
  }
  for (int m = blk.m_begin; m < blk.m_end; ++m) {
    const PipelineState<2> ring{m - blk.m_begin};
    const int s = ring.stage(), q0 = m * BM;
    if (ring.refills()) mbarrier_wait(&empty[s], ring.release_phase());
#pragma unroll
    for (int i = lane; i < BM; i += 32) {
      const bool valid = q0 + i < p.N_QUERIES;
      const index_t q = q0 + i;
      const float l = valid ? p.L[blk.bh * p.stride_lb + q * p.stride_lq] : 0.0f;
      const float d = valid ? p.D_rows[blk.bh * p.stride_Db + q * p.stride_Dq] : 0.0f;
      asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tiles + L::L + s * L::row_bytes + 4 * i), "f"(l) : "memory");
      asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(tiles + L::D + s * L::row_bytes + 4 * i), "f"(d) : "memory");
    }
    // Every lane's arrival releases its own stores; lane 0's also counts the copy engine's bytes.
    if (lane == 0) {
      mbarrier_arrive_expect_bytes(&full[s], 2 * L::q_bytes);
      for (int cb = 0; cb < D / 64; ++cb) {
        tma_load_3d_at(tiles + L::q + s * L::q_bytes + cb * BM * 128, &maps.q, cb * 64, q0, bh, &full[s]);
        tma_load_3d_at(tiles + L::dO + s * L::q_bytes + cb * BM * 128, &maps.dO, cb * 64, q0, bh, &full[s]);
      }
    } else {
      mbarrier_arrive(&full[s]);
    }
  }
}

}  // namespace fa2::fast
