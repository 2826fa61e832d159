// Standard attention with cuBLAS, what one writes without FlashAttention: S = Q K^T * scale as
// a strided-batched GEMM (bf16 in and out, fp32 accumulation), a row softmax kernel that applies
// the causal mask (key k visible to query q when k <= q) in fp32 and writes P in bf16 and the
// logsumexp L, and O = P V as a second batched GEMM. S and P are B*H*N*N each in device memory.
// Also here: the cuBLAS version and the bf16 GEMM rate used as the measured matrix ceiling.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "step07_benchmark/harness/implementation.hpp"
#include "step07_benchmark/harness/timing.hpp"

namespace fa2::bench {

// Key "cublas". prepare() throws NotRunnable(skipped) when S and P do not fit in free memory.
Implementation cublas_attention_implementation();

// The softmax stage alone, for tests: S (rows, n_k) bf16 -> P (rows, n_k) bf16 and L (rows,)
// float32, where row r is query q = r % n_q, masked to keys k <= q when causal.
void masked_softmax_rows(const bf16* S, bf16* P, float* L, index_t rows, int n_q, int n_k, bool causal,
                         cudaStream_t stream);

// "13.0.2" from cublasGetProperty.
std::string cublas_version_string();

// TFLOP/s of an n x n x n bf16 GEMM (fp32 accumulation) on random inputs, timed with do_bench.
double measure_bf16_gemm_tflops(int n, cudaStream_t stream, L2Flusher& flusher, const TimingBudget& budget,
                                std::uint64_t seed);

}  // namespace fa2::bench
