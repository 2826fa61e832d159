// Pointer maths by hand: Triton's tl.load(ptrs, mask=..., other=...) and tl.store(ptrs, v,
// mask=...) for register tiles whose element offsets and masks the kernel built itself.
// Used by the pointer-maths weighted sum (weighted_sum_kernels.hpp); host and device code.
//
//   auto row = load_masked(prog, x, x_offsets, row_mask & col_mask, 0.0f);   // (ROWS, COLS)
//   store_masked(prog, out, rows * stride, totals, row_mask);                // (ROWS,)
//
// Each is a plain loop over the elements this thread holds (its share under the layout L);
// no tile pointer is involved: the offsets, the mask and the fallback value say everything.
#pragma once

#include "common/bf16.hpp"
#include "common/host_device.hpp"
#include "step03_tile_pointer/tile.hpp"

namespace fa2 {

// (ROWS, COLS): base[offsets] where mask holds, `other` elsewhere, widened to float.
template <class Program, class T, class L>
FA2_HOST_DEVICE Frag<float, L> load_masked(const Program& prog, const T* base, const Frag<index_t, L>& offsets,
                                           const Frag<bool, L>& mask, float other) {
  Frag<float, L> out;
  const int rank = prog.thread_rank();
  for (int i = 0; i < L::rows_per_thread; ++i) {
    // A thread past the tile's last row (more threads than the tile needs) holds no element;
    // its offsets point into some other program's rows, so it must not read them.
    const bool owned = L::owns(rank, i);
    for (int j = 0; j < L::cols_per_thread; ++j) {
      out.v[i][j] = (owned && mask.v[i][j]) ? convert<float>(base[offsets.v[i][j]]) : other;
    }
  }
  return out;
}

// (COLS,): one value per column, e.g. weight[cols] with the column mask.
template <class Program, class T, class L>
FA2_HOST_DEVICE ColVec<float, L> load_masked(const Program&, const T* base, const ColVec<index_t, L>& offsets,
                                             const ColVec<bool, L>& mask, float other) {
  ColVec<float, L> out;
  for (int j = 0; j < L::cols_per_thread; ++j) out.v[j] = mask.v[j] ? convert<float>(base[offsets.v[j]]) : other;
  return out;
}

// (ROWS,): base[offsets] = values where mask holds. Every thread of a row holds the row's value
// after a row reduction; the first of them writes it, so each element is written once.
template <class Program, class T, class L>
FA2_HOST_DEVICE void store_masked(const Program& prog, T* base, const RowVec<index_t, L>& offsets,
                                  const RowVec<float, L>& values, const RowVec<bool, L>& mask) {
  const int rank = prog.thread_rank();
  if (rank % L::threads_per_row != 0) return;
  for (int i = 0; i < L::rows_per_thread; ++i) {
    if (L::owns(rank, i) && mask.v[i]) base[offsets.v[i]] = convert<T>(values.v[i]);
  }
}

}  // namespace fa2
