// The epilogue of v6's warp-specialised kernel (sm90/forward_kernel.cuh): O / l and L for a warpgroup's
// rows once its key tiles are done, stored from registers (v5's write_output) or, with
// STORE_TMA, through O's tile in SharedStorage by TMA, in the background.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "step07_benchmark/kernels/device/forward_params.cuh"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/device/warp_softmax.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"
#include "step07_benchmark/kernels/ptx/tma.cuh"
#include "step07_benchmark/kernels/ptx/wgmma.cuh"
#include "step07_benchmark/kernels/sm90/named_barriers.hpp"
#include "step07_benchmark/kernels/sm90/producer.cuh"  // HopperMaps
#include "step07_benchmark/kernels/sm90/shared_storage.cuh"

namespace fa2::flash {

// The epilogue with STORE_TMA: O / l in bf16 into the warpgroup's 64 rows of sO (Q's swizzled
// layout: one 64 x 64 box per column block), then one thread of the warpgroup hands them to TMA
// and the warpgroup goes on without waiting. L leaves from registers, as in write_output. sO is
// written again only once the previous tile's store has read it. With a window (Cfg::WINDOW) or in
// a packed batch (Cfg::PACKED, where a sequence may have no key), a row that saw no key (l = 0) gets
// O = 0 and L = +inf, as write_output gives it. A packed item's rows are q_rows' (the ragged map's).
template <class Cfg>
__device__ __forceinline__ void store_output_tma(const FastParams& p, const RowState<Cfg>& st, const WarpPlace& w,
                                                 int q0, int bh, int wg, elem16* sO, const CUtensorMap* map_o,
                                                 RaggedRows q_rows) {
  constexpr float kLn2 = 0.6931471805599453f;
  constexpr int BM = Cfg::BLOCK_M;
  const int barrier = epilogue_barrier(wg);  // the warpgroup's 128 threads
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
    const bool saw_keys = !(Cfg::WINDOW || Cfg::PACKED) || sum > 0.0f;
    const float inv = saw_keys ? 1.0f / sum : 0.0f;
#pragma unroll
    for (int t = 0; t < Cfg::D / 8; ++t) {
      *reinterpret_cast<std::uint32_t*>(sO + sw128_offset<BM>(row, t) + c) =
          pack_x2<Cfg::FLOAT16>(st.o[0][t][2 * h] * inv, st.o[0][t][2 * h + 1] * inv);
    }
    const int query = q0 + row;
    if (query < p.N_QUERIES && (w.lane & 3) == 0) {
      Lb[static_cast<index_t>(query) * p.stride_lq] = saw_keys ? (st.m[0][h] + log2f(sum)) * kLn2 : INFINITY;
    }
  }
  fence_proxy_async();  // the rows are in shared memory; the copy engine reads them next
  named_barrier_sync(barrier, 128);
  if (leader && q0 + 64 * wg < p.N_QUERIES) {
    for (int cb = 0; cb < Cfg::D / 64; ++cb) {
      if constexpr (Cfg::PACKED) {
        tma_store_ragged(map_o, sO + cb * BM * 64 + wg * 64 * 64, cb * 64, q0 + 64 * wg, bh, q_rows);
      } else {
        tma_store_3d(map_o, sO + cb * BM * 64 + wg * 64 * 64, cb * 64, q0 + 64 * wg, bh);
      }
    }
    bulk_commit();
  }
}

// The warpgroup's epilogue for the work item whose query tile starts at q0 (of the rows q_rows in a
// packed batch).
template <class Cfg>
__device__ __forceinline__ void hopper_epilogue(const FastParams& p, const RowState<Cfg>& st, const WarpPlace& w,
                                                int q0, int bh, int wg, const SmemTiles<Cfg>& smem,
                                                const HopperMaps& maps, RaggedRows q_rows) {
  if constexpr (Cfg::STORE_TMA) {
    store_output_tma<Cfg>(p, st, w, q0, bh, wg, smem.o, &maps.o, q_rows);
  } else {
    (void)q_rows;
    write_output<Cfg, Cfg::WINDOW || Cfg::PACKED>(p, st, w, q0, bh, smem.q);
  }
}

// After the warpgroup's last item: shared memory must outlive the TMA stores still reading it.
template <class Cfg>
__device__ __forceinline__ void hopper_epilogue_finish() {
  if constexpr (Cfg::STORE_TMA) {
    if (threadIdx.x % 128 == 0) bulk_wait();
  }
}

}  // namespace fa2::flash
