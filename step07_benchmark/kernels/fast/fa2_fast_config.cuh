// v5's configuration (fa2_fast.cuh): the options each ablation step switches, the constants they
// give a kernel (FastConfig), its launch parameters (FastParams) and where a 16-byte chunk of a
// tile sits in shared memory, swizzled or not. v5's backward and v6 reuse all of it.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/fast/layouts.hpp"
#include "step07_benchmark/kernels/fast/mma_primitives.cuh"
#include "step07_benchmark/kernels/fast/tile_scheduler.hpp"

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
  bool window = false;        // a sliding window's tile range and masks; not a row's choice: every
                              // configuration is built both ways (Cfg::Windowed)
  bool float16 = false;       // fp16 elements instead of bf16; also built both ways (Cfg::Float16)
};

// A configuration's options (FastOptions, FastBwdOptions) with a sliding window: its tile ranges
// and masks would cost the default kernels registers they do not have, so every configuration is
// compiled twice and the launch picks the twin when the arguments have a window (Cfg::Windowed).
template <class Options>
constexpr Options windowed_twin(Options o) {
  o.window = true;
  return o;
}

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

// The kernel's arguments, named as step05's FlashFwdParams names them (the head dim is
// contiguous here, so only batch and row strides are passed). Lengths are int: the fast kernel
// takes sequences shorter than 2^31, and 32-bit row arithmetic saves registers.
struct FastParams {
  const elem16* Q;
  const elem16* K;
  const elem16* V;
  elem16* O;
  float* L;
  index_t stride_qb, stride_qq;
  index_t stride_kb, stride_kk;
  index_t stride_vb, stride_vk;
  index_t stride_ob, stride_oq;
  index_t stride_lb, stride_lq;
  int N_QUERIES, N_KEYS;
  int kv_group;  // grouped-query attention: (batch, head) bh reads K and V at bh / kv_group
  // A sliding window (v5's twins built for it, Cfg::WINDOW): query q sees keys q - window_left ..
  // q + window_right. Without one, `windowed` is false and the bounds (N_QUERIES, N_KEYS) are
  // past every key.
  bool windowed;
  int window_left, window_right;
  int n_q_tiles;     // cdiv(N_QUERIES, BLOCK_M)
  float scale_log2;  // softmax scale * log2(e): scores go straight into exp2
};

// Element offset of 16-byte chunk `chunk` of row `row` in a tile, with the chunk swizzled
// (layouts.hpp's swizzled_chunk says why) unless the ablation measures what that buys.
template <class Cfg>
__device__ __forceinline__ int tile_offset(int row, int chunk) {
  const int c = Cfg::SWIZZLE ? swizzled_chunk(row, chunk, Cfg::CHUNKS) : chunk;
  return row * Cfg::D + c * kChunkElems;
}

// ROWS rows of a (N, D) tensor starting at row0, global -> shared, in the background: chunk c of
// row r lands at tile + offset(r, c). Rows past n_rows are zero-filled: a zero key scores 0
// (masked later) and a zero value adds 0.
template <class Cfg, int ROWS, class Offset>
__device__ __forceinline__ void load_rows_async(elem16* tile, const elem16* base, index_t row_stride, int row0,
                                                int n_rows, Offset offset) {
  constexpr int total = ROWS * Cfg::CHUNKS;
#pragma unroll
  for (int i = static_cast<int>(threadIdx.x); i < total; i += Cfg::NUM_THREADS) {
    const int r = i / Cfg::CHUNKS, c = i % Cfg::CHUNKS;
    const bool valid = row0 + r < n_rows;
    const elem16* src = valid ? base + static_cast<index_t>(row0 + r) * row_stride + c * kChunkElems : base;
    cp_async_16(smem_address(tile + offset(r, c)), src, valid);
  }
}

// The same into v5's layout (tile_offset).
template <class Cfg, int ROWS>
__device__ __forceinline__ void load_tile_async(elem16* tile, const elem16* base, index_t row_stride, int row0,
                                                int n_rows) {
  load_rows_async<Cfg, ROWS>(tile, base, row_stride, row0, n_rows, [](int r, int c) { return tile_offset<Cfg>(r, c); });
}

// Address lane `lane` gives ldmatrix for a 16 x 16 block at (row0, chunk0), its four 8x8
// matrices taken rows then chunks (the A-operand order, and the transposed B order for V) or
// chunks then rows (B fragments of two neighbouring 8-key tiles of K): layouts.hpp.
template <class Cfg>
__device__ __forceinline__ std::uint32_t addr_rows_then_chunks(const elem16* tile, int row0, int chunk0, int lane) {
  const RowCol at = ldmatrix_rows_then_chunks(lane);
  return smem_address(tile + tile_offset<Cfg>(row0 + at.row, chunk0 + at.col));
}
template <class Cfg>
__device__ __forceinline__ std::uint32_t addr_chunks_then_rows(const elem16* tile, int row0, int chunk0, int lane) {
  const RowCol at = ldmatrix_chunks_then_rows(lane);
  return smem_address(tile + tile_offset<Cfg>(row0 + at.row, chunk0 + at.col));
}

}  // namespace fa2::fast
