// The step05 kernel on the GPU: the same FlashFwdKernel body as the host path, launched by
// DeviceLauncher, plus the host-tensor convenience wrapper.
#include "common/cuda/device_buffer.hpp"
#include "step04_weighted_sum/launch_device.cuh"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step05_fa2_kernel/flash_fwd_kernel.hpp"

namespace fa2 {

void flash_fwd_cuda(const FlashFwdArgs& args, cudaStream_t stream) {
  launch_flash<step05::FlashFwdKernel, TileSizes<>>(args, DeviceLauncher{stream}, DTypes<float, bf16, fp16>{},
                                                    AllHeadDims{}, "the step05 kernel");
}

template <class T>
FlashOutputs<T> run_with_device_tensors(CudaLaunchFn launch, TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                        TensorView<const T, 3> V, bool causal, std::optional<float> scale,
                                        Window window) {
  // Each input keeps its layout (strides included) on the device.
  const auto upload = [](TensorView<const T, 3> x) {
    auto staged = Tensor<T, 3>::strided(x.shape(), x.strides());
    copy_convert<T, T, 3>(x, staged.view());
    return cuda::DeviceTensor<T, 3>(staged);
  };
  const auto dq = upload(Q), dk = upload(K), dv = upload(V);

  auto out = poisoned_outputs<T>(Q.shape());
  cuda::DeviceTensor<T, 3> dO(out.O);  // uploads the NaN poison too
  cuda::DeviceTensor<float, 2> dL(out.L);
  auto args = make_flash_args<T>(dq.view(), dk.view(), dv.view(), dO.view(), dL.view(), causal, scale);
  args.window = window;
  launch(args, nullptr);
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  dO.download_to(out.O);
  dL.download_to(out.L);
  return out;
}

template <class T>
FlashOutputs<T> flash_attention_cuda(TensorView<const T, 3> Q, TensorView<const T, 3> K, TensorView<const T, 3> V,
                                     bool causal, std::optional<float> scale) {
  return run_with_device_tensors<T>(&flash_fwd_cuda, Q, K, V, causal, scale);
}

template FlashOutputs<float> run_with_device_tensors<float>(CudaLaunchFn, TensorView<const float, 3>,
                                                            TensorView<const float, 3>, TensorView<const float, 3>,
                                                            bool, std::optional<float>, Window);
template FlashOutputs<bf16> run_with_device_tensors<bf16>(CudaLaunchFn, TensorView<const bf16, 3>,
                                                          TensorView<const bf16, 3>, TensorView<const bf16, 3>, bool,
                                                          std::optional<float>, Window);
template FlashOutputs<fp16> run_with_device_tensors<fp16>(CudaLaunchFn, TensorView<const fp16, 3>,
                                                          TensorView<const fp16, 3>, TensorView<const fp16, 3>, bool,
                                                          std::optional<float>, Window);
template FlashOutputs<float> flash_attention_cuda<float>(TensorView<const float, 3>, TensorView<const float, 3>,
                                                         TensorView<const float, 3>, bool, std::optional<float>);
template FlashOutputs<bf16> flash_attention_cuda<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                       TensorView<const bf16, 3>, bool, std::optional<float>);
template FlashOutputs<fp16> flash_attention_cuda<fp16>(TensorView<const fp16, 3>, TensorView<const fp16, 3>,
                                                       TensorView<const fp16, 3>, bool, std::optional<float>);

}  // namespace fa2
