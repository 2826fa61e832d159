// The product's varlen forward for decoding (sm80/decode.cuh): its argument checks, the plan (how
// many parts each sequence's keys are cut into, and the workspace of the parts) and the launches of
// the decoding kernel and, with parts, of their merge.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

#include "step07_benchmark/kernels/device/launch_params.cuh"
#include "step07_benchmark/kernels/product/flash_attention.hpp"
#include "step07_benchmark/kernels/product/plan.hpp"
#include "step07_benchmark/kernels/sm80/decode_launch.cuh"

namespace fa2::flash {

// The checks of the tensors that both varlen plans share (plan.hpp), the kernel named in each reason.
std::string varlen_tensor_refusal(const FlashVarlenArgs& a, std::string_view kernel, std::string_view head_dim_list,
                                  std::initializer_list<index_t> head_dims) {
  const std::string who(kernel);
  if (a.dtype != DType::bfloat16 && a.dtype != DType::float16) return "dtype: " + who + " takes bfloat16 or float16";
  if (a.q == nullptr || a.k == nullptr || a.v == nullptr || a.o == nullptr || a.l == nullptr) {
    return "q, k, v, o, l: every tensor needs an address";
  }
  const index_t D = a.q_shape[2];
  if (std::find(head_dims.begin(), head_dims.end(), D) == head_dims.end()) {
    return "head_dim: " + who + " takes " + std::string(head_dim_list) + ", got " + std::to_string(D);
  }
  if (a.k_shape[2] != D || a.v_shape != a.k_shape) {
    return "k, v: shapes " + to_string<3>(a.k_shape) + " and " + to_string<3>(a.v_shape) +
           " must be equal, with q's head dim " + std::to_string(D);
  }
  if (a.o_shape != a.q_shape) return "o: shape " + to_string<3>(a.o_shape) + " must be q's " + to_string<3>(a.q_shape);
  if (a.k_shape[1] < 1 || a.q_shape[1] % a.k_shape[1] != 0) {
    return "k: its " + std::to_string(a.k_shape[1]) + " kv heads must divide q's " + std::to_string(a.q_shape[1]) +
           " heads";
  }
  if (a.l_shape[0] != a.q_shape[1] || a.l_shape[1] != a.q_shape[0]) return "l: shape must be (H, T_q)";
  for (const auto* strides : {&a.q_strides, &a.k_strides, &a.v_strides, &a.o_strides}) {
    if ((*strides)[2] != 1) return "strides: the head dim must be contiguous (stride 1) in q, k, v and o";
  }
  if (!rows_16_byte_aligned(a.q, a.q_strides, 2) || !rows_16_byte_aligned(a.k, a.k_strides, 2) ||
      !rows_16_byte_aligned(a.v, a.v_strides, 2) || !rows_16_byte_aligned(a.o, a.o_strides, 2)) {
    return "layout: " + who + " needs 16-byte aligned rows (base pointers and row and head strides multiples of 8)";
  }
  return {};
}

namespace {

// The configurations, the first whose shared memory the GPU offers: 8 warps of 3 stages of 16 keys,
// each copy instruction moving whole rows (ROW_LOADS), the one step07_decode_bench's table chose
// (step 7's GUIDE, "Decoding: split-KV"); at head dim 128 a warp's stage is 8 KB of K and V, 192 KB
// a block, which sm_90 offers and sm_80 and sm_86 do not. There 4 warps of 2 stages (64 KB).
template <int D>
using DecodeCfg = DecodeConfig<D, 8, 3, 16, true>;
template <int D>
using DecodeSmallCfg = DecodeConfig<D, 4, 2, 16, true>;

std::string varlen_refusal(const FlashVarlenArgs& a) {
  if (std::string why = varlen_tensor_refusal(a, "the decoding kernel", "32, 64 or 128", {32, 64, 128}); !why.empty()) {
    return why;
  }
  if (a.batch < 0 || a.cu_seq_q == nullptr) return "cu_seq_q: batch + 1 offsets are needed (batch >= 0)";
  if (a.max_q < 0 || a.max_k < 0) return "max_q, max_k: must not be negative";
  if (a.page_size > 0) {
    if (a.block_table == nullptr || a.seqused_k == nullptr)
      return "block_table: a paged cache needs block_table and seqused_k";
    if (a.block_table_stride < cdiv<index_t>(a.max_k, a.page_size)) {
      return "block_table: " + std::to_string(a.block_table_stride) +
             " pages per sequence cannot hold max_k = " + std::to_string(a.max_k) + " keys in pages of " +
             std::to_string(a.page_size);
    }
    if (a.k_shape[0] % a.page_size != 0) return "k: its rows must be whole pages of page_size";
  } else {
    if (a.page_size < 0) return "page_size: 0 (packed keys) or the keys per page";
    if (a.cu_seq_k == nullptr) return "cu_seq_k: packed keys need batch + 1 offsets";
  }
  if (a.window.left < -1 || a.window.right < -1) return "window: each bound is -1 (none) or >= 0";
  const float scale = softmax_scale(a);
  if (!(scale > 0.0f) || !std::isfinite(scale)) return "scale: the decoding kernel needs a positive finite scale";
  if (a.num_splits < 0 || a.num_splits > 65535) return "num_splits: 0 (the plan's choice) to 65535";
  // Index arithmetic is 32-bit for rows and keys, 64-bit for addresses.
  if (a.q_shape[0] >= (index_t{1} << 31) || a.k_shape[0] >= (index_t{1} << 31) || a.max_k >= (index_t{1} << 30)) {
    return "T_q, T_k, max_k: the decoding kernel takes fewer than 2^31 rows and 2^30 keys per sequence";
  }
  const index_t blocks = a.batch * a.k_shape[1] * cdiv<index_t>(a.q_shape[1] / a.k_shape[1] * a.max_q, 16);
  if (blocks >= (index_t{1} << 31)) return "batch: too many (sequence, kv head, 16 rows) blocks for one grid";
  return {};
}

// Runs fn.template operator()<Cfg>() with the configuration of the arguments' head dim and dtype
// that fits the device's shared memory.
template <class Fn>
void with_decode_config(const FlashVarlenArgs& a, const DeviceInfo& device, Fn&& fn) {
  const auto by_smem = [&]<int D>() {
    if (DecodeCfg<D>::smem_bytes <= static_cast<std::size_t>(device.smem_optin_bytes)) {
      with_element_twin<DecodeCfg<D>>(a.dtype, fn);
    } else {
      with_element_twin<DecodeSmallCfg<D>>(a.dtype, fn);
    }
  };
  switch (a.q_shape[2]) {
    case 32:
      by_smem.template operator()<32>();
      break;
    case 64:
      by_smem.template operator()<64>();
      break;
    default:
      by_smem.template operator()<128>();
      break;
  }
}

}  // namespace

VarlenPlan plan_varlen_forward(const FlashVarlenArgs& args) {
  VarlenPlan plan;
  plan.args = args;
  plan.refused = varlen_refusal(args);
  if (!plan.runs()) return plan;
  std::string why;
  const DeviceInfo* device = current_device_or(why);
  if (device == nullptr) {
    plan.refused = why;
    return plan;
  }
  if (device->cc_major < 8) {
    plan.refused = "GPU: the decoding kernel needs sm_80 or newer, this one is sm_" + std::to_string(device->cc_major) +
                   std::to_string(device->cc_minor);
    return plan;
  }
  // The parts: as asked, else split_kv_count's choice (decode_splits).
  with_decode_config(args, *device, [&]<class Cfg>() { plan.splits = decode_splits<Cfg>(args, *device); });
  plan.partial_floats = decode_partial_floats(args, plan.splits);
  return plan;
}

void run(const VarlenPlan& plan, cudaStream_t stream) {
  if (!plan.runs()) throw std::invalid_argument(plan.refused);
  if (plan.splits > 1 && plan.args.partial == nullptr) {
    throw std::invalid_argument("partial: this plan cuts the keys into " + std::to_string(plan.splits) +
                                " parts and needs plan.partial_floats floats of workspace");
  }
  with_decode_config(plan.args, current_device(), [&]<class Cfg>() { launch_decode<Cfg>(plan, stream); });
}

}  // namespace fa2::flash
