// v6b's launches (hopper/backward.cuh), compiled for sm_90a alone into the product: the row
// phases of v5's backward around the wgmma key-tile kernel, one launch per head dim and mask.
// The plan that picks them is fa2_fast_bwd.cu's.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/numeric.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast_launch.cuh"  // make_fast_bwd_params, opt_in_shared_memory
#include "step07_benchmark/kernels/fast/hopper/backward.cuh"
#include "step07_benchmark/kernels/fast/launch_plan.hpp"

namespace fa2::fast {
namespace {

template <class Cfg>
void launch_hopper_bwd(const BackwardPlan& plan, cudaStream_t stream) {
  const FlashBwdArgs& a = plan.args;
  const index_t key_blocks = cdiv<index_t>(a.k_shape[1], Cfg::BLOCK_N);  // at most 65535: the plan checked it
  const FastBwdParams p = make_fast_bwd_params(a);
  const auto batch = static_cast<unsigned>(a.q_shape[0]);
  const auto row_blocks = static_cast<unsigned>(cdiv<index_t>(a.q_shape[1] * Cfg::CHUNKS, 256));
  fast_bwd_preprocess<Cfg::D><<<dim3(row_blocks, batch), 256, 0, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();

  static std::atomic<std::uint64_t> opted_in{0};
  opt_in_shared_memory(hopper_bwd_kernel<Cfg>, Cfg::smem_bytes, current_device(), opted_in, plan.kernel);
  hopper_bwd_kernel<Cfg>
      <<<dim3(batch, static_cast<unsigned>(key_blocks)), Cfg::NUM_THREADS, Cfg::smem_bytes, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();

  fast_bwd_convert_dq<Cfg::D><<<dim3(row_blocks, batch), 256, 0, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();
}

}  // namespace

BackwardLaunch hopper_backward_launch(long long head_dim, bool causal) {
  if (head_dim == 64) return causal ? &launch_hopper_bwd<HopperBwdConfig<64, true>> : &launch_hopper_bwd<HopperBwdConfig<64, false>>;
  if (head_dim == 128) return causal ? &launch_hopper_bwd<HopperBwdConfig<128, true>> : &launch_hopper_bwd<HopperBwdConfig<128, false>>;
  return nullptr;
}

}  // namespace fa2::fast
