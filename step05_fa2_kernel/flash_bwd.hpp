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

#include "common/tensor.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"  // DType, dtype_of, FlashFwdArgs

namespace fa2 {

struct FlashBwdArgs {
  DType dtype = DType::bfloat16;
  // The forward's inputs and outputs, read only.
  const void* q = nullptr;
  Extents<3> q_shape{}, q_strides{};
  const void* k = nullptr;
  Extents<3> k_shape{}, k_strides{};
  const void* v = nullptr;
  Extents<3> v_shape{}, v_strides{};
  const void* o = nullptr;
  Extents<3> o_shape{}, o_strides{};
  const float* l = nullptr;
  Extents<2> l_shape{}, l_strides{};
  // The gradient of the loss with respect to O.
  const void* do_ = nullptr;
  Extents<3> do_shape{}, do_strides{};
  // Workspaces, float32: D_i per query row, and dQ summed over the key tiles.
  float* d_rows = nullptr;
  Extents<2> d_rows_shape{}, d_rows_strides{};
  float* dq_accum = nullptr;
  Extents<3> dq_accum_shape{}, dq_accum_strides{};
  // The gradients, in the input dtype.
  void* dq = nullptr;
  Extents<3> dq_shape{}, dq_strides{};
  void* dk = nullptr;
  Extents<3> dk_shape{}, dk_strides{};
  void* dv = nullptr;
  Extents<3> dv_shape{}, dv_strides{};
  bool causal = false;
  std::optional<float> scale;  // default 1/sqrt(head_dim)
  Window window{};             // the forward's sliding window (FlashFwdArgs::window)
  bool allow_tf32 = true;      // float32 products in TF32, or 3xTF32 (FlashFwdArgs::allow_tf32)
  // Deterministic gradients: dQ's shares are added in the same order on every run, so that dQ,
  // dK and dV are bitwise the same (dK and dV always are: one program writes each row). Step 5's
  // GPU backward then launches its key tiles one after another; the fast backwards take turns on
  // dq_semaphores, dq_semaphore_count(Q.shape) int32 in device memory that their first phase
  // clears (step 5 does not read them).
  bool deterministic = false;
  std::int32_t* dq_semaphores = nullptr;
  // Grouped-query attention with few kv heads: the fast backward on Hopper (v6b) may spread a
  // group's query heads over several blocks per key tile, each adding up its own part of dK and
  // dV, when given this float32 workspace for the parts (fast::dkv_partial_count(Q.shape,
  // K.shape) floats in device memory, 16-byte aligned; 0 where it would not split). Without it
  // one block walks the whole group. Step 5 and v5's backward do not read it.
  float* dkv_partial = nullptr;
};

// The size of FlashBwdArgs::dq_semaphores for Q of shape (B, N_q, D): one counter per batch
// element and 32 query rows.
constexpr index_t dq_semaphore_count(const Extents<3>& q_shape) {
  return q_shape[0] * ((q_shape[1] + 31) / 32);
}

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
  a.o = O.data(), a.o_shape = O.shape(), a.o_strides = O.strides();
  a.l = L.data(), a.l_shape = L.shape(), a.l_strides = L.strides();
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

// The forward's arguments inside the backward's (Q, K, V, O, L, causal, scale), for the
// forward's checks and its dispatcher. The backward never writes O or L through them.
FlashFwdArgs forward_args(const FlashBwdArgs& args);

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
