// The step05 kernel on the host: the same FlashFwdKernel body the GPU runs, called once per
// program id by run_on_host (step04), with its shared memory checked for races.
#include <limits>

#include "step04_weighted_sum/launch.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step05_fa2_kernel/flash_fwd_kernel.hpp"

namespace fa2 {

void flash_fwd_host(const FlashFwdArgs& args) {
  launch_flash<step05::FlashFwdKernel, TileSizes<>>(args, HostLauncher{}, DTypes<float, bf16, fp16>{}, AllHeadDims{},
                                                    "the step05 kernel");
}

template <class T>
FlashOutputs<T> poisoned_outputs(const Extents<3>& q_shape) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {Tensor<T, 3>(q_shape, convert<T>(nan)), Tensor<float, 2>(Extents<2>{q_shape[0], q_shape[1]}, nan)};
}

template <class T>
FlashOutputs<T> run_with_host_tensors(HostLaunchFn launch, TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                      TensorView<const T, 3> V, bool causal, std::optional<float> scale,
                                      Window window) {
  auto out = poisoned_outputs<T>(Q.shape());
  auto args = make_flash_args<T>(Q, K, V, out.O.view(), out.L.view(), causal, scale);
  args.window = window;
  launch(args);
  return out;
}

template <class T>
FlashOutputs<T> flash_attention_host(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                     bool causal, std::optional<float> scale) {
  return run_with_host_tensors<T>(&flash_fwd_host, Q, K, V, causal, scale);
}

template FlashOutputs<float> poisoned_outputs<float>(const Extents<3>&);
template FlashOutputs<bf16> poisoned_outputs<bf16>(const Extents<3>&);
template FlashOutputs<fp16> poisoned_outputs<fp16>(const Extents<3>&);
template FlashOutputs<float> run_with_host_tensors<float>(HostLaunchFn, TensorView<const float, 3>,
                                                          TensorView<const float, 3>, TensorView<const float, 3>, bool,
                                                          std::optional<float>, Window);
template FlashOutputs<bf16> run_with_host_tensors<bf16>(HostLaunchFn, TensorView<const bf16, 3>,
                                                        TensorView<const bf16, 3>, TensorView<const bf16, 3>, bool,
                                                        std::optional<float>, Window);
template FlashOutputs<fp16> run_with_host_tensors<fp16>(HostLaunchFn, TensorView<const fp16, 3>,
                                                        TensorView<const fp16, 3>, TensorView<const fp16, 3>, bool,
                                                        std::optional<float>, Window);
template FlashOutputs<float> flash_attention_host<float>(TensorView<const float, 3>, TensorView<const float, 3>,
                                                         TensorView<const float, 3>, bool, std::optional<float>);
template FlashOutputs<bf16> flash_attention_host<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                       TensorView<const bf16, 3>, bool, std::optional<float>);
template FlashOutputs<fp16> flash_attention_host<fp16>(TensorView<const fp16, 3>, TensorView<const fp16, 3>,
                                                       TensorView<const fp16, 3>, bool, std::optional<float>);

}  // namespace fa2
