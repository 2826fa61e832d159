// The float64 reference attention with Eigen (see reference.hpp for the conventions).
#include "common/reference.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <limits>

#include "common/check_arg.hpp"

namespace fa2 {
namespace {

using MatrixXdR = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Copies batch element b of a (B, N, D) view into a dense N x D matrix.
MatrixXdR batch_matrix(TensorView<const double, 3> t, index_t b) {
  MatrixXdR m(t.size(1), t.size(2));
  for (index_t n = 0; n < t.size(1); ++n) {
    for (index_t d = 0; d < t.size(2); ++d) m(n, d) = t(b, n, d);
  }
  return m;
}

}  // namespace

AttentionReference reference_attention(TensorView<const double, 3> Q, TensorView<const double, 3> K,
                                       TensorView<const double, 3> V, bool causal, std::optional<double> scale,
                                       Window window) {
  const index_t B = Q.size(0), Nq = Q.size(1), D = Q.size(2);
  const index_t Nk = K.size(1), Dv = V.size(2);
  require_arg(B >= 1 && Nq >= 1 && D >= 1, "Q", "shape must be (B>=1, Nq>=1, D>=1), got " + to_string<3>(Q.shape()));
  require_arg(K.size(0) == B && K.size(2) == D && Nk >= 1, "K",
              "shape must be (B, Nk>=1, D) matching Q " + to_string<3>(Q.shape()) + ", got " + to_string<3>(K.shape()));
  require_arg(V.size(0) == B && V.size(1) == Nk && Dv >= 1, "V",
              "shape must be (B, Nk, Dv) matching K " + to_string<3>(K.shape()) + ", got " + to_string<3>(V.shape()));
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(D)));

  AttentionReference ref{Tensor<double, 3>({B, Nq, Dv}), Tensor<double, 2>({B, Nq})};
  for (index_t b = 0; b < B; ++b) {
    const MatrixXdR q = batch_matrix(Q, b), k = batch_matrix(K, b), v = batch_matrix(V, b);
    MatrixXdR S = (q * k.transpose()) * s;  // (Nq, Nk)
    for (index_t i = 0; i < Nq; ++i) {
      for (index_t j = 0; j < Nk; ++j) {
        if (!sees(causal, window, i, j)) S(i, j) = -std::numeric_limits<double>::infinity();
      }
    }
    for (index_t i = 0; i < Nq; ++i) {
      const double row_max = S.row(i).maxCoeff();
      if (row_max == -std::numeric_limits<double>::infinity()) {  // a query that sees no key
        ref.L(b, i) = std::numeric_limits<double>::infinity();
        for (index_t d = 0; d < Dv; ++d) ref.O(b, i, d) = 0.0;
        continue;
      }
      // std::exp element by element: a masked score gives exactly 0.
      const Eigen::RowVectorXd p = (S.row(i).array() - row_max).unaryExpr([](double x) { return std::exp(x); });
      const double row_sum = p.sum();
      const Eigen::RowVectorXd o = (p * v) / row_sum;
      ref.L(b, i) = row_max + std::log(row_sum);
      for (index_t d = 0; d < Dv; ++d) ref.O(b, i, d) = o(d);
    }
  }
  return ref;
}

}  // namespace fa2
