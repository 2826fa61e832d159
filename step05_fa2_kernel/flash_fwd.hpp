// The public API of the step05 kernel (host side; no CUDA headers needed).
//
//   FlashFwdArgs args = make_flash_args(Q, K, V, O, L, /*causal=*/true);   // views: shapes + strides
//   flash_fwd_host(args);                 // the kernel body run on the host (Triton's interpreter)
//   flash_fwd_cuda(args, stream);         // the same body on the GPU (flash_fwd_cuda.hpp)
//
//   auto [O, L] = flash_attention_host<float>(Q, K, V, causal);   // host tensors in, new O and L out
//
// Q, K, V, O are (batch, seq, head_dim) with the head dim contiguous; L is (batch, N_q) float32.
// For multi-head attention flatten (B, H, N, D) to (B*H, N, D). K and V may have fewer batch
// elements than Q, B_kv dividing B (grouped-query attention: flatten (B, H_kv, N, D) the same
// way, and query head h of H reads kv head h / (H / H_kv)). The causal mask is top-left
// aligned (query q sees key k when k <= q), also when N_q != N_k. Every argument is checked
// before anything runs; a bad one throws std::invalid_argument naming it.
#pragma once

#include <optional>
#include <string>

#include "common/attention_args.hpp"  // DType, FlashFwdArgs
#include "common/bf16.hpp"
#include "common/tensor.hpp"

struct CUstream_st;  // what CUDA's cudaStream_t points to (CudaLaunchFn below)

namespace fa2 {

// Builds the arguments from views (host or device memory: only shapes, strides and
// addresses are read).
template <class T>
FlashFwdArgs make_flash_args(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                             TensorView<T, 3> O, TensorView<float, 2> L, bool causal,
                             std::optional<float> scale = std::nullopt) {
  FlashFwdArgs a;
  a.dtype = dtype_of<T>();
  a.q = Q.data(), a.q_shape = Q.shape(), a.q_strides = Q.strides();
  a.k = K.data(), a.k_shape = K.shape(), a.k_strides = K.strides();
  a.v = V.data(), a.v_shape = V.shape(), a.v_strides = V.strides();
  a.o = O.data(), a.o_shape = O.shape(), a.o_strides = O.strides();
  a.l = L.data(), a.l_shape = L.shape(), a.l_strides = L.strides();
  a.causal = causal;
  a.scale = scale;
  return a;
}

// Throws std::invalid_argument naming the first bad argument and what is allowed.
void validate(const FlashFwdArgs& args);

// The layout rules every (batch, seq, head_dim) tensor of the kernels follows: not null, the
// head dim contiguous, strides >= 0. Throws naming `name` (validate() of both passes use it).
void check_tensor_layout(const std::string& name, const void* data, const Extents<3>& strides);

// Runs the kernel body on the host, one program after another. Pointers are host memory.
void flash_fwd_host(const FlashFwdArgs& args);

template <class T>
struct FlashOutputs {
  Tensor<T, 3> O;      // (B, N_q, D)
  Tensor<float, 2> L;  // (B, N_q)
};

// Host tensors in, new O and L out (poisoned with NaN before the run, so an element the
// kernel fails to write cannot pass a comparison).
template <class T>
FlashOutputs<T> flash_attention_host(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                     bool causal, std::optional<float> scale = std::nullopt);

// The signatures of a launcher on the host (flash_fwd_host) and on the GPU (flash_fwd_cuda,
// flash_fwd_cuda.hpp), shared by every kernel variant. CUstream_st is what CUDA's cudaStream_t
// points to, named here so that this header needs no CUDA header.
using HostLaunchFn = void (*)(const FlashFwdArgs&);
using CudaLaunchFn = void (*)(const FlashFwdArgs&, ::CUstream_st*);

// Host tensors in, new O and L out, for any host launcher (step06's buggy variants).
template <class T>
FlashOutputs<T> run_with_host_tensors(HostLaunchFn launch, TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                      TensorView<const T, 3> V, bool causal, std::optional<float> scale = std::nullopt,
                                      Window window = {});

// Fresh outputs for Q of shape (B, N_q, D), filled with NaN.
template <class T>
FlashOutputs<T> poisoned_outputs(const Extents<3>& q_shape);

}  // namespace fa2
