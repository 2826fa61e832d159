// Checked cuBLAS calls, the cuBLAS twin of FA2_CUDA_CHECK: every call goes through
// FA2_CUBLAS_CHECK, which throws std::runtime_error("file:line: cublasX(...) failed: NAME (text)").
// Also an RAII cuBLAS handle.
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

namespace fa2::bench {

inline void cublas_check(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                             " failed: " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
  }
}

}  // namespace fa2::bench

#define FA2_CUBLAS_CHECK(expr) ::fa2::bench::cublas_check((expr), #expr, __FILE__, __LINE__)

namespace fa2::bench {

class CublasHandle {
 public:
  CublasHandle() { FA2_CUBLAS_CHECK(cublasCreate(&handle_)); }
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);  // no throw from a destructor
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace fa2::bench
