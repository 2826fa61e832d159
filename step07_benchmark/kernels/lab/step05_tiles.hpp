// Variant 1 of the benchmark: step05's kernel body, unchanged, compiled with larger tiles, the
// first thing the article's "What is wrong with this kernel" says to change. GPU launchers with
// flash_fwd_cuda's signature, for bf16 and head dims 64 and 128 (what the benchmark sweeps);
// their keys and names are in the variants table (variants.cpp).
#pragma once

#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::tiles {

void step05_32x32_w4(const FlashFwdArgs& args, ::CUstream_st* stream);
void step05_64x64_w8(const FlashFwdArgs& args, ::CUstream_st* stream);
void step05_128x64_w16(const FlashFwdArgs& args, ::CUstream_st* stream);

}  // namespace fa2::tiles
