// The float64 reference backward with Eigen (see reference_backward.hpp for the formulas).
//   ctest --test-dir build/<preset> -L common      (tests/test_reference_backward.cpp)
#include "common/reference_backward.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <limits>

#include "common/check_arg.hpp"

namespace fa2 {
namespace {

using MatrixXdR = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMatrix = Eigen::Map<const MatrixXdR, Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;

// Batch element b of a (B, N, D) view as an N x D matrix, read through the view's strides.
StridedMatrix batch_of(TensorView<const double, 3> t, index_t b) {
  return {t.data() + t.offset(b, 0, 0), t.size(1), t.size(2), {t.stride(1), t.stride(2)}};
}

// Writes an N x D matrix into batch element b of a (B, N, D) tensor.
void store_batch(const MatrixXdR& m, Tensor<double, 3>& t, index_t b) {
  for (index_t n = 0; n < t.size(1); ++n) {
    for (index_t d = 0; d < t.size(2); ++d) t(b, n, d) = m(n, d);
  }
}

}  // namespace

AttentionGradients reference_attention_backward(TensorView<const double, 3> Q, TensorView<const double, 3> K,
                                                TensorView<const double, 3> V, TensorView<const double, 3> dO,
                                                bool causal, std::optional<double> scale, Window window) {
  const index_t B = Q.size(0), Nq = Q.size(1), D = Q.size(2);
  const index_t Nk = K.size(1), Dv = V.size(2);
  require_arg(B >= 1 && Nq >= 1 && D >= 1, "Q", "shape must be (B>=1, Nq>=1, D>=1), got " + to_string<3>(Q.shape()));
  require_arg(K.size(0) == B && K.size(2) == D && Nk >= 1, "K",
              "shape must be (B, Nk>=1, D) matching Q " + to_string<3>(Q.shape()) + ", got " + to_string<3>(K.shape()));
  require_arg(V.size(0) == B && V.size(1) == Nk && Dv >= 1, "V",
              "shape must be (B, Nk, Dv) matching K " + to_string<3>(K.shape()) + ", got " + to_string<3>(V.shape()));
  require_arg(
      dO.size(0) == B && dO.size(1) == Nq && dO.size(2) == Dv, "dO",
      "shape must be (B, Nq, Dv) = " + to_string<3>({B, Nq, Dv}) + " from Q and V, got " + to_string<3>(dO.shape()));
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(D)));

  AttentionGradients grad{Tensor<double, 3>({B, Nq, D}), Tensor<double, 3>({B, Nk, D}), Tensor<double, 3>({B, Nk, Dv})};
  for (index_t b = 0; b < B; ++b) {
    const StridedMatrix q = batch_of(Q, b), k = batch_of(K, b), v = batch_of(V, b), dout = batch_of(dO, b);
    MatrixXdR S = (q * k.transpose()) * s;  // (Nq, Nk)
    for (index_t i = 0; i < Nq; ++i) {
      for (index_t j = 0; j < Nk; ++j) {
        if (!sees(causal, window, i, j)) S(i, j) = -std::numeric_limits<double>::infinity();
      }
    }
    // Softmax per row. std::exp element by element, so that a masked score gives exactly 0
    // (Eigen's vectorised exp returns ~6e-309 for -inf); a row that sees no key stays 0.
    MatrixXdR P = MatrixXdR::Zero(Nq, Nk);
    for (index_t i = 0; i < Nq; ++i) {
      const double row_max = S.row(i).maxCoeff();
      if (row_max == -std::numeric_limits<double>::infinity()) continue;
      P.row(i) = (S.row(i).array() - row_max).unaryExpr([](double x) { return std::exp(x); }).matrix();
      P.row(i) /= P.row(i).sum();
    }

    const MatrixXdR dV = P.transpose() * dout;  // (Nk, Dv)
    const MatrixXdR dP = dout * v.transpose();  // (Nq, Nk)
    // Row q of P is a softmax, whose Jacobian is diag(p) - p p^T: dS = P * (dP - rowsum(P * dP)).
    const Eigen::VectorXd P_dot_dP = P.cwiseProduct(dP).rowwise().sum();  // (Nq)
    const MatrixXdR dS = P.cwiseProduct(dP.colwise() - P_dot_dP);         // (Nq, Nk)
    store_batch((dS * k) * s, grad.dQ, b);                                // (Nq, D)
    store_batch((dS.transpose() * q) * s, grad.dK, b);                    // (Nk, D)
    store_batch(dV, grad.dV, b);
  }
  return grad;
}

}  // namespace fa2
