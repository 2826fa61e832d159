// assert_close for host tensors, with the semantics of torch.testing.assert_close:
// an element passes when |actual - expected| <= atol + rtol * |expected|, and NaN never
// passes. The report names the worst element, its index, both values and the error.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "common/tensor.hpp"

namespace fa2 {

struct Tolerance {
  double atol = 0.0;
  double rtol = 0.0;
};

struct CloseReport {
  std::string what;  // e.g. "O" or "L"
  bool ok = true;
  index_t checked = 0;      // elements compared
  index_t mismatched = 0;   // elements outside the tolerance (NaN included)
  std::string worst_index;  // e.g. "(1, 37, 5)"
  double worst_actual = 0.0;
  double worst_expected = 0.0;
  double worst_excess = -std::numeric_limits<double>::infinity();  // |a-b| - allowed
  double max_abs_error = 0.0;
  Tolerance tol;

  // One line for passing comparisons, the full story for failing ones.
  std::string summary() const;
};

namespace detail {
// Returns |a - b| - (atol + rtol|b|): <= 0 passes; +inf for NaN or a one-sided infinity.
inline double excess(double a, double b, const Tolerance& tol) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::infinity();
  if (a == b) return -(tol.atol + tol.rtol * std::fabs(b));  // also equal infinities
  const double diff = std::fabs(a - b);
  if (!std::isfinite(diff)) return std::numeric_limits<double>::infinity();
  return diff - (tol.atol + tol.rtol * std::fabs(b));
}
}  // namespace detail

template <class A, class E, int Rank>
CloseReport compare_close(TensorView<const A, Rank> actual, TensorView<const E, Rank> expected, Tolerance tol,
                          std::string what = "") {
  CloseReport r;
  r.what = std::move(what);
  r.tol = tol;
  if (actual.shape() != expected.shape()) {
    r.ok = false;
    r.worst_index = "shape " + to_string<Rank>(actual.shape()) + " vs expected " + to_string<Rank>(expected.shape());
    return r;
  }
  for_each_index<Rank>(actual.shape(), [&](const Extents<Rank>& i) {
    const double a = convert<double>(actual.at(i));
    const double b = static_cast<double>(convert<double>(expected.at(i)));
    const double ex = detail::excess(a, b, tol);
    ++r.checked;
    if (ex > 0.0) ++r.mismatched;
    if (std::isfinite(a - b)) r.max_abs_error = std::fmax(r.max_abs_error, std::fabs(a - b));
    if (ex > r.worst_excess) {
      r.worst_excess = ex;
      r.worst_index = to_string<Rank>(i);
      r.worst_actual = a;
      r.worst_expected = b;
    }
  });
  r.ok = (r.mismatched == 0);
  return r;
}

}  // namespace fa2
