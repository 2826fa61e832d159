// Tests of the plain-CUDA weighted_sum_fwd (weighted_sum_plain.cuh) run by the host emulation of
// CUDA: against the double reference on fresh random inputs, ragged and strided shapes, with
// NaN-poisoned outputs and guard elements; the same argument checks as the other two styles.
//   cmake --build --preset cpu-only --target step04_host_tests && ctest --preset cpu-only -L step04
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/random.hpp"
#include "common/testing.hpp"
#include "step04_weighted_sum/tests/weighted_sum_test_helpers.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"
#include "step04_weighted_sum/weighted_sum_plain.hpp"

namespace {

using namespace fa2;        // NOLINT(google-build-using-namespace): test code reads like the kernels
using namespace fa2::test;  // NOLINT(google-build-using-namespace)

// One emulated launch with R x C tiles into a guarded, strided, NaN-poisoned output, checked
// against the reference, the guards and the gaps between rows.
template <int R, int C, class T>
void check_plain(TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  INFO("tiles ", R, " x ", C, ", dtype ", dtype_name<T>());
  const auto ref = reference_weighted_sum<T>(x, weight);
  GuardedOutput out(x.size(0));
  weighted_sum_plain_host<R, C, T>(x, weight, out.view());
  FA2_CHECK_CLOSE(out.cview(), ref.output.cview(), float32_sum_tolerance(x.size(1), ref.max_abs_sum), "output");
  CHECK(out.untouched_outside_rows());
}

}  // namespace

