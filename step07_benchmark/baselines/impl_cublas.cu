// Standard attention with cuBLAS (see impl_cublas.hpp): two strided-batched GEMMs around a
// masked row softmax, plus the bf16 GEMM rate measurement.
//
// cuBLAS is column-major and our tensors are row-major, so each product is written for the
// transposed matrices (a row-major (R, C) matrix is a column-major (C, R) one, same memory):
//   S (N_q, N_k) = Q K^T     <=>  S^T (N_k, N_q) = K Q^T   : op(A) = K   (A = K^T stored (D, N_k)), B = Q^T (D, N_q)
//   O (N_q, D)   = P V       <=>  O^T (D, N_q)   = V^T P^T : A = V^T (D, N_k), B = P^T (N_k, N_q)
#include "step07_benchmark/baselines/impl_cublas.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <climits>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "step07_benchmark/baselines/cublas_check.hpp"
#include "step07_benchmark/harness/bench_device.hpp"

namespace fa2::bench {
namespace {

constexpr int kSoftmaxThreads = 256;
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;  // cuBLAS workspace we hand it (counted in peak memory)
constexpr std::size_t kHeadroomBytes = std::size_t{1} << 30;    // left free for the runtime and other allocations

// The running (max, sum of exp(x - max)) of a row, the online softmax's state.
struct RowStat {
  float m;
  float l;
};

__device__ RowStat combine(RowStat a, RowStat b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.l * expf(a.m - m) + b.l * expf(b.m - m)};  // exp(-inf) = 0 for an empty side
}

__device__ void absorb(RowStat& s, float x) {
  if (x > s.m) {
    s.l = s.l * expf(s.m - x) + 1.0f;  // on the first element: 0 * exp(-inf) + 1
    s.m = x;
  } else {
    s.l += expf(x - s.m);
  }
}

__device__ RowStat block_combine(RowStat s) {
  __shared__ RowStat warp_stats[kSoftmaxThreads / 32];
  __shared__ RowStat result;
  for (int offset = 16; offset > 0; offset /= 2) {
    s = combine(s, RowStat{__shfl_xor_sync(0xffffffffu, s.m, offset), __shfl_xor_sync(0xffffffffu, s.l, offset)});
  }
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  if (lane == 0) warp_stats[warp] = s;
  __syncthreads();
  if (warp == 0) {
    const int n_warps = static_cast<int>(blockDim.x / 32);
    RowStat t = lane < n_warps ? warp_stats[lane] : RowStat{-INFINITY, 0.0f};
    for (int offset = 16; offset > 0; offset /= 2) {
      t = combine(t, RowStat{__shfl_xor_sync(0xffffffffu, t.m, offset), __shfl_xor_sync(0xffffffffu, t.l, offset)});
    }
    if (lane == 0) result = t;
  }
  __syncthreads();
  return result;
}

// VEC consecutive bf16 of a row as floats; VEC = 8 is one 16-byte load (needs 16-byte alignment).
template <int VEC>
__device__ void load_chunk(const __nv_bfloat16* p, float (&x)[VEC]) {
  if constexpr (VEC == 8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(pairs[i]);
      x[2 * i] = f.x;
      x[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) x[i] = __bfloat162float(p[i]);
  }
}

template <int VEC>
__device__ void store_chunk(__nv_bfloat16* p, const float (&y)[VEC]) {
  if constexpr (VEC == 8) {
    uint4 raw;
    auto* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) pairs[i] = __floats2bfloat162_rn(y[2 * i], y[2 * i + 1]);
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) p[i] = __float2bfloat16_rn(y[i]);
  }
}

