// bf16 and fp16 conversions: round to nearest even, exact widening, NaN and infinity preserved.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/bf16.hpp"
#include "common/random.hpp"

namespace {

// An independent model of round-to-nearest-even onto the bf16 grid, in double arithmetic.
double nearest_bf16(float f) {
  int exponent = 0;
  std::frexp(static_cast<double>(f), &exponent);     // f = m * 2^exponent, 0.5 <= |m| < 1
  const double ulp = std::ldexp(1.0, exponent - 8);  // bf16 keeps 8 significant bits
  const double scaled = static_cast<double>(f) / ulp;
  const double lo = std::floor(scaled);
  const double frac = scaled - lo;
  double q = lo;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(lo, 2.0) != 0.0)) q = lo + 1.0;
  return q * ulp;
}

}  // namespace

TEST_SUITE("bf16") {
  TEST_CASE("values on the bf16 grid survive the round trip and others go to the nearest") {
    for (float f : {0.0f, 1.0f, -2.0f, 0.5f, 1.0078125f}) {  // all representable in bf16
      CHECK(static_cast<float>(fa2::bf16(f)) == f);
    }
    for (float f : {3.0e38f, -1.0e-30f, 0.1f, 3.14159265f}) {  // not representable
      const float back = fa2::bf16(f);
      CHECK(back != f);
      CHECK(static_cast<double>(back) == nearest_bf16(f));
    }
  }

  TEST_CASE("ties round to the even neighbour") {
    // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: the even one is 1.
    CHECK(static_cast<float>(fa2::bf16(1.0f + 0x1p-8f)) == 1.0f);
    // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: the even one is 1 + 2^-6.
    CHECK(static_cast<float>(fa2::bf16(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);
    // Just above the tie rounds up.
    CHECK(static_cast<float>(fa2::bf16(1.0f + 0x1p-8f + 0x1p-20f)) == 1.0f + 0x1p-7f);
  }

  TEST_CASE("random floats round to the nearest bf16 value") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (int i = 0; i < 20000; ++i) {
      const auto f = static_cast<float>(rng.normal(0.0, 1000.0));
      const float got = fa2::bf16(f);
      REQUIRE(static_cast<double>(got) == nearest_bf16(f));
    }
  }

  TEST_CASE("NaN stays NaN and infinities stay infinite") {
    CHECK(std::isnan(static_cast<float>(fa2::bf16(std::numeric_limits<float>::quiet_NaN()))));
    CHECK(static_cast<float>(fa2::bf16(std::numeric_limits<float>::infinity())) ==
          std::numeric_limits<float>::infinity());
    CHECK(static_cast<float>(fa2::bf16(-std::numeric_limits<float>::infinity())) ==
          -std::numeric_limits<float>::infinity());
    // The largest finite float rounds up to infinity in bf16 (it is past bf16's largest value).
    CHECK(std::isinf(static_cast<float>(fa2::bf16(std::numeric_limits<float>::max()))));
  }
}

namespace {

// An independent model of round-to-nearest-even onto the fp16 grid, in double arithmetic: 11
// significant bits, steps no finer than 2^-24 (subnormals), infinity from 65520 on.
double nearest_fp16(float f) {
  const double x = static_cast<double>(f);
  if (std::fabs(x) >= 65520.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  int exponent = 0;
  std::frexp(x, &exponent);
  const double ulp = std::ldexp(1.0, std::max(exponent - 11, -24));
  const double scaled = x / ulp;
  const double lo = std::floor(scaled);
  const double frac = scaled - lo;
  double q = lo;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(lo, 2.0) != 0.0)) q = lo + 1.0;
  return q * ulp;
}

}  // namespace

TEST_SUITE("fp16") {
  TEST_CASE("fp16: known encodings, both ways") {
    CHECK(fa2::fp16(1.0f).bits == 0x3c00);
    CHECK(fa2::fp16(-2.0f).bits == 0xc000);
    CHECK(fa2::fp16(65504.0f).bits == 0x7bff);  // the largest finite value
    CHECK(fa2::fp16(0x1p-14f).bits == 0x0400);  // the smallest normal value
    CHECK(fa2::fp16(0x1p-24f).bits == 0x0001);  // the smallest subnormal value
    CHECK(static_cast<float>(fa2::fp16::from_bits(0x3555)) == 0x1.554p-2f);
    CHECK(static_cast<float>(fa2::fp16::from_bits(0x03ff)) == 1023 * 0x1p-24f);
    CHECK(static_cast<float>(fa2::fp16::from_bits(0x8000)) == 0.0f);
    CHECK(std::signbit(static_cast<float>(fa2::fp16::from_bits(0x8000))));
  }

  TEST_CASE("fp16: ties round to the even neighbour, also across the subnormals and at the top") {
    CHECK(static_cast<float>(fa2::fp16(1.0f + 0x1p-11f)) == 1.0f);
    CHECK(static_cast<float>(fa2::fp16(1.0f + 3 * 0x1p-11f)) == 1.0f + 0x1p-9f);
    CHECK(static_cast<float>(fa2::fp16(0x1p-25f)) == 0.0f);              // half the smallest subnormal
    CHECK(static_cast<float>(fa2::fp16(3 * 0x1p-25f)) == 2 * 0x1p-24f);  // 1.5 steps: to 2
    CHECK(static_cast<float>(fa2::fp16(65519.0f)) == 65504.0f);
    CHECK(std::isinf(static_cast<float>(fa2::fp16(65520.0f))));
  }

  TEST_CASE("fp16: random floats of every size round to the nearest fp16 value") {
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (int i = 0; i < 20000; ++i) {
      // Magnitudes from 2^-30 (under the subnormals) to 2^17 (past the largest value).
      const double magnitude = std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.uniform(-30.0, 17.0)));
      const auto f = static_cast<float>(rng.uniform(0.0, 1.0) < 0.5 ? -magnitude : magnitude);
      const float got = fa2::fp16(f);
      INFO("f = ", f);
      REQUIRE(static_cast<double>(got) == nearest_fp16(f));
      // Every fp16 value converts back to itself exactly.
      REQUIRE(fa2::fp16(got).bits == fa2::fp16(f).bits);
    }
  }

  TEST_CASE("fp16: NaN stays NaN and infinities stay infinite") {
    CHECK(std::isnan(static_cast<float>(fa2::fp16(std::numeric_limits<float>::quiet_NaN()))));
    CHECK(static_cast<float>(fa2::fp16(std::numeric_limits<float>::infinity())) ==
          std::numeric_limits<float>::infinity());
    CHECK(static_cast<float>(fa2::fp16(-1.0e6f)) == -std::numeric_limits<float>::infinity());
  }
}
