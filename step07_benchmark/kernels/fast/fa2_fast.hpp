// Launchers of variant 5, the register-resident mma.sync kernel (fa2_fast.cuh, and its backward
// fa2_fast_bwd.cuh): the tuned configurations and every configuration of the ablations, with
// flash_fwd_cuda's signature (CudaLaunchFn) and flash_bwd_cuda's (CudaBwdLaunchFn). Their keys,
// names and head dims are in the variants table (kernels/variants.cpp). No CUDA header needed: CUstream_st* is what
// cudaStream_t is.
#pragma once

#include <cstdint>
#include <string>

#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::fast {

// Whether every row of a (batch, N, D) tensor of `element_bytes`-byte elements starts on a 16-byte
// boundary: the base pointer 16-byte aligned, the batch and row strides whole 16-byte chunks. The
// fast kernels move rows in 16-byte chunks (cp.async, TMA, float4), so each checks its tensors so.
inline bool rows_16_byte_aligned(const void* data, const Extents<3>& strides, index_t element_bytes) {
  const index_t per_chunk = 16 / element_bytes;
  return reinterpret_cast<std::uintptr_t>(data) % 16 == 0 && strides[0] % per_chunk == 0 && strides[1] % per_chunk == 0;
}

// Empty when the fast kernel can run these arguments, otherwise why not (it takes bf16,
// head dims 32/64/128, a positive scale, and 16-byte aligned rows).
std::string unsupported_reason(const FlashFwdArgs& args);

// The tuned configuration: the one the benchmark calls "v5".
void flash_fwd_fast(const FlashFwdArgs& args, ::CUstream_st* stream = nullptr);

// The fast forward as users get it (the benchmark's and the PyTorch entry point's "fast"): v6
// where it can run these arguments (hopper_unsupported_reason empty: an sm_90 GPU, a build with
// sm_90a code, head dim 64 or 128), v5 otherwise. It takes what v5 takes.
void flash_fwd_best(const FlashFwdArgs& args, ::CUstream_st* stream = nullptr);
// Which of the two flash_fwd_best runs for these arguments and why: "v6", or "v5 (v6: <reason>)".
std::string best_forward(const FlashFwdArgs& args);

// The ablation, one launcher per configuration (fa2_fast_sweep_*.cu).
void v5_no_swizzle_one_stage(const FlashFwdArgs&, ::CUstream_st*);
void v5_one_stage(const FlashFwdArgs&, ::CUstream_st*);
void v5_w8_joint_wait(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4x2_joint_wait(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4x2_split_wait(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4x2_o_smem(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4x2_pairs(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4x2_q_smem(const FlashFwdArgs&, ::CUstream_st*);
void v5_bn128_q_smem(const FlashFwdArgs&, ::CUstream_st*);
void v5_bn128_all(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4x2_o_pairs(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4x2_all(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4_o_pairs(const FlashFwdArgs&, ::CUstream_st*);
void v5_w8_o_pairs(const FlashFwdArgs&, ::CUstream_st*);
void v5_w8_overlap(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4x2_overlap(const FlashFwdArgs&, ::CUstream_st*);
void v5_w4_overlap(const FlashFwdArgs&, ::CUstream_st*);

// Variant 6 (fa2_hopper.cuh): v5's forward on Hopper's wgmma, sm_90 only. Empty when this build
// and this GPU can run it (sm_90a code, an sm_90 device), otherwise why not.
std::string hopper_unavailable();
// Empty when v6 can run these arguments: the fast kernel's conditions, head dim 64 or 128, grid
// limits, and hopper_unavailable().
std::string hopper_unsupported_reason(const FlashFwdArgs& args);
// The tuned choice among them, by head dim and amount of work: the benchmark's "v6".
void flash_fwd_hopper(const FlashFwdArgs& args, ::CUstream_st* stream = nullptr);
// Its configurations (kernels/variants.cpp says what each adds): v6.1 to v6.14.
void v6_lockstep(const FlashFwdArgs&, ::CUstream_st*);
void v6_overlap(const FlashFwdArgs&, ::CUstream_st*);
void v6_overlap_bn64(const FlashFwdArgs&, ::CUstream_st*);
void v6_overlap_wg3(const FlashFwdArgs&, ::CUstream_st*);
void v6_overlap_wg3_bn64(const FlashFwdArgs&, ::CUstream_st*);
void v6_tma(const FlashFwdArgs&, ::CUstream_st*);
void v6_tma_bn64(const FlashFwdArgs&, ::CUstream_st*);
void v6_tma_wg3(const FlashFwdArgs&, ::CUstream_st*);
void v6_tma_pingpong(const FlashFwdArgs&, ::CUstream_st*);
void v6_store_tma(const FlashFwdArgs&, ::CUstream_st*);
void v6_persistent(const FlashFwdArgs&, ::CUstream_st*);
void v6_persistent_wg3(const FlashFwdArgs&, ::CUstream_st*);
void v6_persistent_lazy(const FlashFwdArgs&, ::CUstream_st*);
void v6_persistent_bn176(const FlashFwdArgs&, ::CUstream_st*);
void v6_persistent_fma_exp(const FlashFwdArgs&, ::CUstream_st*);
void v6_persistent_wg3_fma_exp(const FlashFwdArgs&, ::CUstream_st*);
void v6_persistent_early_q(const FlashFwdArgs&, ::CUstream_st*);

// The fast backward (fa2_fast_bwd.cuh), flash_bwd_cuda's signature (CudaBwdLaunchFn). Empty when
// it can run these arguments, otherwise why not: the forward's conditions, and dO, dQ, dK, dV
// and dQ_accum with 16-byte aligned rows.
std::string unsupported_reason(const FlashBwdArgs& args);
// The tuned configuration, v5's backward.
void flash_bwd_fast(const FlashBwdArgs& args, ::CUstream_st* stream = nullptr);
// The backward's sweep: queries per step (32, 64, 128), K/V fragments in registers or re-read
// from shared memory, dQ's share computed after a barrier or deferred to the next step, blocks of
// 8 warps or two blocks of 4 per SM, 16 or 32 keys per warp.
void v5_bwd_m64_regs(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_m64_smem(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_m128_smem(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_m32_regs(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_m32_smem(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_m64_regs_deferred(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_m64_deferred(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_m32_deferred(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_w4_m64_regs_deferred(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_w4_m32_deferred(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_w4_k2_m32_deferred(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_w4_k2_m64_deferred(const FlashBwdArgs&, ::CUstream_st*);
void v5_bwd_k2_m32_deferred(const FlashBwdArgs&, ::CUstream_st*);

}  // namespace fa2::fast
