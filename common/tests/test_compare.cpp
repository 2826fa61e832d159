// compare_close follows torch.testing.assert_close: |a - b| <= atol + rtol * |b|, NaN fails.
#include <limits>

#include "common/compare.hpp"
#include "common/testing.hpp"

using fa2::Tensor;
using fa2::Tolerance;

TEST_SUITE("compare") {
  TEST_CASE("elements inside atol + rtol times |expected| pass and just outside fail") {
    Tensor<double, 1> expected({2}), actual({2});
    expected(0) = 10.0;
    expected(1) = -1.0;
    const Tolerance tol{0.1, 0.01};  // allowed: 0.2 for 10, 0.11 for -1
    actual(0) = 10.19;
    actual(1) = -1.109;
    CHECK(fa2::compare_close(actual.cview(), expected.cview(), tol).ok);
    actual(0) = 10.21;
    const auto r = fa2::compare_close(actual.cview(), expected.cview(), tol, "x");
    CHECK_FALSE(r.ok);
    CHECK(r.mismatched == 1);
    CHECK(r.worst_index == "(0,)");
    CHECK(r.summary().find("10.21") != std::string::npos);
  }

  TEST_CASE("NaN never passes and not even against NaN") {
    Tensor<float, 1> a({3}, 1.0f);
    Tensor<double, 1> b({3}, 1.0);
    a(1) = std::numeric_limits<float>::quiet_NaN();
    const auto r = fa2::compare_close(a.cview(), b.cview(), Tolerance{1e9, 1e9});
    CHECK_FALSE(r.ok);
    CHECK(r.worst_index == "(1,)");
    b(1) = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(fa2::compare_close(a.cview(), b.cview(), Tolerance{1e9, 1e9}).ok);
  }

  TEST_CASE("equal infinities pass and opposite ones fail") {
    Tensor<double, 1> a({1}, std::numeric_limits<double>::infinity());
    Tensor<double, 1> b({1}, std::numeric_limits<double>::infinity());
    CHECK(fa2::compare_close(a.cview(), b.cview(), Tolerance{}).ok);
    b(0) = -b(0);
    CHECK_FALSE(fa2::compare_close(a.cview(), b.cview(), Tolerance{1e300, 0}).ok);
  }

  TEST_CASE("the report points at the worst element of a 3-D tensor") {
    Tensor<double, 3> a({2, 3, 4}, 0.0), b({2, 3, 4}, 0.0);
    a(0, 1, 2) = 0.5;
    a(1, 2, 3) = 2.0;  // the worst
    const auto r = fa2::compare_close(a.cview(), b.cview(), Tolerance{0.1, 0.0}, "O");
    CHECK(r.mismatched == 2);
    CHECK(r.worst_index == "(1, 2, 3)");
    CHECK(r.worst_actual == 2.0);
    CHECK(r.max_abs_error == 2.0);
  }

  TEST_CASE("shapes that differ are reported and not compared") {
    Tensor<double, 2> a({2, 3}), b({3, 2});
    const auto r = fa2::compare_close(a.cview(), b.cview(), Tolerance{1, 1});
    CHECK_FALSE(r.ok);
    CHECK(r.summary().find("shape") != std::string::npos);
  }
}
