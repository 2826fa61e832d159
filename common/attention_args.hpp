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
  // A sliding window on top of the causal mask (common/window.hpp, where its rules are): every
  // kernel reads it, forward and backward (the fast ones through their windowed twins).
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

// Packed sequences of different lengths, forward only (the product's decoding kernel and the sm90
// path's packed forward, kernels/product/flash_attention.hpp's plan_varlen_forward and
// plan_packed_forward): PyTorch's varlen_attn layout. Sequence
// b's queries are rows cu_seq_q[b] .. cu_seq_q[b + 1] - 1 of q, (T_q, H, D); its keys are rows
// cu_seq_k[b] .. of k and v, (T_k, H_kv, D), the first seqused_k[b] of them when seqused_k is
// given, or, in a paged cache (page_size > 0), key t of sequence b is row
// block_table[b * block_table_stride + t / page_size] * page_size + t % page_size of k and v
// viewed as (pages * page_size, H_kv, D). H_kv divides H (grouped-query attention: query head h
// reads kv head h / (H / H_kv)). The masks align bottom-right (split_kv.hpp's bottom_right_keys):
// the window's bounds count from the key each query stands at, i + n_k - n_q, so (-1, 0) is the
// causal mask and a decoding query sees its whole cache. O is q's shape; L is (H, T_q) float32.
// A query that sees no key gets O = 0 and L = +inf; rows of q past cu_seq_q[batch] are not written.
// The index arrays are int32 in device memory, read by the kernels; batch and the longest
// sequences (max_q, max_k) are the host's. A tensor's strides are (row, head, 1).
struct FlashVarlenArgs {
  DType dtype = DType::bfloat16;  // bfloat16 or float16
  const void* q = nullptr;
  Extents<3> q_shape{}, q_strides{};  // (T_q, H, D)
  const void* k = nullptr;
  Extents<3> k_shape{}, k_strides{};  // (T_k, H_kv, D), or (pages * page_size, H_kv, D) when paged
  const void* v = nullptr;
  Extents<3> v_shape{}, v_strides{};
  void* o = nullptr;
  Extents<3> o_shape{}, o_strides{};  // q's shape
  float* l = nullptr;
  Extents<2> l_shape{}, l_strides{};  // (H, T_q)
  index_t batch = 0;
  const std::int32_t* cu_seq_q = nullptr;     // batch + 1 offsets into q's rows
  const std::int32_t* cu_seq_k = nullptr;     // batch + 1 offsets into k's rows; null when paged
  const std::int32_t* seqused_k = nullptr;    // batch key counts; null: cu_seq_k's; needed when paged
  const std::int32_t* block_table = nullptr;  // paged: (batch, block_table_stride) page numbers
  index_t block_table_stride = 0;
  index_t page_size = 0;         // keys per page; 0: keys packed (cu_seq_k)
  index_t max_q = 0, max_k = 0;  // the most queries and keys of any sequence
  std::optional<float> scale;    // default 1/sqrt(head_dim)
  Window window{};               // bottom-right aligned
  int num_splits = 0;            // parts each sequence's keys are cut into; 0: the plan's choice
  // The parts' outputs when a plan splits (VarlenPlan::partial_floats floats, device memory):
  // (splits, T_q, H, D) partial O, then (splits, H, T_q) partial L.
  float* partial = nullptr;
  // The packed forward of the sm90 path (plan_packed_forward) plans its schedule on the host from
  // the lengths: host copies of cu_seq_q, cu_seq_k and (when given) seqused_k, the same values as
  // the device arrays. `schedule` is the device memory the schedule is copied to
  // (PackedPlan::schedule_bytes, 16-byte aligned). The decoding kernel reads neither.
  const std::int32_t* cu_seq_q_host = nullptr;
  const std::int32_t* cu_seq_k_host = nullptr;
  const std::int32_t* seqused_k_host = nullptr;
  void* schedule = nullptr;
};

// The backward of a packed batch (the sm90 path's packed backward, plan_packed_backward): the
// forward's arguments (O and L read only; keys packed, no pages, no seqused_k) plus dO in, dQ, dK,
// dV out and the float32 workspaces, as FlashBwdArgs adds them to FlashFwdArgs. dO, dQ are q's
// shape, dK and dV k's, strides (row, head, 1). D_i is (H, T_q) and dQ_accum (T_q, H, D), both
// float32 and contiguous. Deterministic: the counters of packed_dq_semaphore_count int32.
// `schedule` holds the backward's own schedule (PackedBackwardPlan::schedule_bytes).
struct FlashVarlenBwdArgs : FlashVarlenArgs {
  const void* do_ = nullptr;
  Extents<3> do_shape{}, do_strides{};
  float* d_rows = nullptr;
  float* dq_accum = nullptr;
  void* dq = nullptr;
  Extents<3> dq_shape{}, dq_strides{};
  void* dk = nullptr;
  Extents<3> dk_shape{}, dk_strides{};
  void* dv = nullptr;
  Extents<3> dv_shape{}, dv_strides{};
  bool deterministic = false;
  std::int32_t* dq_semaphores = nullptr;
};

// The counters of FlashVarlenBwdArgs::dq_semaphores for q of shape (T_q, H, D) in `batch`
// sequences: per head, one per 32 rows and one more per sequence (sequence b's start at
// floor(cu_seq_q[b] / 32) + b, so that no two sequences share one).
constexpr index_t packed_dq_semaphore_count(const Extents<3>& q_shape, index_t batch) {
  return q_shape[1] * ((q_shape[0] + 31) / 32 + batch);
}

// The size of FlashBwdArgs::dq_semaphores for Q of shape (B, N_q, D): one counter per batch
// element and 32 query rows.
constexpr index_t dq_semaphore_count(const Extents<3>& q_shape) {
  return q_shape[0] * ((q_shape[1] + 31) / 32);
}

// The softmax scale the kernels use: args.scale, or 1/sqrt(head_dim).
float softmax_scale(const FlashFwdArgs& args);
float softmax_scale(const FlashVarlenArgs& args);

// Grouped-query attention: how many consecutive query batch elements share one of K and V
// (1 when K has Q's batch). Query batch element b reads K and V batch element b / kv_group.
inline index_t kv_group(const FlashFwdArgs& args) {
  return args.q_shape[0] / args.k_shape[0];
}

}  // namespace fa2
