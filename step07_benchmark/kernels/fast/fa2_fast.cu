// The fast kernel's argument checks and its tuned configuration. The other configurations of the
// ablation are instantiated in fa2_fast_sweep_*.cu and listed in kernels/variants.cpp.
#include "step07_benchmark/kernels/fast/fa2_fast.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast_launch.cuh"

namespace fa2::fast {

std::string unsupported_reason(const FlashFwdArgs& a) {
  if (a.dtype != DType::bfloat16) return "dtype: the fast kernel takes bfloat16 only";
  const index_t D = a.q_shape[2];
  if (D != 32 && D != 64 && D != 128) return "head_dim: the fast kernel takes 32, 64 or 128";
  if (!(softmax_scale(a) > 0.0f)) return "scale: the fast kernel needs a positive softmax scale";
  if (a.q_shape[1] >= (index_t{1} << 31) || a.k_shape[1] >= (index_t{1} << 31)) return "seq: lengths must be < 2^31";
  // cp.async moves 16-byte chunks: every row must start on a 16-byte boundary.
  for (const auto& [ptr, strides] :
       {std::pair{a.q, a.q_strides}, std::pair{a.k, a.k_strides}, std::pair{a.v, a.v_strides},
        std::pair<const void*, Extents<3>>{a.o, a.o_strides}}) {
    if (!rows_16_byte_aligned(ptr, strides, 2)) {
      return "layout: the fast kernel needs 16-byte aligned rows (base pointers and batch/row strides multiples of 8)";
    }
  }
  return {};
}

void flash_fwd_fast(const FlashFwdArgs& args, cudaStream_t stream) {
  // The configurations chosen from the sweep (step07's README, run of 2026-11-29 on the H200;
  // the keys are those of kernels/variants.cpp):
  //   head dim <= 64, not causal   v5.4: 128 rows in 4 warps of 32, Q in registers, one K/V wait
  //   head dim <= 64, causal       v5.11: the same + O through shared memory + paired query tiles
  //   head dim 128, not causal     v5.8: Q re-read from shared memory (O needs the registers)
  //   head dim 128, causal         v5.14: 8 warps of 16 rows, O through shared memory, pairs
  const bool wide = args.q_shape[2] == 128;
  if (!args.causal) {
    wide ? launch_config<2, 4, 64, kQInSmem, 128>(args, stream)
         : launch_config<2, 4, 64, kJointWait, 32, 64>(args, stream);
  } else {
    wide ? launch_config<1, 8, 64, kOPairs, 128>(args, stream) : launch_config<2, 4, 64, kOPairs, 32, 64>(args, stream);
  }
}

std::string best_forward(const FlashFwdArgs& args) {
  const std::string why_not_v6 = hopper_unsupported_reason(args);
  return why_not_v6.empty() ? "v6" : "v5 (" + why_not_v6 + ")";
}

void flash_fwd_best(const FlashFwdArgs& args, cudaStream_t stream) {
  hopper_unsupported_reason(args).empty() ? flash_fwd_hopper(args, stream) : flash_fwd_fast(args, stream);
}

}  // namespace fa2::fast
