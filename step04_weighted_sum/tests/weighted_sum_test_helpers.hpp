// Shared by step04's host and GPU tests: the double-precision reference, the float32 error
// bound it is compared with, and an output buffer with guard elements and gaps around every
// row's total (so a kernel that writes outside its rows is caught).
//   ctest --preset default -L step04
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "common/compare.hpp"
#include "common/tensor.hpp"

namespace fa2::test {

// output[r] = sum_c x[r, c] * weight[c] in double, from the very values the kernel reads (a
// bf16 input is first widened, exactly), plus the largest row sum of |x[r, c] * weight[c]|.
struct WeightedSumReference {
  Tensor<double, 1> output;
  double max_abs_sum = 0.0;
};

template <class T>
WeightedSumReference reference_weighted_sum(TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  WeightedSumReference ref{Tensor<double, 1>(Extents<1>{x.size(0)}), 0.0};
  for (index_t r = 0; r < x.size(0); ++r) {
    double sum = 0.0, abs_sum = 0.0;
    for (index_t c = 0; c < x.size(1); ++c) {
      const double term = convert<double>(x(r, c)) * convert<double>(weight(c));
      sum += term;
      abs_sum += std::fabs(term);
    }
    ref.output(r) = sum;
    ref.max_abs_sum = std::fmax(ref.max_abs_sum, abs_sum);
  }
  return ref;
}

// Summing D float32 products in any order, with one rounding per product and per addition, is
// off by at most about (D + 1) * 2^-24 * sum_c |x[r, c] * weight[c]| (the classic bound for
// recursive summation; the tile order, the GPU's shuffle tree and the padding zeros all fit in
// it). A bf16 input changes nothing: its products are exact in float32. For D = 1000 random
// normals the bound is ~0.04 while a lost or doubled tile shifts a row by ~D_TILE_SIZE * 0.6,
// so such bugs cannot hide in it. No relative part: near-cancelling rows have tiny results
// but not tiny errors.
inline Tolerance float32_sum_tolerance(index_t D, double max_abs_sum) {
  return {static_cast<double>(D + 1) * std::ldexp(1.0, -24) * max_abs_sum, 0.0};
}

// NUM_ROWS totals written every `stride` elements, inside `guard` sentinel elements on each side.
// The totals start as NaN (a row the kernel skips fails the comparison); everything else holds
// the sentinel and must still hold it after the run.
class GuardedOutput {
 public:
  static constexpr index_t stride = 3;
  // Longer than the rows a tile of up to 32 rows can hang past the end (31 * stride), so even a
  // store that ignores NUM_ROWS lands on sentinels: the test reports it instead of corrupting memory.
  static constexpr index_t guard = 128;
  static constexpr float sentinel = -12345.0f;

  explicit GuardedOutput(index_t rows)
      : storage_(static_cast<std::size_t>(2 * guard + rows * stride), sentinel), rows_(rows) {
    for (index_t r = 0; r < rows; ++r) storage_[slot(r)] = std::numeric_limits<float>::quiet_NaN();
  }

  // The output as the kernel sees it, over this storage or over a device copy of it.
  TensorView<float, 1> view(float* storage) const { return {storage + guard, Extents<1>{rows_}, Extents<1>{stride}}; }
  TensorView<float, 1> view() { return view(storage_.data()); }
  TensorView<const float, 1> cview() const { return {storage_.data() + guard, Extents<1>{rows_}, Extents<1>{stride}}; }
  std::vector<float>& storage() { return storage_; }

  // Every element that is not a row's total still holds the sentinel.
  bool untouched_outside_rows() const {
    for (std::size_t i = 0; i < storage_.size(); ++i) {
      const auto k = static_cast<index_t>(i) - guard;
      const bool is_total = k >= 0 && k % stride == 0 && k / stride < rows_;
      if (!is_total && storage_[i] != sentinel) return false;
    }
    return true;
  }

 private:
  std::size_t slot(index_t r) const { return static_cast<std::size_t>(guard + r * stride); }
  std::vector<float> storage_;
  index_t rows_;
};

}  // namespace fa2::test
