// A host-and-device bfloat16: the top 16 bits of a float32 (8 exponent bits, 7 mantissa
// bits). Conversions from float round to nearest, ties to even, like the GPU's
// __float2bfloat16_rn; conversions to float are exact.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/host_device.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
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

// Element-type traits used by the kernels and the tests.
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
constexpr const char* dtype_name<double>() {
  return "float64";
}

// Converts between the element types the project uses (float, double, bf16). bf16 goes
// through float, which holds every bf16 value exactly.
template <class To, class From>
FA2_HOST_DEVICE To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bf16>) {
    return bf16(static_cast<float>(x));
  } else if constexpr (std::is_same_v<From, bf16>) {
    return static_cast<To>(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace fa2
