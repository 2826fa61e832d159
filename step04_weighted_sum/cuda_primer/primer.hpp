// The primer's kernels (primer_kernels.cuh) run on the host emulation of CUDA: each function
// launches one kernel with cuda_emulation::launch and returns what the kernel wrote. No CUDA
// needed; primer_gpu.hpp has the same runs on a GPU.
//   ctest --preset cpu-only -L step04      (tests/test_cuda_primer.cpp)
#pragma once

#include <vector>

namespace fa2::cuda_primer {

// write_own_index on n elements followed by `guard` more, all -1 before the launch; blocks of
// threads_per_block threads, as many as cover n. Returns the n + guard elements.
std::vector<int> write_own_index_on_host(int n, int threads_per_block, int guard);

// reverse_each_block on `in` (its size a multiple of threads_per_block, which is <= kMaxReverseThreads).
std::vector<float> reverse_each_block_on_host(const std::vector<float>& in, int threads_per_block);

// gather_with_stride: out[i] = in[i * stride] for i < n (in holds at least (n - 1) * stride + 1 values).
std::vector<float> gather_with_stride_on_host(const std::vector<float>& in, int n, int stride, int threads_per_block);

// read_shared_column: column `column` of the (32, width) row-major table, read by one warp.
std::vector<float> read_shared_column_on_host(const std::vector<float>& table, int width, int column);

}  // namespace fa2::cuda_primer
