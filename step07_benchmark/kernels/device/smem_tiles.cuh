// Where a 16-byte chunk of a (rows, D) tile sits in shared memory, swizzled or not, its loads
// with cp.async and the addresses ldmatrix reads it from: the layout v5's forward, v5's backward
// and v6's cp.async generation share. Cfg gives D, CHUNKS (16-byte chunks per row), SWIZZLE and
// NUM_THREADS.
#pragma once

#include <cstdint>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/device/layouts.hpp"
#include "step07_benchmark/kernels/ptx/mma.cuh"

namespace fa2::flash {

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

}  // namespace fa2::flash
