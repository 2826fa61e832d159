// v6b: the backward on Hopper's wgmma (sm_90a). The same three phases and the same KV-outer loop
// as v5's backward (sm80/backward.cuh, whose preprocess and dQ conversion it launches), with the
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
// Loads, two ways: every thread with cp.async (hopper_bwd_kernel: K_j and V_j once, Q_i, dO_i,
// L_i and D_i double-buffered into wgmma's 128-byte swizzle, the block meeting at every query
// tile), or (producer) a producer warpgroup with TMA into a ring of two stages on mbarriers
// (hopper_bwd_ws_kernel), so that the computing warpgroups meet only where dQ's share needs the
// other one's dS^T; with dq_writer, that warpgroup's second warp also adds dQ's shares, and at
// 128-query steps its other two warps load L_i and D_i. The parts: backward_config.cuh (options,
// layout), backward_products.cuh (the wgmma, dQ's share out), backward_step.cuh (one step of a
// warpgroup), backward_producer.cuh (the producer, the row loaders, the TMA views, the walk's
// steps), backward_dq_writer.cuh (the dQ writer).
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/backward_params.cuh"
#include "step07_benchmark/kernels/ptx/grid_dependency.cuh"
#include "step07_benchmark/kernels/ptx/mma.cuh"
#include "step07_benchmark/kernels/ptx/tma.cuh"
#include "step07_benchmark/kernels/sm90/backward_config.cuh"
#include "step07_benchmark/kernels/sm90/backward_dq_writer.cuh"
#include "step07_benchmark/kernels/sm90/backward_producer.cuh"
#include "step07_benchmark/kernels/sm90/backward_products.cuh"
#include "step07_benchmark/kernels/sm90/backward_step.cuh"
#include "step07_benchmark/kernels/sm90/pipeline.hpp"

