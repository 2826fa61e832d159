// The variants table (variants.hpp). One row per kernel; what exists only in a build with CUDA (a
// row's GPU launchers, the fast kernel's argument check) is there only then (FA2_VARIANTS_WITH_CUDA,
// set by step07's CMakeLists.txt).
#include "step07_benchmark/kernels/variants.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "step07_benchmark/kernels/fast/fa2_fast.hpp"
#include "step07_benchmark/kernels/ladder/ladder.hpp"
#include "step07_benchmark/kernels/step05_tiles.hpp"

#if FA2_VARIANTS_WITH_CUDA
#include "step05_fa2_kernel/flash_bwd_cuda.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#define FA2_GPU_ONLY(fn) (fn)
#else
#define FA2_GPU_ONLY(fn) nullptr
#endif

namespace fa2::variants {

bool KernelVariant::builds(DType dtype, int head_dim) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end() &&
         std::find(head_dims.begin(), head_dims.end(), head_dim) != head_dims.end();
}

namespace {

// A row of the fast backward's sweep: GPU only, bf16, no forward of its own.
KernelVariant bwd_row(std::string key, std::string label, std::string adds, std::vector<int> head_dims,
                      CudaBwdLaunchFn backward) {
  KernelVariant v{std::move(key), std::move(label), std::move(adds), "fast", std::move(head_dims), {DType::bfloat16}};
  v.cuda_backward = backward;
  v.passes = "backward";
  return v;
}

}  // namespace

