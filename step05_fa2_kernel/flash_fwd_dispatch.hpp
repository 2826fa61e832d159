// From run-time arguments to a compiled kernel: the one dispatcher of the repository. Every
// FlashAttention kernel (step05's, step06's twins, step07's ladder, tile variants and fast
// kernels) is compiled for a dtype, a head dim and a causal flag; the arguments say which at
// run time.
//
//   dispatch_flash(args, DTypes<float, bf16>{}, HeadDims<64, 128>{}, "my kernel",
//                  [&](auto dtype, auto head_dim, auto causal) { ... });
//       validates args, then calls the lambda once with std::type_identity<T>,
//       std::integral_constant<int, D> and std::bool_constant<CAUSAL> for the arguments' dtype,
//       head dim and causal flag; a combination that is not built throws, naming it.
//
//   launch_flash<step05::FlashFwdKernel, TileSizes<16, 16, 4>>(args, HostLauncher{}, DTypes<float, bf16>{},
//                                                           AllHeadDims{}, "the step05 kernel");
//       the same for a kernel body template (a KernelBody, step04's launch.hpp): fills
//       FlashFwdParams and runs one program per (query tile, batch) with the launcher
//       (HostLauncher{}, or DeviceLauncher{stream} from launch_device.cuh).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_params.hpp"

namespace fa2 {

template <class... Ts>
struct DTypes {};
template <int... Ds>
struct HeadDims {};
using AllHeadDims = HeadDims<16, 32, 64, 128>;  // every head dim validate() accepts

// The tl.constexpr values a kernel is compiled for, apart from the ones chosen at run time.
template <int Q_TILE = 16, int K_TILE = 16, int NUM_WARPS = 4>
struct TileSizes {
  static constexpr int q_tile = Q_TILE, k_tile = K_TILE, num_warps = NUM_WARPS;
};

template <class T>
FlashFwdParams<T> make_flash_params(const FlashFwdArgs& a) {
  FlashFwdParams<T> p{};
  p.Q = static_cast<const T*>(a.q);
  p.K = static_cast<const T*>(a.k);
  p.V = static_cast<const T*>(a.v);
  p.O = static_cast<T*>(a.o);
  p.L = a.l;
  p.stride_qb = a.q_strides[0], p.stride_qq = a.q_strides[1], p.stride_qd = a.q_strides[2];
  p.stride_kb = a.k_strides[0], p.stride_kk = a.k_strides[1], p.stride_kd = a.k_strides[2];
  p.stride_vb = a.v_strides[0], p.stride_vk = a.v_strides[1], p.stride_vd = a.v_strides[2];
  p.stride_ob = a.o_strides[0], p.stride_oq = a.o_strides[1], p.stride_od = a.o_strides[2];
  p.stride_lb = a.l_strides[0], p.stride_lq = a.l_strides[1];
  p.N_QUERIES = a.q_shape[1];
  p.N_KEYS = a.k_shape[1];
  p.kv_group = kv_group(a);
  p.window_left = kernel_window(a.window).left;
  p.window_right = kernel_window(a.window).right;
  p.scale = softmax_scale(a);
  p.input_precision = a.allow_tf32 ? InputPrecision::tf32 : InputPrecision::tf32x3;
  return p;
}

namespace detail {
template <int... Ds>
std::string head_dims_text(HeadDims<Ds...>) {
  std::string s;
  ((s += (s.empty() ? "" : ", ") + std::to_string(Ds)), ...);
  return s;
}
}  // namespace detail

template <class... Ts, int... Ds, class F>
void dispatch_flash(const FlashFwdArgs& args, DTypes<Ts...>, HeadDims<Ds...> head_dims, std::string_view kernel,
                    F&& f) {
  validate(args);
  const auto with_causal = [&](auto dtype, auto head_dim) {
    if (args.causal) {
      f(dtype, head_dim, std::true_type{});
    } else {
      f(dtype, head_dim, std::false_type{});
    }
  };
  const auto with_head_dim = [&](auto dtype) {
    const bool built =
        ((args.q_shape[2] == Ds && (with_causal(dtype, std::integral_constant<int, Ds>{}), true)) || ...);
    if (!built) {
      throw std::invalid_argument("head_dim: " + std::string(kernel) + " is built for head dims " +
                                  detail::head_dims_text(head_dims) + ", got " + std::to_string(args.q_shape[2]));
    }
  };
  const bool built = ((args.dtype == dtype_of<Ts>() && (with_head_dim(std::type_identity<Ts>{}), true)) || ...);
  if (!built) {
    throw std::invalid_argument("dtype: " + std::string(kernel) + " is not built for " + to_string(args.dtype));
  }
}

// One program per (query tile, batch element).
template <class Tiles>
Grid flash_grid(const FlashFwdArgs& args) {
  return Grid{static_cast<int>(cdiv<index_t>(args.q_shape[1], Tiles::q_tile)), static_cast<int>(args.q_shape[0]), 1};
}

// Whether a kernel body reads FlashFwdParams' sliding window (it says so with a member
// `static constexpr bool takes_window = true`); launch_flash refuses a window for one that does not.
template <class Kernel>
constexpr bool takes_window() {
  if constexpr (requires { Kernel::takes_window; }) {
    return Kernel::takes_window;
  } else {
    return false;
  }
}

template <template <class> class Kernel, class Tiles = TileSizes<>, class Launcher, class... Ts, int... Ds>
void launch_flash(const FlashFwdArgs& args, const Launcher& launcher, DTypes<Ts...> dtypes, HeadDims<Ds...> head_dims,
                  std::string_view kernel) {
  dispatch_flash(args, dtypes, head_dims, kernel, [&](auto dtype, auto head_dim, auto causal) {
    using T = typename decltype(dtype)::type;
    using Config = FlashFwdConfig<T, decltype(head_dim)::value, decltype(causal)::value, Tiles::q_tile, Tiles::k_tile,
                                  Tiles::num_warps>;
    if (args.window.bounded() && !takes_window<Kernel<Config>>()) {
      throw std::invalid_argument("window: " + std::string(kernel) + " takes no sliding window");
    }
    launch<Kernel<Config>>(launcher, flash_grid<Tiles>(args), make_flash_params<T>(args));
  });
}

}  // namespace fa2
