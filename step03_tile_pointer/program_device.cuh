// DeviceProgram: the GPU side of the program interface in program.hpp. One thread block is
// one program; its dynamic shared memory holds the body's Shared struct.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "common/numeric.hpp"  // InputPrecision
#include "step03_tile_pointer/tile_pointer.hpp"

namespace fa2 {

template <int NUM_THREADS>
class DeviceProgram {
 public:
  static constexpr int num_threads = NUM_THREADS;
  static constexpr bool on_device = true;
  static_assert(NUM_THREADS % 32 == 0, "a program is made of whole warps");

  // first_x: the program id of the launch's first block on axis 0 (a launch may run one slice of
  // a grid; launch.hpp's Grid::first_x). precision: how its products of float32 tiles run.
  __device__ explicit DeviceProgram(std::byte* shared_memory, int first_x = 0,
                                    InputPrecision precision = InputPrecision::tf32)
      : shared_(shared_memory), first_x_(first_x), precision_(precision) {}

  __device__ int program_id(int axis) const {
    return static_cast<int>(axis == 0 ? first_x_ + static_cast<int>(blockIdx.x)
                                      : (axis == 1 ? blockIdx.y : blockIdx.z));
  }
  __device__ int thread_rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int warp_id() const { return static_cast<int>(threadIdx.x) / 32; }
  __device__ InputPrecision input_precision() const { return precision_; }
  __device__ void sync() const { __syncthreads(); }

  // Combines `value` across groups of Width consecutive lanes (a butterfly of shuffles).
  template <int Width, class T, class Op>
  __device__ T reduce(T value, Op op) const {
    static_assert(Width >= 1 && Width <= 32 && (Width & (Width - 1)) == 0, "a power of two within one warp");
#pragma unroll
    for (int offset = Width / 2; offset > 0; offset /= 2) {
      value = op(value, __shfl_xor_sync(0xffffffffu, value, offset, Width));
    }
    return value;
  }

  template <class S>
  __device__ S& shared() const {
    return *reinterpret_cast<S*>(shared_);
  }

 private:
  std::byte* shared_;
  int first_x_;
  InputPrecision precision_;
};

}  // namespace fa2
