// RAII device memory: DeviceBuffer<T> owns a cudaMalloc'd array; DeviceTensor<T, Rank>
// mirrors a host Tensor (same storage size, same strides) so that a strided host layout
// travels to the GPU unchanged and comes back the same way.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/tensor.hpp"

namespace fa2::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) FA2_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), bytes()));
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);  // no throw from a destructor
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (ptr_ != nullptr) cudaFree(ptr_);
      ptr_ = std::exchange(other.ptr_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void upload(const T* host, std::size_t count) {
    FA2_CUDA_CHECK(cudaMemcpy(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void download(T* host, std::size_t count) const {
    FA2_CUDA_CHECK(cudaMemcpy(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    download(host.data(), count_);
    return host;
  }
  // Sets every byte, e.g. 0xFF to poison float/bf16 outputs with NaN before a launch.
  void fill_bytes(unsigned char value) { FA2_CUDA_CHECK(cudaMemset(ptr_, value, bytes())); }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

template <class T, int Rank = 3>
class DeviceTensor {
 public:
  DeviceTensor() = default;
  // Copies the host tensor's whole storage (gaps included) and keeps its shape and strides.
  explicit DeviceTensor(const Tensor<T, Rank>& host)
      : buffer_(host.storage().size()), shape_(host.shape()), strides_(host.strides()) {
    buffer_.upload(host.storage());
  }

  TensorView<T, Rank> view() { return {buffer_.data(), shape_, strides_}; }
  TensorView<const T, Rank> view() const { return {buffer_.data(), shape_, strides_}; }
  T* data() { return buffer_.data(); }
  DeviceBuffer<T>& buffer() { return buffer_; }

  // Copies the device storage back into a host tensor of the same layout.
  void download_to(Tensor<T, Rank>& host) const { buffer_.download(host.storage().data(), host.storage().size()); }

 private:
  DeviceBuffer<T> buffer_;
  Extents<Rank> shape_{};
  Extents<Rank> strides_{};
};

}  // namespace fa2::cuda
