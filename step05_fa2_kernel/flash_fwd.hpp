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

#include "common/bf16.hpp"
#include "common/tensor.hpp"
#include "common/window.hpp"

struct CUstream_st;  // what CUDA's cudaStream_t points to (CudaLaunchFn below)

namespace fa2 {

enum class DType { float32, bfloat16, float16 };

template <class T>
constexpr DType dtype_of() {
  static_assert(std::is_same_v<T, float> || is_16_bit_float_v<T>, "float32, bfloat16 or float16");
  if constexpr (std::is_same_v<T, float>) {
    return DType::float32;
  } else if constexpr (std::is_same_v<T, bf16>) {
    return DType::bfloat16;
  } else {
    return DType::float16;
  }
}
std::string to_string(DType dtype);

struct FlashFwdArgs {
  DType dtype = DType::bfloat16;
  const void* q = nullptr;
  Extents<3> q_shape{}, q_strides{};
  const void* k = nullptr;
  Extents<3> k_shape{}, k_strides{};
  const void* v = nullptr;
  Extents<3> v_shape{}, v_strides{};
  void* o = nullptr;
  Extents<3> o_shape{}, o_strides{};
  float* l = nullptr;
  Extents<2> l_shape{}, l_strides{};
  bool causal = false;
  std::optional<float> scale;  // default 1/sqrt(head_dim)
  // A sliding window (common/window.hpp): query q sees keys q - left .. q + right only, -1 for
  // no bound on that side; on top of the causal mask when both are given.
  Window window{};
  // float32 inputs: true runs the products in TF32 (tl.dot's default, 11 significant bits per
  // operand); false in 3xTF32, about float32's accuracy for three times the tensor-core work
  // (InputPrecision, common/numeric.hpp). bf16 and fp16 products are exact either way.
  bool allow_tf32 = true;
};

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

// The softmax scale the kernel will use.
float softmax_scale(const FlashFwdArgs& args);

// Grouped-query attention: how many consecutive query batch elements share one of K and V
// (1 when K has Q's batch). Query batch element b reads K and V batch element b / kv_group.
inline index_t kv_group(const FlashFwdArgs& args) {
  return args.q_shape[0] / args.k_shape[0];
}

// The window as the kernels take it: a side without a bound gets 2^40, past every key and query
// (and past the zero-padded keys of a last tile), so that q - left <= k <= q + right holds for
// all of them and the same code serves calls with and without a window.
inline constexpr index_t kUnboundedWindow = index_t{1} << 40;
inline Window kernel_window(const FlashFwdArgs& args) {
  return {args.window.left < 0 ? kUnboundedWindow : args.window.left,
          args.window.right < 0 ? kUnboundedWindow : args.window.right};
}

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
