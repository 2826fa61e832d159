// From run-time arguments to a compiled kernel: picks the instantiation for the dtype, the
// head dim and the causal flag, fills FlashFwdParams and hands the body to a launcher (the
// host loop here, the CUDA launch in flash_fwd_launch.cuh). Shared by step05, step06's
// variants and step07, each with its own kernel template.
#pragma once

#include <stdexcept>
#include <string>

#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_params.hpp"

namespace fa2 {

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
  p.scale = softmax_scale(a);
  return p;
}

// The tl.constexpr values a kernel is compiled for, apart from the ones chosen at run time.
template <int Q_TILE = 16, int K_TILE = 16, int NUM_WARPS = 4>
struct TileSizes {
  static constexpr int q_tile = Q_TILE, k_tile = K_TILE, num_warps = NUM_WARPS;
};

template <class T>
struct TypeTag {
  using type = T;
};

// Calls launch.template operator()<Body>(grid, params) with Body = Kernels::type<Config> for
// the arguments' dtype (one of DTypes...), head dim and causal flag.
//
// Kernels is a type with a member template `type`, declared in an anonymous namespace by the
// translation unit that launches (see FLASH_KERNEL_FAMILY below). It must be a type: GCC
// gives internal linkage to instantiations over a local *type*, but not over a local
// template passed as a template template argument, and the linker would then merge the
// fixed kernel's dispatch with a buggy twin's from another file (step06 builds both).
template <class Kernels, class Tiles, class... DTypes, class Launch>
void dispatch_flash(const FlashFwdArgs& args, Launch&& launch, const char* variant) {
  validate(args);
  bool launched = false;
  auto try_dtype = [&]<class T>(TypeTag<T>) {
    if (launched || args.dtype != dtype_of<T>()) return;
    launched = true;
    const auto params = make_flash_params<T>(args);
    auto with_head_dim = [&]<int D>() {
      const Grid grid{static_cast<int>(cdiv<index_t>(args.q_shape[1], Tiles::q_tile)), static_cast<int>(args.q_shape[0]), 1};
      if (args.causal) {
        launch.template operator()<
            typename Kernels::template type<FlashFwdConfig<T, D, true, Tiles::q_tile, Tiles::k_tile, Tiles::num_warps>>>(
            grid, params);
      } else {
        launch.template operator()<
            typename Kernels::template type<FlashFwdConfig<T, D, false, Tiles::q_tile, Tiles::k_tile, Tiles::num_warps>>>(
            grid, params);
      }
    };
    switch (args.q_shape[2]) {
      case 16: with_head_dim.template operator()<16>(); break;
      case 32: with_head_dim.template operator()<32>(); break;
      case 64: with_head_dim.template operator()<64>(); break;
      case 128: with_head_dim.template operator()<128>(); break;
      default: throw std::logic_error("head_dim passed validation but has no kernel");
    }
  };
  (try_dtype(TypeTag<DTypes>{}), ...);
  if (!launched) {
    throw std::invalid_argument(std::string("dtype: ") + variant + " is not built for " + to_string(args.dtype));
  }
}

// Declares, in the including file's anonymous namespace, the type `name` whose member
// template `type<Cfg>` is the kernel template `kernel` (e.g. FlashFwdKernel).
#define FA2_FLASH_KERNEL_FAMILY(name, kernel) \
  namespace {                                 \
  struct name {                               \
    template <class Cfg>                      \
    using type = kernel<Cfg>;                 \
  };                                          \
  }

// The host launcher: Triton's interpreter mode.
struct HostLauncher {
  template <class Body>
  void operator()(const Grid& grid, const typename Body::Params& params) const {
    run_on_host<Body>(grid, params);
  }
};

}  // namespace fa2
