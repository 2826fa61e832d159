// From run-time arguments to the compiled backward bodies, through the repository's one
// dispatcher (dispatch_flash, flash_fwd_dispatch.hpp): the backward is compiled for the same
// dtype, head dim and causal flag as the forward, which its arguments contain.
//
//   launch_flash_bwd<step05::FlashBwdPreprocess, step05::FlashBwdKernel, step05::FlashBwdConvertDQ,
//                    TileSizes<16, 16, 4>>(args, HostLauncher{}, DTypes<float, bf16>{}, AllHeadDims{},
//                                          "the step05 backward");
//       validates args, then runs the three phases with the launcher (HostLauncher{}, or
//       DeviceLauncher{stream} from launch_device.cuh), in order:
//         Preprocess  one program per (query tile, batch): D_i, and dQ_accum set to 0
//         Kernel      one program per (key tile, batch): dK, dV, and dQ added into dQ_accum;
//                     with args.deterministic one launch per key tile, in order
//         ConvertDQ   one program per (query tile, batch): dQ_accum -> dQ in the input dtype
#pragma once

#include <string_view>

#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/flash_bwd_params.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"  // FlashFwdArgs, softmax_scale
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step05_fa2_kernel/flash_fwd_params.hpp"

namespace fa2 {

template <class T>
FlashBwdParams<T> make_flash_bwd_params(const FlashBwdArgs& a) {
  FlashBwdParams<T> p{};
  p.Q = static_cast<const T*>(a.q);
  p.K = static_cast<const T*>(a.k);
  p.V = static_cast<const T*>(a.v);
  p.O = static_cast<const T*>(a.o);
  p.dO = static_cast<const T*>(a.do_);
  p.L = a.l;
  p.D_rows = a.d_rows;
  p.dQ_accum = a.dq_accum;
  p.dQ = static_cast<T*>(a.dq);
  p.dK = static_cast<T*>(a.dk);
  p.dV = static_cast<T*>(a.dv);
  p.stride_qb = a.q_strides[0], p.stride_qq = a.q_strides[1], p.stride_qd = a.q_strides[2];
  p.stride_kb = a.k_strides[0], p.stride_kk = a.k_strides[1], p.stride_kd = a.k_strides[2];
  p.stride_vb = a.v_strides[0], p.stride_vk = a.v_strides[1], p.stride_vd = a.v_strides[2];
  p.stride_ob = a.o_strides[0], p.stride_oq = a.o_strides[1], p.stride_od = a.o_strides[2];
  p.stride_dob = a.do_strides[0], p.stride_doq = a.do_strides[1], p.stride_dod = a.do_strides[2];
  p.stride_lb = a.l_strides[0], p.stride_lq = a.l_strides[1];
  p.stride_Db = a.d_rows_strides[0], p.stride_Dq = a.d_rows_strides[1];
  p.stride_accb = a.dq_accum_strides[0], p.stride_accq = a.dq_accum_strides[1], p.stride_accd = a.dq_accum_strides[2];
  p.stride_dqb = a.dq_strides[0], p.stride_dqq = a.dq_strides[1], p.stride_dqd = a.dq_strides[2];
  p.stride_dkb = a.dk_strides[0], p.stride_dkk = a.dk_strides[1], p.stride_dkd = a.dk_strides[2];
  p.stride_dvb = a.dv_strides[0], p.stride_dvk = a.dv_strides[1], p.stride_dvd = a.dv_strides[2];
  p.N_QUERIES = a.q_shape[1];
  p.N_KEYS = a.k_shape[1];
  p.kv_group = kv_group(a);
  p.window_left = kernel_window(a.window).left;
  p.window_right = kernel_window(a.window).right;
  p.scale = softmax_scale(a);
  p.input_precision = a.allow_tf32 ? InputPrecision::tf32 : InputPrecision::tf32x3;
  return p;
}

// One program per (key tile, batch element): the backward's outer loop, turned into the grid.
template <class Tiles>
Grid flash_bwd_grid(const FlashBwdArgs& args) {
  return Grid{static_cast<int>(cdiv<index_t>(args.k_shape[1], Tiles::k_tile)), static_cast<int>(args.k_shape[0]), 1};
}

template <template <class> class Preprocess, template <class> class Kernel, template <class> class ConvertDQ,
          class Tiles = TileSizes<>, class Launcher, class... Ts, int... Ds>
void launch_flash_bwd(const FlashBwdArgs& args, const Launcher& launcher, DTypes<Ts...> dtypes,
                      HeadDims<Ds...> head_dims, std::string_view kernel) {
  validate(args);
  const FlashFwdArgs& forward = args;
  dispatch_flash(forward, dtypes, head_dims, kernel, [&](auto dtype, auto head_dim, auto causal) {
    using T = typename decltype(dtype)::type;
    constexpr int D = decltype(head_dim)::value;
    using Config = FlashFwdConfig<T, D, decltype(causal)::value, Tiles::q_tile, Tiles::k_tile, Tiles::num_warps>;
    // The row-wise phases never read the causal flag: one instantiation serves both masks.
    using RowConfig = FlashFwdConfig<T, D, false, Tiles::q_tile, Tiles::k_tile, Tiles::num_warps>;
    const auto params = make_flash_bwd_params<T>(args);
    launch<Preprocess<RowConfig>>(launcher, flash_grid<Tiles>(forward), params);
    const Grid grid = flash_bwd_grid<Tiles>(args);
    if (args.deterministic) {
      // Each key-tile program adds each element of dQ_accum once; launched one key tile after
      // another, the shares of every element add up in the same order on every run.
      for (int j = 0; j < grid.x; ++j) launch<Kernel<Config>>(launcher, Grid{1, grid.y, grid.z, j}, params);
    } else {
      launch<Kernel<Config>>(launcher, grid, params);
    }
    launch<ConvertDQ<RowConfig>>(launcher, flash_grid<Tiles>(forward), params);
  });
}

}  // namespace fa2
