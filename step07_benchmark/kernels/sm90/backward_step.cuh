// One step of v6b's computing warpgroups (sm90/backward.cuh), between its products
// (backward_products.cuh): P^T and dS^T from S^T and dP^T, dS^T into shared memory, the products
// in order with their waits and barriers, and at the end of the block dK_j and dV_j out to memory.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/backward_params.cuh"
#include "step07_benchmark/kernels/device/dq_turns.cuh"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/device/visible_columns.hpp"
#include "step07_benchmark/kernels/ptx/mma.cuh"
#include "step07_benchmark/kernels/ptx/tma.cuh"
#include "step07_benchmark/kernels/ptx/wgmma.cuh"
#include "step07_benchmark/kernels/sm90/backward_config.cuh"
#include "step07_benchmark/kernels/sm90/backward_products.cuh"

namespace fa2::flash {

// Which elements of a warpgroup's S^T tile of one step P^T must leave at exactly 0: keys past
// N_KEYS, causal, keys after their query, and windowed, keys outside their query's window. (The
// padded query rows need no mask: their dO, L and D_i are zero, so their dS is 0, and their P meets
// a zero dO row in dV; a query that sees no key has L = +inf, and its P is 0 throughout.) Row h
// (key th.row + 8h) sees the columns c = 8t + i (query q0 + col + c) of its VisibleColumns,
// tested against the constant c instead of the masks' arithmetic per element, and held in as few
// registers as the masks need: with a window both bounds, with the causal mask alone the first
// (the last is the step's), without either whether the key is past N_KEYS.
template <class Cfg>
struct KeyRowMask {
  bool any;  // some element of the step may be masked: the loops test `masked` only then
  VisibleColumns rows[2];
  bool key_out[2];
  // Whether the step of query tile q0 may mask one of the warpgroup's elements.
  __device__ __forceinline__ static bool needed(int q0, int N_KEYS, int left, int right, const BwdThread& th) {
    const bool ragged = th.key0 + Cfg::WG_KEYS > N_KEYS;
    const bool straddles = Cfg::CAUSAL && th.key0 + Cfg::WG_KEYS - 1 > q0;
    // A window's edge crosses the warpgroup's keys for some query of the step: its left edge (the
    // last query's first key) or, without the causal mask, its right edge (the first query's last key).
    const bool window_edge = Cfg::WINDOW && (th.key0 < q0 + Cfg::BLOCK_M - 1 - left ||
                                             (!Cfg::CAUSAL && th.key0 + Cfg::WG_KEYS - 1 > q0 + right));
    return ragged || straddles || window_edge;
  }
  __device__ __forceinline__ KeyRowMask(int q0, int N_KEYS, int left, int right, const BwdThread& th)
      : any(needed(q0, N_KEYS, left, right, th)) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = th.key0 + th.row + 8 * h;
      rows[h] = visible_columns<Cfg::CAUSAL, Cfg::WINDOW>(key, q0 + th.col, N_KEYS, left, right, Cfg::BLOCK_M);
      key_out[h] = key >= N_KEYS;
    }
  }
  __device__ __forceinline__ bool masked(int h, int c) const {
    if constexpr (Cfg::WINDOW) return !rows[h].sees(c);
    if constexpr (Cfg::CAUSAL) return c < rows[h].first;
    return key_out[h];
  }
};
// The mask of a step in which KeyRowMask::needed says nothing is masked (masked_apart): no test
// at all, so none of the mask's registers is live there.
struct NoMask {
  static constexpr bool any = false;
  __device__ __forceinline__ static bool masked(int, int) { return false; }
};

// From S^T and dP^T (fp32 accumulators) to the bf16 A fragments of P^T and dS^T, 16 queries at a
// time, so that the fp32 tiles die as the fragments fill (at head dim 128 the thread has no
// registers for both at once):
//   P^T  = 2^(S^T scale_log2 - L_i log2 e), 0 where KeyRowMask masks;
//   dS^T = P^T (dP^T - D_i).
// Accumulator tile t (queries 8t + col, + 1; elements 0-1 in row `row`, 2-3 in row + 8) becomes
// registers 2 (t % 2) and 2 (t % 2) + 1 of fragment t / 2 (layouts.hpp's p_source_*).
template <class Cfg, class Mask>
__device__ __forceinline__ void key_row_gradients(const KeysByQueries<Cfg>& s, const KeysByQueries<Cfg>& dp,
                                                  KeyRowFrags<Cfg>& pf, KeyRowFrags<Cfg>& dsf, std::uint32_t sL,
                                                  std::uint32_t sD, float scale_log2, const Mask& mask,
                                                  const BwdThread& th) {
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
        if (mask.any && mask.masked(h, t * 8 + i)) x[i] = -INFINITY;
      }
      const float p0 = exp2_approx(x[0]), p1 = exp2_approx(x[1]);
      const int kk = t / 2, r = 2 * (t % 2) + h;
      static_assert(p_source_tile(2) == 1 && p_source_element(1) == 2, "the register order assumed here");
      pf[kk][r] = pack_x2<Cfg::FLOAT16>(p0, p1);
      dsf[kk][r] = pack_x2<Cfg::FLOAT16>(p0 * (dp[t][2 * h] - Di.x), p1 * (dp[t][2 * h + 1] - Di.y));
    }
  }
}

