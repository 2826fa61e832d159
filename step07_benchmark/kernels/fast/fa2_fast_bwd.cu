// The product's backwards, v5's (fa2_fast_bwd.cuh) and v6b (hopper/backward.cuh): their argument
// checks, their plans (the tuned choices are the picks of kernels/variants.def; "fast" takes v6b
// where it runs) and their launch. The kernels and their three launches are in the generated
// translation units (fa2_fast_instances.cuh, fa2_hopper_instances.cuh).
//   ctest -L gpu+variants   (every backward of the variants table against the float64 reference)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/numeric.hpp"
#include "step07_benchmark/kernels/fast/flash_attention.hpp"
#include "step07_benchmark/kernels/fast/launch_plan.hpp"
#include "step07_benchmark/kernels/fast/variant_rows.hpp"

namespace fa2::fast {

std::string backward_refusal(const FlashBwdArgs& a) {
  try {
    validate(a);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  if (std::string why = v5_conditions(forward_args(a)); !why.empty()) return why;
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

std::string v6b_refusal_beyond_backward(const FlashBwdArgs& a) {
  if (a.window.bounded()) return "window: v6b takes no sliding window (v5's backward does)";
  if (a.q_shape[2] != 64 && a.q_shape[2] != 128) return "head_dim: v6b takes 64 or 128";
  // The grid is (batch, key tiles of kBackwardKeyTile = 128): CUDA caps y at 65535.
  if (cdiv<index_t>(a.k_shape[1], kBackwardKeyTile) > 65535) {
    return "K.shape: v6b takes N_k up to " + std::to_string(65535 * kBackwardKeyTile) + " (65535 key tiles of 128)";
  }
  if (std::string why = hopper_unavailable(); !why.empty()) return "v6b needs what v6 needs; " + why;
  return {};
}

BackwardPlan plan_backward(const FlashBwdArgs& args, Backward which) {
  BackwardPlan plan;
  plan.args = args;
  plan.refused = backward_refusal(args);
  if (!plan.refused.empty()) return plan;
  const long long head_dim = args.q_shape[2];
  const long long query_rows = args.q_shape[0] * args.q_shape[1];
  if (which != Backward::v5) {
    std::string why_not = v6b_refusal_beyond_backward(args);
    if (why_not.empty()) {
      const int row = picked_row<Family::v6b>("v6b", head_dim, args.causal, query_rows);
      if (row >= 0) {
        plan.kernel = kV6bRows[row].key;
        plan.launch = product_backward(Family::v6b, row, head_dim, args.causal);
      }
      if (plan.launch == nullptr) why_not = "v6b: no backward built for head dim " + std::to_string(head_dim);
    }
    if (why_not.empty()) return plan;
    if (which == Backward::v6b) {
      plan.refused = std::move(why_not);
      return plan;
    }
    plan.v6b_refused = std::move(why_not);
  }
  const int row = picked_row<Family::v5b>("v5", head_dim, args.causal, query_rows);
  if (row >= 0) {
    plan.kernel = kV5bRows[row].key;
    plan.launch = product_backward(Family::v5b, row, head_dim, args.causal);
  }
  if (plan.launch == nullptr) plan.refused = "v5: no backward built for head dim " + std::to_string(head_dim);
  return plan;
}

void run(const BackwardPlan& plan, cudaStream_t stream) {
  if (!plan.runs()) throw std::invalid_argument(plan.refused);
  plan.launch(plan, stream);
}

void flash_bwd_v5(const FlashBwdArgs& args, cudaStream_t stream) {
  run(plan_backward(args, Backward::v5), stream);
}

void flash_bwd_fast(const FlashBwdArgs& args, cudaStream_t stream) {
  run(plan_backward(args, Backward::best), stream);
}

std::string best_backward(const FlashBwdArgs& args) {
  const BackwardPlan plan = plan_backward(args, Backward::best);
  if (!plan.runs()) return "none (" + plan.refused + ")";
  return plan.v6b_refused.empty() ? std::string("v6b") : "v5 (" + plan.v6b_refused + ")";
}

void flash_bwd_hopper(const FlashBwdArgs& args, cudaStream_t stream) {
  run(plan_backward(args, Backward::v6b), stream);
}

std::string unsupported_reason(const FlashBwdArgs& args) {
  return backward_refusal(args);
}

}  // namespace fa2::fast
