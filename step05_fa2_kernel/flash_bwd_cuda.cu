// The step05 backward on the GPU: the same three bodies as the host path, launched by
// DeviceLauncher on one stream, plus the host-tensor convenience wrappers (for any backward
// launcher, and for this one).
//   ctest -L backward   (tests/test_flash_bwd_gpu.cu)
#include "common/cuda/device_buffer.hpp"
#include "step04_weighted_sum/launch_device.cuh"
#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/flash_bwd_dispatch.hpp"
#include "step05_fa2_kernel/flash_bwd_kernel.hpp"

namespace fa2 {

void flash_bwd_cuda(const FlashBwdArgs& args, cudaStream_t stream) {
  launch_flash_bwd<step05::FlashBwdPreprocess, step05::FlashBwdKernel, step05::FlashBwdConvertDQ, TileSizes<>>(
      args, DeviceLauncher{stream}, DTypes<float, bf16, fp16>{}, AllHeadDims{}, "the step05 backward");
}

template <class T>
FlashGradients<T> run_backward_with_device_tensors(CudaBwdLaunchFn launch, TensorView<const T, 3> Q,
                                                   TensorView<const T, 3> K, TensorView<const T, 3> V,
                                                   TensorView<const T, 3> O, TensorView<const float, 2> L,
                                                   TensorView<const T, 3> dO, bool causal, std::optional<float> scale,
                                                   bool deterministic, Window window) {
  // Each input keeps its layout (strides included) on the device.
  const auto upload = []<class E, int Rank>(TensorView<const E, Rank> x) {
    auto staged = Tensor<E, Rank>::strided(x.shape(), x.strides());
    copy_convert<E, E, Rank>(x, staged.view());
    return cuda::DeviceTensor<E, Rank>(staged);
  };
  const auto dev_Q = upload(Q), dev_K = upload(K), dev_V = upload(V), dev_O = upload(O), dev_dO = upload(dO);
  const auto dev_L = upload(L);

  auto grads = poisoned_gradients<T>(Q.shape(), K.shape());
  auto work = poisoned_workspace(Q.shape());  // uploaded as NaN: the preprocess must clear dQ_accum
  cuda::DeviceTensor<T, 3> dev_dQ(grads.dQ), dev_dK(grads.dK), dev_dV(grads.dV);
  cuda::DeviceTensor<float, 2> dev_D_rows(work.D_rows);
  cuda::DeviceTensor<float, 3> dev_dQ_accum(work.dQ_accum);
  // A large count: counters left uncleared would let every key tile add at once.
  cuda::DeviceTensor<std::int32_t, 1> dev_semaphores(
      Tensor<std::int32_t, 1>(Extents<1>{dq_semaphore_count(Q.shape())}, std::int32_t{1} << 30));
  auto args = make_flash_bwd_args<T>(dev_Q.view(), dev_K.view(), dev_V.view(), dev_O.view(), dev_L.view(),
                                     dev_dO.view(), dev_D_rows.view(), dev_dQ.view(), dev_dQ_accum.view(),
                                     dev_dK.view(), dev_dV.view(), causal, scale);
  args.window = window;
  if (deterministic) {
    args.deterministic = true;
    args.dq_semaphores = dev_semaphores.view().data();
  }
  launch(args, nullptr);
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  dev_dQ.download_to(grads.dQ);
  dev_dK.download_to(grads.dK);
  dev_dV.download_to(grads.dV);
  return grads;
}

template <class T>
FlashGradients<T> flash_attention_backward_cuda(TensorView<const T, 3> Q, TensorView<const T, 3> K,
                                                TensorView<const T, 3> V, TensorView<const T, 3> O,
                                                TensorView<const float, 2> L, TensorView<const T, 3> dO, bool causal,
                                                std::optional<float> scale, bool deterministic) {
  return run_backward_with_device_tensors<T>(&flash_bwd_cuda, Q, K, V, O, L, dO, causal, scale, deterministic);
}

template FlashGradients<float> run_backward_with_device_tensors<float>(
    CudaBwdLaunchFn, TensorView<const float, 3>, TensorView<const float, 3>, TensorView<const float, 3>,
    TensorView<const float, 3>, TensorView<const float, 2>, TensorView<const float, 3>, bool, std::optional<float>,
    bool, Window);
template FlashGradients<bf16> run_backward_with_device_tensors<bf16>(
    CudaBwdLaunchFn, TensorView<const bf16, 3>, TensorView<const bf16, 3>, TensorView<const bf16, 3>,
    TensorView<const bf16, 3>, TensorView<const float, 2>, TensorView<const bf16, 3>, bool, std::optional<float>, bool,
    Window);
template FlashGradients<fp16> run_backward_with_device_tensors<fp16>(
    CudaBwdLaunchFn, TensorView<const fp16, 3>, TensorView<const fp16, 3>, TensorView<const fp16, 3>,
    TensorView<const fp16, 3>, TensorView<const float, 2>, TensorView<const fp16, 3>, bool, std::optional<float>, bool,
    Window);
template FlashGradients<float> flash_attention_backward_cuda<float>(
    TensorView<const float, 3>, TensorView<const float, 3>, TensorView<const float, 3>, TensorView<const float, 3>,
    TensorView<const float, 2>, TensorView<const float, 3>, bool, std::optional<float>, bool);
template FlashGradients<bf16> flash_attention_backward_cuda<bf16>(TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                                  TensorView<const bf16, 3>, TensorView<const bf16, 3>,
                                                                  TensorView<const float, 2>, TensorView<const bf16, 3>,
                                                                  bool, std::optional<float>, bool);
template FlashGradients<fp16> flash_attention_backward_cuda<fp16>(TensorView<const fp16, 3>, TensorView<const fp16, 3>,
                                                                  TensorView<const fp16, 3>, TensorView<const fp16, 3>,
                                                                  TensorView<const float, 2>, TensorView<const fp16, 3>,
                                                                  bool, std::optional<float>, bool);

}  // namespace fa2
