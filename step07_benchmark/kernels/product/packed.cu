// The sm90 path's packed forward and backward (flash_attention.hpp's plan_packed_forward and
// plan_packed_backward): their argument checks, which mask their kernels apply, the schedules built
// from the sequences' lengths, and the runs that copy a schedule to the GPU and launch
// (product/packed_sm90.cu).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

#include "common/cuda/cuda_check.hpp"
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/plan.hpp"

namespace fa2::flash {

namespace {

// `who` names the kernel in the reasons: "v6 packed" (the forward) or "v6b packed" (the backward).
std::string tensor_refusal(const FlashVarlenArgs& a, std::string_view who) {
  const std::string kernel(who);
  if (std::string why = varlen_tensor_refusal(a, who, "64 or 128", {64, 128}); !why.empty()) return why;
  // The ragged views count rows with kRaggedSpan; the window's sums stay inside an int.
  if (a.q_shape[0] >= kRaggedSpan || a.k_shape[0] >= kRaggedSpan || a.max_q + a.max_k >= kRaggedSpan) {
    return "T_q, T_k, max_q + max_k: " + kernel + " takes fewer than 2^30 rows";
  }
  if (a.page_size != 0 || a.block_table != nullptr) return "block_table: " + kernel + " takes packed keys, not pages";
  if (a.window.left < -1 || a.window.right < -1) return "window: each bound is -1 (none) or >= 0";
  const float scale = softmax_scale(a);
  if (!(scale > 0.0f) || !std::isfinite(scale)) return "scale: " + kernel + " needs a positive finite scale";
  return {};
}

// The lengths, read from the host copies, against the tensors and max_q, max_k.
std::string lengths_refusal(const FlashVarlenArgs& a) {
  if (a.batch < 0) return "batch: must not be negative";
  if (a.cu_seq_q_host == nullptr || a.cu_seq_k_host == nullptr || a.cu_seq_q == nullptr || a.cu_seq_k == nullptr) {
    return "cu_seq_q, cu_seq_k: v6 packed needs them on the device and their host copies (cu_seq_q_host, "
           "cu_seq_k_host)";
  }
  if (a.seqused_k != nullptr && a.seqused_k_host == nullptr) return "seqused_k_host: seqused_k needs its host copy";
  for (index_t b = 0; b < a.batch; ++b) {
    const index_t q0 = a.cu_seq_q_host[b], q1 = a.cu_seq_q_host[b + 1];
    const index_t k0 = a.cu_seq_k_host[b], k1 = a.cu_seq_k_host[b + 1];
    const std::string at = " at sequence " + std::to_string(b);
    if (q0 < 0 || q1 < q0 || q1 > a.q_shape[0]) return "cu_seq_q: rows outside q or decreasing" + at;
    if (k0 < 0 || k1 < k0 || k1 > a.k_shape[0]) return "cu_seq_k: rows outside k or decreasing" + at;
    const index_t n_k = a.seqused_k_host != nullptr ? a.seqused_k_host[b] : k1 - k0;
    if (n_k < 0 || n_k > k1 - k0) return "seqused_k: more keys than the sequence's rows of k" + at;
    if (q1 - q0 > a.max_q) return "max_q: smaller than the queries" + at;
    if (n_k > a.max_k) return "max_k: smaller than the keys" + at;
  }
  return {};
}

// No mask without bounds; the causal kernel where the mask is the causal one and every sequence is
// square (bottom-right and top-left agree); otherwise the windowed twin, per-sequence bounds.
PackedMask packed_mask(const FlashVarlenArgs& a) {
  if (!a.window.bounded()) return PackedMask::none;
  if (a.window.left < 0 && a.window.right == 0) {
    bool square = true;
    for (index_t b = 0; b < a.batch && square; ++b) {
      const index_t n_q = a.cu_seq_q_host[b + 1] - a.cu_seq_q_host[b];
      const index_t n_k =
          a.seqused_k_host != nullptr ? a.seqused_k_host[b] : a.cu_seq_k_host[b + 1] - a.cu_seq_k_host[b];
      square = n_q == n_k;
    }
    if (square) return PackedMask::causal;
  }
  return PackedMask::window;
}

// The backward's own tensors: dO like q, dQ like q, dK and dV like k, each with a contiguous head
// dim and 16-byte aligned rows; the workspaces given; no seqused_k (every key of cu_seq_k gets its
// gradient).
std::string backward_tensor_refusal(const FlashVarlenBwdArgs& a) {
  if (a.do_ == nullptr || a.dq == nullptr || a.dk == nullptr || a.dv == nullptr) {
    return "dout, dq, dk, dv: every tensor needs an address";
  }
  if (a.d_rows == nullptr || a.dq_accum == nullptr) {
    return "d_rows, dq_accum: the packed backward needs both float32 workspaces ((H, T_q) and (T_q, H, D))";
  }
  if (reinterpret_cast<std::uintptr_t>(a.dq_accum) % 16 != 0) return "dq_accum: must be 16-byte aligned";
  for (const auto& [name, shape, like] :
       {std::tuple{"dout", &a.do_shape, &a.q_shape}, std::tuple{"dq", &a.dq_shape, &a.q_shape},
        std::tuple{"dk", &a.dk_shape, &a.k_shape}, std::tuple{"dv", &a.dv_shape, &a.v_shape}}) {
    if (*shape != *like)
      return std::string(name) + ": shape " + to_string<3>(*shape) + " must be " + to_string<3>(*like);
  }
  for (const auto& [name, data, strides] :
       {std::tuple{"dout", a.do_, &a.do_strides},
        std::tuple<const char*, const void*, const Extents<3>*>{"dq", a.dq, &a.dq_strides},
        std::tuple<const char*, const void*, const Extents<3>*>{"dk", a.dk, &a.dk_strides},
        std::tuple<const char*, const void*, const Extents<3>*>{"dv", a.dv, &a.dv_strides}}) {
    if ((*strides)[2] != 1) return std::string(name) + ": the head dim must be contiguous (stride 1)";
    if (!rows_16_byte_aligned(data, *strides, 2)) {
      return std::string(name) +
             ": v6b packed needs 16-byte aligned rows (base pointer and row and head strides multiples of 8)";
    }
  }
  if (a.seqused_k != nullptr || a.seqused_k_host != nullptr) {
    return "seqused_k: the packed backward takes every key of cu_seq_k (no seqused_k)";
  }
  return {};
}

}  // namespace

PackedBackwardPlan plan_packed_backward(const FlashVarlenBwdArgs& args) {
  PackedBackwardPlan plan;
  plan.args = args;
  plan.kernel = kPackedBackwardRow;
  plan.refused = tensor_refusal(args, "v6b packed");
  if (plan.refused.empty()) plan.refused = backward_tensor_refusal(args);
  if (plan.refused.empty()) plan.refused = lengths_refusal(args);
  if (plan.refused.empty()) plan.refused = sm90_unavailable();
  if (!plan.runs()) return plan;
  plan.mask = packed_mask(args);
  const WindowBounds bounds = packed_kernel_bounds(args);
  plan.schedule = packed_backward_schedule(args.cu_seq_q_host, args.cu_seq_k_host, static_cast<int>(args.batch),
                                           plan.mask, kPackedBackwardBlockM, static_cast<int>(kBackwardKeyTile),
                                           bounds.left, bounds.right, args.deterministic);
  const auto tiles = static_cast<index_t>(plan.schedule.tiles.size());
  if (tiles * args.k_shape[1] >= (index_t{1} << 31)) {
    plan.refused = "T_k x H_kv: v6b packed numbers its (key tile, kv head) items with an int";
    return plan;
  }
  plan.schedule_bytes = static_cast<index_t>(plan.schedule.sequences.size() * sizeof(PackedSequence) +
                                             plan.schedule.tiles.size() * sizeof(PackedKeyTile));
  return plan;
}

void run(const PackedBackwardPlan& plan, cudaStream_t stream) {
  if (!plan.runs()) throw std::invalid_argument(plan.refused);
  if (plan.args.schedule == nullptr || reinterpret_cast<std::uintptr_t>(plan.args.schedule) % 16 != 0) {
    throw std::invalid_argument("schedule: this plan needs schedule_bytes (" + std::to_string(plan.schedule_bytes) +
                                ") of 16-byte aligned device memory");
  }
  if (plan.args.deterministic && plan.args.dq_semaphores == nullptr) {
    throw std::invalid_argument(
        "dq_semaphores: deterministic gradients need packed_dq_semaphore_count(q.shape, batch) (" +
        std::to_string(packed_dq_semaphore_count(plan.args.q_shape, plan.args.batch)) +
        " here) int32 of device memory");
  }
  const std::size_t sequence_bytes = plan.schedule.sequences.size() * sizeof(PackedSequence);
  auto* schedule = static_cast<unsigned char*>(plan.args.schedule);
  if (sequence_bytes > 0) {
    FA2_CUDA_CHECK(
        cudaMemcpyAsync(schedule, plan.schedule.sequences.data(), sequence_bytes, cudaMemcpyHostToDevice, stream));
  }
  if (!plan.schedule.tiles.empty()) {
    FA2_CUDA_CHECK(cudaMemcpyAsync(schedule + sequence_bytes, plan.schedule.tiles.data(),
                                   plan.schedule.tiles.size() * sizeof(PackedKeyTile), cudaMemcpyHostToDevice, stream));
  }
#ifdef FA2_HOPPER_SM90A
  launch_packed_backward_sm90(plan, stream);
#else
  throw std::invalid_argument(sm90_unavailable());
#endif
}

PackedPlan plan_packed_forward(const FlashVarlenArgs& args) {
  PackedPlan plan;
  plan.args = args;
  plan.kernel = kPackedRow;
  plan.refused = tensor_refusal(args, "v6 packed");
  if (plan.refused.empty()) plan.refused = lengths_refusal(args);
  if (plan.refused.empty()) plan.refused = sm90_unavailable();
  if (!plan.runs()) return plan;
  plan.mask = packed_mask(args);
  const WindowBounds bounds = packed_kernel_bounds(args);
  plan.schedule =
      packed_schedule(args.cu_seq_q_host, args.cu_seq_k_host, args.seqused_k_host, static_cast<int>(args.batch),
                      plan.mask, kPackedBlockM, kPackedBlockN, bounds.left, bounds.right);
  const auto tiles = static_cast<index_t>(plan.schedule.tiles.size());
  if (tiles * args.q_shape[1] >= (index_t{1} << 31)) {
    plan.refused = "T_q x H: v6 packed numbers its (query tile, head) items with an int";
    return plan;
  }
  plan.schedule_bytes = static_cast<index_t>(plan.schedule.sequences.size() * sizeof(PackedSequence) +
                                             plan.schedule.tiles.size() * sizeof(PackedTile));
  return plan;
}

void run(const PackedPlan& plan, cudaStream_t stream) {
  if (!plan.runs()) throw std::invalid_argument(plan.refused);
  if (plan.schedule.tiles.empty()) return;  // no sequence has a query
  if (plan.args.schedule == nullptr || reinterpret_cast<std::uintptr_t>(plan.args.schedule) % 16 != 0) {
    throw std::invalid_argument("schedule: this plan needs schedule_bytes (" + std::to_string(plan.schedule_bytes) +
                                ") of 16-byte aligned device memory");
  }
  const std::size_t sequence_bytes = plan.schedule.sequences.size() * sizeof(PackedSequence);
  auto* schedule = static_cast<unsigned char*>(plan.args.schedule);
  FA2_CUDA_CHECK(
      cudaMemcpyAsync(schedule, plan.schedule.sequences.data(), sequence_bytes, cudaMemcpyHostToDevice, stream));
  FA2_CUDA_CHECK(cudaMemcpyAsync(schedule + sequence_bytes, plan.schedule.tiles.data(),
                                 plan.schedule.tiles.size() * sizeof(PackedTile), cudaMemcpyHostToDevice, stream));
#ifdef FA2_HOPPER_SM90A
  launch_packed_sm90(plan, stream);
#else
  throw std::invalid_argument(sm90_unavailable());
#endif
}

}  // namespace fa2::flash
