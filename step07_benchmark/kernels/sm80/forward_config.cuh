// v5's configuration (sm80/forward.cuh): the options each ablation step switches, the constants they
// give a kernel (FastConfig), its launch parameters (FastParams) and where a 16-byte chunk of a
// tile sits in shared memory, swizzled or not. v5's backward and v6 reuse all of it.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/forward_params.cuh"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/ptx/mma.cuh"

namespace fa2::flash {

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
  bool window = false;        // a sliding window's tile range and masks; not a row's choice: every
                              // configuration is built both ways (Cfg::Windowed)
  bool float16 = false;       // fp16 elements instead of bf16; also built both ways (Cfg::Float16)
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
  static constexpr bool WINDOW = OPT.window;
  using Windowed = FastConfig<D_, WARP_M_, NUM_WARPS_, BLOCK_N_, CAUSAL_, windowed_twin(OPT)>;
  static constexpr bool FLOAT16 = OPT.float16;
  using Float16 = FastConfig<D_, WARP_M_, NUM_WARPS_, BLOCK_N_, CAUSAL_, float16_twin(OPT)>;
  static_assert(!OVERLAP || (STAGES == 2 && OPT.split_kv), "the overlapped loop needs split, double-buffered K/V");
  static constexpr int CHUNKS = D / kChunkElems;  // 16-byte chunks per row of Q, K, V
  // Two blocks of 8 warps per SM cap registers at 128 per thread: worth it (16 warps to hide
  // latency) while the accumulators fit, i.e. for head dims up to 64.
  static constexpr int MIN_BLOCKS_PER_SM = (NUM_THREADS == 256 && D <= 64 && !OPT.overlap) ? 2 : 1;
  static constexpr std::size_t smem_bytes =
      static_cast<std::size_t>(BLOCK_M + 2 * STAGES * BLOCK_N) * D * sizeof(elem16);
  static_assert(D == 32 || D == 64 || D == 128, "head dims 32, 64 and 128");
  static_assert(BLOCK_N % 16 == 0 && BLOCK_N >= 16, "key tiles are multiples of 16");
  static_assert(STAGES == 1 || STAGES == 2, "single or double buffering");
};

}  // namespace fa2::flash