// The mask on the packed fragments instead, after the fact (mask_fragments): register r of
// fragment kk holds queries 8t and 8t + 1 (t = 2 kk + p_source_tile(r)) of key row h; a masked
// element's bits are cleared, whatever was computed there (the exponential of a masked score may
// be +inf, and dS^T's then NaN). Only the mask's few registers are live here: S^T and dP^T are gone.
template <class Cfg>
__device__ __forceinline__ void mask_fragments(KeyRowFrags<Cfg>& pf, KeyRowFrags<Cfg>& dsf,
                                               const KeyRowMask<Cfg>& mask) {
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_M / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int t = 2 * kk + p_source_tile(r), h = p_source_element(r) >> 1;
      const std::uint32_t keep =
          (mask.masked(h, 8 * t) ? 0u : 0x0000FFFFu) | (mask.masked(h, 8 * t + 1) ? 0u : 0xFFFF0000u);
      pf[kk][r] &= keep;
      dsf[kk][r] &= keep;
    }
}

// The same in two halves (overlap_p): P^T in place of S^T, while dP^T may still be on the tensor
// cores, then, once it has landed, both fragments. Held (Cfg::HOLD_P), returns the least of the
// thread's P^T, a value that needs every exponential, for the wait after them (wgmma_wait_after).
template <class Cfg, class Mask>
__device__ __forceinline__ float probabilities_in_place(KeysByQueries<Cfg>& s, std::uint32_t sL, float scale_log2,
                                                        const Mask& mask, const BwdThread& th) {
  float least = INFINITY;
#pragma unroll
  for (int t = 0; t < Cfg::BLOCK_M / 8; ++t) {
    const float2 L = ld_shared_f32x2(sL + 4 * (t * 8 + th.col));
    const float neg_l[2] = {-L.x * kLog2e, -L.y * kLog2e};
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float x = fmaf(s[t][2 * h + i], scale_log2, neg_l[i]);
        if (mask.any && mask.masked(h, t * 8 + i)) x = -INFINITY;
        s[t][2 * h + i] = exp2_approx(x);
        if constexpr (Cfg::HOLD_P) least = fminf(least, s[t][2 * h + i]);
      }
  }
  return least;
}
template <class Cfg>
__device__ __forceinline__ void pack_key_row_gradients(const KeysByQueries<Cfg>& p, const KeysByQueries<Cfg>& dp,
                                                       KeyRowFrags<Cfg>& pf, KeyRowFrags<Cfg>& dsf, std::uint32_t sD,
                                                       const BwdThread& th) {
#pragma unroll
  for (int t = 0; t < Cfg::BLOCK_M / 8; ++t) {
    const float2 Di = ld_shared_f32x2(sD + 4 * (t * 8 + th.col));
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float p0 = p[t][2 * h], p1 = p[t][2 * h + 1];
      const int kk = t / 2, r = 2 * (t % 2) + h;
      pf[kk][r] = pack_x2<Cfg::FLOAT16>(p0, p1);
      dsf[kk][r] = pack_x2<Cfg::FLOAT16>(p0 * (dp[t][2 * h] - Di.x), p1 * (dp[t][2 * h + 1] - Di.y));
    }
  }
}

// dS^T (the bf16 fragments) into its tile, keys as rows, in the 128-byte swizzle: chunk t of a
// row holds queries 8t .. 8t + 7. The eight rows of a store land in eight different chunks: no
// bank conflict. At 80-query steps (Cfg::DS_SW32) in the 32-byte swizzle (sw32_offset): the eight
// rows of a store span 256 bytes, and the swizzle parts rows r and r + 4.
template <class Cfg>
__device__ __forceinline__ void store_key_rows(std::uint32_t sdS, const KeyRowFrags<Cfg>& dsf, const BwdThread& th) {
  const int row0 = th.wg * Cfg::WG_KEYS + th.row;
#pragma unroll
  for (int kk = 0; kk < Cfg::BLOCK_M / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int t = 2 * kk + p_source_tile(r), row = row0 + 8 * (p_source_element(r) >> 1);
      const int at = Cfg::DS_SW32 ? sw32_offset<Cfg::BLOCK_N>(row, t) : sw128_offset<Cfg::BLOCK_N>(row, t);
      st_shared_u32(sdS + 2 * (at + th.col), dsf[kk][r]);
    }
}

