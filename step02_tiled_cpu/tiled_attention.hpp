// Step 2: the FlashAttention-2 forward pass on the CPU, one (B_q x B_k) tile of scores at a
// time, with Eigen. The algorithm is in tiled_attention.cpp; this header is its interface.
//   Tests: cmake --build --preset default --target step02_tests && ctest --preset default -L step02
//   Demo:  build/default/step02_tiled_cpu/step02_demo
//
//   auto [O, L] = fa2::tiled::tiled_attention_forward<float>(Q, K, V, {.block_q = 16, .block_k = 16});
//
// Shapes: Q (B, Nq, D), K (B, Nk, D), V (B, Nk, Dv)  ->  O (B, Nq, Dv), L (B, Nq).
// Nq and Nk may differ and need not be multiples of the tile sizes: the last tile of each
// axis is simply shorter. Causal masking is top-left aligned, as in common/reference.hpp:
// query q sees key k when k <= q.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <optional>
#include <type_traits>

#include "common/bf16.hpp"
#include "common/tensor.hpp"

namespace fa2::tiled {

struct TileOptions {
  index_t block_q = 16;                        // B_q: query rows per tile (the outer loop)
  index_t block_k = 16;                        // B_k: key and value rows per tile (the inner loop)
  bool causal = false;                         // top-left: query q sees key k when k <= q
  std::optional<double> scale = std::nullopt;  // multiplies Q K^T; 1/sqrt(D) when not given
};

// The type the tiles are computed in: the input type, except bf16, which is widened to
// float32 (as the GPU kernels do: bf16 operands, float32 accumulators).
template <class T>
using accum_t = std::conditional_t<std::is_same_v<T, bf16>, float, T>;

template <class A>
using RowMatrix = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
struct ForwardResult {
  Tensor<T, 3> O;           // (B, Nq, Dv): softmax(Q K^T * scale) V, in the input type
  Tensor<accum_t<T>, 2> L;  // (B, Nq): logsumexp of each row of scaled scores, m + log(l)
};

// What the optional trace hook sees after each key tile has been folded into a query tile.
// Row r of every vector belongs to query q_start + r; the tile covers keys
// [k_start, k_start + S_ij.cols()).
template <class A>
struct KeyTileStep {
  index_t batch;
  index_t q_start;
  index_t k_start;
  const RowMatrix<A>& S_ij;        // (q_rows, k_cols) scaled scores, -inf where masked
  const Eigen::VectorX<A>& m_old;  // (q_rows) running maximum before this tile
  const Eigen::VectorX<A>& m_new;  // (q_rows) running maximum after it
  const Eigen::VectorX<A>& alpha;  // (q_rows) exp(m_old - m_new): the factor the old l and O got
  const Eigen::VectorX<A>& l_new;  // (q_rows) running sum of exp(S - m_new) after it
};

template <class A>
using KeyTileTrace = std::function<void(const KeyTileStep<A>&)>;

// The tiled forward. Throws std::invalid_argument, naming the argument, when the shapes do
// not fit together, a length or D is 0, a tile size is below 1, the scale is not finite, or
// a view has no data. Instantiated for float, double and bf16.
template <class T>
ForwardResult<T> tiled_attention_forward(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                         const TileOptions& options = {}, const KeyTileTrace<accum_t<T>>& trace = {});

extern template ForwardResult<float> tiled_attention_forward<float>(TensorView<const float, 3>,
                                                                    TensorView<const float, 3>,
                                                                    TensorView<const float, 3>, const TileOptions&,
                                                                    const KeyTileTrace<float>&);
extern template ForwardResult<double> tiled_attention_forward<double>(TensorView<const double, 3>,
                                                                      TensorView<const double, 3>,
                                                                      TensorView<const double, 3>, const TileOptions&,
                                                                      const KeyTileTrace<double>&);
extern template ForwardResult<bf16> tiled_attention_forward<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                                  TensorView<const bf16, 3>, const TileOptions&,
                                                                  const KeyTileTrace<float>&);

}  // namespace fa2::tiled
