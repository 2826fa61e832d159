// The reference every backward pass is checked against: the gradients of attention in float64,
// dense (the whole Nq x Nk matrices S and P), with Eigen. Tests: ctest -L common.
//
// For a loss whose gradient with respect to O is dO (B, Nq, Dv):
//   S  = Q K^T * scale          P = softmax(S) per row        (O = P V)
//   dV = P^T dO                 dP = dO V^T
//   dS = P * (dP - rowsum(P * dP))                             (the softmax Jacobian, row by row)
//   dQ = scale * dS K           dK = scale * dS^T Q
//
// Shapes, scale (1/sqrt(D) by default), the top-left causal mask and the sliding window are those
// of common/reference.hpp; a query that sees no key has P = 0 and so dQ = 0. P is recomputed here from Q, K and the
// scale: nothing from a forward pass (O, L) is taken on trust, so this reference also catches a forward that stored a
// wrong L.
#pragma once

#include <optional>

#include "common/tensor.hpp"
#include "common/window.hpp"

namespace fa2 {

struct AttentionGradients {
  Tensor<double, 3> dQ;  // (B, Nq, D)
  Tensor<double, 3> dK;  // (B, Nk, D)
  Tensor<double, 3> dV;  // (B, Nk, Dv)
};

// Throws std::invalid_argument naming the argument (Q, K, V or dO) when the shapes do not fit.
AttentionGradients reference_attention_backward(TensorView<const double, 3> Q, TensorView<const double, 3> K,
                                                TensorView<const double, 3> V, TensorView<const double, 3> dO,
                                                bool causal, std::optional<double> scale = std::nullopt,
                                                Window window = {});

// Any element type: the inputs are widened to float64 first (exactly, for float and bf16).
template <class T>
AttentionGradients reference_attention_backward(TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                                TensorView<const T, 3> V, TensorView<const T, 3> dO, bool causal,
                                                std::optional<double> scale = std::nullopt, Window window = {}) {
  const auto q = converted<double, T, 3>(Q);
  const auto k = converted<double, T, 3>(K);
  const auto v = converted<double, T, 3>(V);
  const auto dout = converted<double, T, 3>(dO);
  return reference_attention_backward(q.cview(), k.cview(), v.cview(), dout.cview(), causal, scale, window);
}

}  // namespace fa2
