// Instantiations of the fast kernel for the ablation's first steps (head dim 64 only: that is
// what the benchmark's ladder compares). Split from fa2_fast.cu so they compile in parallel.
#include "step07_benchmark/kernels/fast/fa2_fast_launch.cuh"

namespace fa2::fast {

void v5_no_swizzle_one_stage(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<1, 8, 64, kNoSwizzleOneStage, 64>(a, s);
}
void v5_one_stage(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<1, 8, 64, kOneStage, 64>(a, s);
}
void v5_w8_joint_wait(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<1, 8, 64, kJointWait, 64>(a, s);
}
void v5_w4x2_joint_wait(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 64, kJointWait, 64, 128>(a, s);
}

}  // namespace fa2::fast
