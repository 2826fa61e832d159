// Our kernels as benchmark entries: the step05 kernel exactly as step05 builds it (16x16 tiles,
// 4 warps) and the same kernel body compiled with larger tiles, the first thing the article's
// "What is wrong with this kernel" says to change.
#pragma once

#include <vector>

#include "step07_benchmark/implementation.hpp"

namespace fa2::bench {

// The key of the step05 kernel, which is also the reference every other output is compared to.
inline constexpr const char* kReferenceKey = "ours16";

// ours16 (step05), then the tile variants: ours32x32, ours64x64, ours128x64.
std::vector<Implementation> our_implementations();

// The tile variants' launchers (bf16, head dims 64 and 128 only: what the benchmark sweeps).
void flash_fwd_tiles_32x32_w4(const FlashFwdArgs& args, cudaStream_t stream);
void flash_fwd_tiles_64x64_w8(const FlashFwdArgs& args, cudaStream_t stream);
void flash_fwd_tiles_128x64_w16(const FlashFwdArgs& args, cudaStream_t stream);

}  // namespace fa2::bench
