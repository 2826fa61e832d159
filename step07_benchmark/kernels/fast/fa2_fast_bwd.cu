// The product's backward (fa2_fast_bwd.cuh): its argument checks, its plan (the tuned choice is
// the picks of kernels/variants.def) and its launch. The kernels and their three launches are in
// the generated translation units (fa2_fast_instances.cuh, fa2_fast_launch.cuh).
//   ctest -L gpu+variants   (every backward of the variants table against the float64 reference)
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <tuple>

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
  return {};
}

BackwardPlan plan_backward(const FlashBwdArgs& args) {
  BackwardPlan plan;
  plan.args = args;
  plan.refused = backward_refusal(args);
  if (!plan.refused.empty()) return plan;
  const long long head_dim = args.q_shape[2];
  const int row = picked_row<Family::v5b>("v5", head_dim, args.causal, args.q_shape[0] * args.q_shape[1]);
  if (row >= 0) {
    plan.kernel = kV5bRows[row].key;
    plan.launch = product_backward(row, head_dim, args.causal);
  }
  if (plan.launch == nullptr) plan.refused = "v5: no backward built for head dim " + std::to_string(head_dim);
  return plan;
}

void run(const BackwardPlan& plan, cudaStream_t stream) {
  if (!plan.runs()) throw std::invalid_argument(plan.refused);
  plan.launch(plan, stream);
}

void flash_bwd_fast(const FlashBwdArgs& args, cudaStream_t stream) {
  run(plan_backward(args), stream);
}

std::string unsupported_reason(const FlashBwdArgs& args) {
  return backward_refusal(args);
}

}  // namespace fa2::fast
