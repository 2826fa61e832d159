// The public API of the step05 backward kernel (host side; no CUDA headers needed).
//
//   FlashBwdArgs args = make_flash_bwd_args<T>(Q, K, V, O, L, dO, D_rows, dQ, dQ_accum, dK, dV, causal);
//   flash_bwd_host(args);                 // the kernel bodies run on the host (Triton's interpreter)
//   flash_bwd_cuda(args, stream);         // the same bodies on the GPU (flash_bwd_cuda.hpp)
//
//   auto [dQ, dK, dV] = flash_attention_backward_host<float>(Q, K, V, O, L, dO, causal);
//
//   args.deterministic = true;            // bitwise-identical gradients on every run (see below)
//
// Inputs: Q (B, N_q, D), K and V (B, N_k, D), and from the forward O (B, N_q, D) and L (B, N_q)
// float32, with dO (B, N_q, D), the gradient of the loss with respect to O. Outputs: dQ, dK, dV,
// shaped like Q, K, V. Two float32 workspaces: D_rows (B, N_q), where the first phase puts
// D_i = rowsum(dO_i * O_i), and dQ_accum (B, N_q, D), where the key tiles add up dQ before it is
// converted to the input dtype. Every tensor has its own strides, the head dim contiguous. causal
// and scale must be the forward's (L depends on both). Every argument is checked before anything
// runs; a bad one throws std::invalid_argument naming it. Tests: ctest -L backward.
#pragma once

#include <cstdint>
#include <optional>

#include "common/attention_args.hpp"  // FlashBwdArgs
#include "common/tensor.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2 {

// Builds the arguments from views (host or device memory: only shapes, strides and addresses
// are read).
template <class T>
FlashBwdArgs make_flash_bwd_args(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                 TensorView<const T, 3> O, TensorView<const float, 2> L, TensorView<const T, 3> dO,
                                 TensorView<float, 2> D_rows, TensorView<T, 3> dQ, TensorView<float, 3> dQ_accum,
                                 TensorView<T, 3> dK, TensorView<T, 3> dV, bool causal,
                                 std::optional<float> scale = std::nullopt) {
  FlashBwdArgs a;
  a.dtype = dtype_of<T>();
  a.q = Q.data(), a.q_shape = Q.shape(), a.q_strides = Q.strides();
  a.k = K.data(), a.k_shape = K.shape(), a.k_strides = K.strides();
  a.v = V.data(), a.v_shape = V.shape(), a.v_strides = V.strides();
  // FlashFwdArgs holds O and L as the forward's outputs; the backward only reads them.
  a.o = const_cast<T*>(O.data()), a.o_shape = O.shape(), a.o_strides = O.strides();
  a.l = const_cast<float*>(L.data()), a.l_shape = L.shape(), a.l_strides = L.strides();
  a.do_ = dO.data(), a.do_shape = dO.shape(), a.do_strides = dO.strides();
  a.d_rows = D_rows.data(), a.d_rows_shape = D_rows.shape(), a.d_rows_strides = D_rows.strides();
  a.dq_accum = dQ_accum.data(), a.dq_accum_shape = dQ_accum.shape(), a.dq_accum_strides = dQ_accum.strides();
  a.dq = dQ.data(), a.dq_shape = dQ.shape(), a.dq_strides = dQ.strides();
  a.dk = dK.data(), a.dk_shape = dK.shape(), a.dk_strides = dK.strides();
  a.dv = dV.data(), a.dv_shape = dV.shape(), a.dv_strides = dV.strides();
  a.causal = causal;
  a.scale = scale;
  return a;
}

// Throws std::invalid_argument naming the first bad argument and what is allowed: the forward's
// checks of Q, K, V, O, L and the scale (validate(FlashFwdArgs)), then dO, D_rows, dQ_accum, dQ,
// dK and dV.
void validate(const FlashBwdArgs& args);

// Runs the three phases (D_i, the key-tile programs, dQ's conversion) on the host, one program
// after another. Pointers are host memory.
void flash_bwd_host(const FlashBwdArgs& args);

// The signatures of a backward launcher on the host (flash_bwd_host) and on the GPU
// (flash_bwd_cuda, flash_bwd_cuda.hpp), named without CUDA headers as the forward's are.
using HostBwdLaunchFn = void (*)(const FlashBwdArgs&);
using CudaBwdLaunchFn = void (*)(const FlashBwdArgs&, ::CUstream_st*);

template <class T>
struct FlashGradients {
  Tensor<T, 3> dQ;  // (B, N_q, D)
  Tensor<T, 3> dK;  // (B, N_k, D)
  Tensor<T, 3> dV;  // (B, N_k, D)
};

// The float32 workspaces of one backward call.
struct FlashBwdWorkspace {
  Tensor<float, 2> D_rows;    // (B, N_q)
  Tensor<float, 3> dQ_accum;  // (B, N_q, D)
};

// Fresh gradients and workspaces for Q of shape (B, N_q, D) and K of shape (B, N_k, D), filled
// with NaN: an element the kernel does not write (or a workspace it does not initialise) fails
// every comparison.
template <class T>
FlashGradients<T> poisoned_gradients(const Extents<3>& q_shape, const Extents<3>& k_shape);
FlashBwdWorkspace poisoned_workspace(const Extents<3>& q_shape);

// Host tensors in, new dQ, dK, dV out (poisoned with NaN before the run), on the host path.
// O and L are the forward's for the same Q, K, V, causal and scale.
template <class T>
FlashGradients<T> flash_attention_backward_host(TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                                TensorView<const T, 3> V, TensorView<const T, 3> O,
                                                TensorView<const float, 2> L, TensorView<const T, 3> dO, bool causal,
                                                std::optional<float> scale = std::nullopt, bool deterministic = false,
                                                Window window = {});

}  // namespace fa2
