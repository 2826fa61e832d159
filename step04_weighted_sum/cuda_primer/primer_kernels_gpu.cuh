// The primer's GPU-only kernels: they ask the hardware something the host emulation cannot answer
// (which lane a thread really is, how long shared-memory reads take), so nvcc alone compiles them.
//   ctest --preset default -L gpu        (tests/test_cuda_primer_gpu.cu; skipped without a GPU)
#pragma once

#include <cuda_runtime.h>

namespace fa2::cuda_primer {

// Per thread of the block, by linear index: the lane the hardware gives it (%laneid) and the
// linear index of its warp's first thread (fetched from that thread with a shuffle). The model
// (hardware_model.hpp) says: lane = linear % 32, first thread = linear - lane.
__global__ void report_warp_places(int* lane, int* first_thread_of_warp) {
  const int linear = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  unsigned hardware_lane = 0;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(hardware_lane));
  const unsigned active = __activemask();  // the threads of this warp (a last, partial warp has fewer)
  lane[linear] = static_cast<int>(hardware_lane);
  first_thread_of_warp[linear] = __shfl_sync(active, linear, __ffs(static_cast<int>(active)) - 1);
}

// One warp reads the 4-byte word (lane * stride_words) of shared memory `reads_per_lane` times and
// reports the clock cycles the reads took (the second of two passes: the first warms the caches).
// volatile: every read really goes to shared memory. Four sums keep the additions from being
// the bottleneck, so the time is the shared memory's.
inline constexpr int kTimedWords = 32 * 33;  // room for strides up to 33
__global__ void time_shared_reads(int stride_words, int reads_per_lane, long long* cycles, float* sink) {
  __shared__ float words[kTimedWords];
  for (unsigned k = threadIdx.x; k < static_cast<unsigned>(kTimedWords); k += blockDim.x)
    words[k] = static_cast<float>(k);
  __syncthreads();
  const volatile float* word = &words[(static_cast<int>(threadIdx.x) * stride_words) % kTimedWords];
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  long long elapsed = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const long long start = clock64();
    for (int r = 0; r < reads_per_lane; r += 4) {
      s0 += *word;
      s1 += *word;
      s2 += *word;
      s3 += *word;
    }
    elapsed = clock64() - start;
  }
  if (threadIdx.x == 0) *cycles = elapsed;
  sink[threadIdx.x] = s0 + s1 + s2 + s3;
}

// Keeps 64 loaded values alive at once, so that it needs many registers per thread: a kernel
// whose occupancy the register file limits (tests/test_cuda_primer_gpu.cu).
__global__ void hold_many_values(const float* in, float* out) {
  float v[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) v[k] = in[threadIdx.x + static_cast<unsigned>(k) * blockDim.x];
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < 64; ++k) s += v[k] * v[(k * 7 + 3) % 64];
  out[threadIdx.x] = s;
}

// Uses dynamic shared memory (its size chosen at launch), for the occupancy of a block that
// asks for more than the default 48 KB.
__global__ void use_dynamic_shared(float* out) {
  extern __shared__ float dynamic_words[];
  dynamic_words[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = dynamic_words[blockDim.x - 1 - threadIdx.x];
}

}  // namespace fa2::cuda_primer
