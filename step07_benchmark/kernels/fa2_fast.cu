// The fast kernel's public launchers: argument checks, the tuned configuration, and the table
// of every configuration the benchmark sweeps (instantiated in fa2_fast_sweep_*.cu).
#include <cstdint>

#include "step07_benchmark/kernels/fa2_fast_launch.cuh"

namespace fa2::fast {

void v5_no_swizzle_one_stage(const FlashFwdArgs&, cudaStream_t);
void v5_one_stage(const FlashFwdArgs&, cudaStream_t);
void v5_w8_joint_wait(const FlashFwdArgs&, cudaStream_t);
void v5_w4x2_joint_wait(const FlashFwdArgs&, cudaStream_t);
void v5_w4x2_split_wait(const FlashFwdArgs&, cudaStream_t);
void v5_w4x2_o_smem(const FlashFwdArgs&, cudaStream_t);
void v5_w4x2_pairs(const FlashFwdArgs&, cudaStream_t);
void v5_w4x2_q_smem(const FlashFwdArgs&, cudaStream_t);
void v5_bn128_q_smem(const FlashFwdArgs&, cudaStream_t);
void v5_bn128_all(const FlashFwdArgs&, cudaStream_t);
void v5_w4x2_o_pairs(const FlashFwdArgs&, cudaStream_t);
void v5_w4x2_all(const FlashFwdArgs&, cudaStream_t);
void v5_w4_o_pairs(const FlashFwdArgs&, cudaStream_t);
void v5_w8_o_pairs(const FlashFwdArgs&, cudaStream_t);
void v5_w8_overlap(const FlashFwdArgs&, cudaStream_t);
void v5_w4x2_overlap(const FlashFwdArgs&, cudaStream_t);
void v5_w4_overlap(const FlashFwdArgs&, cudaStream_t);

namespace {
bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
}  // namespace

std::string unsupported_reason(const FlashFwdArgs& a) {
  if (a.dtype != DType::bfloat16) return "dtype: the fast kernel takes bfloat16 only";
  const index_t D = a.q_shape[2];
  if (D != 32 && D != 64 && D != 128) return "head_dim: the fast kernel takes 32, 64 or 128";
  if (!(softmax_scale(a) > 0.0f)) return "scale: the fast kernel needs a positive softmax scale";
  if (a.q_shape[1] >= (index_t{1} << 31) || a.k_shape[1] >= (index_t{1} << 31)) return "seq: lengths must be < 2^31";
  // cp.async moves 16-byte chunks: every row must start on a 16-byte boundary.
  for (const auto& [ptr, strides] : {std::pair{a.q, a.q_strides}, std::pair{a.k, a.k_strides},
                                     std::pair{a.v, a.v_strides}, std::pair<const void*, Extents<3>>{a.o, a.o_strides}}) {
    if (!aligned16(ptr) || strides[0] % 8 != 0 || strides[1] % 8 != 0) {
      return "layout: the fast kernel needs 16-byte aligned rows (base pointers and batch/row strides multiples of 8)";
    }
  }
  return {};
}

void flash_fwd_fast(const FlashFwdArgs& args, cudaStream_t stream) {
  // The configurations chosen from the sweep (step07's README, run of 2026-11-29 on the H200):
  //   head dim <= 64, not causal   v5.4: 128 rows in 4 warps of 32, Q in registers, one K/V wait
  //   head dim <= 64, causal       v5.11: the same + O through shared memory + paired query tiles
  //   head dim 128, not causal     v5.8: Q re-read from shared memory (O needs the registers)
  //   head dim 128, causal         v5.14: 8 warps of 16 rows, O through shared memory, pairs
  const bool wide = args.q_shape[2] == 128;
  if (!args.causal) {
    wide ? launch_config<2, 4, 64, kQInSmem, 128>(args, stream) : launch_config<2, 4, 64, kJointWait, 32, 64>(args, stream);
  } else {
    wide ? launch_config<1, 8, 64, kOPairs, 128>(args, stream) : launch_config<2, 4, 64, kOPairs, 32, 64>(args, stream);
  }
}

const std::vector<FastVariant>& fast_variants() {
  static const std::vector<FastVariant> variants = {
      {"v5.1 w8 1-stage unswizzled", "registers, mma.sync and ldmatrix; cp.async without prefetch; plain layout",
       &v5_no_swizzle_one_stage, {64}},
      {"v5.2 w8 1-stage", "v5.1 + XOR-swizzled shared memory (no bank conflicts)", &v5_one_stage, {64}},
      {"v5.3 w8 2-stage", "v5.2 + double-buffered K/V (tile j+1 loads during tile j)", &v5_w8_joint_wait, {64}},
      {"v5.4 w4x2", "v5.3 with 32 rows per warp: K/V fragments used twice per load", &v5_w4x2_joint_wait, {64, 128}},
      {"v5.5 w4x2 split-wait", "v5.4 + separate K and V waits: V lands while S computes", &v5_w4x2_split_wait, {64, 128}},
      {"v5.6 w4x2 O-smem", "v5.5 + O staged in shared memory, stored in 16-byte chunks", &v5_w4x2_o_smem, {64}},
      {"v5.7 w4x2 pairs", "v5.5 + causal blocks take query tiles i and n-1-i", &v5_w4x2_pairs, {64}},
      {"v5.8 w4x2 Q-smem", "v5.5 with Q re-read from shared memory (frees registers)", &v5_w4x2_q_smem, {64, 128}},
      {"v5.9 128x128 Q-smem", "v5.8 with 128-key tiles", &v5_bn128_q_smem, {64}},
      {"v5.10 128x128 all", "v5.9 + O-smem + pairs", &v5_bn128_all, {64}},
      {"v5.11 w4x2 O-smem+pairs", "v5.5 + O-smem + pairs", &v5_w4x2_o_pairs, {64, 128}},
      {"v5.12 w4x2 all", "v5.11 with Q re-read from shared memory", &v5_w4x2_all, {64, 128}},
      {"v5.13 w4 O-smem+pairs", "64-row blocks, 4 warps of 16 rows", &v5_w4_o_pairs, {64, 128}},
      {"v5.14 w8 O-smem+pairs", "v5.11 with 8 warps of 16 rows (16 warps per SM)", &v5_w8_o_pairs, {64, 128}},
      {"v5.15 w8 overlap", "v5.14 + S of tile j+1 computed during the softmax of tile j", &v5_w8_overlap, {64, 128}},
      {"v5.16 w4x2 overlap", "v5.12 + the overlap", &v5_w4x2_overlap, {64, 128}},
      {"v5.17 w4 overlap", "v5.13 + the overlap", &v5_w4_overlap, {64, 128}},
  };
  return variants;
}

}  // namespace fa2::fast
