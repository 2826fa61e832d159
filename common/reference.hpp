// The reference every kernel is checked against: attention in float64 with Eigen.
//
//   O = softmax(Q K^T * scale) V        L = logsumexp(Q K^T * scale)   (per query row)
//
// Q is (B, Nq, D), K is (B, Nk, D), V is (B, Nk, Dv). scale defaults to 1/sqrt(D).
// Causal mask, top-left aligned (as torch's is_causal): query q sees key k when k <= q; and a
// sliding window (common/window.hpp). Without a window every query row sees at least key 0; a
// row that sees no key (a window bounded on the left, N_q > N_k) gets O = 0 and L = +inf.
#pragma once

#include <optional>

#include "common/tensor.hpp"
#include "common/window.hpp"

namespace fa2 {

struct AttentionReference {
  Tensor<double, 3> O;  // (B, Nq, Dv)
  Tensor<double, 2> L;  // (B, Nq)
};

AttentionReference reference_attention(TensorView<const double, 3> Q, TensorView<const double, 3> K,
                                       TensorView<const double, 3> V, bool causal,
                                       std::optional<double> scale = std::nullopt, Window window = {});

// Any element type: the inputs are widened to float64 first (exactly, for float and bf16).
template <class T>
AttentionReference reference_attention(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                       bool causal, std::optional<double> scale = std::nullopt, Window window = {}) {
  const auto q = converted<double, T, 3>(Q);
  const auto k = converted<double, T, 3>(K);
  const auto v = converted<double, T, 3>(V);
  return reference_attention(q.cview(), k.cview(), v.cview(), causal, scale, window);
}

}  // namespace fa2
