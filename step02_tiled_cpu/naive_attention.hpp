// Step 2's yardstick for memory: attention the textbook way, which builds the whole (Nq, Nk)
// score matrix before the softmax. step02_measure times it beside the tiled forward.
//   Tests: ctest --preset cpu-only -L step02 (tests/test_memory_sweep.cpp)
//
// Why not common/reference.hpp: the reference works in float64 whatever the input type, copies
// the inputs into float64 first and keeps two (Nq, Nk) matrices (S and P). This one computes in
// the input type, reads Q, K, V in place and keeps exactly one (Nq, Nk) matrix, overwritten by P,
// so that the comparison with the tiled forward (same type, same Eigen) is about the scores
// alone: one (Nq, Nk) matrix against one (B_q, B_k) tile.
#pragma once

#include <optional>

#include "common/tensor.hpp"
#include "step02_tiled_cpu/tiled_attention.hpp"

namespace fa2::tiled {

// O = softmax(Q K^T * scale) V and L = logsumexp per row, one batch element at a time:
//   S = Q_b K_b^T * scale            (Nq, Nk)   the matrix the tiled forward never builds
//   S = exp(S - rowmax(S))           (Nq, Nk)   in place: it is P now
//   O_b = (S V_b) / rowsum(S)        (Nq, Dv)   written straight into O
// Same shapes, causal rule (top-left) and scale default as tiled_attention_forward; the last
// axis of Q, K and V must be contiguous (stride 1), the other strides are free. Throws
// std::invalid_argument naming the argument. Instantiated for float and double.
template <class T>
ForwardResult<T> naive_attention_forward(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                         bool causal, std::optional<double> scale = std::nullopt);

extern template ForwardResult<float> naive_attention_forward<float>(TensorView<const float, 3>,
                                                                    TensorView<const float, 3>,
                                                                    TensorView<const float, 3>, bool,
                                                                    std::optional<double>);
extern template ForwardResult<double> naive_attention_forward<double>(TensorView<const double, 3>,
                                                                      TensorView<const double, 3>,
                                                                      TensorView<const double, 3>, bool,
                                                                      std::optional<double>);

}  // namespace fa2::tiled