// One block per row of S (row = (b*H + h) * n_q + q). Pass 1 folds the visible scores into
// (max, sum) per thread and combines them over the block; pass 2 writes
// P = exp(s - max) / sum for visible keys and exact zeros for masked ones. For causal rows only
// keys k <= q are read. L = max + log(sum), the row's logsumexp.
template <int VEC>
__global__ void __launch_bounds__(kSoftmaxThreads)
    masked_softmax_kernel(const __nv_bfloat16* __restrict__ S, __nv_bfloat16* __restrict__ P, float* __restrict__ L,
                          int n_q, int n_k, bool causal) {
  const index_t row = blockIdx.x;
  const int q = static_cast<int>(row % n_q);
  const int visible = causal ? min(n_k, q + 1) : n_k;  // >= 1: every query sees key 0
  const index_t base = row * n_k;
  const int step = static_cast<int>(blockDim.x) * VEC;

  RowStat st{-INFINITY, 0.0f};
  for (int k0 = static_cast<int>(threadIdx.x) * VEC; k0 < visible; k0 += step) {
    float x[VEC];
    load_chunk<VEC>(S + base + k0, x);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      if (k0 + i < visible) absorb(st, x[i]);
    }
  }
  st = block_combine(st);

  const float inv_l = 1.0f / st.l;
  for (int k0 = static_cast<int>(threadIdx.x) * VEC; k0 < n_k; k0 += step) {
    float y[VEC];
    if (k0 < visible) {
      float x[VEC];
      load_chunk<VEC>(S + base + k0, x);
#pragma unroll
      for (int i = 0; i < VEC; ++i) y[i] = (k0 + i < visible) ? expf(x[i] - st.m) * inv_l : 0.0f;
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) y[i] = 0.0f;
    }
    store_chunk<VEC>(P + base + k0, y);
  }
  if (L != nullptr && threadIdx.x == 0) L[row] = st.m + logf(st.l);
}

const __nv_bfloat16* as_cuda(const bf16* p) {
  return reinterpret_cast<const __nv_bfloat16*>(p);
}
__nv_bfloat16* as_cuda(bf16* p) {
  return reinterpret_cast<__nv_bfloat16*>(p);
}

// Everything one problem needs: the handle bound to the stream, S, P and the workspace.
class CublasAttention {
 public:
  CublasAttention(const Problem& p, const AttentionBuffers& b, cudaStream_t stream)
      : p_(p),
        b_(b),
        stream_(stream),
        S_(static_cast<std::size_t>(p.score_elements())),
        P_(static_cast<std::size_t>(p.score_elements())),
        workspace_(kWorkspaceBytes),
        scale_(1.0f / std::sqrt(static_cast<float>(p.D))) {
    // cublasSetStream resets the workspace to cuBLAS's own pool, so it comes first.
    FA2_CUBLAS_CHECK(cublasSetStream(handle_.get(), stream_));
    FA2_CUBLAS_CHECK(cublasSetWorkspace(handle_.get(), workspace_.data(), workspace_.bytes()));
  }

  void forward() {
    const int n = p_.N, d = p_.D, batch = static_cast<int>(p_.heads());
    const long long nd = static_cast<long long>(n) * d;
    const long long nn = static_cast<long long>(n) * n;
    const float zero = 0.0f, one = 1.0f;
    // S^T (N_k, N_q) = K Q^T * scale, i.e. row-major S = Q K^T * scale.
    FA2_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle_.get(), CUBLAS_OP_T, CUBLAS_OP_N, n, n, d, &scale_, b_.k,
                                                CUDA_R_16BF, d, nd, b_.q, CUDA_R_16BF, d, nd, &zero, S_.data(),
                                                CUDA_R_16BF, n, nn, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    masked_softmax_rows(S_.data(), P_.data(), b_.l, p_.heads() * n, n, n, p_.causal, stream_);
    // O^T (D, N_q) = V^T P^T, i.e. row-major O = P V.
    FA2_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle_.get(), CUBLAS_OP_N, CUBLAS_OP_N, d, n, n, &one, b_.v,
                                                CUDA_R_16BF, d, nd, P_.data(), CUDA_R_16BF, n, nn, &zero, b_.o,
                                                CUDA_R_16BF, d, nd, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

 private:
  Problem p_;
  AttentionBuffers b_;
  cudaStream_t stream_;
  CublasHandle handle_;
  cuda::DeviceBuffer<bf16> S_;  // (B*H, N, N) scores
  cuda::DeviceBuffer<bf16> P_;  // (B*H, N, N) probabilities
  cuda::DeviceBuffer<unsigned char> workspace_;
  float scale_;
};

std::size_t cublas_extra_bytes(const Problem& p) {
  return 2 * score_matrix_bytes(p) + kWorkspaceBytes;
}

}  // namespace

