// The fast FlashAttention-2 kernels as users call them (the product library fa2::flash_attention,
// what the PyTorch operators and step07_bench link): v5's tuned forward (mma.sync, any sm_80 GPU),
// v6's tuned forward (wgmma, TMA, warp specialisation: sm_90), "fast" (v6 where it runs, v5
// elsewhere), v5's tuned backward, v6b's (wgmma: sm_90) and the "fast" backward (v6b where it
// runs, v5's elsewhere). bf16 or fp16, head dims 32, 64, 128 (v6, v6b: 64, 128). No CUDA header needed:
// CUstream_st* is what cudaStream_t is.
//
//   fa2::fast::flash_fwd_best(args, stream);              // checks, then runs; throws why it cannot
//   const auto plan = fa2::fast::plan_forward(args);      // or: check once, look, then run
//   if (!plan.runs()) report(plan.refused); else fa2::fast::run(plan, stream);
#pragma once

#include <string>
#include <string_view>

#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"

namespace fa2::fast {

// Which forward a plan runs: v5, v6, or the better of the two that can run the arguments.
enum class Forward { v5, v6, best };

// A forward call checked once: the arguments, why they cannot run (empty when they can) and the
// kernel that runs them, so that running it checks nothing again.
struct ForwardPlan {
  FlashFwdArgs args;
  std::string refused;      // why these arguments cannot run; empty when they can
  std::string_view kernel;  // the configuration that runs them: its row of the variants table ("v6.17")
  std::string v6_refused;   // Forward::best: why v6 does not run them (empty when it does)
  void (*launch)(const ForwardPlan&, ::CUstream_st*) = nullptr;  // the kernel's launch
  bool runs() const { return refused.empty(); }
};

// Checks the arguments (validate(), then what the kernel takes: bf16 or fp16, its head dims, a positive
// scale, 16-byte aligned rows; v6 also an sm_90 GPU and a build with sm_90a code) and chooses the
// kernel. Never throws for arguments: what they lack is in `refused`.
ForwardPlan plan_forward(const FlashFwdArgs& args, Forward which = Forward::best);
// Launches the plan's kernel on `stream`; std::invalid_argument with plan.refused when it cannot.
void run(const ForwardPlan& plan, ::CUstream_st* stream = nullptr);

// Which backward a plan runs: v5's (mma.sync, any sm_80 GPU), v6b (wgmma: sm_90), or v6b where
// it can run the arguments and v5's elsewhere.
enum class Backward { v5, v6b, best };

// The same for the backward (dQ, dK, dV from O, L and dO; D_rows and dQ_accum are workspaces).
struct BackwardPlan {
  FlashBwdArgs args;
  std::string refused;
  std::string_view kernel;
  std::string v6b_refused;  // Backward::best: why v6b does not run them (empty when it does)
  void (*launch)(const BackwardPlan&, ::CUstream_st*) = nullptr;
  bool runs() const { return refused.empty(); }
};
BackwardPlan plan_backward(const FlashBwdArgs& args, Backward which = Backward::best);
void run(const BackwardPlan& plan, ::CUstream_st* stream = nullptr);

// Grouped-query attention with few kv heads: v6b's grid has one block per (K batch element, key tile of
// 128), each walking its group's query heads, and with few kv heads that leaves SMs idle (multi-query
// attention at B = 2, N = 4096: 64 blocks). Given FlashBwdArgs::dkv_partial, v6b spreads each group
// over `backward_group_splits` blocks per key tile, the fewest parts (a divisor of the group) that make
// kMinBackwardBlocks blocks, or the whole group one head per block; each block writes its float32 part
// of dK and dV, and a last kernel adds the parts in order (deterministic). 1: no split.
inline constexpr long long kMinBackwardBlocks = 264;  // two for each SM of an H100 or H200
inline constexpr index_t kBackwardKeyTile = 128;      // v6b's keys per block (its BLOCK_N)
inline int backward_group_splits(const Extents<3>& q_shape, const Extents<3>& k_shape) {
  if (k_shape[0] <= 0 || q_shape[0] % k_shape[0] != 0) return 1;  // validate() refuses these
  const long long group = q_shape[0] / k_shape[0];
  const long long blocks = k_shape[0] * ((k_shape[1] + kBackwardKeyTile - 1) / kBackwardKeyTile);
  long long splits = 1;
  while (splits < group && blocks * splits < kMinBackwardBlocks) {
    do ++splits;
    while (group % splits != 0);
  }
  return static_cast<int>(splits);
}
// The floats FlashBwdArgs::dkv_partial needs for these shapes: dK's and dV's parts, (K batch x
// splits, N_k, D) each; 0 where v6b would not split.
inline index_t dkv_partial_count(const Extents<3>& q_shape, const Extents<3>& k_shape) {
  const int splits = backward_group_splits(q_shape, k_shape);
  return splits > 1 ? 2 * k_shape[0] * splits * k_shape[1] * k_shape[2] : 0;
}

// One call each: plan, then run (throws std::invalid_argument with the reason when refused).
void flash_fwd_fast(const FlashFwdArgs& args, ::CUstream_st* stream = nullptr);    // v5, tuned
void flash_fwd_hopper(const FlashFwdArgs& args, ::CUstream_st* stream = nullptr);  // v6, tuned
void flash_fwd_best(const FlashFwdArgs& args, ::CUstream_st* stream = nullptr);    // "fast"
void flash_bwd_v5(const FlashBwdArgs& args, ::CUstream_st* stream = nullptr);      // v5's, tuned
void flash_bwd_hopper(const FlashBwdArgs& args, ::CUstream_st* stream = nullptr);  // v6b, tuned
void flash_bwd_fast(const FlashBwdArgs& args, ::CUstream_st* stream = nullptr);    // "fast"

// Why not, as plan_forward/plan_backward say it (empty: it runs): v5's conditions, which are
// "fast"'s; v6's; the backward's (the forward's, and dO, dQ, dK, dV, dQ_accum 16-byte aligned),
// which are the "fast" backward's (best_backward says whether v6b runs them).
std::string unsupported_reason(const FlashFwdArgs& args);
std::string hopper_unsupported_reason(const FlashFwdArgs& args);
std::string unsupported_reason(const FlashBwdArgs& args);
// Empty when this build and the current GPU can run v6 (sm_90a code, an sm_90 device), else why.
std::string hopper_unavailable();
// Which forward "fast" runs for these arguments: "v6", or "v5 (<why not v6>)".
std::string best_forward(const FlashFwdArgs& args);
// Which backward "fast" runs: "v6b", or "v5 (<why not v6b>)".
std::string best_backward(const FlashBwdArgs& args);

}  // namespace fa2::fast
