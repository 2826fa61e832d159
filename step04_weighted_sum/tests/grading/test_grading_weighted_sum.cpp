// The grader's tests of step 4 (not in the starter kit), one test case per kernel, so that a
// failure names the kernel and costs that kernel's idea only (scripts/lib/grading/course.json):
// the three weighted sums (pointer maths, tile pointers, plain CUDA on the host emulation) on
// shapes the kit's tests do not use (one row, one column, one element, D = 1000, a row count one
// past a tile), with x transposed and weight strided, against a double reference, into a guarded
// output; and the plain kernel's barriers, with the emulation's threads taking turns.
//   ctest --preset cpu-only -R step04_grading   (in the instructor's repository)
#include <string>

#include "common/random.hpp"
#include "common/testing.hpp"
#include "step04_weighted_sum/cuda_primer/cuda_emulation.hpp"
#include "step04_weighted_sum/tests/weighted_sum_test_helpers.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"
#include "step04_weighted_sum/weighted_sum_plain.hpp"

namespace {

using fa2::index_t;
using fa2::Tensor;
using fa2::TensorView;

// Runs one style (or the plain kernel, style empty) with 16 x 64 tiles and checks the result.
template <class T>
void check(const std::string& style, TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  fa2::test::GuardedOutput out(x.size(0));
  if (style == "plain") {
    fa2::weighted_sum_plain_host<16, 64, T>(x, weight, out.view());
  } else {
    const auto s = style == "pointer_math" ? fa2::WeightedSumStyle::pointer_math : fa2::WeightedSumStyle::tile_pointer;
    fa2::weighted_sum_host<16, 64, T>(s, x, weight, out.view());
  }
  const auto ref = fa2::test::reference_weighted_sum<T>(x, weight);
  INFO(style, " rows ", x.size(0), " D ", x.size(1));
  FA2_CHECK_CLOSE(out.cview(), ref.output.cview(), fa2::test::float32_sum_tolerance(x.size(1), ref.max_abs_sum),
                  "output");
  CHECK(out.untouched_outside_rows());
}

template <class T>
void odd_shapes(const std::string& style) {
  fa2::Rng rng(fa2::fresh_seed());
  INFO("seed ", rng.seed());
  for (const auto& [rows, D] : {std::pair<index_t, index_t>{1, 1}, {1, 70}, {17, 1}, {17, 65}, {3, 1000}, {33, 64}}) {
    const auto x = fa2::random_normal<T, 2>({rows, D}, rng);
    const auto w = fa2::random_normal<T, 1>({D}, rng);
    check<T>(style, x.cview(), w.cview());
  }
}

// x read through its transpose's storage (strides 1 and rows), weight through a stride of 3.
void strided_inputs(const std::string& style) {
  fa2::Rng rng(fa2::fresh_seed());
  INFO("seed ", rng.seed());
  const index_t rows = 21, D = 45;
  const auto storage = fa2::random_normal<float, 2>({D, rows}, rng);  // x is its transpose
  const TensorView<const float, 2> x(storage.cview().data(), {rows, D}, {1, rows});
  const auto w_storage = fa2::random_normal<float, 1>({3 * D}, rng);
  const TensorView<const float, 1> w(w_storage.cview().data(), {D}, {3});
  check<float>(style, x, w);
}

}  // namespace

TEST_SUITE("weighted_sum+grading") {
  TEST_CASE_TEMPLATE("pointer-maths body: one row, one column, D = 1000 and one row past a tile", T, float, fa2::bf16) {
    odd_shapes<T>("pointer_math");
  }
  TEST_CASE("pointer-maths body: x read through a transposed view and weight through a stride of 3") {
    strided_inputs("pointer_math");
  }

  TEST_CASE_TEMPLATE("tile-pointer body: one row, one column, D = 1000 and one row past a tile", T, float, fa2::bf16) {
    odd_shapes<T>("tile_pointer");
  }
  TEST_CASE("tile-pointer body: x read through a transposed view and weight through a stride of 3") {
    strided_inputs("tile_pointer");
  }

  TEST_CASE_TEMPLATE("plain CUDA kernel: one row, one column, D = 1000 and one row past a tile", T, float, fa2::bf16) {
    odd_shapes<T>("plain");
  }
  TEST_CASE("plain CUDA kernel: x read through a transposed view and weight through a stride of 3") {
    strided_inputs("plain");
  }

  // With the threads taking turns between barriers (cuda_emulation.hpp, Schedule::in_turns), a
  // kernel without its first barrier reads tile elements that later threads have not loaded yet,
  // and one without its second overwrites the next tile while later threads still read this one:
  // wrong sums on every run, where the concurrent schedule only usually gives them.
  TEST_CASE_TEMPLATE("plain CUDA kernel, barriers: with the threads taking turns, every row is right over many tiles",
                     T, float, fa2::bf16) {
    const fa2::cuda_emulation::ScopedSchedule in_turns(fa2::cuda_emulation::Schedule::in_turns);
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    for (const auto& [rows, D] : {std::pair<index_t, index_t>{16, 256}, {40, 200}, {5, 130}}) {
      const auto x = fa2::random_normal<T, 2>({rows, D}, rng);
      const auto w = fa2::random_normal<T, 1>({D}, rng);
      check<T>("plain", x.cview(), w.cview());
    }
  }
}