// dK_w (times the scale) and dV_w as float32 parts, rows past N_KEYS left out: the block's rows of
// dk_partial and dv_partial (row block kv_slot, FastBwdParams), which fast_bwd_sum_group_parts
// adds up.
template <class Cfg>
__device__ __forceinline__ void write_key_parts(const FastBwdParams& p, const KeysByDims<Cfg>& dk,
                                                const KeysByDims<Cfg>& dv, const BwdThread& th) {
  const index_t first_row = static_cast<index_t>(BwdWalk<Cfg>::kv_slot(p)) * p.N_KEYS;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int key = th.key0 + th.row + 8 * h;
    if (key >= p.N_KEYS) continue;
    const index_t at = (first_row + key) * Cfg::D + th.col;
#pragma unroll
    for (int t = 0; t < Cfg::D / 8; ++t) {
      *reinterpret_cast<float2*>(p.dk_partial + at + t * 8) =
          make_float2(dk[t][2 * h] * p.scale, dk[t][2 * h + 1] * p.scale);
      *reinterpret_cast<float2*>(p.dv_partial + at + t * 8) = make_float2(dv[t][2 * h], dv[t][2 * h + 1]);
    }
  }
}

// dK_w (times the scale) and dV_w, rows past N_KEYS left out: into dK and dV at K batch element
// kv, or, with the group spread over blocks, as the block's float32 parts (write_key_parts).
template <class Cfg>
__device__ __forceinline__ void write_key_rows(const FastBwdParams& p, index_t kv, const KeysByDims<Cfg>& dk,
                                               const KeysByDims<Cfg>& dv, const BwdThread& th) {
  if (p.group_splits > 1) {
    write_key_parts<Cfg>(p, dk, dv, th);
    return;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int key = th.key0 + th.row + 8 * h;
    if (key >= p.N_KEYS) continue;
    elem16* const dk_row = p.dK + kv * p.stride_dkb + static_cast<index_t>(key) * p.stride_dkk + th.col;
    elem16* const dv_row = p.dV + kv * p.stride_dvb + static_cast<index_t>(key) * p.stride_dvk + th.col;
#pragma unroll
    for (int t = 0; t < Cfg::D / 8; ++t) {
      *reinterpret_cast<std::uint32_t*>(dk_row + t * 8) =
          pack_x2<Cfg::FLOAT16>(dk[t][2 * h] * p.scale, dk[t][2 * h + 1] * p.scale);
      *reinterpret_cast<std::uint32_t*>(dv_row + t * 8) = pack_x2<Cfg::FLOAT16>(dv[t][2 * h], dv[t][2 * h + 1]);
    }
  }
}

template <class Cfg>
__device__ __forceinline__ void zero(float (&x)[Cfg::D / 8][4]) {
#pragma unroll
  for (int t = 0; t < Cfg::D / 8; ++t) x[t][0] = x[t][1] = x[t][2] = x[t][3] = 0.0f;
}

// Deterministic dQ (dq_turns.cuh): the counter of query tile q0 / BLOCK_M, and the count at which
// this warpgroup may add there. Each of a block's 8 computing warps increments the counter once
// it has added, so key tile n may start once the key tiles after it have: at 8 (last - n). When
// the warpgroups' parts are disjoint (split by queries or columns) both add from there at once;
// split by keys, both add a whole share, the warpgroup of the higher keys first.
// (The address is remade at each use from values the compiler cannot see through, so that it is
// not held across the loop in two registers the kernels at head dim 128 do not have.)
template <class Cfg>
__device__ __forceinline__ std::int32_t* query_tile_counter(const FastBwdParams& p, index_t bh, int q0) {
  const index_t index = static_cast<index_t>(opaque(static_cast<std::uint32_t>(bh))) * p.stride_semb;
  return p.dq_semaphores + index + opaque(static_cast<std::uint32_t>(q0 / Cfg::BLOCK_M));
}
// Packed, the key tiles are the item's sequence's, and its window's right bound may be negative.
template <class Cfg>
__device__ __forceinline__ int dq_turn(const FastBwdParams& p, int q0, const BwdThread& th) {
  constexpr int BM = Cfg::BLOCK_M, BN = Cfg::BLOCK_N;
  const int key_tile = th.key0 / BN, m = q0 / BM;
  int last;
  if constexpr (Cfg::PACKED && Cfg::WINDOW) {
    last = last_key_tile_right(m, (p.N_KEYS + BN - 1) / BN, BM, BN, Cfg::CAUSAL, p.window_right);
  } else if constexpr (Cfg::PACKED) {
    last = last_key_tile(m, (p.N_KEYS + BN - 1) / BN, BM, BN, Cfg::CAUSAL);
  } else {
    last = last_key_tile(m, static_cast<int>(gridDim.y), BM, BN, Cfg::CAUSAL, Cfg::WINDOW ? p.window_right : -1);
  }
  const int order_in_block = Cfg::DQ_SPLIT == Cfg::DqSplit::by_keys ? 1 - th.wg : 0;
  return 4 * (2 * (last - key_tile) + order_in_block);
}

