// The two 16-bit element types, on the host and the device:
//   bf16  bfloat16, the top 16 bits of a float32 (8 exponent bits, 7 mantissa bits): float32's
//         range, 3 significant decimal digits;
//   fp16  IEEE binary16 (5 exponent bits, 10 mantissa bits): 3 more bits of precision, but the
//         largest finite value is 65504 and values under 2^-14 lose bits (subnormals).
// Conversions from float round to nearest, ties to even, like the GPU's __float2bfloat16_rn and
// __float2half_rn; conversions to float are exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/host_device.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace fa2 {

struct bf16 {
  std::uint16_t bits;  // no initializer: trivially constructible, like __nv_bfloat16 in shared memory

  bf16() = default;
  // Narrowing, so explicit: write bf16(x) where precision is given up on purpose.
  FA2_HOST_DEVICE explicit bf16(float f) : bits(from_float(f)) {}
  // Widening is exact, so it is implicit.
  FA2_HOST_DEVICE operator float() const { return to_float(bits); }

  FA2_HOST_DEVICE static bf16 from_bits(std::uint16_t b) {
    bf16 x;
    x.bits = b;
    return x;
  }

  FA2_HOST_DEVICE static std::uint16_t from_float(float f) {
#if FA2_DEVICE_PASS
    const __nv_bfloat16 h = __float2bfloat16_rn(f);
    std::uint16_t b;
    memcpy(&b, &h, sizeof b);
    return b;
#else
    std::uint32_t u = 0;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep the sign, force a quiet NaN
      return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    }
    const std::uint32_t lsb = (u >> 16) & 1u;  // ties go to the even neighbour
    u += 0x7fffu + lsb;
    return static_cast<std::uint16_t>(u >> 16);
#endif
  }

  FA2_HOST_DEVICE static float to_float(std::uint16_t b) {
    const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
    float f;
#if FA2_DEVICE_PASS
    memcpy(&f, &u, sizeof f);
#else
    std::memcpy(&f, &u, sizeof f);
#endif
    return f;
  }
};

static_assert(sizeof(bf16) == 2, "bf16 must be two bytes so that buffers match __nv_bfloat16");

struct fp16 {
  std::uint16_t bits;  // sign (1), exponent (5, bias 15), mantissa (10)

  fp16() = default;
  FA2_HOST_DEVICE explicit fp16(float f) : bits(from_float(f)) {}
  FA2_HOST_DEVICE operator float() const { return to_float(bits); }

  FA2_HOST_DEVICE static fp16 from_bits(std::uint16_t b) {
    fp16 x;
    x.bits = b;
    return x;
  }

  FA2_HOST_DEVICE static std::uint16_t from_float(float f) {
#if FA2_DEVICE_PASS
    const __half h = __float2half_rn(f);
    std::uint16_t b;
    memcpy(&b, &h, sizeof b);
    return b;
#else
    std::uint32_t u = 0;
    std::memcpy(&u, &f, sizeof u);
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;  // NaN: a quiet NaN of the same sign
    // 65520 = 65504 + half a step: from there on (and at the tie, whose even neighbour is the
    // next power of two) the nearest is infinity.
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a < 0x38800000u) {
      // Under 2^-14: a multiple of 2^-24. Scaling by 2^24 is exact and rint rounds to the even
      // integer; 1024 is the encoding of 2^-14, the smallest normal value.
      float magnitude = 0.0f;
      std::memcpy(&magnitude, &a, sizeof magnitude);
      return sign | static_cast<std::uint16_t>(std::nearbyint(magnitude * 0x1p24f));
    }
    // Normal: rebias the exponent (127 -> 15), keep 10 of the 23 mantissa bits, round the 13
    // dropped ones to nearest even; a carry out of the mantissa moves the exponent up, as it should.
    const std::uint32_t rebiased = a - 0x38000000u;
    const std::uint32_t dropped = rebiased & 0x1fffu;
    std::uint32_t h = rebiased >> 13;
    if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u) != 0)) ++h;
    return static_cast<std::uint16_t>(sign | h);
#endif
  }

  FA2_HOST_DEVICE static float to_float(std::uint16_t b) {
#if FA2_DEVICE_PASS
    __half h;
    memcpy(&h, &b, sizeof h);
    return __half2float(h);
#else
    const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x8000u) << 16;
    const std::uint32_t exponent = (b >> 10) & 0x1fu;
    const std::uint32_t mantissa = b & 0x3ffu;
    std::uint32_t u = 0;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
      const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
      std::memcpy(&u, &magnitude, sizeof u);
      u |= sign;
    } else if (exponent == 31) {  // infinity or NaN
      u = sign | 0x7f800000u | (mantissa << 13);
    } else {
      u = sign | ((exponent + 112) << 23) | (mantissa << 13);
    }
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
  }
};

static_assert(sizeof(fp16) == 2, "fp16 must be two bytes so that buffers match __half");

// bf16 or fp16: the 16-bit types the tensor cores take, stored by the kernels, computed in float.
template <class T>
inline constexpr bool is_16_bit_float_v = std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;

// Element-type traits used by the kernels and the tests (step 4's kernels take float and bf16).
template <class T>
inline constexpr bool is_supported_dtype_v = false;
template <>
inline constexpr bool is_supported_dtype_v<float> = true;
template <>
inline constexpr bool is_supported_dtype_v<bf16> = true;

template <class T>
constexpr const char* dtype_name();
template <>
constexpr const char* dtype_name<float>() {
  return "float32";
}
template <>
constexpr const char* dtype_name<bf16>() {
  return "bfloat16";
}
template <>
constexpr const char* dtype_name<fp16>() {
  return "float16";
}
template <>
constexpr const char* dtype_name<double>() {
  return "float64";
}

// Converts between the element types the project uses (float, double, bf16, fp16). The 16-bit
// types go through float, which holds every one of their values exactly.
template <class To, class From>
FA2_HOST_DEVICE To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_16_bit_float_v<To>) {
    return To(static_cast<float>(x));
  } else if constexpr (is_16_bit_float_v<From>) {
    return static_cast<To>(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace fa2
