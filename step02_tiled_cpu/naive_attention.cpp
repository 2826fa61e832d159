// Step 2's naive attention (see naive_attention.hpp): the whole score matrix per batch element,
// then a row softmax and one product with V. The memory yardstick of step02_measure.
//   Tests: ctest --preset cpu-only -L step02 (tests/test_memory_sweep.cpp)
#include "step02_tiled_cpu/naive_attention.hpp"

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <string>

#include "common/check_arg.hpp"
#include "step02_tiled_cpu/tile_helpers.hpp"

namespace fa2::tiled {
namespace {

// Batch element b of a (B, N, D) view as an (N, D) Eigen matrix over the same memory: rows are
// stride(1) apart, elements of a row adjacent (checked by the caller). No copy.
template <class T>
auto batch_rows(TensorView<const T, 3> t, index_t b) {
  using Map = Eigen::Map<const RowMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
  return Map(t.data() + b * t.stride(0), t.size(1), t.size(2), Eigen::OuterStride<>(t.stride(1)));
}

}  // namespace

template <class T>
ForwardResult<T> naive_attention_forward(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                         bool causal, std::optional<double> scale) {
  detail::validate_inputs(Q, K, V, TileOptions{.causal = causal, .scale = scale});
  for (const auto& [name, view] : {std::pair{"Q", Q}, std::pair{"K", K}, std::pair{"V", V}}) {
    require_arg(view.stride(2) == 1, name,
                "the last axis must be contiguous (stride 1), got stride " + std::to_string(view.stride(2)));
  }
  const auto [B, Nq, D] = Q.shape();  // (B, Nq, D)
  const index_t Nk = K.shape()[1];    // keys
  const index_t Dv = V.shape()[2];    // the width of a value row
  const T s = detail::score_scale<T>(scale, D);

  ForwardResult<T> result{Tensor<T, 3>(Extents<3>{B, Nq, Dv}), Tensor<T, 2>(Extents<2>{B, Nq})};
  RowMatrix<T> S(Nq, Nk);  // (Nq, Nk): reused for every batch element, so one lives at a time
  for (index_t b = 0; b < B; ++b) {
    const auto Q_b = batch_rows(Q, b);  // (Nq, D)
    const auto K_b = batch_rows(K, b);  // (Nk, D)
    const auto V_b = batch_rows(V, b);  // (Nk, Dv)
    // Two statements on purpose: Eigen evaluates `(Q_b * K_b^T) * s` into a temporary (Nq, Nk)
    // matrix before scaling it, a second score matrix (the heap meter shows it). Written like
    // this, the product goes straight into S.
    S.noalias() = Q_b * K_b.transpose();
    S *= s;
    if (causal) {  // top-left: query q sees key k when k <= q
      for (index_t q = 0; q + 1 < Nk && q < Nq; ++q) {
        S.row(q).tail(Nk - q - 1).setConstant(-std::numeric_limits<T>::infinity());
      }
    }
    const Eigen::VectorX<T> m = S.rowwise().maxCoeff();  // (Nq), finite: every query sees key 0
    S = detail::exp_of(S.colwise() - m);                 // P, in place; std::exp keeps exp(-inf) = 0
    const Eigen::VectorX<T> l = S.rowwise().sum();       // (Nq)
    Eigen::Map<RowMatrix<T>> O_b(result.O.view().data() + b * Nq * Dv, Nq, Dv);
    O_b.noalias() = S * V_b;  // (Nq, Dv), unnormalised
    O_b = O_b.array().colwise() / l.array();
    for (index_t q = 0; q < Nq; ++q) result.L(b, q) = m(q) + std::log(l(q));
  }
  return result;
}

template ForwardResult<float> naive_attention_forward<float>(TensorView<const float, 3>, TensorView<const float, 3>,
                                                             TensorView<const float, 3>, bool, std::optional<double>);
template ForwardResult<double> naive_attention_forward<double>(TensorView<const double, 3>, TensorView<const double, 3>,
                                                               TensorView<const double, 3>, bool,
                                                               std::optional<double>);

}  // namespace fa2::tiled