// One step of a computing warpgroup: step t of the block's walk (QueryWalk: query tile q0 of query
// batch element bh; stage `stage` of Q_i, dO_i, L_i, D_i, which must have landed) against the
// block's key tile, into dk and dv, and its part of dQ_i's share into dQ_accum. after_reads() runs
// once the stage is no longer read (the warp-specialised kernel hands it back to its producer
// there). `tiles` is the layout's shared address; q0 and bh are read from StepPlace's slot at each
// use. MAY_MASK false: a step in which KeyRowMask::needed says nothing is masked.
template <class Cfg, bool MAY_MASK, class AfterReads>
__device__ __forceinline__ void backward_step(const FastBwdParams& p, const CUtensorMap& dq_map, std::uint32_t tiles,
                                              int stage, int t, KeysByDims<Cfg>& dk, KeysByDims<Cfg>& dv,
                                              const BwdThread& th, const AfterReads& after_reads) {
  using L = BwdLayout<Cfg>;
  const auto q0 = [&] { return step_place_field<Cfg, 1>(tiles, t); };
  const auto bh = [&] { return static_cast<index_t>(step_place_field<Cfg, 0>(tiles, t)); };
  const int wg = th.wg;
  const std::uint32_t aK = tiles + L::k, aV = tiles + L::v;
  const std::uint32_t adS = tiles + L::dS + (Cfg::DS_STAGES == 2 ? stage : 0) * L::ds_bytes;
  const std::uint32_t aQ = tiles + L::q + stage * L::q_bytes, adO = tiles + L::dO + stage * L::q_bytes;

  KeysByQueries<Cfg> s, dp;
  wgmma_fence();
  issue_keys_times_rows<Cfg>(s, aK, aQ, wg);    // S^T = K_w Q_i^T
  issue_keys_times_rows<Cfg>(dp, aV, adO, wg);  // dP^T = V_w dO_i^T
  const std::uint32_t sL = tiles + L::L + stage * L::row_bytes, sD = tiles + L::D + stage * L::row_bytes;
  KeyRowFrags<Cfg> pf, dsf;
  const auto mask = [&] {
    if constexpr (MAY_MASK) {
      return KeyRowMask<Cfg>(q0(), p.N_KEYS, p.window_left, p.window_right, th);
    } else {
      return NoMask{};
    }
  };
  if constexpr (Cfg::OVERLAP_P) {
    wgmma_wait<1>();  // S^T has landed; dP^T may still be running
    fence_accumulators(s);
    const float least = probabilities_in_place<Cfg>(s, sL, p.scale_log2, mask(), th);
    if constexpr (Cfg::HOLD_P) {
      wgmma_wait_after<0>(least);  // a plain wait, ptxas lifts above the exponentials
    } else {
      wgmma_wait<0>();
    }
    fence_accumulators(dp);
    pack_key_row_gradients<Cfg>(s, dp, pf, dsf, sD, th);
  } else {
    wgmma_wait<0>();
    fence_accumulators(s);
    fence_accumulators(dp);
    if constexpr (Cfg::MASKED_APART) {
      // The masked copy tests the mask once S^T and dP^T are gone: at 128-query steps the causal
      // twin has no registers for it beside them.
      key_row_gradients<Cfg>(s, dp, pf, dsf, sL, sD, p.scale_log2, NoMask{}, th);
      if constexpr (MAY_MASK) mask_fragments<Cfg>(pf, dsf, mask());
    } else {
      key_row_gradients<Cfg>(s, dp, pf, dsf, sL, sD, p.scale_log2, mask(), th);
    }
  }
  store_key_rows<Cfg>(adS, dsf, th);
  issue_keys_by_dims<Cfg>(dv, pf, adO);  // dV_w += P^T dO_i
  issue_keys_by_dims<Cfg>(dk, dsf, aQ);  // dK_w += dS^T Q_i
  // P^T's and dS^T's fragments are read until dV's and dK's products end: waiting for them here
  // frees those registers for dQ's share (at head dim 128, 64 more per thread). Chained
  // (dq_chained), dQ's product is issued behind them instead, and one wait ends all three.
  const auto dkv_landed = [&] {
    fence_fragments(pf);
    fence_fragments(dsf);
    fence_accumulators(dv);
    fence_accumulators(dk);
    after_reads();
  };
  if constexpr (!Cfg::DQ_CHAINED) {
    wgmma_wait<0>();
    dkv_landed();
  }
  const bool first_thread = threadIdx.x % 128 == 0;  // the warpgroup's thread that issues its reduce-adds
  // dq_tma: the reduce-add of two steps ago has read the staging tile this step writes (the
  // first thread's bulk groups complete in order; the barrier below passes that on). With the dQ
  // writer, its barrier says so (below).
  if constexpr (Cfg::DQ_TMA && !Cfg::DQ_WRITER) {
    if (first_thread) bulk_wait_read<1>();
  }
  // Deterministic: the warpgroup's first thread waits for its turn to add (dq_turns.cuh) before
  // the barrier below, which passes it on; waiting here, before dQ's product, no accumulator is
  // live. The dQ writer waits in its place.
  if (Cfg::DETERMINISTIC && !Cfg::DQ_WRITER && first_thread)
    wait_for_turn(query_tile_counter<Cfg>(p, bh(), q0()), dq_turn<Cfg>(p, q0(), th));
  // The dQ writer: wait until it has read out this warpgroup's staging tile (DQ_STAGES steps ago),
  // and say where the part goes and (deterministic) its turn, here, where no accumulator is
  // live either.
  const int dq_id = dq_slot<Cfg>(wg, t);
  if constexpr (Cfg::DQ_WRITER) {
    named_barrier_sync(static_cast<int>(BwdBarrier::dq_empty0) + dq_id, kDqHandoverThreads);
    if (first_thread) {
      const int turn = Cfg::TURN_IN_PLACE ? dq_turn<Cfg>(p, q0(), th) : 0;
      st_shared_dq_place(tiles + L::dq_places + 16 * dq_id, {static_cast<int>(bh()), q0(), turn});
    }
  }
  // The dS^T rows dQ's share reads are in shared memory, visible to wgmma: the warpgroup's own,
  // or the whole block's.
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
  if constexpr (Cfg::DQ_CHAINED) dkv_landed();
  fence_accumulators(dq);
  if constexpr (Cfg::DQ_WRITER) {
    // Into the staging tile (free since the barrier above); the writer takes it from there
    // (backward_dq_writer.cuh).
    stage_query_share<Cfg>(tiles + L::dQ + dq_id * L::dq_bytes, dq, th);
    fence_proxy_async();
    named_barrier_arrive(static_cast<int>(BwdBarrier::dq_full0) + dq_id, kDqHandoverThreads);
  } else if constexpr (Cfg::DQ_TMA) {
    const std::uint32_t staged = tiles + L::dQ + dq_id * L::dq_bytes;
    stage_query_share<Cfg>(staged, dq, th);
    fence_proxy_async();
    named_barrier_sync(static_cast<int>(BwdBarrier::wg_dq0) + wg, 128);
    if (first_thread) {
#pragma unroll
      for (int box = 0; box < Cfg::DQ_COLS / 32; ++box) {
        tma_reduce_add_3d(&dq_map, staged + box * L::dq_box_bytes, part.col0 + 32 * box, q0() + part.query0,
                          static_cast<int>(bh()));
      }
      bulk_commit();
      if constexpr (Cfg::DETERMINISTIC) bulk_wait();  // the reduce-adds have landed before the turn passes
    }
  } else {
    add_query_share<Cfg>(p, bh(), q0(), dq, part, th);
  }
  if constexpr (Cfg::DETERMINISTIC && !Cfg::DQ_WRITER) {  // this warp's adds are done
    __syncwarp();
    if (threadIdx.x % 32 == 0) pass_turn(query_tile_counter<Cfg>(p, bh(), q0()));
  }
}

// dq_tma: the warpgroup's reduce-adds are complete before the block ends (the dQ writer's own).
template <class Cfg>
__device__ __forceinline__ void finish_query_shares() {
  if constexpr (Cfg::DQ_TMA && !Cfg::DQ_WRITER) {
    if (threadIdx.x % 128 == 0) bulk_wait();
  }
}

}  // namespace fa2::flash
