// Tests of step 4 on the GPU: the same two bodies launched with launch_on_device (one thread
// block per program) for several tile sizes and thread counts, and the plain-CUDA kernel
// (weighted_sum_plain.cuh), against the double reference, with guard elements around a strided
// device output. Skipped here without a GPU.
//   ctest --preset default -L gpu      (FA2_REQUIRE_GPU=1 turns a missing GPU into a failure)
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "common/random.hpp"
#include "common/testing.hpp"
#include "step04_weighted_sum/tests/weighted_sum_test_helpers.hpp"
#include "step04_weighted_sum/weighted_sum.hpp"
#include "step04_weighted_sum/weighted_sum_cuda.hpp"
#include "step04_weighted_sum/weighted_sum_launch.cuh"
#include "step04_weighted_sum/weighted_sum_plain.hpp"

namespace {

using namespace fa2;        // NOLINT(google-build-using-namespace)
using namespace fa2::test;  // NOLINT(google-build-using-namespace)

constexpr WeightedSumStyle styles[] = {WeightedSumStyle::pointer_math, WeightedSumStyle::tile_pointer};

template <class T, int Rank>
cuda::DeviceTensor<T, Rank> to_device(TensorView<const T, Rank> view) {
  auto staged = Tensor<T, Rank>::strided(view.shape(), view.strides());  // same strides on the device
  copy_convert<T, T, Rank>(view, staged.view());
  return cuda::DeviceTensor<T, Rank>(staged);
}

// One launch through the device-pointer API into a guarded output that lives on the GPU; the
// whole storage (guards and gaps included) comes back for checking.
template <int R, int C, int NT, class T>
GuardedOutput run_on_gpu(WeightedSumStyle style, TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  auto d_x = to_device<T, 2>(x);
  auto d_weight = to_device<T, 1>(weight);
  GuardedOutput out(x.size(0));
  cuda::DeviceBuffer<float> d_out(out.storage().size());
  d_out.upload(out.storage());
  const auto p = make_weighted_sum_params<T>(d_x.view(), d_weight.view(), out.view(d_out.data()));
  weighted_sum_fwd_cuda<R, C, NT>(style, p, nullptr);
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  d_out.download(out.storage().data(), out.storage().size());
  return out;
}

template <int R, int C, int NT, class T>
void check_gpu(TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  INFO("tiles ", R, " x ", C, ", ", NT, " threads, dtype ", dtype_name<T>());
  const auto ref = reference_weighted_sum<T>(x, weight);
  std::vector<std::vector<float>> results;
  for (const auto style : styles) {
    INFO("style ", to_string(style));
    auto out = run_on_gpu<R, C, NT, T>(style, x, weight);
    FA2_CHECK_CLOSE(out.cview(), ref.output.cview(), float32_sum_tolerance(x.size(1), ref.max_abs_sum), "output");
    CHECK(out.untouched_outside_rows());
    results.push_back(out.storage());
  }
  // Same layout, same loads, same shuffle tree: the two styles agree to the last bit here too.
  CHECK(results[0] == results[1]);
}

// The plain-CUDA kernel with R x C tiles on device views of x and weight (d_x, d_weight: copies
// of x, weight), into the same guarded output (NaN-poisoned rows).
template <int R, int C, class T>
void check_plain_gpu(TensorView<const T, 2> x, TensorView<const T, 1> weight, TensorView<const T, 2> d_x,
                     TensorView<const T, 1> d_weight) {
  INFO("plain CUDA, tiles ", R, " x ", C, " (", R, " threads per block), dtype ", dtype_name<T>());
  const auto ref = reference_weighted_sum<T>(x, weight);
  GuardedOutput out(x.size(0));
  cuda::DeviceBuffer<float> d_out(out.storage().size());
  d_out.upload(out.storage());
  const auto p = make_weighted_sum_params<T>(d_x, d_weight, out.view(d_out.data()));
  weighted_sum_plain_fwd_cuda<R, C>(p, nullptr);
  FA2_CUDA_CHECK(cudaDeviceSynchronize());
  d_out.download(out.storage().data(), out.storage().size());
  FA2_CHECK_CLOSE(out.cview(), ref.output.cview(), float32_sum_tolerance(x.size(1), ref.max_abs_sum), "output");
  CHECK(out.untouched_outside_rows());
}

template <int R, int C, class T>
void check_plain_gpu(TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  const auto d_x = to_device<T, 2>(x);
  const auto d_weight = to_device<T, 1>(weight);
  check_plain_gpu<R, C, T>(x, weight, d_x.view(), d_weight.view());
}

template <class T>
void check_plain_all_gpu(TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  check_plain_gpu<2, 4, T>(x, weight);     // the article's tiles: 2 threads per block
  check_plain_gpu<16, 64, T>(x, weight);   // half a warp per block
  check_plain_gpu<32, 128, T>(x, weight);  // one warp, a 16.5 KB x tile
  check_plain_gpu<128, 16, T>(x, weight);  // four warps, narrow column steps
  check_plain_gpu<64, 32, T>(x, weight);
}

template <class T>
void check_all_gpu(TensorView<const T, 2> x, TensorView<const T, 1> weight) {
  check_gpu<2, 4, 128, T>(x, weight);  // the article's tiles: most threads own no row
  check_gpu<2, 4, 256, T>(x, weight);
  check_gpu<16, 64, 128, T>(x, weight);   // 8 threads per row
  check_gpu<16, 64, 32, T>(x, weight);    // one warp: 2 threads per row, 32 columns each
  check_gpu<32, 128, 128, T>(x, weight);  // a realistic size: 4 threads per row
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("the article's example on the GPU sums to 550 r + 330 in both styles") {
    FA2_SKIP_WITHOUT_GPU();
    Tensor<float, 2> x(Extents<2>{5, 10});
    Tensor<float, 1> weight(Extents<1>{10});
    for (index_t r = 0; r < 5; ++r)
      for (index_t c = 0; c < 10; ++c) x(r, c) = static_cast<float>(10 * r + c);
    for (index_t c = 0; c < 10; ++c) weight(c) = static_cast<float>(c + 1);
    for (const auto style : styles) {
      INFO("style ", to_string(style));
      CHECK(weighted_sum_cuda<2, 4, float>(style, x.cview(), weight.cview()).storage() ==
            std::vector<float>{330, 880, 1430, 1980, 2530});
    }
  }

  TEST_CASE_TEMPLATE("both styles on the GPU match a double reference on ragged shapes", T, float, bf16) {
    FA2_SKIP_WITHOUT_GPU();
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    index_t rows = 0, cols = 0;
    SUBCASE("1 x 1") {
      rows = 1, cols = 1;
    }
    SUBCASE("3 x 17") {
      rows = 3, cols = 17;
    }
    SUBCASE("5 x 10") {
      rows = 5, cols = 10;
    }
    SUBCASE("1000 x 1000") {
      rows = 1000, cols = 1000;
    }
    SUBCASE("4099 x 300: thousands of programs") {
      rows = 4099, cols = 300;
    }
    CAPTURE(rows);
    CAPTURE(cols);
    const auto x = random_normal<T, 2>({rows, cols}, rng);
    const auto weight = random_normal<T, 1>({cols}, rng);
    check_all_gpu<T>(x.cview(), weight.cview());
  }

  TEST_CASE_TEMPLATE("a transposed x on the GPU is read through its strides 1 and N", T, float, bf16) {
    FA2_SKIP_WITHOUT_GPU();
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    auto x = Tensor<T, 2>::strided({301, 77}, {1, 301});
    fill_normal<T, 2>(x.view(), rng);
    const auto weight = random_normal<T, 1>({77}, rng);
    check_all_gpu<T>(x.cview(), weight.cview());
  }

  TEST_CASE("the GPU and the host run of the same body agree within the float32 bound") {
    FA2_SKIP_WITHOUT_GPU();
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_normal<bf16, 2>({777, 513}, rng);
    const auto weight = random_normal<bf16, 1>({513}, rng);
    const auto ref = reference_weighted_sum<bf16>(x.cview(), weight.cview());
    const auto tol = float32_sum_tolerance(513, ref.max_abs_sum);
    for (const auto style : styles) {
      INFO("style ", to_string(style));
      const auto gpu = weighted_sum_cuda<16, 64, bf16>(style, x.cview(), weight.cview());
      const auto host = weighted_sum_host<16, 64, bf16>(style, x.cview(), weight.cview());
      FA2_CHECK_CLOSE(gpu.cview(), ref.output.cview(), tol, "gpu output");
      FA2_CHECK_CLOSE(host.cview(), ref.output.cview(), tol, "host output");
    }
  }

  TEST_CASE_TEMPLATE("plain CUDA on the GPU matches a double reference on ragged shapes", T, float, bf16) {
    FA2_SKIP_WITHOUT_GPU();
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    index_t rows = 0, cols = 0;
    SUBCASE("1 x 1") {
      rows = 1, cols = 1;
    }
    SUBCASE("3 x 17") {
      rows = 3, cols = 17;
    }
    SUBCASE("5 x 10") {
      rows = 5, cols = 10;
    }
    SUBCASE("1000 x 1000") {
      rows = 1000, cols = 1000;
    }
    SUBCASE("4099 x 300: thousands of blocks") {
      rows = 4099, cols = 300;
    }
    CAPTURE(rows);
    CAPTURE(cols);
    const auto x = random_normal<T, 2>({rows, cols}, rng);
    const auto weight = random_normal<T, 1>({cols}, rng);
    check_plain_all_gpu<T>(x.cview(), weight.cview());
  }

  TEST_CASE_TEMPLATE("plain CUDA on the GPU reads a transposed x, a column slice and strided weights", T, float, bf16) {
    FA2_SKIP_WITHOUT_GPU();
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    auto x = Tensor<T, 2>::strided({301, 77}, {1, 301});  // transposed: every warp load a column
    fill_normal<T, 2>(x.view(), rng);
    const auto weight = random_normal<T, 1>({77}, rng);
    check_plain_all_gpu<T>(x.cview(), weight.cview());
    const auto wide = random_normal<T, 2>({70, 50}, rng);
    const TensorView<const T, 2> slice(wide.cview().data() + 7, {70, 33}, {50, 1});  // wide[:, 7:40]
    const auto every_other = random_normal<T, 1>({66}, rng);
    const TensorView<const T, 1> strided_weight(every_other.cview().data(), {33}, {2});
    check_plain_all_gpu<T>(slice, strided_weight);
  }

  TEST_CASE_TEMPLATE("plain CUDA on the GPU reads nothing around x and weight: the NaNs there stay out of the sums", T,
                     float, bf16) {
    FA2_SKIP_WITHOUT_GPU();
    // x (261, 45) inside a (263, 48) block of NaN, weight inside 47 NaNs, on the device as on the host.
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const index_t rows = 261, D = 45, pitch = D + 3;
    const T nan = convert<T>(std::numeric_limits<float>::quiet_NaN());
    Tensor<T, 2> x_block(Extents<2>{rows + 2, pitch}, nan);
    const TensorView<T, 2> x(x_block.view().data() + pitch + 1, {rows, D}, {pitch, 1});
    fill_normal<T, 2>(x, rng);
    Tensor<T, 1> weight_block(Extents<1>{D + 2}, nan);
    const TensorView<T, 1> weight(weight_block.view().data() + 1, {D}, {1});
    fill_normal<T, 1>(weight, rng);
    cuda::DeviceBuffer<T> d_x_block(x_block.storage().size()), d_weight_block(weight_block.storage().size());
    d_x_block.upload(x_block.storage());
    d_weight_block.upload(weight_block.storage());
    const TensorView<const T, 2> d_x(d_x_block.data() + pitch + 1, {rows, D}, {pitch, 1});
    const TensorView<const T, 1> d_weight(d_weight_block.data() + 1, {D}, {1});
    check_plain_gpu<2, 4, T>(x, weight, d_x, d_weight);
    check_plain_gpu<16, 64, T>(x, weight, d_x, d_weight);
    check_plain_gpu<32, 128, T>(x, weight, d_x, d_weight);
    check_plain_gpu<128, 16, T>(x, weight, d_x, d_weight);
  }

  TEST_CASE("plain CUDA: the GPU and the host emulation agree within the float32 bound, and with the article") {
    FA2_SKIP_WITHOUT_GPU();
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    const auto x = random_normal<bf16, 2>({777, 513}, rng);
    const auto weight = random_normal<bf16, 1>({513}, rng);
    const auto ref = reference_weighted_sum<bf16>(x.cview(), weight.cview());
    const auto tol = float32_sum_tolerance(513, ref.max_abs_sum);
    const auto gpu = weighted_sum_plain_cuda<16, 64, bf16>(x.cview(), weight.cview());
    const auto host = weighted_sum_plain_host<16, 64, bf16>(x.cview(), weight.cview());
    FA2_CHECK_CLOSE(gpu.cview(), ref.output.cview(), tol, "gpu output");
    FA2_CHECK_CLOSE(host.cview(), ref.output.cview(), tol, "host output");
    Tensor<float, 2> article_x(Extents<2>{5, 10});
    Tensor<float, 1> article_weight(Extents<1>{10});
    for (index_t r = 0; r < 5; ++r)
      for (index_t c = 0; c < 10; ++c) article_x(r, c) = static_cast<float>(10 * r + c);
    for (index_t c = 0; c < 10; ++c) article_weight(c) = static_cast<float>(c + 1);
    CHECK(weighted_sum_plain_cuda<2, 4, float>(article_x.cview(), article_weight.cview()).storage() ==
          std::vector<float>{330, 880, 1430, 1980, 2530});
  }

  TEST_CASE("the GPU launch rejects bad arguments before it launches") {
    FA2_SKIP_WITHOUT_GPU();
    WeightedSumParams<float> p;  // all pointers null
    p.NUM_ROWS = 5, p.D = 10, p.x_stride_row = 10, p.x_stride_dim = 1, p.weight_stride_dim = 1;
    p.output_stride_row = 1;
    CHECK_THROWS_WITH_AS((weighted_sum_fwd_cuda<16, 64>(WeightedSumStyle::tile_pointer, p, nullptr)),
                         "x_ptr: got a null pointer", std::invalid_argument);
    CHECK_THROWS_WITH_AS((weighted_sum_plain_fwd_cuda<16, 64>(p, nullptr)), "x_ptr: got a null pointer",
                         std::invalid_argument);
    FA2_CUDA_CHECK(cudaDeviceSynchronize());  // and nothing was left running or broken
  }
}