const std::vector<KernelVariant>& kernel_variants() {
  using enum DType;
  const std::vector<int> all = {16, 32, 64, 128}, d64 = {64}, d64_128 = {64, 128};
  static const std::vector<KernelVariant> table = {
      {kStep05Key,
       "step05 kernel",
       "the article's design: 16 x 16 tiles, 4 warps, WMMA through shared memory",
       "ours",
       all,
       {float32, bfloat16},
       &flash_fwd_host,
       FA2_GPU_ONLY(&flash_fwd_cuda),
       nullptr,
       &flash_bwd_host,
       FA2_GPU_ONLY(&flash_bwd_cuda),
       "forward, backward"},
      {"ours32x32",
       "32 x 32 tiles",
       "step05's kernel with 32 x 32 tiles, 4 warps",
       "ours",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&tiles::step05_32x32_w4)},
      {"ours64x64",
       "64 x 64 tiles",
       "step05's kernel with 64 x 64 tiles, 8 warps (variant 1)",
       "ours",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&tiles::step05_64x64_w8)},
      {"ours128x64",
       "128 x 64 tiles",
       "step05's kernel with 128 x 64 tiles, 16 warps",
       "ours",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&tiles::step05_128x64_w16)},
      {"v2",
       "causal skip",
       "the key loop stops at the diagonal",
       "ladder",
       all,
       {float32, bfloat16},
       &ladder::v2_host,
       FA2_GPU_ONLY(&ladder::v2_cuda)},
      {"v3",
       "exp2",
       "v2 + scale * log2(e) folded into the scores, 2^x instead of e^x",
       "ladder",
       all,
       {float32, bfloat16},
       &ladder::v3_host,
       FA2_GPU_ONLY(&ladder::v3_cuda)},
      {"v4",
       "masks where needed",
       "v3 + the mask only on the padded last tile and the diagonal tiles",
       "ladder",
       all,
       {float32, bfloat16},
       &ladder::v4_host,
       FA2_GPU_ONLY(&ladder::v4_cuda)},
      {"v5.1",
       "w8 1-stage unswizzled",
       "registers, mma.sync and ldmatrix; cp.async without prefetch; plain layout",
       "fast",
       d64,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_no_swizzle_one_stage),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.2",
       "w8 1-stage",
       "v5.1 + XOR-swizzled shared memory (no bank conflicts)",
       "fast",
       d64,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_one_stage),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.3",
       "w8 2-stage",
       "v5.2 + double-buffered K/V (tile j+1 loads during tile j)",
       "fast",
       d64,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w8_joint_wait),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.4",
       "w4x2",
       "v5.3 with 32 rows per warp: K/V fragments used twice per load",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4x2_joint_wait),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.5",
       "w4x2 split-wait",
       "v5.4 + separate K and V waits: V lands while S computes",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4x2_split_wait),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.6",
       "w4x2 O-smem",
       "v5.5 + O staged in shared memory, stored in 16-byte chunks",
       "fast",
       d64,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4x2_o_smem),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.7",
       "w4x2 pairs",
       "v5.5 + causal blocks take query tiles i and n-1-i",
       "fast",
       d64,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4x2_pairs),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.8",
       "w4x2 Q-smem",
       "v5.5 with Q re-read from shared memory (frees registers)",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4x2_q_smem),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.9",
       "128x128 Q-smem",
       "v5.8 with 128-key tiles",
       "fast",
       d64,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_bn128_q_smem),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.10",
       "128x128 all",
       "v5.9 + O-smem + pairs",
       "fast",
       d64,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_bn128_all),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.11",
       "w4x2 O-smem+pairs",
       "v5.5 + O-smem + pairs",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4x2_o_pairs),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.12",
       "w4x2 all",
       "v5.11 with Q re-read from shared memory",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4x2_all),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.13",
       "w4 O-smem+pairs",
       "64-row blocks, 4 warps of 16 rows",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4_o_pairs),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.14",
       "w8 O-smem+pairs",
       "v5.11 with 8 warps of 16 rows (16 warps per SM)",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w8_o_pairs),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.15",
       "w8 overlap",
       "v5.14 + S of tile j+1 computed during the softmax of tile j",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w8_overlap),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.16",
       "w4x2 overlap",
       "v5.12 + the overlap",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4x2_overlap),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      {"v5.17",
       "w4 overlap",
       "v5.13 + the overlap",
       "fast",
       d64_128,
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::v5_w4_overlap),
       FA2_GPU_ONLY(&fast::unsupported_reason)},
      // The backward's sweep: backward-only rows (no forward launcher), v5's backward in turn.
      bwd_row("v5b.1", "bwd m64 KV-regs", "64 queries per step, K/V fragments in registers", {32, 64},
              FA2_GPU_ONLY(&fast::v5_bwd_m64_regs)),
      bwd_row("v5b.2", "bwd m64", "v5b.1 with K/V re-read from shared memory (frees registers)", d64_128,
              FA2_GPU_ONLY(&fast::v5_bwd_m64_smem)),
      bwd_row("v5b.3", "bwd m128", "v5b.2 with 128 queries per step", d64, FA2_GPU_ONLY(&fast::v5_bwd_m128_smem)),
      bwd_row("v5b.4", "bwd m32 KV-regs", "v5b.1 with 32 queries per step", d64_128,
              FA2_GPU_ONLY(&fast::v5_bwd_m32_regs)),
      bwd_row("v5b.5", "bwd m32", "v5b.2 with 32 queries per step", d64_128, FA2_GPU_ONLY(&fast::v5_bwd_m32_smem)),
      bwd_row("v5b.6", "bwd m64 KV-regs deferred", "v5b.1 + dQ's share one step later: one barrier per step", d64,
              FA2_GPU_ONLY(&fast::v5_bwd_m64_regs_deferred)),
      bwd_row("v5b.7", "bwd m64 deferred", "v5b.2 + the deferred dQ", d64_128,
              FA2_GPU_ONLY(&fast::v5_bwd_m64_deferred)),
      bwd_row("v5b.8", "bwd m32 deferred", "v5b.5 + the deferred dQ", d64_128,
              FA2_GPU_ONLY(&fast::v5_bwd_m32_deferred)),
      bwd_row("v5b.9", "bwd w4 m64 KV-regs deferred", "v5b.6 in blocks of 4 warps, 64 keys: two blocks per SM", d64,
              FA2_GPU_ONLY(&fast::v5_bwd_w4_m64_regs_deferred)),
      bwd_row("v5b.10", "bwd w4 m32 deferred", "v5b.8 in blocks of 4 warps: two blocks per SM", d64_128,
              FA2_GPU_ONLY(&fast::v5_bwd_w4_m32_deferred)),
      bwd_row("v5b.11", "bwd w4 32-key warps m32",
              "v5b.8 in 4 warps of 32 keys each: each Q/dO fragment feeds two tiles", {32, 64},
              FA2_GPU_ONLY(&fast::v5_bwd_w4_k2_m32_deferred)),
      bwd_row("v5b.12", "bwd w4 32-key warps m64", "v5b.11 with 64 queries per step", d64,
              FA2_GPU_ONLY(&fast::v5_bwd_w4_k2_m64_deferred)),
      bwd_row("v5b.13", "bwd w8 32-key warps m32", "v5b.11 with 8 warps: 256 keys per block, one block per SM", d64,
              FA2_GPU_ONLY(&fast::v5_bwd_k2_m32_deferred)),
      {"v5",
       "tuned",
       "the configuration chosen per head dim and causal flag from the sweep (forward and backward)",
       "fast",
       {32, 64, 128},
       {bfloat16},
       nullptr,
       FA2_GPU_ONLY(&fast::flash_fwd_fast),
       FA2_GPU_ONLY(&fast::unsupported_reason),
       nullptr,
       FA2_GPU_ONLY(&fast::flash_bwd_fast),
       "forward, backward"},
  };
  return table;
}

const KernelVariant& kernel_variant(std::string_view key) {
  const auto& table = kernel_variants();
  const auto it = std::find_if(table.begin(), table.end(), [&](const KernelVariant& v) { return v.key == key; });
  if (it != table.end()) return *it;
  std::string keys;
  for (const auto& v : table) keys += (keys.empty() ? "" : ", ") + v.key;
  throw std::invalid_argument("variant: no kernel has the key '" + std::string(key) + "'; the keys are " + keys);
}

std::string variants_markdown() {
  std::string out =
      "| key | name | what it adds | head dims | dtypes | runs on | passes |\n|---|---|---|---|---|---|---|\n";
  for (const auto& v : kernel_variants()) {
    std::string dims, dtypes;
    for (int d : v.head_dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    for (DType t : v.dtypes) dtypes += (dtypes.empty() ? "" : ", ") + to_string(t);
    out += "| `" + v.key + "` | " + v.label + " | " + v.adds + " | " + dims + " | " + dtypes + " | " +
           (v.host != nullptr ? "host, GPU" : "GPU") + " | " + v.passes + " |\n";
  }
  return out;
}

}  // namespace fa2::variants
