// The lab's launchers (lab.hpp): one per row of v5, v5b, v6 and v6b, the lab's (variants.def) and
// the product's (product/kernels.def), each a plan of the row (its family's checks, then its head
// dims) run on the row's kernel at the arguments' head dim and mask, which the product holds where
// its picks name it and the lab's generated translation units hold otherwise (FA2_HOPPER_SM90A: the
// build has the sm90 units).
#include "step07_benchmark/kernels/lab/lab.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "step07_benchmark/kernels/lab/rows.hpp"
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/product/rows.hpp"

namespace fa2::lab {

using namespace fa2::flash;

namespace {

// The row's kernel at (head dim, mask): the product's when its picks name it there, otherwise the
// lab's (which compiles the product's rows at their other head dims and every row of its own).
template <class Table, Family F>
auto find_instance(int row, long long head_dim, bool causal) {
  if constexpr (Table::kProduct) {
    const bool product_holds = picked_at<F>(rows<Table, F>()[row].key, static_cast<int>(head_dim), causal);
    if (product_holds) {
      if constexpr (is_backward(F)) {
        return product_backward(F, row, head_dim, causal);
      } else {
        return product_forward(F, row, head_dim, causal);
      }
    }
  }
  if constexpr (is_backward(F)) {
    return part_backward<Table, Part::lab>(F, row, head_dim, causal);
  } else {
    return part_forward<Table, Part::lab>(F, row, head_dim, causal);
  }
}

template <class Table, Family F, class Plan, class Args>
Plan row_plan(const Args& args, int row) {
  const GeneratedRow& r = rows<Table, F>()[row];
  Plan plan;
  plan.args = args;
  plan.kernel = r.key;
  if constexpr (F == Family::sm80_forward) {
    plan.refused = sm80_refusal(args);
  } else if constexpr (F == Family::sm90_forward) {
    plan.refused = sm90_forward_refusal(args);
  } else {
    plan.refused = backward_refusal(args);
    if constexpr (F == Family::sm90_backward) {
      if (plan.refused.empty()) plan.refused = sm90_backward_refusal_beyond(args);
    }
  }
  if (plan.refused.empty()) plan.refused = head_dim_refusal(r.key, r.head_dims, args.q_shape[2]);
  if (!plan.refused.empty()) return plan;
  plan.launch = find_instance<Table, F>(row, args.q_shape[2], args.causal);
  if (plan.launch == nullptr) plan.refused = std::string(r.key) + ": its kernel at these arguments is not built";
  if constexpr (F == Family::sm90_backward) {
    if (plan.runs()) size_group_split(plan);
  }
  return plan;
}

template <class Table, Family F, int ROW>
void forward_row(const FlashFwdArgs& args, ::CUstream_st* stream) {
  run(row_plan<Table, F, ForwardPlan>(args, ROW), stream);
}

template <class Table, Family F, int ROW>
void backward_row(const FlashBwdArgs& args, ::CUstream_st* stream) {
  run(row_plan<Table, F, BackwardPlan>(args, ROW), stream);
}

// One launcher per row of family F of the table.
template <class Table, Family F>
constexpr auto launchers() {
  return []<int... R>(std::integer_sequence<int, R...>) {
    if constexpr (is_backward(F)) {
      return std::array<CudaBwdLaunchFn, sizeof...(R)>{&backward_row<Table, F, R>...};
    } else {
      return std::array<CudaLaunchFn, sizeof...(R)>{&forward_row<Table, F, R>...};
    }
  }
  (std::make_integer_sequence<int, row_count<Table, F>()>{});
}

// The launcher of the row with this key in family F, in the lab's table or the product's; null
// when neither has it.
template <Family F>
auto launcher(std::string_view key) {
  static constexpr auto kLab = launchers<LabRows, F>();
  static constexpr auto kProduct = launchers<ProductRows, F>();
  if (const int row = row_index<LabRows, F>(key); row >= 0) return kLab[static_cast<std::size_t>(row)];
  if (const int row = row_index<ProductRows, F>(key); row >= 0) return kProduct[static_cast<std::size_t>(row)];
  return decltype(kLab[0]){nullptr};
}

}  // namespace

CudaLaunchFn forward_launcher(std::string_view key) {
  if (const CudaLaunchFn f = launcher<Family::sm80_forward>(key)) return f;
  return launcher<Family::sm90_forward>(key);
}

CudaBwdLaunchFn backward_launcher(std::string_view key) {
  if (const CudaBwdLaunchFn f = launcher<Family::sm80_backward>(key)) return f;
  return launcher<Family::sm90_backward>(key);
}

}  // namespace fa2::lab
