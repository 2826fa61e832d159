// Instantiations of the fast kernel for the later steps of the ablation and the tile sweep.
#include "step07_benchmark/kernels/fast/fa2_fast_launch.cuh"

namespace fa2::fast {

void v5_w4x2_split_wait(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 64, kSplitWait, 64, 128>(a, s);
}
void v5_w4x2_o_smem(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 64, kOViaSmem, 64>(a, s);
}
void v5_w4x2_pairs(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 64, kPairs, 64>(a, s);
}
void v5_w4x2_q_smem(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 64, kQInSmem, 64, 128>(a, s);
}

}  // namespace fa2::fast