void masked_softmax_rows(const bf16* S, bf16* P, float* L, index_t rows, int n_q, int n_k, bool causal,
                         cudaStream_t stream) {
  if (rows < 1 || n_q < 1 || n_k < 1) throw std::invalid_argument("masked_softmax_rows: empty problem");
  if (rows > INT_MAX) throw std::invalid_argument("masked_softmax_rows: more rows than a grid's x dimension holds");
  const bool vectorised = (n_k % 8 == 0);  // 16-byte loads: every row then starts 16-byte aligned
  const int vec = vectorised ? 8 : 1;
  const int chunks = (n_k + vec - 1) / vec;
  int threads = ((chunks + 31) / 32) * 32;
  threads = threads < 32 ? 32 : (threads > kSoftmaxThreads ? kSoftmaxThreads : threads);
  const dim3 grid(static_cast<unsigned>(rows));
  if (vectorised) {
    masked_softmax_kernel<8><<<grid, threads, 0, stream>>>(as_cuda(S), as_cuda(P), L, n_q, n_k, causal);
  } else {
    masked_softmax_kernel<1><<<grid, threads, 0, stream>>>(as_cuda(S), as_cuda(P), L, n_q, n_k, causal);
  }
  FA2_CUDA_CHECK_LAUNCH();
}

Implementation cublas_attention_implementation() {
  Implementation impl;
  impl.name = "standard attention: cuBLAS GEMM, softmax kernel, cuBLAS GEMM";
  impl.key = "cublas";
  impl.family = "cublas";
  impl.unsupported = [](const Problem& p) {
    if (p.backward()) return std::string("no backward pass (standard attention's would be two more GEMM pairs)");
    if (p.window.bounded()) return std::string("no sliding window");
    return p.heads() > INT_MAX || static_cast<index_t>(p.heads()) * p.N > INT_MAX
               ? std::string("more than 2^31 - 1 rows or batches for cuBLAS's int arguments")
               : std::string();
  };
  impl.extra_bytes = cublas_extra_bytes;
  impl.prepare = [](const Problem& p, const AttentionBuffers& b, cudaStream_t stream) {
    const std::size_t need = cublas_extra_bytes(p);
    std::size_t free_bytes = 0, total_bytes = 0;
    FA2_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (need + kHeadroomBytes > free_bytes) {
      throw NotRunnable(NotRunnable::Kind::skipped, "S and P (B*H*N*N bf16 each) and the workspace need " +
                                                        format_bytes(static_cast<double>(need)) + ", only " +
                                                        format_bytes(static_cast<double>(free_bytes)) +
                                                        " of device memory is free");
    }
    auto state = std::make_shared<CublasAttention>(p, b, stream);
    PreparedRun run;
    run.run = [state] { state->forward(); };
    return run;
  };
  return impl;
}

std::string cublas_version_string() {
  int major = 0, minor = 0, patch = 0;
  FA2_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  FA2_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  FA2_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

double measure_bf16_gemm_tflops(int n, cudaStream_t stream, L2Flusher& flusher, const TimingBudget& budget,
                                std::uint64_t seed) {
  const auto elems = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  cuda::DeviceBuffer<bf16> A(elems), B(elems), C(elems);
  fill_normal_bf16(A.data(), elems, seed, stream);  // random data: zeros run faster than real inputs
  fill_normal_bf16(B.data(), elems, seed + 1, stream);
  CublasHandle handle;
  FA2_CUBLAS_CHECK(cublasSetStream(handle.get(), stream));
  const float zero = 0.0f, one = 1.0f;
  const Timing t = do_bench(
      [&] {
        FA2_CUBLAS_CHECK(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A.data(), CUDA_R_16BF, n,
                                      B.data(), CUDA_R_16BF, n, &zero, C.data(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
      },
      stream, flusher, budget);
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  return tflops_per_s(flops, t.ms.median);
}

}  // namespace fa2::bench
