// The product's forward: the sm80 path's argument checks, the forward plans (the tuned choices are
// the picks of kernels.def) and their launch. The sm90 path's own checks are in forward_sm90.cu,
// the backward's in backward.cu; the kernels are in the generated translation units.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "step05_fa2_kernel/flash_fwd.hpp"  // validate()
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/product/rows.hpp"

namespace fa2::flash {

bool rows_16_byte_aligned(const void* data, const Extents<3>& strides, index_t element_bytes) {
  const index_t per_chunk = 16 / element_bytes;
  return reinterpret_cast<std::uintptr_t>(data) % 16 == 0 && strides[0] % per_chunk == 0 && strides[1] % per_chunk == 0;
}

std::string sm80_refusal(const FlashFwdArgs& a) {
  try {
    validate(a);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return sm80_conditions(a);
}

std::string sm80_conditions(const FlashFwdArgs& a) {
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

std::string sm90_forward_refusal(const FlashFwdArgs& a) {
  std::string why = sm80_refusal(a);
  return why.empty() ? sm90_forward_refusal_beyond_sm80(a) : why;
}

namespace {

// The kernel a plan runs for arguments its family's checks passed: the family's pick.
template <Family F>
void choose(ForwardPlan& plan) {
  const FlashFwdArgs& a = plan.args;
  const long long head_dim = a.q_shape[2];
  const int row = picked_row<F>(head_dim, a.causal, a.window.bounded(), a.q_shape[0] * a.q_shape[1]);
  if (row >= 0) {
    plan.kernel = rows<ProductRows, F>()[row].key;
    plan.launch = product_forward(F, row, head_dim, a.causal);
  }
  if (plan.launch == nullptr) plan.refused = "no kernel built for head dim " + std::to_string(head_dim);
}

}  // namespace

ForwardPlan plan_forward(const FlashFwdArgs& args, Path path) {
  ForwardPlan plan;
  plan.args = args;
  plan.refused = sm80_refusal(args);
  if (!plan.refused.empty()) return plan;
  if (path != Path::sm80) plan.sm90_refused = sm90_forward_refusal_beyond_sm80(args);
  if (path == Path::sm90 && !plan.sm90_refused.empty()) {
    plan.refused = plan.sm90_refused;
  } else if (path != Path::sm80 && plan.sm90_refused.empty()) {
    choose<Family::sm90_forward>(plan);
  } else {
    choose<Family::sm80_forward>(plan);
  }
  return plan;
}

void run(const ForwardPlan& plan, cudaStream_t stream) {
  if (!plan.runs()) throw std::invalid_argument(plan.refused);
  plan.launch(plan, stream);
}

void forward(const FlashFwdArgs& args, cudaStream_t stream) {
  run(plan_forward(args, Path::best), stream);
}

}  // namespace fa2::flash
