// Instantiations of the fast kernel: larger key tiles and the combined options.
#include "step07_benchmark/kernels/fast/fa2_fast_launch.cuh"

namespace fa2::fast {

void v5_bn128_q_smem(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 128, kQInSmem, 64>(a, s);
}
void v5_bn128_all(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 128, kAll, 64>(a, s);
}
void v5_w4x2_o_pairs(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 64, kOPairs, 64, 128>(a, s);
}
void v5_w4x2_all(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<2, 4, 64, kAll, 64, 128>(a, s);
}
void v5_w4_o_pairs(const FlashFwdArgs& a, cudaStream_t s) {
  launch_config<1, 4, 64, kOPairs, 64, 128>(a, s);
}

}  // namespace fa2::fast
