// Launchers for the fast kernel: argument checks, the configuration table and the launch.
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "common/cuda/cuda_check.hpp"
#include "step07_benchmark/kernels/fa2_fast.cuh"
#include "step07_benchmark/kernels/fa2_fast.hpp"

namespace fa2::fast {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <class Cfg>
void launch(const FlashFwdArgs& a, cudaStream_t stream) {
  FastParams p{};
  p.Q = static_cast<const __nv_bfloat16*>(a.q);
  p.K = static_cast<const __nv_bfloat16*>(a.k);
  p.V = static_cast<const __nv_bfloat16*>(a.v);
  p.O = static_cast<__nv_bfloat16*>(a.o);
  p.L = a.l;
  p.q_sb = a.q_strides[0], p.q_sn = a.q_strides[1];
  p.k_sb = a.k_strides[0], p.k_sn = a.k_strides[1];
  p.v_sb = a.v_strides[0], p.v_sn = a.v_strides[1];
  p.o_sb = a.o_strides[0], p.o_sn = a.o_strides[1];
  p.l_sb = a.l_strides[0], p.l_sn = a.l_strides[1];
  p.N_q = static_cast<int>(a.q_shape[1]);
  p.N_k = static_cast<int>(a.k_shape[1]);
  p.scale_log2 = softmax_scale(a) * 1.4426950408889634f;
  static const bool opted_in = [] {
    FA2_CUDA_CHECK(cudaFuncSetAttribute(fast_fwd_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(Cfg::smem_bytes)));
    return true;
  }();
  (void)opted_in;
  const dim3 grid(static_cast<unsigned>(cdiv<index_t>(a.q_shape[1], Cfg::BLOCK_M)), static_cast<unsigned>(a.q_shape[0]));
  fast_fwd_kernel<Cfg><<<grid, Cfg::NUM_THREADS, Cfg::smem_bytes, stream>>>(p);
  FA2_CUDA_CHECK_LAUNCH();
}

// Picks the instantiation for the head dim and the causal flag.
template <int WM, int NW, int BN, bool SWIZZLE = true, int STAGES = 2>
void launch_config(const FlashFwdArgs& a, cudaStream_t stream) {
  validate(a);
  if (const auto why = unsupported_reason(a); !why.empty()) throw std::invalid_argument(why);
  const auto run = [&]<int D>() {
    if (a.causal) {
      launch<FastConfig<D, WM, NW, BN, true, SWIZZLE, STAGES>>(a, stream);
    } else {
      launch<FastConfig<D, WM, NW, BN, false, SWIZZLE, STAGES>>(a, stream);
    }
  };
  switch (a.q_shape[2]) {
    case 32: run.template operator()<32>(); break;
    case 64: run.template operator()<64>(); break;
    default: run.template operator()<128>(); break;
  }
}

}  // namespace

std::string unsupported_reason(const FlashFwdArgs& a) {
  if (a.dtype != DType::bfloat16) return "dtype: the fast kernel takes bfloat16 only";
  const index_t D = a.q_shape[2];
  if (D != 32 && D != 64 && D != 128) return "head_dim: the fast kernel takes 32, 64 or 128";
  if (!(softmax_scale(a) > 0.0f)) return "scale: the fast kernel needs a positive softmax scale";
  if (a.q_shape[1] >= (index_t{1} << 31) || a.k_shape[1] >= (index_t{1} << 31)) return "seq: lengths must be < 2^31";
  // cp.async moves 16-byte chunks: every row must start on a 16-byte boundary.
  for (const auto& [ptr, strides] : {std::pair{a.q, a.q_strides}, std::pair{a.k, a.k_strides},
                                     std::pair{a.v, a.v_strides}, std::pair<const void*, Extents<3>>{a.o, a.o_strides}}) {
    if (!aligned16(ptr) || strides[0] % 8 != 0 || strides[1] % 8 != 0) {
      return "layout: the fast kernel needs 16-byte aligned rows (base pointers and batch/row strides multiples of 8)";
    }
  }
  return {};
}

void flash_fwd_fast(const FlashFwdArgs& args, cudaStream_t stream) {
  // The configuration chosen from the sweep in step07's README.
  if (args.q_shape[2] == 128) {
    launch_config<1, 8, 64>(args, stream);
  } else {
    launch_config<2, 4, 64>(args, stream);
  }
}

const std::vector<FastVariant>& fast_variants() {
  static const std::vector<FastVariant> variants = {
      {"v5a 128x64 w8 1-stage no-swizzle", "registers + mma.sync + ldmatrix; cp.async but no prefetch; plain layout",
       &launch_config<1, 8, 64, false, 1>},
      {"v5b 128x64 w8 1-stage", "v5a + XOR-swizzled shared memory (no bank conflicts)", &launch_config<1, 8, 64, true, 1>},
      {"v5c 128x64 w8", "v5b + double-buffered K/V (tile j+1 loads during tile j)", &launch_config<1, 8, 64, true, 2>},
      {"v5c 64x64 w4", "v5c with 64-row query blocks (4 warps)", &launch_config<1, 4, 64, true, 2>},
      {"v5c 128x128 w8", "v5c with 128-key tiles", &launch_config<1, 8, 128, true, 2>},
      {"v5d 128x64 w4x2", "each warp owns 32 rows: K/V fragments reused twice", &launch_config<2, 4, 64, true, 2>},
      {"v5d 128x128 w4x2", "v5d with 128-key tiles (FlashAttention-2's own shape)", &launch_config<2, 4, 128, true, 2>},
  };
  return variants;
}

}  // namespace fa2::fast
