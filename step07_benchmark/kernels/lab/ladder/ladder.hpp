// Launchers of the ladder's variants 2 to 4 (ladder_kernel.hpp), on the host (the tests in CI)
// and on the GPU, with the signatures of step05's flash_fwd_host and flash_fwd_cuda. Their
// keys, names and head dims are in the variants table (kernels/lab/variants.cpp).
#pragma once

#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::ladder {

// The tile configuration the ladder climbs from: variant 1's choice (step07's APPENDIX.md, B.2).
inline constexpr int kQTile = 64, kKTile = 64, kWarps = 8;

void v2_host(const FlashFwdArgs& args);  // causal tile skipping
void v3_host(const FlashFwdArgs& args);  // + exp2
void v4_host(const FlashFwdArgs& args);  // + masks only where needed

void v2_cuda(const FlashFwdArgs& args, ::CUstream_st* stream);
void v3_cuda(const FlashFwdArgs& args, ::CUstream_st* stream);
void v4_cuda(const FlashFwdArgs& args, ::CUstream_st* stream);

}  // namespace fa2::ladder