namespace fa2::flash {

__device__ __forceinline__ std::uint32_t aligned_tiles(const unsigned char* smem_raw, std::uint32_t align) {
  return (smem_address(smem_raw) + align - 1) & ~(align - 1);
}

// Every thread loads, with cp.async; the block meets at every query tile.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::NUM_THREADS, 1)
    hopper_bwd_kernel(const FastBwdParams p, const __grid_constant__ HopperBwdMaps maps) {
  static_assert(!Cfg::PACKED, "packed batches: the warp-specialised kernel");
  using L = BwdLayout<Cfg>;
  constexpr int BM = Cfg::BLOCK_M;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = aligned_tiles(smem_raw, Cfg::TILE_ALIGN);
  const BwdBlock<Cfg> blk(p);
  using Walk = typename BwdBlock<Cfg>::Walk;
  const int tid = static_cast<int>(threadIdx.x);

  // Step t's Q_i, dO_i, L_i and D_i (its place `at`) into stage `stage`; rows past N_QUERIES
  // zero-filled. The row pointers are made from the parameters at every load rather than kept
  // through the loop.
  const auto load_query_tile = [&](int t, StepPlace at, int stage) {
    const index_t bh = at.bh;
    const int q0 = at.q0;
    const std::uint32_t tiles = opaque(base);
    if (tid == 0) store_step_place<Cfg>(tiles, t, at);
    load_rows_sw128<Cfg, BM>(tiles + L::q + stage * L::q_bytes, p.Q + bh * p.stride_qb, p.stride_qq, q0, p.N_QUERIES);
    load_rows_sw128<Cfg, BM>(tiles + L::dO + stage * L::q_bytes, p.dO + bh * p.stride_dob, p.stride_doq, q0,
                             p.N_QUERIES);
    if (tid < BM) {
      const bool valid = q0 + tid < p.N_QUERIES;
      const index_t q = valid ? q0 + tid : 0;
      cp_async_4(tiles + L::L + stage * L::row_bytes + 4 * tid, p.L + bh * p.stride_lb + q * p.stride_lq, valid);
      cp_async_4(tiles + L::D + stage * L::row_bytes + 4 * tid, p.D_rows + bh * p.stride_Db + q * p.stride_Dq, valid);
    }
  };

  KeysByDims<Cfg> dk, dv;
  zero<Cfg>(dk);
  zero<Cfg>(dv);
  const int steps = Walk::steps(p);
  if (steps > 0) {
    load_rows_sw128<Cfg, Cfg::BLOCK_N>(base + L::k, p.K + blk.kv(p) * p.stride_kb, p.stride_kk, blk.k0, p.N_KEYS);
    load_rows_sw128<Cfg, Cfg::BLOCK_N>(base + L::v, p.V + blk.kv(p) * p.stride_vb, p.stride_vk, blk.k0, p.N_KEYS);
    load_query_tile(0, BwdBlock<Cfg>::first(p), 0);
    cp_async_commit();
  }
  for (int t = 0; t < steps; ++t) {
    const int stage = t & 1;
    // Step t's tile has landed, and every warpgroup is done with step t - 1: the other stage is free.
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
    if (t + 1 < steps) {
      load_query_tile(t + 1, BwdBlock<Cfg>::next(p, step_place<Cfg>(opaque(base), t)), stage ^ 1);
    }
    cp_async_commit();
    // The tiles' address from a register the compiler cannot see through: the descriptors made
    // from it are remade at every step instead of held across the loop.
    backward_step<Cfg, true>(p, maps.dq_accum, opaque(base), stage, t, dk, dv, blk.thread(opaque(threadIdx.x)), [] {});
  }
  cp_async_wait<0>();  // nothing may still be landing when the block ends
  finish_query_shares<Cfg>();
  write_key_rows<Cfg>(p, blk.kv(p), dk, dv, blk.thread(opaque(threadIdx.x)));  // remade, not held
}

// A packed item's parameters (Cfg::PACKED): block x computes key tile tiles[x / kv_heads] of its
// sequence for kv head x % kv_heads. Its sequence's lengths, its window turned to the kernel's
// top-left alignment (packed_window), L, D_i, dK and dV from the sequence's first rows, and the
// sequence's own dQ counters (from floor(q_start / 32) + its index: packed_dq_semaphore_count).
// Every function of the block then reads them as a dense block reads its one sequence's.
template <class Cfg>
__device__ __forceinline__ FastBwdParams bwd_item_params(const FastBwdParams& p) {
  const int x = static_cast<int>(blockIdx.x);
  const PackedKeyTile tile = p.packed_tiles[x / p.kv_heads];
  const PackedSequence s = p.sequences[tile.seq];
  FastBwdParams ip = p;
  ip.N_QUERIES = s.n_q;
  ip.N_KEYS = s.n_k;
  if constexpr (Cfg::WINDOW) {
    const WindowBounds w = packed_window(p.window_left, p.window_right, s);
    ip.window_left = w.left;
    ip.window_right = w.right;
  }
  ip.item_key_tile = tile.key_tile;
  ip.item_kv = x % p.kv_heads;
  ip.item_q_start = s.q_start;
  ip.item_k_start = s.k_start;
  ip.L = p.L + static_cast<index_t>(s.q_start) * p.stride_lq;
  ip.D_rows = p.D_rows + static_cast<index_t>(s.q_start) * p.stride_Dq;
  ip.dK = p.dK + static_cast<index_t>(s.k_start) * p.stride_dkk;
  ip.dV = p.dV + static_cast<index_t>(s.k_start) * p.stride_dvk;
  if constexpr (Cfg::DETERMINISTIC) ip.dq_semaphores = p.dq_semaphores + s.q_start / 32 + tile.seq;
  return ip;
}

// A producer warpgroup (one warp of it works) and two computing warpgroups that never meet to load.
// Packed, each block first copies its item's parameters to shared memory (bwd_item_params) and
// reads them there; head by head, thread 0 works out its place (head_major_place_set).
template <class Cfg>
__device__ __forceinline__ void hopper_bwd_ws_block(const FastBwdParams& p, const HopperBwdMaps& maps);
template <class Cfg>
__global__ void __launch_bounds__(Cfg::BLOCK_THREADS, 1)
    hopper_bwd_ws_kernel(const FastBwdParams p, const __grid_constant__ HopperBwdMaps maps) {
  if constexpr (Cfg::PACKED) {
    __shared__ FastBwdParams item;
    if (threadIdx.x == 0) item = bwd_item_params<Cfg>(p);
    __syncthreads();
    hopper_bwd_ws_block<Cfg>(item, maps);
  } else {
    if constexpr (Cfg::HEAD_MAJOR) {
      if (threadIdx.x == 0) head_major_place_set<Cfg::DETERMINISTIC>(p.head_group);
      __syncthreads();
    }
    hopper_bwd_ws_block<Cfg>(p, maps);
  }
}
template <class Cfg>
__device__ __forceinline__ void hopper_bwd_ws_block(const FastBwdParams& p, const HopperBwdMaps& maps) {
  using L = BwdLayout<Cfg>;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = aligned_tiles(smem_raw, Cfg::TILE_ALIGN);
  // The mbarriers, by generic pointer as ptx/tma.cuh takes them: K/V landed; per stage,
  // Q_i (and the rest) landed and handed back.
  auto* bars = reinterpret_cast<std::uint64_t*>(smem_raw + (base - smem_address(smem_raw)) + L::bars);
  std::uint64_t* kv_full = bars;
  std::uint64_t* full = bars + (L::full_bars - L::bars) / 8;
  std::uint64_t* empty = bars + (L::empty_bars - L::bars) / 8;
  const BwdBlock<Cfg> blk(p);
  using Walk = typename BwdBlock<Cfg>::Walk;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (threadIdx.x == 0) {
    // `full` completes on an arrival from each lane of the producer's warp (each releasing the L
    // and D it stored; with row loaders, theirs too) and the copy engine's bytes; `empty` on an
    // arrival from each computing thread (each releasing its own reads).
    mbarrier_init(kv_full, 1);
    for (int s = 0; s < 2; ++s) {
      mbarrier_init(&full[s], Cfg::ROW_LOADERS ? 3 * 32 : 32);
      mbarrier_init(&empty[s], Cfg::NUM_THREADS);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  // pdl: the dQ conversion may be launched once every block has started (it waits for this grid to
  // end before it reads dQ_accum).
  if constexpr (Cfg::PDL) allow_dependent_launch();
  if (warp >= Cfg::NUM_THREADS / 32) {
    setmaxnreg_dec<Cfg::PRODUCER_REGS>();
    // pdl: the preprocess may still be running. The producer loads K_j and V_j first; it, the dQ
    // writer and the row loaders then wait for it (D_i, dQ_accum and the turns' counters are its).
    if (warp == Cfg::NUM_THREADS / 32) {
      backward_producer<Cfg>(p, maps, blk, base, kv_full, full, empty, lane);
    } else if constexpr (Cfg::DQ_WRITER) {
      if (warp == Cfg::NUM_THREADS / 32 + 1) {
        if constexpr (Cfg::PDL) wait_for_prior_grids();
        dq_writer<Cfg>(p, maps, blk, base, lane);
      }
    }
    if constexpr (Cfg::ROW_LOADERS) {
      if (warp >= Cfg::NUM_THREADS / 32 + 2 && Cfg::PDL) wait_for_prior_grids();
      if (warp == Cfg::NUM_THREADS / 32 + 2) backward_row_loader<Cfg, 0>(p, base, lane);
      if (warp == Cfg::NUM_THREADS / 32 + 3) backward_row_loader<Cfg, 1>(p, base, lane);
    }
    return;
  }
  setmaxnreg_inc<Cfg::CONSUMER_REGS>();
  const BwdThread th = blk.thread();
  KeysByDims<Cfg> dk, dv;
  zero<Cfg>(dk);
  zero<Cfg>(dv);
  if (Walk::steps(p) > 0) mbarrier_wait(kv_full, 0);
  for (int t = 0; t < Walk::steps(p); ++t) {
    const PipelineState<2> ring{t};
    const int s = ring.stage();
    mbarrier_wait(&full[s], ring.phase());
    const auto release = [&] { mbarrier_arrive(&empty[s]); };  // this thread is done with the stage
    // The thread's place, remade at each step or held: remade where the warpgroup is read from lane
    // 0 (Cfg::UNIFORM_WG) and where P^T's exponentials run beside dP^T in flight (Cfg::HOLD_P),
    // which leaves no register to hold it.
    const BwdThread here = Cfg::UNIFORM_WG || Cfg::HOLD_P ? blk.thread(opaque(threadIdx.x)) : th;
    if constexpr (Cfg::MASKED_APART) {
      // One copy of the step for the steps a mask may touch (the diagonal's with the causal mask,
      // a ragged key tile's), one without the mask's tests for the rest. The compiler knows the
      // test is the same for a warp's lanes (Cfg::UNIFORM_WG).
      if (KeyRowMask<Cfg>::needed(step_place_field<Cfg, 1>(opaque(base), t), p.N_KEYS, p.window_left, p.window_right,
                                  here)) {
        backward_step<Cfg, true>(p, maps.dq_accum, opaque(base), s, t, dk, dv, here, release);
      } else {
        backward_step<Cfg, false>(p, maps.dq_accum, opaque(base), s, t, dk, dv, here, release);
      }
    } else {
      backward_step<Cfg, true>(p, maps.dq_accum, opaque(base), s, t, dk, dv, here, release);
    }
  }
  finish_query_shares<Cfg>();
  if constexpr (Cfg::BLOCK_M == 80 || Cfg::HOLD_P) {
    // At 80-query steps, and with P under dP held, the thread's place, held through the loop for
    // these stores, spills in the computing warpgroups' 240 registers: it is remade here instead.
    write_key_rows<Cfg>(p, blk.kv(p), dk, dv, blk.thread(opaque(threadIdx.x)));
  } else {
    write_key_rows<Cfg>(p, blk.kv(p), dk, dv, th);
  }
}

}  // namespace fa2::flash
