// The step05 backward on the host: the same three bodies the GPU runs (flash_bwd_kernel.hpp),
// called once per program id by run_on_host (step04), with their shared memory checked for races.
//   ctest -L backward   (tests/test_flash_bwd_host.cpp)
#include <limits>

#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/flash_bwd_dispatch.hpp"
#include "step05_fa2_kernel/flash_bwd_kernel.hpp"

namespace fa2 {

void flash_bwd_host(const FlashBwdArgs& args) {
  launch_flash_bwd<step05::FlashBwdPreprocess, step05::FlashBwdKernel, step05::FlashBwdConvertDQ, TileSizes<>>(
      args, HostLauncher{}, DTypes<float, bf16, fp16>{}, AllHeadDims{}, "the step05 backward");
}

template <class T>
FlashGradients<T> poisoned_gradients(const Extents<3>& q_shape, const Extents<3>& k_shape) {
  const T nan = convert<T>(std::numeric_limits<float>::quiet_NaN());
  return {Tensor<T, 3>(q_shape, nan), Tensor<T, 3>(k_shape, nan), Tensor<T, 3>(k_shape, nan)};
}

FlashBwdWorkspace poisoned_workspace(const Extents<3>& q_shape) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {Tensor<float, 2>(Extents<2>{q_shape[0], q_shape[1]}, nan), Tensor<float, 3>(q_shape, nan)};
}

template <class T>
FlashGradients<T> flash_attention_backward_host(TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                                TensorView<const T, 3> V, TensorView<const T, 3> O,
                                                TensorView<const float, 2> L, TensorView<const T, 3> dO, bool causal,
                                                std::optional<float> scale, bool deterministic, Window window) {
  auto grads = poisoned_gradients<T>(Q.shape(), K.shape());
  auto work = poisoned_workspace(Q.shape());  // the preprocess must clear dQ_accum itself
  auto args = make_flash_bwd_args<T>(Q, K, V, O, L, dO, work.D_rows.view(), grads.dQ.view(), work.dQ_accum.view(),
                                     grads.dK.view(), grads.dV.view(), causal, scale);
  args.deterministic = deterministic;
  args.window = window;
  flash_bwd_host(args);
  return grads;
}

template FlashGradients<float> poisoned_gradients<float>(const Extents<3>&, const Extents<3>&);
template FlashGradients<bf16> poisoned_gradients<bf16>(const Extents<3>&, const Extents<3>&);
template FlashGradients<fp16> poisoned_gradients<fp16>(const Extents<3>&, const Extents<3>&);
template FlashGradients<float> flash_attention_backward_host<float>(
    TensorView<const float, 3>, TensorView<const float, 3>, TensorView<const float, 3>, TensorView<const float, 3>,
    TensorView<const float, 2>, TensorView<const float, 3>, bool, std::optional<float>, bool, Window);
template FlashGradients<bf16> flash_attention_backward_host<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                                  TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                                  TensorView<const float, 2>, TensorView<const bf16, 3>,
                                                                  bool, std::optional<float>, bool, Window);
template FlashGradients<fp16> flash_attention_backward_host<fp16>(TensorView<const fp16, 3>, TensorView<const fp16, 3>,
                                                                  TensorView<const fp16, 3>, TensorView<const fp16, 3>,
                                                                  TensorView<const float, 2>, TensorView<const fp16, 3>,
                                                                  bool, std::optional<float>, bool, Window);

}  // namespace fa2
