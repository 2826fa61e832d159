// Launchers of variant 5, the register-resident mma.sync kernel (fa2_fast.cuh): the tuned
// configuration and every configuration of the ablation, with flash_fwd_cuda's signature
// (CudaLaunchFn). Their keys, names and head dims are in the variants table
// (kernels/variants.cpp). No CUDA header needed: CUstream_st* is what cudaStream_t is.
#pragma once

#include <string>

#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::fast {

// Empty when the fast kernel can run these arguments, otherwise why not (it takes bf16,
// head dims 32/64/128, a positive scale, and 16-byte aligned rows).
std::string unsupported_reason(const FlashFwdArgs& args);

// The tuned configuration: the one the benchmark calls "v5".
void flash_fwd_fast(const FlashFwdArgs& args, ::CUstream_st* stream = nullptr);

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

}  // namespace fa2::fast
