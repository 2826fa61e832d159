// Where data lives, as host-device functions: the mma.sync m16n8k16 fragments, ldmatrix's lane
// addresses and what each lane receives, and the shared-memory swizzles of v5 and v6. The kernels
// compute their indices with them and step07_figures draws them (tests/test_figures.cpp checks
// them against each other on the host).
#pragma once

#include "common/host_device.hpp"

namespace fa2::flash {

// A 16-byte chunk, what cp.async moves and what one ldmatrix row is: 8 bf16.
inline constexpr int kChunkElems = 8;

struct RowCol {
  int row = 0, col = 0;
};

// ---- mma.sync.m16n8k16 fragments (PTX ISA, "matrix fragments for mma.m16n8k16") --------------
// Lane l holds, with g = l / 4 and c = 2 (l % 4) (two bf16 per register for A and B, `half` 0
// the low one; one float per register for C and D):
//   a[0] (g, c..c+1)  a[1] (g+8, c..c+1)  a[2] (g, c+8..c+9)  a[3] (g+8, c+8..c+9)   rows x k
//   b0 (k c..c+1, n g)  b1 (k c+8..c+9, n g)                                          k x n
//   d[0], d[1] (g, c..c+1)   d[2], d[3] (g+8, c..c+1)                                 rows x n
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr RowCol mma_a_element(int lane, int reg, int half) {
  return {lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + 8 * (reg / 2) + half};
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr RowCol mma_b_element(int lane, int reg, int half) {
  return {2 * (lane % 4) + 8 * reg + half, lane / 4};  // (k, n)
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr RowCol mma_c_element(int lane, int reg) {
  return {lane / 4 + 8 * (reg >> 1), 2 * (lane % 4) + (reg & 1)};
}

// P as the A operand of O += P V, from the accumulators of S: register r of the A fragment of
// keys 16 kk .. 16 kk + 15 packs accumulator tile 2 kk + p_source_tile(r), elements
// p_source_element(r) and the one after it. Lane for lane, these are the same (row, key) pairs
// (mma_a_element against mma_c_element), so P never leaves the registers.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int p_source_tile(int reg) {
  return reg / 2;
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int p_source_element(int reg) {
  return 2 * (reg % 2);
}

// ---- ldmatrix.x4: a warp loads four 8 x 8 bf16 matrices of a 16 x 16 block ----------------
// Lane l gives the address of row l % 8 of matrix l / 8. The kernels take the four matrices of a
// 16 x 16 block in two orders: rows then chunks, (rows 0-7, chunk 0), (rows 8-15, chunk 0),
// (rows 0-7, chunk 1), (rows 8-15, chunk 1), the A operand's order (and the transposed B order
// for V); chunks then rows, (rows 0-7, chunk 0), (rows 0-7, chunk 1), (rows 8-15, chunk 0),
// (rows 8-15, chunk 1), the B fragments of two neighbouring 8-key tiles of K. `col` is the chunk.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr RowCol ldmatrix_rows_then_chunks(int lane) {
  return {(lane & 7) + 8 * ((lane >> 3) & 1), lane >> 4};
}
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr RowCol ldmatrix_chunks_then_rows(int lane) {
  return {(lane & 7) + 8 * (lane >> 4), (lane >> 3) & 1};
}
// What lane l receives of each matrix, in register r[matrix], bf16 `half`: (row l / 4, column
// 2 (l % 4) + half) of it, or with .trans (row 2 (l % 4) + half, column l / 4).
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr RowCol ldmatrix_received(int lane, int half, bool transposed) {
  return transposed ? RowCol{2 * (lane % 4) + half, lane / 4} : RowCol{lane / 4, 2 * (lane % 4) + half};
}

// ---- shared-memory swizzles -----------------------------------------------------------------
// v5 (sm80/forward.cuh's tile_offset): where chunk `chunk` of row `row` goes among the row's
// `chunks` chunks. Without the swizzle, the eight rows an ldmatrix reads at one column would all
// sit in the same four banks (rows are 64, 128 or 256 bytes long); XOR-ing the chunk index with
// the row spreads them over all 32. Rows of 4 chunks: two rows share a 128-byte line.
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int swizzled_chunk(int row, int chunk, int chunks) {
  return chunks >= 8 ? chunk ^ (row & 7) : chunk ^ ((row >> 1) & 3);
}

// v6 (wgmma's 128-byte swizzle): element offset of chunk `chunk` of row `row` in a (ROWS, D) tile
// stored as D / 64 column blocks of (ROWS, 64): the column block, then the row, then the chunk
// XOR-ed with the row's place in its 8-row atom.
template <int ROWS>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int sw128_offset(int row, int chunk) {
  return (chunk / 8) * ROWS * 64 + row * 64 + ((chunk % 8) ^ (row % 8)) * 8;
}

// The same in wgmma's 32-byte swizzle (the backward's dS^T at 80-query steps): a (ROWS, N) tile
// stored as N / 16 column blocks of (ROWS, 16), the chunk XOR-ed with bit 2 of the row (row / 4
// % 2), so that rows r and r + 4, which share banks, take different halves of their 32 bytes.
template <int ROWS>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr int sw32_offset(int row, int chunk) {
  return (chunk / 2) * ROWS * 16 + row * 16 + ((chunk % 2) ^ ((row / 4) % 2)) * 8;
}

}  // namespace fa2::flash
