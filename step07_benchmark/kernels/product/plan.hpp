// Inside the product and the lab: what a plan is made of. The GPU's attributes read once per
// device, the argument checks of each path, and the kernels of the generated translation units
// (one per family, head dim, mask and part) that a plan picks from. CUDA-free.
// Users include flash_attention.hpp instead.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/rows.hpp"

namespace fa2::flash {

// The attributes of one GPU that the launches need, read once per device.
struct DeviceInfo {
  int ordinal = 0;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int smem_optin_bytes = 0;  // dynamic shared memory a block may opt in to
  int l2_bytes = 0;          // the L2 cache
};
// The current device's; throws fa2::cuda::CudaError when there is none.
const DeviceInfo& current_device();
// The same, or null with `why_not` set (for the sm90 check, which must say why rather than throw).
const DeviceInfo* current_device_or(std::string& why_not);

// Whether every row of a (batch, N, D) tensor of `element_bytes`-byte elements starts on a 16-byte
// boundary: the base pointer 16-byte aligned, the batch and row strides whole 16-byte chunks. The
// fast kernels move rows in 16-byte chunks (cp.async, TMA, float4), so each checks its tensors so.
bool rows_16_byte_aligned(const void* data, const Extents<3>& strides, index_t element_bytes);

// The checks behind the plans, each a reason ("" when the arguments pass). The sm80 path's:
// validate(), then bf16 or fp16, head dim 32/64/128, a positive scale, lengths < 2^31, 16-byte
// aligned rows.
std::string sm80_refusal(const FlashFwdArgs& args);
// The sm80 path's conditions alone, for arguments validate() has passed.
std::string sm80_conditions(const FlashFwdArgs& args);
// What v6 adds to v5's (call it once v5's pass): head dim 64/128, the grid's limits, then
// sm90_unavailable(). sm90_forward_refusal: both.
std::string sm90_forward_refusal_beyond_sm80(const FlashFwdArgs& args);
std::string sm90_forward_refusal(const FlashFwdArgs& args);
// The backward's: validate(), the sm80 path's forward checks, then its own tensors' alignment.
std::string backward_refusal(const FlashBwdArgs& args);
// "head_dim: <kernel> is built for head dims 64, 128, got 32" (dispatch_flash's words).
std::string head_dim_refusal(std::string_view kernel, const HeadDimSet& head_dims, long long head_dim);

// The launch of one compiled kernel (a row of a family at one head dim and mask).
using ForwardLaunch = void (*)(const ForwardPlan&, ::CUstream_st*);
using BackwardLaunch = void (*)(const BackwardPlan&, ::CUstream_st*);

// The kernels of one generated translation unit for one table, indexed by row: the launch of the
// row's kernel at the unit's head dim and mask when the unit holds it, null otherwise. Defined by
// instances/sm80.cuh (the sm80 forward and backward) and instances/sm90.cuh (the sm90 ones), and
// instantiated for one (Table, Part, D, CAUSAL) in each translation unit CMakeLists.txt generates.
struct Instances {
  const ForwardLaunch* forward = nullptr;    // one entry per row of the table's forward family
  const BackwardLaunch* backward = nullptr;  // one entry per row of its backward family
};
template <class Table, Part P, int D, bool CAUSAL>
Instances sm80_instances();
template <class Table, Part P, int D, bool CAUSAL>
Instances sm90_instances();

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

// Entry ROW of a generated unit's table: make(ROW) when part P holds row ROW of the table's family F
// at (D, CAUSAL), otherwise null, and then nothing of the row is compiled.
template <class Table, Family F, Part P, int D, bool CAUSAL, int ROW, class Launch, class Make>
constexpr Launch launch_if_held(Make make) {
  if constexpr (held<Table, F>(P, ROW, D, CAUSAL)) {
    return make(std::integral_constant<int, ROW>{});
  } else {
    return nullptr;
  }
}
// The whole table of family F for one unit: an entry per row.
template <class Table, Family F, Part P, int D, bool CAUSAL, class Launch, class Make>
constexpr auto launch_table(Make make) {
  return [&]<int... R>(std::integer_sequence<int, R...>) {
    return std::array<Launch, sizeof...(R)>{launch_if_held<Table, F, P, D, CAUSAL, R, Launch>(make)...};
  }
  (std::make_integer_sequence<int, row_count<Table, F>()>{});
}

// Part P's kernel of a row of the table at (head dim, mask), or null when the part does not hold
// it. The product's library instantiates it for (ProductRows, Part::product), the lab's for both
// tables and Part::lab; each defines FA2_HOPPER_SM90A when the build has the sm90 units.
template <class Table, Part P>
ForwardLaunch part_forward(Family family, int row, long long head_dim, bool causal) {
  if (family == Family::sm80_forward && row >= 0 && row < row_count<Table, Family::sm80_forward>()) {
    return at_head_dim<kSm80HeadDims>(head_dim, [&](auto d) {
      return at_mask(causal, [&](auto c) {
        return sm80_instances<Table, P, decltype(d)::value, decltype(c)::value>().forward[row];
      });
    });
  }
#ifdef FA2_HOPPER_SM90A
  if (family == Family::sm90_forward && row >= 0 && row < row_count<Table, Family::sm90_forward>()) {
    return at_head_dim<kSm90HeadDims>(head_dim, [&](auto d) {
      return at_mask(causal, [&](auto c) {
        return sm90_instances<Table, P, decltype(d)::value, decltype(c)::value>().forward[row];
      });
    });
  }
#endif
  return nullptr;
}
template <class Table, Part P>
BackwardLaunch part_backward(Family family, int row, long long head_dim, bool causal) {
  if (family == Family::sm80_backward && row >= 0 && row < row_count<Table, Family::sm80_backward>()) {
    return at_head_dim<kSm80HeadDims>(head_dim, [&](auto d) {
      return at_mask(causal, [&](auto c) {
        return sm80_instances<Table, P, decltype(d)::value, decltype(c)::value>().backward[row];
      });
    });
  }
#ifdef FA2_HOPPER_SM90A
  if (family == Family::sm90_backward && row >= 0 && row < row_count<Table, Family::sm90_backward>()) {
    return at_head_dim<kSm90HeadDims>(head_dim, [&](auto d) {
      return at_mask(causal, [&](auto c) {
        return sm90_instances<Table, P, decltype(d)::value, decltype(c)::value>().backward[row];
      });
    });
  }
#endif
  return nullptr;
}

// The product's kernel of one of its rows (the plans of flash_attention.hpp look only here).
ForwardLaunch product_forward(Family family, int row, long long head_dim, bool causal);
BackwardLaunch product_backward(Family family, int row, long long head_dim, bool causal);
// What v6b adds to the backward's checks: head dim 64/128, the grid's limits, then
// sm90_unavailable().
std::string sm90_backward_refusal_beyond(const FlashBwdArgs& args);
// The sm90 backward's split of a group of query heads for the current GPU (plan.group_splits) and
// the workspace it needs (plan.dkv_partial_floats); every plan of that family calls it.
void size_group_split(BackwardPlan& plan);

// The packed forward (plan_packed_forward, product/packed.cu): the kernels.def row whose packed twins
// run it, their tile sizes (the schedule counts tiles of them; product/packed_sm90.cu checks them
// against the configuration), the window bounds its kernel reads (bottom-right, an unbounded left
// side max_k, an unbounded right side max_q: packed_schedule.hpp's packed_window turns them per
// sequence) and its launch (compiled for sm_90a).
inline constexpr std::string_view kPackedRow = "v6.11";
inline constexpr int kPackedBlockM = 128, kPackedBlockN = 128;
inline WindowBounds packed_kernel_bounds(const FlashVarlenArgs& a) {
  return {static_cast<int>(a.window.left < 0 ? a.max_k : a.window.left),
          static_cast<int>(a.window.right < 0 ? a.max_q : a.window.right)};
}
void launch_packed_sm90(const PackedPlan& plan, ::CUstream_st* stream);
// The packed backward (plan_packed_backward): the same for v6b's packed twins. Its schedule
// counts key tiles of kBackwardKeyTile keys walking query tiles of kPackedBackwardBlockM rows.
inline constexpr std::string_view kPackedBackwardRow = "v6b.8";
inline constexpr int kPackedBackwardBlockM = 64;
void launch_packed_backward_sm90(const PackedBackwardPlan& plan, ::CUstream_st* stream);

// The tensor checks both varlen plans make (product/decode.cu): dtype, addresses, head dim (one of
// head_dims, listed in the reason as head_dim_list), shapes, a contiguous head dim and 16-byte
// aligned rows; `kernel` names the kernel in the reasons. Empty when they pass.
std::string varlen_tensor_refusal(const FlashVarlenArgs& a, std::string_view kernel, std::string_view head_dim_list,
                                  std::initializer_list<index_t> head_dims);

}  // namespace fa2::flash
