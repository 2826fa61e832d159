// Checked CUDA runtime calls: every call and every launch goes through FA2_CUDA_CHECK, which
// throws fa2::cuda::CudaError("file:line: cudaMalloc(...) failed: out of memory").
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace fa2::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* expr, const char* file, int line) {
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + expr +
                            " failed: " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

inline void check(cudaError_t code, const char* expr, const char* file, int line) {
  if (code != cudaSuccess) throw_cuda_error(code, expr, file, line);
}

}  // namespace fa2::cuda

#define FA2_CUDA_CHECK(expr) ::fa2::cuda::check((expr), #expr, __FILE__, __LINE__)
// After every kernel launch: reports a bad launch configuration at once.
#define FA2_CUDA_CHECK_LAUNCH() ::fa2::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
