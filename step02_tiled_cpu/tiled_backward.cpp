// Step 2, backward: the tiled FlashAttention-2 backward on the CPU. Read tiled_attention_backward
// below top to bottom: D_i first, then the outer loop walks key tiles, the inner loop query tiles.
//   cmake --build --preset default --target step02_backward_tests && ctest --preset default -L step02
#include "step02_tiled_cpu/tiled_backward.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/check_arg.hpp"
#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution region below
#include "step02_tiled_cpu/tile_helpers.hpp"

namespace fa2::tiled {
namespace {

using detail::exp_of;
using detail::load_rows;
using detail::mask_future_keys;
using detail::Vector;

// Entries [row0, row0 + rows) of batch b of a (B, N) view: a (rows) vector, e.g. L_i or D_i.
template <class A>
Vector<A> load_entries(TensorView<const A, 2> t, index_t b, index_t row0, index_t rows) {
  Vector<A> v(rows);
  for (index_t r = 0; r < rows; ++r) v(r) = t(b, row0 + r);
  return v;
}

// Writes a (rows, D) tile into rows [row0, row0 + rows) of batch b, rounded to T.
template <class T, class A>
void store_rows(const RowMatrix<A>& tile, TensorView<T, 3> t, index_t b, index_t row0) {
  for (Eigen::Index r = 0; r < tile.rows(); ++r) {
    for (Eigen::Index d = 0; d < tile.cols(); ++d) t(b, row0 + r, d) = convert<T>(tile(r, d));
  }
}

std::string shape_of(const auto& view) {
  return to_string<3>(view.shape());
}

void validate_O_dO(const auto& O, const auto& dO) {
  require_arg(O.size(0) >= 1 && O.size(1) >= 1 && O.size(2) >= 1, "O",
              "shape must be (B >= 1, Nq >= 1, Dv >= 1), got " + shape_of(O));
  require_arg(dO.shape() == O.shape(), "dO", "shape must be that of O " + shape_of(O) + ", got " + shape_of(dO));
  require_arg(O.data() != nullptr, "O", "the view has no data (null pointer)");
  require_arg(dO.data() != nullptr, "dO", "the view has no data (null pointer)");
}

template <class T>
void validate(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V, TensorView<const T, 3> O,
              TensorView<const accum_t<T>, 2> L, TensorView<const T, 3> dO, const TileOptions& options) {
  detail::validate_inputs(Q, K, V, options);  // the forward's checks, with its messages

  // What the forward returned and the gradient of O: one row per query, Dv columns.
  const Extents<3> O_shape{Q.size(0), Q.size(1), V.size(2)};
  require_arg(O.shape() == O_shape, "O",
              "shape must be (B, Nq, Dv) = " + to_string<3>(O_shape) + " from Q and V, got " + shape_of(O));
  require_arg(
      L.size(0) == Q.size(0) && L.size(1) == Q.size(1), "L",
      "shape must be (B, Nq) = " + to_string<2>({Q.size(0), Q.size(1)}) + " from Q, got " + to_string<2>(L.shape()));
  validate_O_dO(O, dO);
  require_arg(L.data() != nullptr, "L", "the view has no data (null pointer)");
  // A non-finite L would turn whole rows of P into 0, inf or NaN without a word: the forward
  // always returns a finite logsumexp, so anything else is not a forward's L.
  for_each_index<2>(L.shape(), [&](const Extents<2>& i) {
    require_arg(std::isfinite(static_cast<double>(L.at(i))), "L",
                "every entry must be finite (the forward's logsumexp), got " +
                    std::to_string(static_cast<double>(L.at(i))) + " at " + to_string<2>(i));
  });
}

}  // namespace

template <class T>
Tensor<accum_t<T>, 2> backward_preprocess_D(TensorView<const T, 3> O, TensorView<const T, 3> dO) {
  using A = accum_t<T>;
  validate_O_dO(O, dO);
  Tensor<A, 2> D_rows({O.size(0), O.size(1)});  // (B, Nq)
  for (index_t b = 0; b < O.size(0); ++b) {
    for (index_t q = 0; q < O.size(1); ++q) {
      A D_i = 0;  // one row's dot product dO_i . O_i, in the accumulator type
      for (index_t d = 0; d < O.size(2); ++d) D_i += convert<A>(dO(b, q, d)) * convert<A>(O(b, q, d));
      D_rows(b, q) = D_i;
    }
  }
  return D_rows;
}

template <class T>
BackwardResult<T> tiled_attention_backward(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                           TensorView<const T, 3> O, TensorView<const accum_t<T>, 2> L,
                                           TensorView<const T, 3> dO, const TileOptions& options,
                                           const QueryTileTrace<accum_t<T>>& trace) {
  validate(Q, K, V, O, L, dO, options);
  // BEGIN SOLUTION step02 full: the tiled backward from the validated inputs: D_i, the outputs, both loops, dQ at the end uses(Q, K, V, O, L, dO, options, trace)
  using A = accum_t<T>;
  const index_t B = Q.size(0), Nq = Q.size(1), D = Q.size(2), Nk = K.size(1), Dv = V.size(2);
  const index_t B_q = options.block_q, B_k = options.block_k;
  const A scale = detail::score_scale<A>(options.scale, D);

  // Preprocessing, before any tile: D_i = rowsum(dO_i * O_i) for every query row.
  const Tensor<A, 2> D_rows = backward_preprocess_D<T>(O, dO);  // (B, Nq)

  // The results start as NaN: an element the loops below forget to write stays NaN, and no
  // comparison lets a NaN pass. dQ is summed over key tiles in dQ_accum, in the accumulator
  // type (on a GPU, a float32 buffer in global memory), and rounded to T at the very end.
  const T nan = convert<T>(std::numeric_limits<A>::quiet_NaN());
  BackwardResult<T> out{Tensor<T, 3>({B, Nq, D}, nan), Tensor<T, 3>({B, Nk, D}, nan), Tensor<T, 3>({B, Nk, Dv}, nan)};
  Tensor<A, 3> dQ_accum({B, Nq, D}, A{0});  // (B, Nq, D), contiguous

  for (index_t b = 0; b < B; ++b) {
    // Outer loop: key tiles. Each owns its rows of dK and dV, so the two stay in fast memory
    // (registers, on a GPU) for the whole inner loop and are written once, at its end.
    for (index_t k_start = 0; k_start < Nk; k_start += B_k) {
      // BEGIN SOLUTION step02 standard: one key tile: K_j, V_j and their gradients, the query tiles that see them (causal included) with P and the five products, then dK_j and dV_j stored uses(Q, K, V, dO, L, D_rows, dQ_accum, out, options, trace, b, k_start, B_q, B_k, Nq, Nk, D, Dv, scale)
      const index_t k_cols = std::min(B_k, Nk - k_start);            // the last tile may be short
      const RowMatrix<A> K_j = load_rows<A>(K, b, k_start, k_cols);  // (k_cols, D)
      const RowMatrix<A> V_j = load_rows<A>(V, b, k_start, k_cols);  // (k_cols, Dv)
      RowMatrix<A> dK_j = RowMatrix<A>::Zero(k_cols, D);             // (k_cols, D)
      RowMatrix<A> dV_j = RowMatrix<A>::Zero(k_cols, Dv);            // (k_cols, Dv)

      // Causal: query q sees key k when k <= q. Query tiles that end before k_start see none of
      // this tile's keys and are skipped; the first one visited holds query k_start. When
      // Nq < Nk, keys from Nq on are seen by no query: no tile is visited, dK_j = dV_j = 0.
      const index_t q_first = !options.causal ? 0 : (k_start < Nq ? k_start / B_q * B_q : Nq);
      // Inner loop: query tiles. Each is read again for every key tile, and P_ij is recomputed
      // from S_ij and L_i: the forward stored L (one number per row), never P.
      for (index_t q_start = q_first; q_start < Nq; q_start += B_q) {
        const index_t q_rows = std::min(B_q, Nq - q_start);              // the last tile may be short
        const RowMatrix<A> Q_i = load_rows<A>(Q, b, q_start, q_rows);    // (q_rows, D)
        const RowMatrix<A> dO_i = load_rows<A>(dO, b, q_start, q_rows);  // (q_rows, Dv)
        // One number per query row: L_i from the forward, D_i from the preprocessing.
        const Vector<A> L_i = load_entries<A>(L, b, q_start, q_rows);               // (q_rows)
        const Vector<A> D_i = load_entries<A>(D_rows.cview(), b, q_start, q_rows);  // (q_rows)
        // This query tile's rows of the dQ accumulator, summed over the key tiles so far.
        Eigen::Map<RowMatrix<A>> dQ_i(&dQ_accum(b, q_start, 0), q_rows, D);  // (q_rows, D)

        RowMatrix<A> S_ij = (Q_i * K_j.transpose()) * scale;  // (q_rows, k_cols)
        if (options.causal) mask_future_keys(S_ij, q_start, k_start);
        RowMatrix<A> P_ij, dP_ij, dS_ij;  // (q_rows, k_cols) each
        // BEGIN SOLUTION step02: P from S and L; dV, dP, dS, dK, dQ uses(S_ij, L_i, D_i, Q_i, K_j, V_j, dO_i, scale)
        P_ij = exp_of(S_ij.colwise() - L_i);               // (q_rows, k_cols); exactly 0 for a masked score
        dV_j += P_ij.transpose() * dO_i;                   // (k_cols, Dv)
        dP_ij = dO_i * V_j.transpose();                    // (q_rows, k_cols)
        dS_ij = P_ij.cwiseProduct(dP_ij.colwise() - D_i);  // (q_rows, k_cols)
        dK_j += (dS_ij.transpose() * Q_i) * scale;         // (k_cols, D)
        dQ_i += (dS_ij * K_j) * scale;                     // (q_rows, D)
        // END SOLUTION step02
        if (trace) trace(QueryTileStep<A>{b, k_start, q_start, P_ij, dP_ij, dS_ij, D_i, dK_j, dV_j});
      }

      // Every query tile has been met: this key tile's gradients are complete.
      store_rows<T>(dK_j, out.dK.view(), b, k_start);
      store_rows<T>(dV_j, out.dV.view(), b, k_start);
      // END SOLUTION step02 standard
    }
  }
  // dQ is complete only now, after the last key tile: round it to T.
  copy_convert<T, A, 3>(dQ_accum.cview(), out.dQ.view());
  return out;
  // END SOLUTION step02 full
}

template Tensor<float, 2> backward_preprocess_D<float>(TensorView<const float, 3>, TensorView<const float, 3>);
template Tensor<double, 2> backward_preprocess_D<double>(TensorView<const double, 3>, TensorView<const double, 3>);
template Tensor<float, 2> backward_preprocess_D<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>);

template BackwardResult<float> tiled_attention_backward<float>(TensorView<const float, 3>, TensorView<const float, 3>,
                                                               TensorView<const float, 3>, TensorView<const float, 3>,
                                                               TensorView<const float, 2>, TensorView<const float, 3>,
                                                               const TileOptions&, const QueryTileTrace<float>&);
template BackwardResult<double> tiled_attention_backward<double>(
    TensorView<const double, 3>, TensorView<const double, 3>, TensorView<const double, 3>, TensorView<const double, 3>,
    TensorView<const double, 2>, TensorView<const double, 3>, const TileOptions&, const QueryTileTrace<double>&);
template BackwardResult<bf16> tiled_attention_backward<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                             TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                             TensorView<const float, 2>, TensorView<const bf16, 3>,
                                                             const TileOptions&, const QueryTileTrace<float>&);

}  // namespace fa2::tiled
