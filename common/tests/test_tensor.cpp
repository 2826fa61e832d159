// Strided views: offsets follow the strides, so a transposed or padded layout is just data.
#include <doctest/doctest.h>

#include <stdexcept>

#include "common/tensor.hpp"

TEST_SUITE("tensor") {
  TEST_CASE("contiguous strides are row-major like torch") {
    const auto s = fa2::contiguous_strides<3>({4, 128, 64});
    CHECK(s == fa2::Extents<3>{128 * 64, 64, 1});
  }

  TEST_CASE("a transposed view reads the same storage through swapped strides") {
    fa2::Tensor<int, 2> x({5, 10});
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 10; ++c) x(r, c) = 10 * r + c;
    const fa2::TensorView<const int, 2> xt(x.view().data(), {10, 5}, {1, 10});
    CHECK(xt(3, 4) == x(4, 3));
    CHECK_FALSE(xt.is_contiguous());
  }

  TEST_CASE("a strided tensor owns exactly the storage its view can reach") {
    // (B=2, N=3, D=4) with rows padded to 6 elements.
    auto t = fa2::Tensor<float, 3>::strided({2, 3, 4}, {18, 6, 1}, -1.0f);
    CHECK(t.storage().size() == 1 + 1 * 18 + 2 * 6 + 3);
    t(1, 2, 3) = 7.0f;
    CHECK(t.storage().back() == 7.0f);
    CHECK(t.storage()[4] == -1.0f);  // a gap: not part of the view
  }

  TEST_CASE("negative shapes are rejected with the offending shape in the message") {
    const auto make = [] { return fa2::Tensor<float, 2>(fa2::Extents<2>{-1, 3}); };
    CHECK_THROWS_WITH_AS(make(), doctest::Contains("(-1, 3)"), std::invalid_argument);
  }
}
