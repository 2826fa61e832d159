// Host side of the fast backward (fa2_fast_bwd.cuh): its argument checks, FastBwdParams from
// FlashBwdArgs, the three launches, and the configurations (the tuned one and the sweep's).
//   ctest -L gpu+variants   (every backward of the variants table against the float64 reference)
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/cuda/cuda_check.hpp"
#include "step05_fa2_kernel/flash_fwd_dispatch.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast.hpp"
#include "step07_benchmark/kernels/fast/fa2_fast_bwd.cuh"

namespace fa2::fast {

namespace {

FastBwdParams make_fast_bwd_params(const FlashBwdArgs& a) {
  FastBwdParams p{};
  p.Q = static_cast<const __nv_bfloat16*>(a.q);
  p.K = static_cast<const __nv_bfloat16*>(a.k);
  p.V = static_cast<const __nv_bfloat16*>(a.v);
  p.O = static_cast<const __nv_bfloat16*>(a.o);
  p.dO = static_cast<const __nv_bfloat16*>(a.do_);
  p.L = a.l;
  p.D_rows = a.d_rows;
  p.dQ_accum = a.dq_accum;
  p.dQ = static_cast<__nv_bfloat16*>(a.dq);
  p.dK = static_cast<__nv_bfloat16*>(a.dk);
  p.dV = static_cast<__nv_bfloat16*>(a.dv);
  p.stride_qb = a.q_strides[0], p.stride_qq = a.q_strides[1];
  p.stride_kb = a.k_strides[0], p.stride_kk = a.k_strides[1];
  p.stride_vb = a.v_strides[0], p.stride_vk = a.v_strides[1];
  p.stride_ob = a.o_strides[0], p.stride_oq = a.o_strides[1];
  p.stride_dob = a.do_strides[0], p.stride_doq = a.do_strides[1];
  p.stride_lb = a.l_strides[0], p.stride_lq = a.l_strides[1];
  p.stride_Db = a.d_rows_strides[0], p.stride_Dq = a.d_rows_strides[1];
  p.stride_accb = a.dq_accum_strides[0], p.stride_accq = a.dq_accum_strides[1];
  p.stride_dqb = a.dq_strides[0], p.stride_dqq = a.dq_strides[1];
  p.stride_dkb = a.dk_strides[0], p.stride_dkk = a.dk_strides[1];
  p.stride_dvb = a.dv_strides[0], p.stride_dvk = a.dv_strides[1];
  p.N_QUERIES = static_cast<int>(a.q_shape[1]);
  p.N_KEYS = static_cast<int>(a.k_shape[1]);
  p.scale = softmax_scale(forward_args(a));
  p.scale_log2 = p.scale * kLog2e;
  return p;
}

template <class Cfg>
void launch_fast_bwd(const FlashBwdArgs& a, cudaStream_t stream) {
  // The key-tile kernel's grid is (batch, key tiles): the key tile is the slow index, so the
  // heaviest causal blocks of every head start first. CUDA caps a grid's y dimension at 65535.
  const index_t key_blocks = cdiv<index_t>(a.k_shape[1], Cfg::BLOCK_N);
  if (key_blocks > 65535) {
    throw std::invalid_argument("K.shape: N_k = " + std::to_string(a.k_shape[1]) +
                                " needs more than 65535 key tiles of " + std::to_string(Cfg::BLOCK_N) +
                                " (the launch grid's y dimension); the fast backward takes N_k up to " +
                                std::to_string(65535 * Cfg::BLOCK_N));
  }
  const FastBwdParams p = make_fast_bwd_params(a);
  const auto batch = static_cast<unsigned>(a.q_shape[0]);
  // The row phases: one thread per 16-byte chunk of a query row.
  const auto row_blocks = static_cast<unsigned>(cdiv<index_t>(a.q_shape[1] * Cfg::CHUNKS, 256));
  fast_bwd_preprocess<Cfg::D><<<dim3(row_blocks, batch), 256, 0, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();

  static const bool opted_in = [] {
    FA2_CUDA_CHECK(cudaFuncSetAttribute(fast_bwd_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(Cfg::smem_bytes)));
    return true;
  }();
  (void)opted_in;
  fast_bwd_kernel<Cfg>
      <<<dim3(batch, static_cast<unsigned>(key_blocks)), Cfg::NUM_THREADS, Cfg::smem_bytes, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();

  fast_bwd_convert_dq<Cfg::D><<<dim3(row_blocks, batch), 256, 0, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();
}

// Checks the arguments, then launches the configuration's instantiation for their head dim and
// causal flag through the repository's one dispatcher.
template <FastBwdOptions OPT, int... Ds>
void launch_bwd_config(const FlashBwdArgs& a, cudaStream_t stream) {
  validate(a);
  if (const auto why = unsupported_reason(a); !why.empty()) throw std::invalid_argument(why);
  dispatch_flash(forward_args(a), DTypes<bf16>{}, HeadDims<Ds...>{}, "this fast backward configuration",
                 [&](auto, auto head_dim, auto causal) {
                   launch_fast_bwd<FastBwdConfig<decltype(head_dim)::value, decltype(causal)::value, OPT>>(a, stream);
                 });
}

constexpr FastBwdOptions kBwdM64Regs{.block_m = 64, .kv_in_regs = true};
constexpr FastBwdOptions kBwdM64Smem{.block_m = 64, .kv_in_regs = false};
constexpr FastBwdOptions kBwdM128Smem{.block_m = 128, .kv_in_regs = false};
constexpr FastBwdOptions kBwdM32Regs{.block_m = 32, .kv_in_regs = true};
constexpr FastBwdOptions kBwdM32Smem{.block_m = 32, .kv_in_regs = false};
constexpr FastBwdOptions kBwdM64RegsDeferred{.block_m = 64, .kv_in_regs = true, .deferred_dq = true};
constexpr FastBwdOptions kBwdM64SmemDeferred{.block_m = 64, .kv_in_regs = false, .deferred_dq = true};
constexpr FastBwdOptions kBwdM32SmemDeferred{.block_m = 32, .kv_in_regs = false, .deferred_dq = true};
constexpr FastBwdOptions kBwdW4M64RegsDeferred{.block_m = 64, .kv_in_regs = true, .warps = 4, .deferred_dq = true};
constexpr FastBwdOptions kBwdW4K2M32Deferred{
    .block_m = 32, .kv_in_regs = false, .warps = 4, .key_tiles = 2, .deferred_dq = true};
constexpr FastBwdOptions kBwdW4K2M64Deferred{
    .block_m = 64, .kv_in_regs = false, .warps = 4, .key_tiles = 2, .deferred_dq = true};
constexpr FastBwdOptions kBwdK2M32Deferred{.block_m = 32, .kv_in_regs = false, .key_tiles = 2, .deferred_dq = true};
constexpr FastBwdOptions kBwdW4M32SmemDeferred{.block_m = 32, .kv_in_regs = false, .warps = 4, .deferred_dq = true};

}  // namespace

std::string unsupported_reason(const FlashBwdArgs& a) {
  if (std::string why = unsupported_reason(forward_args(a)); !why.empty()) return why;
  // The forward's check covers Q, K, V and O; the backward's own tensors move in 16-byte chunks
  // too (dQ_accum in float4s and two-float atomics).
  for (const auto& [name, ptr, strides] :
       {std::tuple{"dO", a.do_, a.do_strides},
        std::tuple<const char*, const void*, Extents<3>>{"dQ", a.dq, a.dq_strides},
        std::tuple<const char*, const void*, Extents<3>>{"dK", a.dk, a.dk_strides},
        std::tuple<const char*, const void*, Extents<3>>{"dV", a.dv, a.dv_strides}}) {
    if (!rows_16_byte_aligned(ptr, strides, 2)) {
      return std::string(name) +
             ": the fast backward needs 16-byte aligned rows (base pointer and batch/row strides multiples of 8)";
    }
  }
  if (!rows_16_byte_aligned(a.dq_accum, a.dq_accum_strides, 4)) {
    return "dQ_accum: the fast backward needs 16-byte aligned rows (base pointer and batch/row strides multiples of 4)";
  }
  return {};
}

void flash_bwd_fast(const FlashBwdArgs& args, cudaStream_t stream) {
  // The configurations chosen from the sweep (step07's README, "The backward pass"; H200,
  // 2026-11-30): up to head dim 64, blocks of 4 warps with 32 keys each, two blocks per SM
  // (v5b.11); at 128, where 32 keys per warp would need 256 registers for dK and dV alone, 8
  // warps of 16 keys, K/V re-read from shared memory (v5b.7; ptxas reports 48 bytes of spill
  // stores in its non-causal instantiation). Both defer dQ's share to the next step.
  if (args.q_shape[2] == 128) {
    launch_bwd_config<kBwdM64SmemDeferred, 128>(args, stream);
  } else {
    launch_bwd_config<kBwdW4K2M32Deferred, 32, 64>(args, stream);
  }
}

void v5_bwd_m64_regs(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdM64Regs, 32, 64>(a, s);
}
void v5_bwd_m64_smem(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdM64Smem, 64, 128>(a, s);
}
void v5_bwd_m128_smem(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdM128Smem, 64>(a, s);
}
void v5_bwd_m32_regs(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdM32Regs, 64, 128>(a, s);
}
void v5_bwd_m32_smem(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdM32Smem, 64, 128>(a, s);
}
void v5_bwd_m64_regs_deferred(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdM64RegsDeferred, 64>(a, s);
}
void v5_bwd_m64_deferred(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdM64SmemDeferred, 64, 128>(a, s);
}
void v5_bwd_m32_deferred(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdM32SmemDeferred, 64, 128>(a, s);
}
void v5_bwd_w4_m64_regs_deferred(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdW4M64RegsDeferred, 64>(a, s);
}
void v5_bwd_w4_k2_m32_deferred(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdW4K2M32Deferred, 32, 64>(a, s);
}
void v5_bwd_w4_k2_m64_deferred(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdW4K2M64Deferred, 64>(a, s);
}
void v5_bwd_k2_m32_deferred(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdK2M32Deferred, 64>(a, s);
}
void v5_bwd_w4_m32_deferred(const FlashBwdArgs& a, cudaStream_t s) {
  launch_bwd_config<kBwdW4M32SmemDeferred, 64, 128>(a, s);
}

}  // namespace fa2::fast
