// The product library (fa2::flash_attention): the tuned FlashAttention-2 kernels as users call
// them, what the PyTorch operators and step07_bench link. Two kernel families, chosen per call:
// the sm80 path (mma.sync, cp.async: any GPU from sm_80 on) and the sm90 path (wgmma, TMA, warp
// specialisation: sm_90 GPUs, in a build with sm_90a code). bf16 or fp16; head dims 32, 64, 128
// on sm80, 64 and 128 on sm90. The arguments are common/attention_args.hpp's. No CUDA header
// needed: CUstream_st* is what cudaStream_t is.
//
//   fa2::flash::forward(args, stream);                     // checks, then runs; throws why it cannot
//   const auto plan = fa2::flash::plan_forward(args);      // or: check once, look, then run
//   if (!plan.runs()) report(plan.refused); else fa2::flash::run(plan, stream);
//
// Python's kernel="fast" is Path::best. The kernels' configurations are the rows of
// kernels/product/kernels.def, named after the chapter's step that introduced them ("v6.11").
#pragma once

#include <string>
#include <string_view>

#include "common/attention_args.hpp"
#include "step07_benchmark/kernels/device/packed_schedule.hpp"

struct CUstream_st;  // what CUDA's cudaStream_t points to

namespace fa2::flash {

// Which kernel family a plan may choose: the sm80 path, the sm90 path, or the sm90 path where it
// can run the arguments and the sm80 path elsewhere (the default: what users get).
enum class Path { sm80, sm90, best };

// A forward call checked once: the arguments, why they cannot run (empty when they can) and the
// kernel that runs them, so that running it checks nothing again.
struct ForwardPlan {
  FlashFwdArgs args;
  std::string refused;       // why these arguments cannot run; empty when they can
  std::string_view kernel;   // the configuration that runs them: its row of kernels.def ("v6.17")
  std::string sm90_refused;  // Path::best: why the sm90 path does not run them (empty when it does)
  void (*launch)(const ForwardPlan&, ::CUstream_st*) = nullptr;  // the kernel's launch
  bool runs() const { return refused.empty(); }
};

// Checks the arguments (validate(), then what the kernels take: bf16 or fp16, their head dims, a
// positive scale, 16-byte aligned rows; the sm90 path also an sm_90 GPU and a build with sm_90a code)
// and chooses the kernel. Never throws for arguments: what they lack is in `refused`.
ForwardPlan plan_forward(const FlashFwdArgs& args, Path path = Path::best);
// Launches the plan's kernel on `stream`; std::invalid_argument with plan.refused when it cannot.
void run(const ForwardPlan& plan, ::CUstream_st* stream = nullptr);

// The same for the backward (dQ, dK, dV from O, L and dO). A sliding window runs on the sm90
// backward where kernels.def picks one of its rows for windows, on the sm80 backward elsewhere.
// The plan also sizes the sm90 backward's optional
// workspace for few kv heads (FlashBwdArgs::dkv_partial): the caller allocates dkv_partial_floats
// floats and sets plan.args.dkv_partial before run(), or leaves it null (no split; same results).
struct BackwardPlan {
  FlashBwdArgs args;
  std::string refused;
  std::string_view kernel;
  std::string sm90_refused;  // Path::best: why the sm90 path does not run them (empty when it does)
  void (*launch)(const BackwardPlan&, ::CUstream_st*) = nullptr;
  int group_splits = 1;            // blocks per key tile a group of query heads is spread over
  index_t dkv_partial_floats = 0;  // the workspace that split needs; 0: none
  bool runs() const { return refused.empty(); }
};
BackwardPlan plan_backward(const FlashBwdArgs& args, Path path = Path::best);
void run(const BackwardPlan& plan, ::CUstream_st* stream = nullptr);

// One call each: plan on Path::best, then run (throws std::invalid_argument with the reason).
void forward(const FlashFwdArgs& args, ::CUstream_st* stream = nullptr);
void backward(const FlashBwdArgs& args, ::CUstream_st* stream = nullptr);

// Packed sequences of different lengths, forward only (FlashVarlenArgs): the decoding kernel of
// sm80/decode.cuh, made for a few queries per sequence (1 to 16) against long caches, packed or
// paged, on every GPU from sm_80 on (any number of queries runs, 16 query rows of a kv head per
// block). The plan checks the arguments and chooses how many parts each sequence's keys are cut
// into (args.num_splits, or the count that best fills the GPU's waves of blocks); with more than one the caller
// gives it partial_floats floats of device memory in plan.args.partial before run(). The index
// arrays are read on the GPU and trusted: cu_seq_q, cu_seq_k, seqused_k and block_table must
// describe rows inside q, k and v, with max_q and max_k at least every sequence's lengths
// (python/fa2_attention/varlen.py checks them before it calls).
struct VarlenPlan {
  FlashVarlenArgs args;
  std::string refused;
  int splits = 1;
  index_t partial_floats = 0;
  bool runs() const { return refused.empty(); }
};
VarlenPlan plan_varlen_forward(const FlashVarlenArgs& args);
void run(const VarlenPlan& plan, ::CUstream_st* stream = nullptr);

// Packed sequences of any lengths, forward only, on the sm90 path: v6's packed twin
// (device/packed_schedule.hpp), one launch over every sequence's query tiles, the longest first,
// reading the rows where they lie (ragged TMA views: a tile past its sequence's end loads zeros and
// stores nothing). Keys packed by cu_seq_k (the first seqused_k of them where given), no pages; head
// dims 64 and 128; the masks bottom-right as FlashVarlenArgs says. The plan needs the host copies of
// the index arrays (FlashVarlenArgs::cu_seq_q_host, ...), checks the lengths in them against the
// tensors, and builds the schedule; the caller gives schedule_bytes of device memory in
// plan.args.schedule before run(), which copies the schedule there on the stream.
struct PackedPlan {
  FlashVarlenArgs args;
  std::string refused;
  std::string_view kernel;  // the configuration of kernels.def whose packed twin runs ("v6.11")
  PackedMask mask = PackedMask::none;
  PackedSchedule schedule;
  index_t schedule_bytes = 0;
  bool runs() const { return refused.empty(); }
};
PackedPlan plan_packed_forward(const FlashVarlenArgs& args);
void run(const PackedPlan& plan, ::CUstream_st* stream = nullptr);

// Its backward (FlashVarlenBwdArgs): v6b's packed twin, one launch over every sequence's key tiles
// and kv heads (the most work first), between the row-wise preprocess and dQ conversion, which run
// on the packed rows as they lie. The same checks, plus the backward's tensors; keys packed, no
// seqused_k. The caller gives schedule_bytes of device memory in plan.args.schedule (and, for
// deterministic gradients, packed_dq_semaphore_count int32 in dq_semaphores) before run().
struct PackedBackwardPlan {
  FlashVarlenBwdArgs args;
  std::string refused;
  std::string_view kernel;  // the configuration of kernels.def whose packed twin runs ("v6b.8")
  PackedMask mask = PackedMask::none;
  PackedBackwardSchedule schedule;
  index_t schedule_bytes = 0;
  bool runs() const { return refused.empty(); }
};
PackedBackwardPlan plan_packed_backward(const FlashVarlenBwdArgs& args);
void run(const PackedBackwardPlan& plan, ::CUstream_st* stream = nullptr);

// Empty when this build and the current GPU can run the sm90 path (sm_90a code, an sm_90 device),
// else why not.
std::string sm90_unavailable();

// Grouped-query attention with few kv heads: the sm90 backward has one block per (K batch element,
// key tile of kBackwardKeyTile), each walking its group's query heads, and with few kv heads that
// leaves SMs idle (multi-query attention at B = 2, N = 4096: 64 blocks). Given the workspace it
// spreads each group over `backward_group_splits` blocks per key tile, the fewest parts (a divisor
// of the group) that make min_blocks blocks (the plan asks for two per SM of the current GPU), or
// the whole group one head per block; each block writes its float32 part of dK and dV, and a last
// kernel adds the parts in order (deterministic). 1: no split.
inline constexpr index_t kBackwardKeyTile = 128;  // the sm90 backward's keys per block (its BLOCK_N)
inline int backward_group_splits(const Extents<3>& q_shape, const Extents<3>& k_shape, long long min_blocks) {
  if (k_shape[0] <= 0 || q_shape[0] % k_shape[0] != 0) return 1;  // validate() refuses these
  const long long group = q_shape[0] / k_shape[0];
  const long long blocks = k_shape[0] * ((k_shape[1] + kBackwardKeyTile - 1) / kBackwardKeyTile);
  long long splits = 1;
  while (splits < group && blocks * splits < min_blocks) {
    do ++splits;
    while (group % splits != 0);
  }
  return static_cast<int>(splits);
}
// The floats of that workspace: dK's and dV's parts, (K batch x splits, N_k, D) each; 0 without a split.
inline index_t dkv_partial_count(const Extents<3>& k_shape, int splits) {
  return splits > 1 ? 2 * k_shape[0] * splits * k_shape[1] * k_shape[2] : 0;
}

}  // namespace fa2::flash
