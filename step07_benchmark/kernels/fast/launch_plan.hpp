// Inside the product and the lab: what a plan is made of. The GPU's attributes read once per
// device, the argument checks of v5, v6 and the backward, and the kernels of the generated
// translation units (one per family, head dim, mask and part) that a plan picks from. CUDA-free.
// Users include flash_attention.hpp instead.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "step07_benchmark/kernels/fast/flash_attention.hpp"
#include "step07_benchmark/kernels/fast/variant_rows.hpp"

namespace fa2::fast {

// The attributes of one GPU that the launches need, read once per device.
struct DeviceInfo {
  int ordinal = 0;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int smem_optin_bytes = 0;  // dynamic shared memory a block may opt in to
};
// The current device's; throws fa2::cuda::CudaError when there is none.
const DeviceInfo& current_device();
// The same, or null with `why_not` set (for v6's check, which must say why rather than throw).
const DeviceInfo* current_device_or(std::string& why_not);

// Whether every row of a (batch, N, D) tensor of `element_bytes`-byte elements starts on a 16-byte
// boundary: the base pointer 16-byte aligned, the batch and row strides whole 16-byte chunks. The
// fast kernels move rows in 16-byte chunks (cp.async, TMA, float4), so each checks its tensors so.
bool rows_16_byte_aligned(const void* data, const Extents<3>& strides, index_t element_bytes);

// The checks behind the plans, each a reason ("" when the arguments pass). v5's: validate(), then
// bf16, head dim 32/64/128, a positive scale, lengths < 2^31, 16-byte aligned rows.
std::string v5_refusal(const FlashFwdArgs& args);
// v5's conditions alone, for arguments validate() has passed.
std::string v5_conditions(const FlashFwdArgs& args);
// What v6 adds to v5's (call it once v5's pass): head dim 64/128, the grid's limits, then
// hopper_unavailable(). v6_refusal: both.
std::string v6_refusal_beyond_v5(const FlashFwdArgs& args);
std::string v6_refusal(const FlashFwdArgs& args);
// The backward's: validate(), v5's forward checks, then its own tensors' alignment.
std::string backward_refusal(const FlashBwdArgs& args);
// "head_dim: <kernel> is built for head dims 64, 128, got 32" (dispatch_flash's words).
std::string head_dim_refusal(std::string_view kernel, const HeadDimSet& head_dims, long long head_dim);

// The launch of one compiled kernel (a row of a family at one head dim and mask).
using ForwardLaunch = void (*)(const ForwardPlan&, ::CUstream_st*);
using BackwardLaunch = void (*)(const BackwardPlan&, ::CUstream_st*);

// The kernels of one generated translation unit, indexed by row: the launch of the row's kernel
// at the unit's head dim and mask when the unit holds it, null otherwise. Defined by
// fa2_fast_instances.cuh (v5's forward and backward) and fa2_hopper_instances.cuh (v6), and
// instantiated for one (D, CAUSAL, P) in each translation unit that CMakeLists.txt generates.
struct Instances {
  const ForwardLaunch* forward = nullptr;    // row_count<Family::v5>() or row_count<Family::v6>() entries
  const BackwardLaunch* backward = nullptr;  // row_count<Family::v5b>() or row_count<Family::v6b>() entries
};
template <int D, bool CAUSAL, Part P>
Instances v5_instances();
template <int D, bool CAUSAL, Part P>
Instances v6_instances();

// f(std::integral_constant<int, D>{}) for the D of kDims that equals head_dim, or a value-initialised
// result when none does: from a run-time head dim to a generated translation unit's table.
template <const auto& kDims, class F>
auto at_head_dim(long long head_dim, F&& f) {
  using Result = decltype(f(std::integral_constant<int, kDims[0]>{}));
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    Result out{};
    (void)((head_dim == kDims[I] && (out = f(std::integral_constant<int, kDims[I]>{}), true)) || ...);
    return out;
  }
  (std::make_index_sequence<std::size(kDims)>{});
}

// f(std::bool_constant<causal>{}).
template <class F>
auto at_mask(bool causal, F&& f) {
  return causal ? f(std::true_type{}) : f(std::false_type{});
}

// Entry ROW of a generated unit's table: make(ROW) when part P holds row ROW of family F at
// (D, CAUSAL), otherwise null, and then nothing of the row is compiled.
template <Family F, Part P, int D, bool CAUSAL, int ROW, class Launch, class Make>
constexpr Launch launch_if_held(Make make) {
  if constexpr (part_of<F>(ROW, D, CAUSAL) == P) {
    return make(std::integral_constant<int, ROW>{});
  } else {
    return nullptr;
  }
}
// The whole table of family F for one unit: an entry per row.
template <Family F, Part P, int D, bool CAUSAL, class Launch, class Make>
constexpr auto launch_table(Make make) {
  return [&]<int... R>(std::integer_sequence<int, R...>) {
    return std::array<Launch, sizeof...(R)>{launch_if_held<F, P, D, CAUSAL, R, Launch>(make)...};
  }
  (std::make_integer_sequence<int, row_count<F>()>{});
}

// Part P's kernel of a row at (head dim, mask), or null when the part does not hold it (family v5
// or v6 for the forward, v5b or v6b for the backward). The product's library
// instantiates it for Part::product, the lab's for Part::lab; each defines FA2_HOPPER_SM90A when
// the build has v6's units.
template <Part P>
ForwardLaunch part_forward(Family family, int row, long long head_dim, bool causal) {
  if (family == Family::v5 && row >= 0 && row < row_count<Family::v5>()) {
    return at_head_dim<kV5HeadDims>(head_dim, [&](auto d) {
      return at_mask(causal,
                     [&](auto c) { return v5_instances<decltype(d)::value, decltype(c)::value, P>().forward[row]; });
    });
  }
#ifdef FA2_HOPPER_SM90A
  if (family == Family::v6 && row >= 0 && row < row_count<Family::v6>()) {
    return at_head_dim<kV6HeadDims>(head_dim, [&](auto d) {
      return at_mask(causal,
                     [&](auto c) { return v6_instances<decltype(d)::value, decltype(c)::value, P>().forward[row]; });
    });
  }
#endif
  return nullptr;
}
template <Part P>
BackwardLaunch part_backward(Family family, int row, long long head_dim, bool causal) {
  if (family == Family::v5b && row >= 0 && row < row_count<Family::v5b>()) {
    return at_head_dim<kV5HeadDims>(head_dim, [&](auto d) {
      return at_mask(causal,
                     [&](auto c) { return v5_instances<decltype(d)::value, decltype(c)::value, P>().backward[row]; });
    });
  }
#ifdef FA2_HOPPER_SM90A
  if (family == Family::v6b && row >= 0 && row < row_count<Family::v6b>()) {
    return at_head_dim<kV6HeadDims>(head_dim, [&](auto d) {
      return at_mask(causal,
                     [&](auto c) { return v6_instances<decltype(d)::value, decltype(c)::value, P>().backward[row]; });
    });
  }
#endif
  return nullptr;
}

// The product's (the plans of flash_attention.hpp look only here).
ForwardLaunch product_forward(Family family, int row, long long head_dim, bool causal);
BackwardLaunch product_backward(Family family, int row, long long head_dim, bool causal);
// What v6b adds to the backward's checks: head dim 64/128, the grid's limits, then
// hopper_unavailable().
std::string v6b_refusal_beyond_backward(const FlashBwdArgs& args);

}  // namespace fa2::fast
