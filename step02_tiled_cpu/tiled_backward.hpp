// Step 2, backward: the FlashAttention-2 backward pass on the CPU, key tiles outer, query tiles
// inner, never more than one (B_q x B_k) tile of S, P, dP or dS at a time. The algorithm is in
// tiled_backward.cpp; this header is its interface.
//   Tests: cmake --build --preset default --target step02_backward_tests && ctest --preset default -L step02
//   Demo:  build/default/step02_tiled_cpu/step02_backward_demo
//
//   auto [O, L] = fa2::tiled::tiled_attention_forward<float>(Q, K, V, options);
//   auto [dQ, dK, dV] = fa2::tiled::tiled_attention_backward<float>(Q, K, V, O.cview(), L.cview(), dO, options);
//
// Shapes: Q (B, Nq, D), K (B, Nk, D), V (B, Nk, Dv), O (B, Nq, Dv), L (B, Nq), dO (B, Nq, Dv)
//   ->  dQ (B, Nq, D), dK (B, Nk, D), dV (B, Nk, Dv).
// O and L are the forward's outputs for the same Q, K, V; `options` must have the forward's
// `causal` and `scale` (L depends on both), while the tile sizes are free to differ.
//
// Types, as the GPU kernels will do them: float and double are computed in their own type; bf16
// inputs are widened to float32 for every tile (accum_t<T>), and dQ, dK and dV are accumulated
// in float32 and rounded to bf16 once, at the end. The gradients come back in the input type.
#pragma once

#include <Eigen/Core>
#include <functional>

#include "common/bf16.hpp"
#include "common/tensor.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"  // TileOptions, accum_t, RowMatrix

namespace fa2::tiled {

template <class T>
struct BackwardResult {
  Tensor<T, 3> dQ;  // (B, Nq, D)
  Tensor<T, 3> dK;  // (B, Nk, D)
  Tensor<T, 3> dV;  // (B, Nk, Dv)
};

// What the optional trace hook sees after one query tile has been folded into one key tile.
// Row r of the (q_rows, k_cols) tiles is query q_start + r, column c is key k_start + c.
template <class A>
struct QueryTileStep {
  index_t batch;
  index_t k_start;               // the key tile (outer loop): keys [k_start, k_start + dK_j.rows())
  index_t q_start;               // the query tile (inner loop): queries [q_start, q_start + P_ij.rows())
  const RowMatrix<A>& P_ij;      // (q_rows, k_cols) exp(S - L_i), exactly 0 where masked
  const RowMatrix<A>& dP_ij;     // (q_rows, k_cols) dO_i V_j^T
  const RowMatrix<A>& dS_ij;     // (q_rows, k_cols) P_ij * (dP_ij - D_i)
  const Eigen::VectorX<A>& D_i;  // (q_rows) rowsum(dO_i * O_i)
  const RowMatrix<A>& dK_j;      // (k_cols, D) the key tile's dK, summed over the query tiles so far
  const RowMatrix<A>& dV_j;      // (k_cols, Dv) the key tile's dV, likewise
};

template <class A>
using QueryTileTrace = std::function<void(const QueryTileStep<A>&)>;

// The backward's preprocessing: D_i = rowsum(dO_i * O_i) for every query row, in accum_t<T>:
// (B, Nq). It equals rowsum(P_i * dP_i) (see the README), but needs only O and dO, one pass.
// Throws std::invalid_argument naming O or dO when their shapes are empty or differ.
template <class T>
Tensor<accum_t<T>, 2> backward_preprocess_D(TensorView<const T, 3> O, TensorView<const T, 3> dO);

// The tiled backward. Throws std::invalid_argument, naming the argument, when the shapes of
// Q, K, V, O, L and dO do not fit together, a length or D is 0, a tile size is below 1, the
// scale is not finite, an entry of L is not finite, or a view has no data.
// Instantiated for float, double and bf16.
template <class T>
BackwardResult<T> tiled_attention_backward(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                           TensorView<const T, 3> O, TensorView<const accum_t<T>, 2> L,
                                           TensorView<const T, 3> dO, const TileOptions& options = {},
                                           const QueryTileTrace<accum_t<T>>& trace = {});

extern template Tensor<float, 2> backward_preprocess_D<float>(TensorView<const float, 3>, TensorView<const float, 3>);
extern template Tensor<double, 2> backward_preprocess_D<double>(TensorView<const double, 3>,
                                                                TensorView<const double, 3>);
extern template Tensor<float, 2> backward_preprocess_D<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>);

extern template BackwardResult<float> tiled_attention_backward<float>(
    TensorView<const float, 3>, TensorView<const float, 3>, TensorView<const float, 3>, TensorView<const float, 3>,
    TensorView<const float, 2>, TensorView<const float, 3>, const TileOptions&, const QueryTileTrace<float>&);
extern template BackwardResult<double> tiled_attention_backward<double>(
    TensorView<const double, 3>, TensorView<const double, 3>, TensorView<const double, 3>, TensorView<const double, 3>,
    TensorView<const double, 2>, TensorView<const double, 3>, const TileOptions&, const QueryTileTrace<double>&);
extern template BackwardResult<bf16> tiled_attention_backward<bf16>(
    TensorView<const bf16, 3>, TensorView<const bf16, 3>, TensorView<const bf16, 3>, TensorView<const bf16, 3>,
    TensorView<const float, 2>, TensorView<const bf16, 3>, const TileOptions&, const QueryTileTrace<float>&);

}  // namespace fa2::tiled
