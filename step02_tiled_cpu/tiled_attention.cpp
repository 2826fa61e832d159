// Step 2: the tiled FlashAttention-2 forward on the CPU. Read tiled_attention_forward below
// top to bottom: the outer loop walks query tiles, the inner loop key/value tiles.
//   cmake --build --preset default --target step02_tests && ctest --preset default -L step02
#include "step02_tiled_cpu/tiled_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/todo.hpp"  // fa2::todo, what the starter kit puts in the solution regions below
#include "step02_tiled_cpu/tile_helpers.hpp"

namespace fa2::tiled {

using detail::exp_of;
using detail::load_rows;
using detail::mask_future_keys;
using detail::Vector;

template <class T>
ForwardResult<T> tiled_attention_forward(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                         const TileOptions& options, const KeyTileTrace<accum_t<T>>& trace) {
  detail::validate_inputs(Q, K, V, options);
  // BEGIN SOLUTION step02 full: the tiled forward from the validated inputs: sizes, scale, outputs, both loops uses(Q, K, V, options, trace)
  using A = accum_t<T>;
  const index_t B = Q.size(0), Nq = Q.size(1), D = Q.size(2), Nk = K.size(1), Dv = V.size(2);
  const index_t B_q = options.block_q, B_k = options.block_k;
  const A scale = detail::score_scale<A>(options.scale, D);

  ForwardResult<T> out{Tensor<T, 3>({B, Nq, Dv}), Tensor<A, 2>({B, Nq})};
  for (index_t b = 0; b < B; ++b) {
    // Outer loop: query tiles. They are independent (one GPU program each in later steps).
    for (index_t q_start = 0; q_start < Nq; q_start += B_q) {
      // BEGIN SOLUTION step02 standard: one query tile: Q_i and its running state, the key tiles it sees (causal included), then O and L uses(Q, K, V, options, trace, out, b, q_start, B_q, B_k, Nq, Nk, Dv, scale)
      const index_t q_rows = std::min(B_q, Nq - q_start);                                // the last tile may be short
      const RowMatrix<A> Q_i = load_rows<A>(Q, b, q_start, q_rows);                      // (q_rows, D)
      Vector<A> m_i = Vector<A>::Constant(q_rows, -std::numeric_limits<A>::infinity());  // (q_rows)
      Vector<A> l_i = Vector<A>::Zero(q_rows);                                           // (q_rows)
      RowMatrix<A> O_i = RowMatrix<A>::Zero(q_rows, Dv);                                 // (q_rows, Dv), unnormalised

      // Causal: keys after the tile's last query are masked for every row of the tile, so
      // the loop stops there instead of computing tiles that would be thrown away.
      const index_t k_end = options.causal ? std::min(Nk, q_start + q_rows) : Nk;
      // Inner loop: key/value tiles. Key 0 is in the first tile and every query sees it,
      // so after that tile m_i is finite in every row and exp(m_old - m_new) is never
      // exp(-inf - -inf) = NaN.
      for (index_t k_start = 0; k_start < k_end; k_start += B_k) {
        const index_t k_cols = std::min(B_k, k_end - k_start);         // the last tile may be short
        const RowMatrix<A> K_j = load_rows<A>(K, b, k_start, k_cols);  // (k_cols, D)
        const RowMatrix<A> V_j = load_rows<A>(V, b, k_start, k_cols);  // (k_cols, Dv)
        RowMatrix<A> S_ij = (Q_i * K_j.transpose()) * scale;           // (q_rows, k_cols)
        if (options.causal) mask_future_keys(S_ij, q_start, k_start);
        const Vector<A> m_old = m_i;  // (q_rows)
        Vector<A> alpha(q_rows);      // (q_rows) rescale factor for the old l_i and O_i
        // BEGIN SOLUTION step02: one key tile of the online softmax, new max, alpha, P, then l and O rescaled and updated
        const Vector<A> m_new = m_old.cwiseMax(S_ij.rowwise().maxCoeff());  // (q_rows)
        alpha = exp_of(m_old - m_new);                                      // exactly 0 on the first tile
        const RowMatrix<A> P_ij = exp_of(S_ij.colwise() - m_new);           // (q_rows, k_cols)
        l_i = alpha.cwiseProduct(l_i) + P_ij.rowwise().sum();
        O_i = alpha.asDiagonal() * O_i + P_ij * V_j;  // rescale the old rows, add this tile's
        m_i = m_new;
        // END SOLUTION step02
        if (trace) trace(KeyTileStep<A>{b, q_start, k_start, S_ij, m_old, m_i, alpha, l_i});
      }

      // Every key tile is in: divide by l once (FA1 re-normalised after every tile), and
      // keep L = m + log(l) for the backward pass.
      for (index_t r = 0; r < q_rows; ++r) {
        // BEGIN SOLUTION step02: normalise O by l once and store L = m + log(l)
        for (index_t d = 0; d < Dv; ++d) out.O(b, q_start + r, d) = convert<T>(O_i(r, d) / l_i(r));
        out.L(b, q_start + r) = m_i(r) + std::log(l_i(r));
        // END SOLUTION step02
      }
      // END SOLUTION step02 standard
    }
  }
  return out;
  // END SOLUTION step02 full
}

template ForwardResult<float> tiled_attention_forward<float>(TensorView<const float, 3>, TensorView<const float, 3>,
                                                             TensorView<const float, 3>, const TileOptions&,
                                                             const KeyTileTrace<float>&);
template ForwardResult<double> tiled_attention_forward<double>(TensorView<const double, 3>, TensorView<const double, 3>,
                                                               TensorView<const double, 3>, const TileOptions&,
                                                               const KeyTileTrace<double>&);
template ForwardResult<bf16> tiled_attention_forward<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                           TensorView<const bf16, 3>, const TileOptions&,
                                                           const KeyTileTrace<float>&);

}  // namespace fa2::tiled
