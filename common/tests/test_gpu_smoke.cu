// GPU smoke test for common/cuda: allocate, copy both ways, run a kernel, check every
// element (the output is poisoned first, so an unwritten element cannot pass). The probe's
// messages for machines without a usable GPU are tested here too, with no GPU needed.
#include <cuda_runtime_api.h>

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

TEST_SUITE("probe") {
  using fa2::cuda::classify;
  using fa2::cuda::GpuProbe;

  TEST_CASE("a machine without an NVIDIA driver is told so and not told to upgrade a driver") {
    GpuProbe probe;  // what the runtime reports without libcuda: driver 0, "insufficient driver"
    probe.runtime_version = 13000;
    probe.count_error = static_cast<int>(cudaErrorInsufficientDriver);
    probe.count_error_name = "cudaErrorInsufficientDriver";
    const auto status = classify(probe);
    CHECK_FALSE(status.available);
    CHECK(status.reason == "no NVIDIA driver on this machine");
  }

  TEST_CASE("a driver older than the runtime names both CUDA versions") {
    GpuProbe probe;
    probe.driver_version = 12040;
    probe.runtime_version = 13000;
    probe.count_error = static_cast<int>(cudaErrorInsufficientDriver);
    const auto status = classify(probe);
    CHECK_FALSE(status.available);
    CHECK(status.reason == "NVIDIA driver too old: it supports CUDA 12.4, this program was built with CUDA 13.0");
  }

  TEST_CASE("a driver that sees no device says no GPU") {
    GpuProbe probe;
    probe.driver_version = probe.runtime_version = 13000;
    probe.count_error = static_cast<int>(cudaErrorNoDevice);
    CHECK(classify(probe).reason == "no GPU: the NVIDIA driver sees no CUDA device");
    probe.count_error = 0;  // some drivers report success and zero devices
    CHECK(classify(probe).reason == "no GPU: the NVIDIA driver sees no CUDA device");
  }

  TEST_CASE("a GPU older than sm_80 is named with its compute capability") {
    GpuProbe probe;
    probe.driver_version = probe.runtime_version = 13000;
    probe.device_count = 1;
    probe.name = "Tesla T4";
    probe.cc_major = 7;
    probe.cc_minor = 5;
    const auto status = classify(probe);
    CHECK_FALSE(status.available);
    CHECK(status.reason == "GPU too old: Tesla T4 is sm_75, needs sm_80 (bf16 tensor cores)");
  }

  TEST_CASE("an sm_80 or newer GPU is available") {
    GpuProbe probe;
    probe.driver_version = probe.runtime_version = 13000;
    probe.device_count = 1;
    probe.name = "NVIDIA H200";
    probe.cc_major = 9;
    probe.sm_count = 132;
    const auto status = classify(probe);
    CHECK(status.available);
    CHECK(status.reason.empty());
    CHECK(status.name == "NVIDIA H200");
    CHECK(status.sm_count == 132);
  }

  TEST_CASE("any other runtime error is reported with its CUDA name") {
    GpuProbe probe;
    probe.driver_version = probe.runtime_version = 13000;
    probe.count_error = static_cast<int>(cudaErrorDevicesUnavailable);
    probe.count_error_name = "cudaErrorDevicesUnavailable";
    probe.count_error_text = "CUDA-capable device(s) is/are busy or unavailable";
    CHECK(classify(probe).reason ==
          "GPU unusable: cudaGetDeviceCount failed with cudaErrorDevicesUnavailable "
          "(CUDA-capable device(s) is/are busy or unavailable)");
  }

  TEST_CASE("the probe on this machine gives a reason exactly when no GPU is usable") {
    const auto& status = fa2::cuda::gpu_status();
    CHECK(status.available == status.reason.empty());
  }
}
