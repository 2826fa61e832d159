// bf16 conversions: round to nearest even, exact widening, NaN and infinity preserved.
#include <doctest/doctest.h>

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
