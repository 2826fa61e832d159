// The product's forward: v5's argument checks, the plans of v5, v6 and "fast" (the tuned choices
// are the picks of kernels/variants.def) and their launch. v6's own checks are in fa2_hopper.cu,
// the backward's in fa2_fast_bwd.cu; the kernels are in the generated translation units.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "step07_benchmark/kernels/fast/flash_attention.hpp"
#include "step07_benchmark/kernels/fast/launch_plan.hpp"
#include "step07_benchmark/kernels/fast/variant_rows.hpp"

namespace fa2::fast {

bool rows_16_byte_aligned(const void* data, const Extents<3>& strides, index_t element_bytes) {
  const index_t per_chunk = 16 / element_bytes;
  return reinterpret_cast<std::uintptr_t>(data) % 16 == 0 && strides[0] % per_chunk == 0 && strides[1] % per_chunk == 0;
}

std::string v5_refusal(const FlashFwdArgs& a) {
  try {
    validate(a);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return v5_conditions(a);
}

std::string v5_conditions(const FlashFwdArgs& a) {
  if (a.dtype != DType::bfloat16 && a.dtype != DType::float16) {
    return "dtype: the fast kernel takes bfloat16 or float16 (float32 runs on step05)";
  }
  const index_t D = a.q_shape[2];
  if (D != 32 && D != 64 && D != 128) return "head_dim: the fast kernel takes 32, 64 or 128";
  if (!(softmax_scale(a) > 0.0f)) return "scale: the fast kernel needs a positive softmax scale";
  if (a.q_shape[1] >= (index_t{1} << 31) || a.k_shape[1] >= (index_t{1} << 31)) return "seq: lengths must be < 2^31";
  if (a.window.bounded() && a.q_shape[1] + a.k_shape[1] >= (index_t{1} << 31)) {
    return "window: with a sliding window the fast kernel takes N_q + N_k < 2^31";
  }
  // cp.async moves 16-byte chunks: every row must start on a 16-byte boundary.
  for (const auto& [ptr, strides] :
       {std::pair{a.q, a.q_strides}, std::pair{a.k, a.k_strides}, std::pair{a.v, a.v_strides},
        std::pair<const void*, Extents<3>>{a.o, a.o_strides}}) {
    if (!rows_16_byte_aligned(ptr, strides, 2)) {
      return "layout: the fast kernel needs 16-byte aligned rows (base pointers and batch/row strides multiples of 8)";
    }
  }
  return {};
}

std::string v6_refusal(const FlashFwdArgs& a) {
  std::string why = v5_refusal(a);
  return why.empty() ? v6_refusal_beyond_v5(a) : why;
}

namespace {

// The kernel a tuned entry runs for arguments its family's checks passed: its pick.
template <Family F>
void choose(ForwardPlan& plan, std::string_view tuned) {
  const FlashFwdArgs& a = plan.args;
  const long long head_dim = a.q_shape[2];
  const int row = picked_row<F>(tuned, head_dim, a.causal, a.q_shape[0] * a.q_shape[1]);
  if (row >= 0) {
    plan.kernel = rows<F>()[row].key;
    plan.launch = product_forward(F, row, head_dim, a.causal);
  }
  if (plan.launch == nullptr)
    plan.refused = std::string(tuned) + ": no kernel built for head dim " + std::to_string(head_dim);
}

}  // namespace

ForwardPlan plan_forward(const FlashFwdArgs& args, Forward which) {
  ForwardPlan plan;
  plan.args = args;
  plan.refused = v5_refusal(args);
  if (!plan.refused.empty()) return plan;
  if (which != Forward::v5) plan.v6_refused = v6_refusal_beyond_v5(args);
  if (which == Forward::v6 && !plan.v6_refused.empty()) {
    plan.refused = plan.v6_refused;
  } else if (which != Forward::v5 && plan.v6_refused.empty()) {
    choose<Family::v6>(plan, args.window.bounded() ? "v6 window" : "v6");
  } else {
    choose<Family::v5>(plan, "v5");
  }
  return plan;
}

void run(const ForwardPlan& plan, cudaStream_t stream) {
  if (!plan.runs()) throw std::invalid_argument(plan.refused);
  plan.launch(plan, stream);
}

void flash_fwd_fast(const FlashFwdArgs& args, cudaStream_t stream) {
  run(plan_forward(args, Forward::v5), stream);
}

void flash_fwd_best(const FlashFwdArgs& args, cudaStream_t stream) {
  run(plan_forward(args, Forward::best), stream);
}

std::string unsupported_reason(const FlashFwdArgs& args) {
  return v5_refusal(args);
}

std::string best_forward(const FlashFwdArgs& args) {
  const ForwardPlan plan = plan_forward(args, Forward::best);
  const std::string& why_not_v6 = plan.runs() ? plan.v6_refused : plan.refused;
  return why_not_v6.empty() ? "v6" : "v5 (" + why_not_v6 + ")";
}

}  // namespace fa2::fast