TEST_SUITE("weighted_sum_plain") {
  TEST_CASE("plain CUDA on the host: the article's example sums to 550 r + 330") {
    Tensor<float, 2> x(Extents<2>{5, 10});
    Tensor<float, 1> weight(Extents<1>{10});
    for (index_t r = 0; r < 5; ++r)
      for (index_t c = 0; c < 10; ++c) x(r, c) = static_cast<float>(10 * r + c);
    for (index_t c = 0; c < 10; ++c) weight(c) = static_cast<float>(c + 1);
    CHECK(weighted_sum_plain_host<2, 4, float>(x.cview(), weight.cview()).storage() ==
          std::vector<float>{330, 880, 1430, 1980, 2530});
    CHECK(weighted_sum_plain_host<16, 64, float>(x.cview(), weight.cview()).storage() ==
          std::vector<float>{330, 880, 1430, 1980, 2530});
  }

  TEST_CASE_TEMPLATE("plain CUDA on the host matches a double reference on ragged shapes", T, float, bf16) {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    index_t rows = 0, cols = 0;
    SUBCASE("1 x 1: one element, the rest of every tile is padding") {
      rows = 1, cols = 1;
    }
    SUBCASE("3 x 17: neither size a multiple of a tile") {
      rows = 3, cols = 17;
    }
    SUBCASE("64 x 128: every tile full") {
      rows = 64, cols = 128;
    }
    SUBCASE("131 x 300: ragged in both directions, many blocks") {
      rows = 131, cols = 300;
    }
    CAPTURE(rows);
    CAPTURE(cols);
    const auto x = random_normal<T, 2>({rows, cols}, rng);
    const auto weight = random_normal<T, 1>({cols}, rng);
    check_plain<2, 4, T>(x.cview(), weight.cview());
    check_plain<16, 64, T>(x.cview(), weight.cview());
  }

  TEST_CASE("plain CUDA on the host: 1000 x 1000 with 16 x 64 tiles, 63 blocks of 16 threads") {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_normal<float, 2>({1000, 1000}, rng);
    const auto weight = random_normal<float, 1>({1000}, rng);
    check_plain<16, 64, float>(x.cview(), weight.cview());
  }

  TEST_CASE_TEMPLATE("plain CUDA on the host reads a transposed x through its strides 1 and N", T, float, bf16) {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const index_t N = 37, D = 70;
    auto x = Tensor<T, 2>::strided({N, D}, {1, N});  // x = y.t() for a row-major y of shape (D, N)
    fill_normal<T, 2>(x.view(), rng);
    const auto contiguous = converted<T, T, 2>(x.cview());
    const auto weight = random_normal<T, 1>({D}, rng);
    check_plain<2, 4, T>(x.cview(), weight.cview());
    check_plain<16, 64, T>(x.cview(), weight.cview());
    // The same values summed in the same order: the layout must not change a bit.
    CHECK(weighted_sum_plain_host<16, 64, T>(x.cview(), weight.cview()).storage() ==
          weighted_sum_plain_host<16, 64, T>(contiguous.cview(), weight.cview()).storage());
  }

  TEST_CASE("plain CUDA on the host: a column slice of x, a strided weight and a broadcast weight") {
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto wide = random_normal<float, 2>({23, 50}, rng);
    const TensorView<const float, 2> x(wide.cview().data() + 7, {23, 33}, {50, 1});  // wide[:, 7:40]
    const auto every_other = random_normal<float, 1>({66}, rng);
    const TensorView<const float, 1> strided_weight(every_other.cview().data(), {33}, {2});
    check_plain<2, 4, float>(x, strided_weight);
    check_plain<16, 64, float>(x, strided_weight);
    const float one = 1.0f;
    const TensorView<const float, 1> broadcast_weight(&one, {33}, {0});
    check_plain<16, 64, float>(x, broadcast_weight);
  }

  TEST_CASE_TEMPLATE("plain CUDA on the host reads nothing around x and weight: the NaNs there stay out of the sums", T,
                     float, bf16) {
    // x (61, 45) sits inside a (63, 48) block of NaN and weight inside 47 NaNs: a load past column
    // D - 1 (or before column 0) of a row that is stored puts a NaN into its total.
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const index_t rows = 61, D = 45, pitch = D + 3;
    const T nan = convert<T>(std::numeric_limits<float>::quiet_NaN());
    Tensor<T, 2> x_block(Extents<2>{rows + 2, pitch}, nan);
    const TensorView<T, 2> x(x_block.view().data() + pitch + 1, {rows, D}, {pitch, 1});
    fill_normal<T, 2>(x, rng);
    Tensor<T, 1> weight_block(Extents<1>{D + 2}, nan);
    const TensorView<T, 1> weight(weight_block.view().data() + 1, {D}, {1});
    fill_normal<T, 1>(weight, rng);
    check_plain<2, 4, T>(TensorView<const T, 2>(x), TensorView<const T, 1>(weight));
    check_plain<16, 64, T>(TensorView<const T, 2>(x), TensorView<const T, 1>(weight));
  }

  TEST_CASE("plain CUDA on the host accumulates bf16 in float32: 1000 ones sum to 1000") {
    Tensor<bf16, 2> x(Extents<2>{3, 1000}, bf16(1.0f));
    Tensor<bf16, 1> weight(Extents<1>{1000}, bf16(1.0f));
    CHECK(weighted_sum_plain_host<16, 64, bf16>(x.cview(), weight.cview()).storage() ==
          std::vector<float>{1000, 1000, 1000});
    CHECK(weighted_sum_plain_host<2, 4, bf16>(x.cview(), weight.cview()).storage() ==
          std::vector<float>{1000, 1000, 1000});
  }

  TEST_CASE("plain CUDA on the host: rows past NUM_ROWS are never written") {
    // 5 rows, 16-row tiles: one block of 16 threads, 11 of them without a row.
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_normal<float, 2>({5, 3}, rng);
    const auto weight = random_normal<float, 1>({3}, rng);
    check_plain<16, 64, float>(x.cview(), weight.cview());
  }

  TEST_CASE("plain CUDA on the host checks its arguments like the other styles and writes nothing on error") {
    Tensor<float, 2> x(Extents<2>{5, 10}, 1.0f);
    Tensor<float, 1> weight(Extents<1>{10}, 1.0f), short_weight(Extents<1>{7}, 1.0f), out(Extents<1>{5});
    CHECK_THROWS_WITH_AS((weighted_sum_plain_host<2, 4, float>(x.cview(), short_weight.cview())),
                         doctest::Contains("weight: shape (7,) does not match the D = 10 columns"),
                         std::invalid_argument);
    const auto p = make_weighted_sum_params<float>(x.cview(), weight.cview(), out.view());
    auto bad = p;
    bad.x_ptr = nullptr;
    CHECK_THROWS_WITH_AS((weighted_sum_plain_fwd_host<2, 4>(bad)), "x_ptr: got a null pointer", std::invalid_argument);
    bad = p;
    bad.D = 0;
    CHECK_THROWS_WITH_AS((weighted_sum_plain_fwd_host<16, 64>(bad)), doctest::Contains("D: got 0"),
                         std::invalid_argument);
    bad = p;
    bad.x_stride_dim = -1;
    CHECK_THROWS_WITH_AS((weighted_sum_plain_fwd_host<16, 64>(bad)), doctest::Contains("x_stride_dim: got -1"),
                         std::invalid_argument);
    bad = p;
    bad.output_stride_row = 0;
    CHECK_THROWS_WITH_AS((weighted_sum_plain_fwd_host<16, 64>(bad)), doctest::Contains("output_stride_row: got 0"),
                         std::invalid_argument);
    for (index_t r = 0; r < 5; ++r) CHECK(out(r) == 0.0f);
  }
}
