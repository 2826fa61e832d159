// Small integer and floating-point helpers shared by every step: ceil-division, powers of
// two, and the TF32 rounding that the tensor cores apply to float32 operands.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/host_device.hpp"

namespace fa2 {

using index_t = std::int64_t;  // every element offset is 64-bit: tensors can pass 2^31 elements

// cdiv(10, 4) == 3: the number of tiles of size b needed to cover a.
template <class I>
FA2_HOST_DEVICE constexpr I cdiv(I a, I b) {
  return (a + b - 1) / b;
}

FA2_HOST_DEVICE constexpr bool is_power_of_two(long long x) {
  return x > 0 && (x & (x - 1)) == 0;
}

// The tensor cores' float32 mode (TF32) keeps 10 of the 23 mantissa bits. This rounds a
// float the way `cvt.rna.tf32.f32` does (to nearest, ties away from zero), so the host
// interpreter multiplies exactly the numbers the GPU multiplies.
inline float round_to_tf32(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) {  // leave inf and NaN alone
    u += 0x1000u;                          // half of the 13 dropped bits: ties away from zero
    u &= 0xffffe000u;
  }
  float y = 0.0f;
  std::memcpy(&y, &u, sizeof y);
  return y;
}

// How a program multiplies float32 tiles on the tensor cores, named after tl.dot's input_precision:
//   tf32    each operand rounded to TF32 (11 significant bits) and multiplied once: tl.dot's
//           default, and what PyTorch calls allow_tf32;
//   tf32x3  each operand split into big = tf32(x) and small = tf32(x - big), and three products,
//           small*big + big*small + big*big (small*small, 2^-22 of the product, is dropped): about
//           float32's accuracy, on the same tensor cores, for three times their work.
// 16-bit operands (bf16, fp16) multiply exactly either way.
enum class InputPrecision { tf32, tf32x3 };

}  // namespace fa2
