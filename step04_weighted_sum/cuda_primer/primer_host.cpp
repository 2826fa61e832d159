// The primer's kernels run by the host emulation (primer.hpp): g++ compiles primer_kernels.cuh
// here with cuda_emulation.hpp standing in for nvcc's built-ins.
//   ctest --preset cpu-only -L step04
#include <stdexcept>
#include <string>
#include <vector>

#include "step04_weighted_sum/cuda_primer/cuda_emulation.hpp"
#include "step04_weighted_sum/cuda_primer/primer.hpp"
#include "step04_weighted_sum/cuda_primer/primer_kernels.cuh"

namespace fa2::cuda_primer {

namespace {

using cuda_emulation::Dim3;
using cuda_emulation::launch;

unsigned blocks_for(int n, int threads_per_block) {
  return static_cast<unsigned>((n + threads_per_block - 1) / threads_per_block);
}

void require(bool ok, const char* argument, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(argument) + ": " + what);
}

}  // namespace

std::vector<int> write_own_index_on_host(int n, int threads_per_block, int guard) {
  require(n >= 1 && guard >= 0, "n", "n >= 1 and guard >= 0");
  require(threads_per_block >= 1, "threads_per_block", "got " + std::to_string(threads_per_block));
  std::vector<int> out(static_cast<std::size_t>(n + guard), -1);
  launch(Dim3(blocks_for(n, threads_per_block)), Dim3(static_cast<unsigned>(threads_per_block)), write_own_index,
         out.data(), n);
  return out;
}

std::vector<float> reverse_each_block_on_host(const std::vector<float>& in, int threads_per_block) {
  require(threads_per_block >= 1 && threads_per_block <= kMaxReverseThreads, "threads_per_block",
          "got " + std::to_string(threads_per_block) + ", allowed 1 to " + std::to_string(kMaxReverseThreads));
  require(!in.empty() && in.size() % static_cast<std::size_t>(threads_per_block) == 0, "in",
          "its size must be a positive multiple of threads_per_block");
  std::vector<float> out(in.size());
  launch(Dim3(static_cast<unsigned>(in.size()) / static_cast<unsigned>(threads_per_block)),
         Dim3(static_cast<unsigned>(threads_per_block)), reverse_each_block, in.data(), out.data());
  return out;
}

std::vector<float> gather_with_stride_on_host(const std::vector<float>& in, int n, int stride, int threads_per_block) {
  require(n >= 1 && stride >= 0 && threads_per_block >= 1, "n, stride, threads_per_block", "n >= 1, stride >= 0");
  require(in.size() >= static_cast<std::size_t>(n - 1) * static_cast<std::size_t>(stride) + 1, "in",
          "too short for n and stride");
  std::vector<float> out(static_cast<std::size_t>(n));
  launch(Dim3(blocks_for(n, threads_per_block)), Dim3(static_cast<unsigned>(threads_per_block)), gather_with_stride,
         in.data(), out.data(), n, stride);
  return out;
}

std::vector<float> read_shared_column_on_host(const std::vector<float>& table, int width, int column) {
  require(width >= 1 && width <= kBankTableRows + 1, "width", "got " + std::to_string(width) + ", allowed 1 to 33");
  require(column >= 0 && column < width, "column", "got " + std::to_string(column) + ", allowed 0 to width - 1");
  require(table.size() == static_cast<std::size_t>(kBankTableRows * width), "table", "must hold 32 * width values");
  std::vector<float> out(kBankTableRows);
  launch(Dim3(1), Dim3(kBankTableRows), read_shared_column, table.data(), width, column, out.data());
  return out;
}

}  // namespace fa2::cuda_primer
