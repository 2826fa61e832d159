// The arguments of one attention call, forward and backward: the one family of types that step 5's
// kernel, step 6's twins, step 7's kernels and the PyTorch operators read. Views only (addresses,
// shapes, strides), host or device memory; no CUDA header needed.
//
//   FlashFwdArgs    Q, K, V in; O and L out; the masks, the scale and the precision
//   FlashBwdArgs    a FlashFwdArgs (O and L are the forward's, read only) plus dO in, dQ, dK, dV
//                   out, the float32 workspaces and the deterministic switch
//
// Tensors are (batch, seq, head_dim) with the head dim contiguous; L is (batch, N_q) float32. For
// multi-head attention (B, H, N, D) is flattened to (B*H, N, D). K and V may have fewer batch
// elements than Q, dividing it (grouped-query attention: query batch element b reads K and V at
// b / kv_group). Each field says which kernels read it: "step 5" is step05_fa2_kernel (host and
// GPU) and step 6's twins built from it; "sm80" and "sm90" are the product's kernel families of
// step07_benchmark/kernels/ (the sm80 path runs on every GPU from sm_80 on, the sm90 path on sm_90).
// The checks of every field are step05_fa2_kernel's validate(); the product adds its own (plan_forward).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "common/bf16.hpp"
#include "common/tensor.hpp"
#include "common/window.hpp"

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
  DType dtype = DType::bfloat16;  // all: step 5 every dtype; sm80 and sm90 bfloat16 and float16
  const void* q = nullptr;        // all
  Extents<3> q_shape{}, q_strides{};
  const void* k = nullptr;  // all
  Extents<3> k_shape{}, k_strides{};
  const void* v = nullptr;  // all
  Extents<3> v_shape{}, v_strides{};
  // The outputs: O, and L = the logsumexp of each query row's scores (natural log, scaled).
  // The backward reads both (the forward's); every kernel writes them in the forward.
  void* o = nullptr;
  Extents<3> o_shape{}, o_strides{};
  float* l = nullptr;
  Extents<2> l_shape{}, l_strides{};
  bool causal = false;         // all: top-left aligned (common/window.hpp)
  std::optional<float> scale;  // all; default 1/sqrt(head_dim) (softmax_scale())
  // A sliding window on top of the causal mask (common/window.hpp, where its rules are): all
  // kernels read it in the forward; in the backward step 5 and sm80 do, and the sm90 backward takes
  // none (the product's plan gives such calls the sm80 backward).
  Window window{};
  // float32 inputs (step 5 only): true runs the products in TF32 (tl.dot's default, 11
  // significant bits per operand); false in 3xTF32, about float32's accuracy for three times the
  // tensor-core work (InputPrecision, common/numeric.hpp). bf16 and fp16 products are exact.
  bool allow_tf32 = true;
};

// The backward: the forward's arguments (O and L are the forward's outputs, read only here), dO,
// the gradients and the workspaces. causal, scale and window must be the forward's (L depends on
// them).
struct FlashBwdArgs : FlashFwdArgs {
  // The gradient of the loss with respect to O (all).
  const void* do_ = nullptr;
  Extents<3> do_shape{}, do_strides{};
  // Workspaces, float32 (all): D_i = rowsum(dO_i * O_i) per query row, and dQ summed over the key
  // tiles before its conversion to the input dtype.
  float* d_rows = nullptr;
  Extents<2> d_rows_shape{}, d_rows_strides{};
  float* dq_accum = nullptr;
  Extents<3> dq_accum_shape{}, dq_accum_strides{};
  // The gradients, in the input dtype, shaped like Q, K, V (all).
  void* dq = nullptr;
  Extents<3> dq_shape{}, dq_strides{};
  void* dk = nullptr;
  Extents<3> dk_shape{}, dk_strides{};
  void* dv = nullptr;
  Extents<3> dv_shape{}, dv_strides{};
  // Deterministic gradients (all): dQ's shares are added in the same order on every run, so that
  // dQ, dK and dV are bitwise the same (dK and dV always are: one program writes each row). Step
  // 5's GPU backward launches its key tiles one after another; sm80 and sm90 take turns on
  // dq_semaphores, dq_semaphore_count(Q.shape) int32 in device memory that their first phase clears
  // (step 5 does not read them).
  bool deterministic = false;
  std::int32_t* dq_semaphores = nullptr;
  // Grouped-query attention with few kv heads (sm90 only): the sm90 backward may spread a group's
  // query heads over several blocks per key tile, each adding up its own float32 part of dK and dV
  // here; the product's plan says how many floats (BackwardPlan::dkv_partial_floats, 0 where it
  // would not split), in device memory, 16-byte aligned. Without it one block walks the whole
  // group. Step 5 and sm80 do not read it.
  float* dkv_partial = nullptr;
};

// The size of FlashBwdArgs::dq_semaphores for Q of shape (B, N_q, D): one counter per batch
// element and 32 query rows.
constexpr index_t dq_semaphore_count(const Extents<3>& q_shape) {
  return q_shape[0] * ((q_shape[1] + 31) / 32);
}

// The softmax scale the kernels use: args.scale, or 1/sqrt(head_dim).
float softmax_scale(const FlashFwdArgs& args);

// Grouped-query attention: how many consecutive query batch elements share one of K and V
// (1 when K has Q's batch). Query batch element b reads K and V batch element b / kv_group.
inline index_t kv_group(const FlashFwdArgs& args) {
  return args.q_shape[0] / args.k_shape[0];
}

}  // namespace fa2
