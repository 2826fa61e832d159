// Tests of step 4 on the host: both weighted_sum_fwd styles, run by run_on_host, against a
// double reference on the article's example, ragged shapes, a transposed x and bf16 input;
// the two styles agree bit for bit; outputs land only where output_stride_row says.
//   cmake --build --preset default --target step04_host_tests && ctest --preset default -L step04
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/random.hpp"
#include "common/testing.hpp"
#include "step04_weighted_sum/tests/weighted_sum_test_helpers.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"

namespace {

using namespace fa2;        // NOLINT(google-build-using-namespace): test code reads like the kernels
using namespace fa2::test;  // NOLINT(google-build-using-namespace)

constexpr WeightedSumStyle styles[] = {WeightedSumStyle::pointer_math, WeightedSumStyle::tile_pointer};

// Runs one style with R x C tiles into a guarded, strided output and checks it against the
// reference, the guards, and the gaps between the rows.
template <int R, int C, class T>
void check_style(WeightedSumStyle style, TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  CAPTURE(R);
  CAPTURE(C);
  INFO("style ", to_string(style), ", dtype ", dtype_name<T>());
  const auto ref = reference_weighted_sum<T>(x, weight);
  GuardedOutput out(x.size(0));
  weighted_sum_host<R, C, T>(style, x, weight, out.view());
  FA2_CHECK_CLOSE(out.cview(), ref.output.cview(), float32_sum_tolerance(x.size(1), ref.max_abs_sum), "output");
  CHECK(out.untouched_outside_rows());
}

template <class T>
void check_all(TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  for (const auto style : styles) {
    check_style<2, 4, T>(style, x, weight);
    check_style<16, 64, T>(style, x, weight);
  }
}

}  // namespace

TEST_SUITE("weighted_sum") {
  TEST_CASE("the article's example: x = 0..49 as 5 x 10 with 2 x 4 tiles sums to 550 r + 330 in both styles") {
    Tensor<float, 2> x(Extents<2>{5, 10});
    Tensor<float, 1> weight(Extents<1>{10});
    for (index_t r = 0; r < 5; ++r)
      for (index_t c = 0; c < 10; ++c) x(r, c) = static_cast<float>(10 * r + c);
    for (index_t c = 0; c < 10; ++c) weight(c) = static_cast<float>(c + 1);
    // Row r: sum_c (10 r + c)(c + 1) = 550 r + 330, small integers: exact in float32.
    for (const auto style : styles) {
      INFO("style ", to_string(style));
      const auto out = weighted_sum_host<2, 4, float>(style, x.cview(), weight.cview());
      CHECK(out.storage() == std::vector<float>{330, 880, 1430, 1980, 2530});
    }
  }

  TEST_CASE_TEMPLATE("ragged shapes match a double reference in both styles and both tile sizes", T, float, bf16) {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    index_t rows = 0, cols = 0;
    SUBCASE("1 x 1: a single element, every tile mostly padding") {
      rows = 1, cols = 1;
    }
    SUBCASE("3 x 17: neither size a multiple of any tile") {
      rows = 3, cols = 17;
    }
    SUBCASE("5 x 10: the article's shape") {
      rows = 5, cols = 10;
    }
    SUBCASE("64 x 128: every tile full") {
      rows = 64, cols = 128;
    }
    SUBCASE("1000 x 1000: many programs and steps, ragged for 16 x 64") {
      rows = 1000, cols = 1000;
    }
    CAPTURE(rows);
    CAPTURE(cols);
    const auto x = random_normal<T, 2>({rows, cols}, rng);
    const auto weight = random_normal<T, 1>({cols}, rng);
    check_all<T>(x.cview(), weight.cview());
  }

  TEST_CASE_TEMPLATE("a transposed x with strides 1 and N gives the same sums as its contiguous copy", T, float, bf16) {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const index_t N = 37, D = 70;
    auto x = Tensor<T, 2>::strided({N, D}, {1, N});  // x = y.t() for a row-major y of shape (D, N)
    fill_normal<T, 2>(x.view(), rng);
    const auto contiguous = converted<T, T, 2>(x.cview());
    const auto weight = random_normal<T, 1>({D}, rng);
    check_all<T>(x.cview(), weight.cview());
    for (const auto style : styles) {
      INFO("style ", to_string(style));
      // Same values in the same order of summation: the layout must not change a single bit.
      CHECK(weighted_sum_host<16, 64, T>(style, x.cview(), weight.cview()).storage() ==
            weighted_sum_host<16, 64, T>(style, contiguous.cview(), weight.cview()).storage());
    }
  }

  TEST_CASE("a column slice of x and a strided or broadcast weight are read through their strides") {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto wide = random_normal<float, 2>({23, 50}, rng);
    const TensorView<const float, 2> x(wide.cview().data() + 7, {23, 33}, {50, 1});  // wide[:, 7:40]
    const auto every_other = random_normal<float, 1>({66}, rng);
    const TensorView<const float, 1> strided_weight(every_other.cview().data(), {33}, {2});
    check_all<float>(x, strided_weight);
    const float one = 1.0f;
    const TensorView<const float, 1> broadcast_weight(&one, {33}, {0});  // weight.expand(D): all ones
    check_all<float>(x, broadcast_weight);
  }

  TEST_CASE_TEMPLATE("the two styles agree bit for bit on the host", T, float, bf16) {
    // Same loads, same products, same order of additions: only how the addresses are made differs.
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_normal<T, 2>({131, 300}, rng);
    const auto weight = random_normal<T, 1>({300}, rng);
    CHECK(weighted_sum_host<2, 4, T>(WeightedSumStyle::pointer_math, x.cview(), weight.cview()).storage() ==
          weighted_sum_host<2, 4, T>(WeightedSumStyle::tile_pointer, x.cview(), weight.cview()).storage());
    CHECK(weighted_sum_host<16, 64, T>(WeightedSumStyle::pointer_math, x.cview(), weight.cview()).storage() ==
          weighted_sum_host<16, 64, T>(WeightedSumStyle::tile_pointer, x.cview(), weight.cview()).storage());
  }

  TEST_CASE("bf16 inputs are accumulated in float32: a row of 1000 ones sums to 1000 not 256") {
    // A bf16 running total stalls at 256: its spacing there is 2, so 256 + 1 rounds back to 256
    // (ties to even). A float32 total counts exactly to 2^24.
    const index_t D = 1000;
    Tensor<bf16, 2> x(Extents<2>{1, D}, bf16(1.0f));
    Tensor<bf16, 1> weight(Extents<1>{D}, bf16(1.0f));
    for (const auto style : styles) {
      INFO("style ", to_string(style));
      CHECK(weighted_sum_host<16, 64, bf16>(style, x.cview(), weight.cview())(0) == 1000.0f);
      CHECK(weighted_sum_host<2, 4, bf16>(style, x.cview(), weight.cview())(0) == 1000.0f);
    }
  }
}

