// Device helpers of the benchmark (kernels in bench_device.cu): random normal bf16 inputs made
// on the GPU (the largest problem has 200 M input elements, too many to draw on the host), and
// a whole-tensor comparison run on the GPU with torch.testing.assert_close's rule.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/bf16.hpp"

namespace fa2::bench {

// x[i] ~ N(0, 1), rounded to bf16; a counter-based generator, so the values depend only on
// (seed, i). Enqueued on `stream`.
void fill_normal_bf16(bf16* x, std::size_t n, std::uint64_t seed, cudaStream_t stream);

struct DeviceCompare {
  std::uint64_t checked = 0;
  std::uint64_t mismatched = 0;   // |a - e| > atol + rtol * |e|, or a NaN on either side
  std::uint64_t nan_count = 0;    // elements where either side is NaN
  double max_abs_error = 0.0;     // over elements where both are finite
  std::int64_t worst_index = -1;  // the mismatch furthest outside the tolerance (-1: none)
  bool ok() const { return mismatched == 0; }
};

// Compares n bf16 elements of `actual` and `expected` (device pointers) and waits for the
// answer. Throws std::invalid_argument for n >= 2^32 (the worst index is kept in 32 bits).
DeviceCompare compare_bf16(const bf16* actual, const bf16* expected, std::size_t n, double atol, double rtol,
                           cudaStream_t stream);

}  // namespace fa2::bench
