// The cubic 2^x that v6.15 and v6.16 compute on the FMA units (kernels/device/exp2_fma.hpp), checked
// on the host against std::exp2 in double: the same code runs in the kernels. Run with
// ctest -R step07_variant_host_tests, or the binary with -ts=exp2_fma.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "step07_benchmark/kernels/device/exp2_fma.hpp"

using fa2::flash::exp2_fma;

TEST_SUITE("exp2_fma") {
  TEST_CASE("the cubic's 2^x is within 1e-4 relative of std::exp2 for x from -126 to 16") {
    // Every 1/1024 of a unit: covers each fraction f in [-1/2, 1/2] many times and every exponent.
    double worst = 0.0;
    float worst_x = 0.0f;
    for (int i = -126 * 1024; i <= 16 * 1024; ++i) {
      const float x = static_cast<float>(i) / 1024.0f;
      const double want = std::exp2(static_cast<double>(x));
      const double rel = std::abs(static_cast<double>(exp2_fma(x)) - want) / want;
      if (rel > worst) {
        worst = rel;
        worst_x = x;
      }
    }
    INFO("worst relative error " << worst << " at x = " << worst_x);
    // bf16 rounds P to 2^-9 = 2e-3 relative; the cubic's error (7.5e-5 at best in float) must
    // stay far below that, and above the float rounding of its inputs (6e-8).
    CHECK(worst < 1e-4);
    CHECK(worst > 1e-6);  // a cubic, not a call to exp2: the bound above is the one that binds
  }

  TEST_CASE("a masked score (-inf) and the denormal range give exactly 0, as ex2.approx.ftz does") {
    CHECK(exp2_fma(-std::numeric_limits<float>::infinity()) == 0.0f);
    CHECK(exp2_fma(-1000.0f) == 0.0f);
    CHECK(exp2_fma(-127.0f) == 0.0f);
    // The smallest normal float is still produced.
    CHECK(exp2_fma(-126.0f) == doctest::Approx(std::exp2(-126.0)).epsilon(1e-4));
  }

  TEST_CASE("the result is monotone where the softmax uses it, across the joins between exponents") {
    // A cubic fitted per unit interval could step down where round(x) changes; P's order matters
    // less than its values, but a step would show as a bias at those points: bound it.
    for (int j = -30; j <= 0; ++j) {
      const float below = std::nextafter(static_cast<float>(j) - 0.5f, -1000.0f);
      const float above = static_cast<float>(j) - 0.5f;
      INFO("join at x = " << above);
      CHECK(std::abs(static_cast<double>(exp2_fma(above)) / static_cast<double>(exp2_fma(below)) - 1.0) < 2e-4);
    }
  }
}
