// The lab's launchers (fa2_lab.hpp): one per row of v5, v5b, v6 and v6b, each a plan of the row (its
// family's checks, then its head dims) run on the row's kernel at the arguments' head dim and
// mask, which the product holds when one of its picks names it and the lab's generated
// translation units hold otherwise (FA2_HOPPER_SM90A: the build has v6's).
#include "step07_benchmark/kernels/fast/fa2_lab.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "step07_benchmark/kernels/fast/flash_attention.hpp"
#include "step07_benchmark/kernels/fast/launch_plan.hpp"
#include "step07_benchmark/kernels/fast/variant_rows.hpp"

namespace fa2::fast::lab {

namespace {

// The row's kernel: the product's when it holds it, otherwise the lab's.
template <Family F>
auto find_instance(int row, long long head_dim, bool causal) {
  constexpr bool kBackward = F == Family::v5b || F == Family::v6b;
  auto launch = [&] {
    if constexpr (kBackward) {
      return product_backward(F, row, head_dim, causal);
    } else {
      return product_forward(F, row, head_dim, causal);
    }
  }();
  if (launch != nullptr) return launch;
  if constexpr (kBackward) {
    return part_backward<Part::lab>(F, row, head_dim, causal);
  } else {
    return part_forward<Part::lab>(F, row, head_dim, causal);
  }
}

template <Family F, class Plan, class Args>
Plan row_plan(const Args& args, int row) {
  const GeneratedRow& r = rows<F>()[row];
  Plan plan;
  plan.args = args;
  plan.kernel = r.key;
  if constexpr (F == Family::v5) {
    plan.refused = v5_refusal(args);
  } else if constexpr (F == Family::v6) {
    plan.refused = v6_refusal(args);
  } else {
    plan.refused = backward_refusal(args);
    if constexpr (F == Family::v6b) {
      if (plan.refused.empty()) plan.refused = v6b_refusal_beyond_backward(args);
    }
  }
  if (plan.refused.empty()) plan.refused = head_dim_refusal(r.key, r.head_dims, args.q_shape[2]);
  if (!plan.refused.empty()) return plan;
  plan.launch = find_instance<F>(row, args.q_shape[2], args.causal);
  if (plan.launch == nullptr) plan.refused = std::string(r.key) + ": its kernel at these arguments is not built";
  return plan;
}

template <Family F, int ROW>
void forward_row(const FlashFwdArgs& args, ::CUstream_st* stream) {
  run(row_plan<F, ForwardPlan>(args, ROW), stream);
}

template <Family F, int ROW>
void backward_row(const FlashBwdArgs& args, ::CUstream_st* stream) {
  run(row_plan<F, BackwardPlan>(args, ROW), stream);
}

template <Family F, int... R>
constexpr std::array<CudaLaunchFn, sizeof...(R)> forward_rows(std::integer_sequence<int, R...>) {
  return {&forward_row<F, R>...};
}
template <Family F, int... R>
constexpr std::array<CudaBwdLaunchFn, sizeof...(R)> backward_rows(std::integer_sequence<int, R...>) {
  return {&backward_row<F, R>...};
}

constexpr auto kV5Launchers = forward_rows<Family::v5>(std::make_integer_sequence<int, row_count<Family::v5>()>{});
constexpr auto kV6Launchers = forward_rows<Family::v6>(std::make_integer_sequence<int, row_count<Family::v6>()>{});
constexpr auto kV5bLaunchers = backward_rows<Family::v5b>(std::make_integer_sequence<int, row_count<Family::v5b>()>{});
constexpr auto kV6bLaunchers = backward_rows<Family::v6b>(std::make_integer_sequence<int, row_count<Family::v6b>()>{});

}  // namespace

CudaLaunchFn forward_launcher(std::string_view key) {
  if (const int row = row_index<Family::v5>(key); row >= 0) return kV5Launchers[static_cast<std::size_t>(row)];
  if (const int row = row_index<Family::v6>(key); row >= 0) return kV6Launchers[static_cast<std::size_t>(row)];
  return nullptr;
}

CudaBwdLaunchFn backward_launcher(std::string_view key) {
  if (const int row = row_index<Family::v5b>(key); row >= 0) return kV5bLaunchers[static_cast<std::size_t>(row)];
  if (const int row = row_index<Family::v6b>(key); row >= 0) return kV6bLaunchers[static_cast<std::size_t>(row)];
  return nullptr;
}

}  // namespace fa2::fast::lab
