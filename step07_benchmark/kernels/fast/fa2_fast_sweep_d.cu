// Instantiations of the fast kernel: the overlapped loop (S of tile j+1 during the softmax of
// tile j), and 8-warp blocks of 16-row warps with the other options.
#include "step07_benchmark/kernels/fast/fa2_fast_launch.cuh"

namespace fa2::fast {

void v5_w8_o_pairs(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<1, 8, 64, kOPairs, 64, 128>(a, s);
}
void v5_w8_overlap(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<1, 8, 64, kOPairsOverlap, 64, 128>(a, s);
}
void v5_w4x2_overlap(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 64, kAllOverlap, 64, 128>(a, s);
}
void v5_w4_overlap(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<1, 4, 64, kOPairsOverlap, 64, 128>(a, s);
}

}  // namespace fa2::fast