TEST_SUITE("weighted_sum") {
  TEST_CASE("arguments are checked and the error names the bad one") {
    Tensor<float, 2> x(Extents<2>{5, 10}, 1.0f);
    Tensor<float, 1> weight(Extents<1>{10}, 1.0f), short_weight(Extents<1>{7}, 1.0f), out(Extents<1>{5});
    Tensor<float, 1> long_out(Extents<1>{6});
    const auto style = WeightedSumStyle::tile_pointer;
    using fa2::weighted_sum_host;

    CHECK_THROWS_WITH_AS((weighted_sum_host<2, 4, float>(style, x.cview(), short_weight.cview())),
                         doctest::Contains("weight: shape (7,) does not match the D = 10 columns"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS((weighted_sum_host<2, 4, float>(style, x.cview(), weight.cview(), long_out.view())),
                         doctest::Contains("output: shape (6,)"), std::invalid_argument);

    auto p = make_weighted_sum_params<float>(x.cview(), weight.cview(), out.view());
    CHECK_NOTHROW(validate(p));
    auto bad = p;
    bad.x_ptr = nullptr;
    CHECK_THROWS_WITH_AS((weighted_sum_fwd_host<2, 4>(style, bad)), "x_ptr: got a null pointer", std::invalid_argument);
    bad = p;
    bad.weight_ptr = nullptr;
    CHECK_THROWS_WITH_AS(validate(bad), "weight_ptr: got a null pointer", std::invalid_argument);
    bad = p;
    bad.output_ptr = nullptr;
    CHECK_THROWS_WITH_AS(validate(bad), "output_ptr: got a null pointer", std::invalid_argument);
    bad = p;
    bad.NUM_ROWS = 0;
    CHECK_THROWS_WITH_AS(validate(bad), doctest::Contains("NUM_ROWS: got 0"), std::invalid_argument);
    bad = p;
    bad.D = 0;
    CHECK_THROWS_WITH_AS(validate(bad), doctest::Contains("D: got 0"), std::invalid_argument);
    bad = p;
    bad.x_stride_row = -10;
    CHECK_THROWS_WITH_AS(validate(bad), doctest::Contains("x_stride_row: got -10"), std::invalid_argument);
    bad = p;
    bad.output_stride_row = 0;
    CHECK_THROWS_WITH_AS(validate(bad), doctest::Contains("output_stride_row: got 0"), std::invalid_argument);
    CHECK_THROWS_WITH_AS((weighted_sum_programs(std::numeric_limits<index_t>::max() / 2, 2)),
                         doctest::Contains("more than a grid can hold"), std::invalid_argument);
    CHECK(weighted_sum_programs(5, 2) == 3);

    // Nothing was written by the calls that threw.
    for (index_t r = 0; r < 5; ++r) CHECK(out(r) == 0.0f);
  }

  TEST_CASE("a program never writes rows of another program or past NUM_ROWS") {
    // 5 rows with 16-row tiles: one program, 11 of its 16 rows do not exist.
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_normal<float, 2>({5, 3}, rng);
    const auto weight = random_normal<float, 1>({3}, rng);
    for (const auto style : styles) {
      INFO("style ", to_string(style));
      GuardedOutput out(5);
      weighted_sum_host<16, 64, float>(style, x.cview(), weight.cview(), out.view());
      CHECK(out.untouched_outside_rows());
    }
  }
}
