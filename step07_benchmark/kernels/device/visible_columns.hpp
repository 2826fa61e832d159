// Which queries of a backward step one key row sees, as two numbers: the step's columns c (query
// query0 + c, c = 0 .. columns - 1) that see key `key` are first <= c <= last, an empty range
// (first > last) where none does. The masks that decide it (common/window.hpp's `sees`):
//   key < n_keys;   causal: key <= query;   windowed: query - left <= key, and, without the causal
//   mask (which already hides every key a right edge >= 0 would), key <= query + right.
// Each bound is a line in c, so the row's whole mask is where c lies against two integers. A
// kernel then holds two registers per row and tests an element with two comparisons against the
// constant c, where testing the masks themselves holds the window's edges and the row's key, and
// redoes the arithmetic per element. Host and device: sm90/backward_step.cuh's KeyRowMask masks
// with it, and tests/test_visible_columns.cpp checks it against `sees` on the host.
#pragma once

#include "common/host_device.hpp"

namespace fa2::flash {

struct VisibleColumns {
  int first, last;
  FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr bool sees(int c) const { return first <= c && c <= last; }
};

// `left` and `right` as the kernels take them (finite: kernel_window, or packed_window's shift,
// which may make either negative). The arithmetic runs in 64 bits and is clamped to the step's
// columns, so no bound overflows whatever the lengths.
template <bool CAUSAL, bool WINDOW>
FA2_HOST_DEVICE FA2_FORCE_INLINE constexpr VisibleColumns visible_columns(int key, int query0, int n_keys, int left,
                                                                          int right, int columns) {
  if (key >= n_keys) return {columns, columns - 1};
  const long long ahead = static_cast<long long>(key) - query0;  // key - query at c = 0
  long long first = 0, last = columns - 1;
  if (CAUSAL && ahead > first) first = ahead;                             // key <= query0 + c
  if (WINDOW && !CAUSAL && ahead - right > first) first = ahead - right;  // key <= query0 + c + right
  if (WINDOW && ahead + left < last) last = ahead + left;                 // query0 + c - left <= key
  if (first > columns) first = columns;                                   // empty, and inside int
  if (last < -1) last = -1;
  return {static_cast<int>(first), static_cast<int>(last)};
}

}  // namespace fa2::flash
