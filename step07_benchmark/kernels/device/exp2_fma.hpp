// 2^x without the special-function unit: a cubic on the FMA units, for the share of a tile's
// exponentials v6.15 moves off MUFU (sm90/forward.cuh). The same code runs on the host, where
// tests/test_exp2_fma.cpp checks it against std::exp2.
//
// Why: MUFU computes 16 exponentials per clock per SM. At head dim 64 a 128 x 128 tile of S costs
// as many MUFU cycles (128 * 128 / 16 = 1024) as its two products cost tensor-core cycles
// (4 * 128 * 128 * 64 FLOP at about 4096 per clock), so the softmax cannot hide behind the other
// warpgroup's products. The FMA units are 128 lanes per SM and mostly idle; a dozen of their
// instructions per element is cheaper than waiting for MUFU, for a share of the elements.
//
// How: x = j + f with j = round(x) and f in [-1/2, 1/2]. 2^f comes from a cubic (relative error
// below 8e-5, far under bf16's 2e-3 rounding of P), 2^j is built directly in a float's exponent
// field, and 2^x = 2^f * 2^j. Rounding uses the float trick: adding 1.5 * 2^23 leaves round(x) in
// the low mantissa bits, so no conversion instruction (those run on MUFU-rate units) is needed.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define FA2_EXP2_FMA_QUALIFIERS __host__ __device__ __forceinline__
#else
#define FA2_EXP2_FMA_QUALIFIERS inline
#endif

namespace fa2::flash {

namespace detail {
FA2_EXP2_FMA_QUALIFIERS std::int32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_int(x);
#else
  return std::bit_cast<std::int32_t>(x);
#endif
}
FA2_EXP2_FMA_QUALIFIERS float bits_float(std::int32_t bits) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(bits);
#else
  return std::bit_cast<float>(bits);
#endif
}
}  // namespace detail

// Coefficients of 2^f ~ c0 + c1 f + c2 f^2 + c3 f^3 on [-1/2, 1/2], fitted for the least maximum
// relative error (7.5e-5 in float arithmetic).
inline constexpr float kExp2Cubic[4] = {0.99992806f, 0.69326097f, 0.24261098f, 0.05517152f};

// 2^x for x <= 127. Like ex2.approx.ftz, it returns 0 below about -126.5 (2^-inf = 0 included),
// where the result would be a denormal. NaN in gives an unspecified value: the kernels never pass
// one (a masked score is -inf).
FA2_EXP2_FMA_QUALIFIERS float exp2_fma(float x) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: x + kRound has round(x) in its low bits
  constexpr std::int32_t kRoundBits = 0x4B400000;
  x = x < -127.0f ? -127.0f : x;  // also maps -inf to -127, whose 2^j below is exactly 0
  const float shifted = x + kRound;
  const float j = shifted - kRound;  // round(x), exactly
  const float f = x - j;             // in [-1/2, 1/2]
  const float p = fmaf(fmaf(fmaf(kExp2Cubic[3], f, kExp2Cubic[2]), f, kExp2Cubic[1]), f, kExp2Cubic[0]);
  // 2^j as a float: the biased exponent j + 127 in bits 23-30 (j = -127 gives 0.0f).
  const std::int32_t j_int = detail::float_bits(shifted) - kRoundBits;
  const float two_j = detail::bits_float(static_cast<std::int32_t>(static_cast<std::uint32_t>(j_int + 127) << 23));
  return p * two_j;
}

}  // namespace fa2::flash

#undef FA2_EXP2_FMA_QUALIFIERS
