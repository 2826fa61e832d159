// What step02's forward (tiled_attention.cpp) and backward (tiled_backward.cpp) share: tiles
// cut out of the (B, N, D) inputs, the causal mask, an exponential that keeps exact zeros, and
// the checks of Q, K, V and the tile options. Internal to step02.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "common/check_arg.hpp"
#include "common/tensor.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"

namespace fa2::tiled::detail {

template <class A>
using Vector = Eigen::VectorX<A>;

// Rows [row0, row0 + rows) of batch b of a (B, N, D) view, widened to A: a (rows, D) tile.
template <class A, class T>
RowMatrix<A> load_rows(TensorView<const T, 3> t, index_t b, index_t row0, index_t rows) {
  RowMatrix<A> tile(rows, t.size(2));
  for (index_t r = 0; r < rows; ++r) {
    for (index_t d = 0; d < t.size(2); ++d) tile(r, d) = convert<A>(t(b, row0 + r, d));
  }
  return tile;
}

// Causal, top-left: row r of the tile is query q_start + r, column c is key k_start + c,
// and a key after its query is masked. Its score becomes -inf, so its weight exp(-inf - m)
// is exactly 0.
template <class A>
void mask_future_keys(RowMatrix<A>& S_ij, index_t q_start, index_t k_start) {
  for (Eigen::Index r = 0; r < S_ij.rows(); ++r) {
    for (Eigen::Index c = 0; c < S_ij.cols(); ++c) {
      if (k_start + c > q_start + r) S_ij(r, c) = -std::numeric_limits<A>::infinity();
    }
  }
}

// Element-wise std::exp, which gives exactly 0 for -inf. Eigen 3.4's own .exp() does not
// when it vectorises: it clamps the argument first and returns ~3e-39 (float) or ~6e-309
// (double) for -inf. The result would still be right to the last digit, but the first
// rescale factor and a masked key's weight would no longer be exactly 0, which is what
// the article argues and what our tests check.
template <class Derived>
auto exp_of(const Eigen::MatrixBase<Derived>& x) {
  using A = typename Derived::Scalar;
  return x.unaryExpr([](A v) { return std::exp(v); });
}

// What Q K^T is multiplied by: the caller's scale, or 1/sqrt(D) (D the head dim), in type A.
template <class A>
A score_scale(const std::optional<double>& scale, index_t D) {
  return static_cast<A>(scale.value_or(1.0 / std::sqrt(static_cast<double>(D))));
}

template <class T>
void validate_inputs(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                     const TileOptions& options) {
  const auto shape = [](const auto& view) { return to_string<3>(view.shape()); };
  require_arg(Q.size(0) >= 1 && Q.size(1) >= 1 && Q.size(2) >= 1, "Q",
              "shape must be (B >= 1, Nq >= 1, D >= 1), got " + shape(Q));
  require_arg(K.size(0) == Q.size(0) && K.size(1) >= 1 && K.size(2) == Q.size(2), "K",
              "shape must be (B, Nk >= 1, D) with B and D of Q " + shape(Q) + ", got " + shape(K));
  require_arg(V.size(0) == K.size(0) && V.size(1) == K.size(1) && V.size(2) >= 1, "V",
              "shape must be (B, Nk, Dv >= 1) with B and Nk of K " + shape(K) + ", got " + shape(V));
  require_arg(Q.data() != nullptr, "Q", "the view has no data (null pointer)");
  require_arg(K.data() != nullptr, "K", "the view has no data (null pointer)");
  require_arg(V.data() != nullptr, "V", "the view has no data (null pointer)");
  require_arg(options.block_q >= 1, "block_q", got_allowed(options.block_q, "any integer >= 1"));
  require_arg(options.block_k >= 1, "block_k", got_allowed(options.block_k, "any integer >= 1"));
  require_arg(!options.scale || std::isfinite(*options.scale), "scale",
              got_allowed(options.scale.value_or(0.0), "a finite number, or none for 1/sqrt(D)"));
}

}  // namespace fa2::tiled::detail
