// GPU smoke test for common/cuda: allocate, copy both ways, run a kernel, check every
// element (the output is poisoned first, so an unwritten element cannot pass).
#include <cmath>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "common/random.hpp"
#include "common/testing.hpp"

namespace {

__global__ void axpy_kernel(const float* x, float* y, float a, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + 1.0f;
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("device buffers round-trip data and a kernel writes every element") {
    FA2_SKIP_WITHOUT_GPU();
    fa2::Rng rng(fa2::fresh_seed());
    INFO("seed ", rng.seed());
    const int n = 100003;  // not a multiple of the block size
    const auto x = fa2::random_normal<float, 1>({n}, rng);
    fa2::cuda::DeviceBuffer<float> dx(n), dy(n);
    dx.upload(x.storage());
    CHECK(dx.download() == x.storage());

    dy.fill_bytes(0xFF);  // NaN everywhere
    axpy_kernel<<<(n + 255) / 256, 256>>>(dx.data(), dy.data(), 2.0f, n);
    FA2_CUDA_CHECK_LAUNCH();
    FA2_CUDA_CHECK(cudaDeviceSynchronize());

    fa2::Tensor<float, 1> y({n});
    dy.download(y.storage().data(), static_cast<std::size_t>(n));
    fa2::Tensor<double, 1> expected({n});
    for (int i = 0; i < n; ++i) expected(i) = 2.0 * double(x(i)) + 1.0;
    FA2_CHECK_CLOSE(y.cview(), expected.cview(), (fa2::Tolerance{1e-6, 1e-6}), "y");
  }

  TEST_CASE("a failing CUDA call throws with the file and the error name") {
    FA2_SKIP_WITHOUT_GPU();
    void* p = nullptr;
    // 1 PiB cannot be allocated on any GPU.
    CHECK_THROWS_WITH_AS(FA2_CUDA_CHECK(cudaMalloc(&p, std::size_t{1} << 50)),
                         doctest::Contains("cudaErrorMemoryAllocation"), fa2::cuda::CudaError);
    cudaGetLastError();
  }
}
