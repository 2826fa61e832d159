// The CUDA primer's small kernels, one per idea (README.md, "A CUDA primer"). Plain CUDA: nvcc
// compiles them for the GPU (primer_cuda.cu), g++ for the host emulation (primer_host.cpp).
//   build/default/step04_weighted_sum/step04_cuda_primer      runs each of them and prints what it did
#pragma once

#if !defined(__CUDACC__)
#include "step04_weighted_sum/cuda_primer/cuda_emulation.hpp"  // g++: the CUDA names, played on the host
#endif

namespace fa2::cuda_primer {

// 1. Threads and blocks. Each thread finds its element from where it sits: blockIdx.x blocks of
//    blockDim.x threads come before its block. The grid is rounded up to whole blocks, so the last
//    block's extra threads find an index past n and must not touch memory.
__global__ void write_own_index(int* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = i;
}

// 2. Shared memory and __syncthreads(). Each block reverses its own chunk of blockDim.x values: a
//    thread reads what another thread wrote, so the writes must all be done before any read.
inline constexpr int kMaxReverseThreads = 256;
__global__ void reverse_each_block(const float* in, float* out) {
  __shared__ float chunk[kMaxReverseThreads];  // one per block: its threads see the same array
  const unsigned first = blockIdx.x * blockDim.x;
  chunk[threadIdx.x] = in[first + threadIdx.x];
  __syncthreads();  // without it a thread may read a slot its neighbour has not written yet
  out[first + threadIdx.x] = chunk[blockDim.x - 1 - threadIdx.x];
}

// 3. Coalescing. Thread i reads in[i * stride]: with stride 1 a warp's 32 floats share 4 sectors
//    of 32 bytes; with stride 8 or more each lane needs a sector of its own (hardware_model.hpp).
__global__ void gather_with_stride(const float* in, float* out, int n, int stride) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[static_cast<long long>(i) * stride];
}

// 4. Banks. A warp reads column `column` of a (32, width) float table in shared memory, one row
//    per lane. With width 32 every row starts in bank 0, so the column sits in one bank and the
//    32 reads queue up; width 33 shifts each row by one bank. Returns the column through `out`.
inline constexpr int kBankTableRows = 32;
__global__ void read_shared_column(const float* table, int width, int column, float* out) {
  __shared__ float rows[kBankTableRows * (kBankTableRows + 1)];  // room for width <= 33
  const auto words = static_cast<unsigned>(kBankTableRows * width);
  for (unsigned k = threadIdx.x; k < words; k += blockDim.x) rows[k] = table[k];  // the block copies it together
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x);
  if (lane < kBankTableRows) out[lane] = rows[lane * width + column];  // lane l: word l * width + column
}

}  // namespace fa2::cuda_primer
