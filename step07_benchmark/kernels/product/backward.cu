// The product's backward, the sm80 path (sm80/backward.cuh) and the sm90 path (sm90/backward.cuh):
// their argument checks, their plans (the tuned choices are the picks of kernels.def; Path::best
// takes the sm90 path where it runs) and their launch. The kernels and their three launches are in
// the generated translation units (instances/sm80.cuh, instances/sm90.cuh).
//   ctest -L gpu+variants   (every backward of the variants table against the float64 reference)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/numeric.hpp"
#include "step05_fa2_kernel/flash_bwd.hpp"  // validate()
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/product/rows.hpp"

namespace fa2::flash {

std::string backward_refusal(const FlashBwdArgs& a) {
  try {
    validate(a);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  if (std::string why = sm80_conditions(a); !why.empty()) return why;
  // The forward's check covers Q, K, V and O; the backward's own tensors move in 16-byte chunks
  // too (dQ_accum in float4s and two-float atomics).
  for (const auto& [name, ptr, strides] :
       {std::tuple{"dO", a.do_, a.do_strides},
        std::tuple<const char*, const void*, Extents<3>>{"dQ", a.dq, a.dq_strides},
        std::tuple<const char*, const void*, Extents<3>>{"dK", a.dk, a.dk_strides},
        std::tuple<const char*, const void*, Extents<3>>{"dV", a.dv, a.dv_strides}}) {
    if (!rows_16_byte_aligned(ptr, strides, 2)) {
      return std::string(name) +
             ": the fast backward needs 16-byte aligned rows (base pointer and batch/row strides multiples of 8)";
    }
  }
  if (!rows_16_byte_aligned(a.dq_accum, a.dq_accum_strides, 4)) {
    return "dQ_accum: the fast backward needs 16-byte aligned rows (base pointer and batch/row strides multiples of 4)";
  }
  if (reinterpret_cast<std::uintptr_t>(a.dkv_partial) % 16 != 0) {
    return "dkv_partial: the fast backward needs it 16-byte aligned (or null: no workspace, no split of a group)";
  }
  if (a.deterministic && a.dq_semaphores == nullptr) {
    return "dq_semaphores: deterministic gradients on the fast backward need a workspace of "
           "dq_semaphore_count(Q.shape) "
           "int32 (" +
           std::to_string(dq_semaphore_count(a.q_shape)) + " here) in device memory";
  }
  return {};
}

std::string sm90_backward_refusal_beyond(const FlashBwdArgs& a) {
  if (a.q_shape[2] != 64 && a.q_shape[2] != 128) return "head_dim: v6b takes 64 or 128";
  // The grid is (batch, key tiles of kBackwardKeyTile = 128): CUDA caps y at 65535.
  if (cdiv<index_t>(a.k_shape[1], kBackwardKeyTile) > 65535) {
    return "K.shape: v6b takes N_k up to " + std::to_string(65535 * kBackwardKeyTile) + " (65535 key tiles of 128)";
  }
  if (std::string why = sm90_unavailable(); !why.empty()) return "v6b needs what v6 needs; " + why;
  return {};
}

void size_group_split(BackwardPlan& plan) {
  // Two blocks for each SM of this GPU (sm90_backward_refusal_beyond has read it).
  const FlashBwdArgs& a = plan.args;
  plan.group_splits = backward_group_splits(a.q_shape, a.k_shape, 2LL * current_device().sm_count);
  plan.dkv_partial_floats = dkv_partial_count(a.k_shape, plan.group_splits);
}

BackwardPlan plan_backward(const FlashBwdArgs& args, Path path) {
  BackwardPlan plan;
  plan.args = args;
  plan.refused = backward_refusal(args);
  if (!plan.refused.empty()) return plan;
  const long long head_dim = args.q_shape[2];
  const long long query_rows = args.q_shape[0] * args.q_shape[1];
  if (path != Path::sm80) {
    std::string why_not = sm90_backward_refusal_beyond(args);
    // Every v6b row takes a window (its Windowed twin), but the product runs one only where
    // kernels.def picks a row for windows.
    const bool window = args.window.bounded();
    if (why_not.empty() && window && !has_window_picks<Family::sm90_backward>(head_dim, args.causal)) {
      why_not = "window: the sm90 backward has no pick for a sliding window at head dim " + std::to_string(head_dim) +
                (args.causal ? ", causal" : "") + " (the sm80 backward takes it)";
    }
    if (why_not.empty()) {
      const int row = picked_row<Family::sm90_backward>(head_dim, args.causal, window, query_rows);
      if (row >= 0) {
        plan.kernel = rows<ProductRows, Family::sm90_backward>()[row].key;
        plan.launch = product_backward(Family::sm90_backward, row, head_dim, args.causal);
      }
      if (plan.launch == nullptr) why_not = "v6b: no backward built for head dim " + std::to_string(head_dim);
    }
    if (why_not.empty()) {
      size_group_split(plan);
      return plan;
    }
    if (path == Path::sm90) {
      plan.refused = std::move(why_not);
      return plan;
    }
    plan.sm90_refused = std::move(why_not);
  }
  const int row = picked_row<Family::sm80_backward>(head_dim, args.causal, args.window.bounded(), query_rows);
  if (row >= 0) {
    plan.kernel = rows<ProductRows, Family::sm80_backward>()[row].key;
    plan.launch = product_backward(Family::sm80_backward, row, head_dim, args.causal);
  }
  if (plan.launch == nullptr) plan.refused = "v5: no backward built for head dim " + std::to_string(head_dim);
  return plan;
}

void run(const BackwardPlan& plan, cudaStream_t stream) {
  if (!plan.runs()) throw std::invalid_argument(plan.refused);
  plan.launch(plan, stream);
}

void backward(const FlashBwdArgs& args, cudaStream_t stream) {
  run(plan_backward(args, Path::best), stream);
}

}  // namespace fa2::flash
