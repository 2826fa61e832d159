// The leaderboard's GPU path (gpu_path.hpp): device buffers, the timed call (copy in, L2 flush,
// events around the launch, copy out), the `replay` self-test on the device, and SDPA's timings.
//   build/default/step07_benchmark/leaderboard/step07_leaderboard --kernel=step5
#include "step07_benchmark/leaderboard/gpu_path.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step07_benchmark/baselines/impl_torch.hpp"
#include "step07_benchmark/harness/bench_device.hpp"
#include "step07_benchmark/harness/bench_runner.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"
#include "step07_benchmark/harness/implementation.hpp"
#include "step07_benchmark/harness/nvml.hpp"
#include "step07_benchmark/harness/timing.hpp"
#include "step07_benchmark/kernels/lab/ladder/ladder.hpp"

namespace fa2::leaderboard {
namespace {

using CudaEntry = std::function<void(const FlashFwdArgs&, cudaStream_t)>;

// A stream of its own, destroyed with its owner.
class Stream {
 public:
  Stream() { FA2_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);  // no throw from a destructor
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

CudaLaunchFn cuda_launcher(Kernel kernel) {
  switch (kernel) {
    case Kernel::step5:
      return &flash_fwd_cuda;
    case Kernel::v2:
      return &ladder::v2_cuda;
    case Kernel::v3:
      return &ladder::v3_cuda;
    case Kernel::v4:
      return &ladder::v4_cuda;
  }
  throw std::invalid_argument("cuda_launcher: unknown kernel");
}

// The cached-output cheat on the device: the first call computes and keeps O and L in device
// memory; every later call copies them into its outputs, which is all its timed interval holds.
CudaEntry replaying_first_output(CudaEntry entry) {
  struct Cache {
    cuda::DeviceBuffer<std::byte> o, l;
    bool filled = false;
  };
  auto cache = std::make_shared<Cache>();
  return [entry = std::move(entry), cache](const FlashFwdArgs& args, cudaStream_t stream) {
    if (!cache->filled) {
      entry(args, stream);
      cache->o = cuda::DeviceBuffer<std::byte>(o_bytes(args));
      cache->l = cuda::DeviceBuffer<std::byte>(l_bytes(args));
      FA2_CUDA_CHECK(cudaMemcpyAsync(cache->o.data(), args.o, cache->o.bytes(), cudaMemcpyDeviceToDevice, stream));
      FA2_CUDA_CHECK(cudaMemcpyAsync(cache->l.data(), args.l, cache->l.bytes(), cudaMemcpyDeviceToDevice, stream));
      cache->filled = true;
      return;
    }
    FA2_CUDA_CHECK(cudaMemcpyAsync(args.o, cache->o.data(), cache->o.bytes(), cudaMemcpyDeviceToDevice, stream));
    FA2_CUDA_CHECK(cudaMemcpyAsync(args.l, cache->l.data(), cache->l.bytes(), cudaMemcpyDeviceToDevice, stream));
  };
}

CudaEntry cuda_entry(Kernel kernel, SelfTest test) {
  CudaEntry entry = cuda_launcher(kernel);
  switch (test) {
    case SelfTest::none:
      return entry;
    case SelfTest::replay:
      return replaying_first_output(std::move(entry));
    case SelfTest::unwritten:
      return [entry = std::move(entry)](const FlashFwdArgs& args, cudaStream_t stream) {
        entry(without_last_query(args), stream);
      };
  }
  throw std::invalid_argument("cuda_entry: unknown self-test");
}

template <class T>
void to_device(cuda::DeviceBuffer<T>& dst, const std::vector<T>& src, cudaStream_t stream) {
  FA2_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
}

template <class T>
void to_host(std::vector<T>& dst, const cuda::DeviceBuffer<T>& src, cudaStream_t stream) {
  FA2_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), dst.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
}

// What one run holds on the device: the problem's buffers, the stream, the flusher and NVML.
template <class T>
struct Device {
  explicit Device(const Shape& shape, int device)
      : qkv(static_cast<std::size_t>(shape.problem.qkv_elements())),
        q(qkv),
        k(qkv),
        v(qkv),
        o(qkv),
        l(static_cast<std::size_t>(shape.rows())),
        flusher(bench::l2_flush_bytes(device)) {}
  std::size_t qkv;
  cuda::DeviceBuffer<T> q, k, v, o;
  cuda::DeviceBuffer<float> l;
  Stream stream;
  bench::L2Flusher flusher;
};

// NVML's SM clock now, kept when NVML has one.
void read_clock(const bench::Nvml& nvml, GpuRun& out) {
  if (const auto mhz = nvml.sample().sm_mhz) out.sm_mhz.push_back(*mhz);
}

// SDPA beside the entry: prepared once on the run's buffers, then timed once in every timed call
// of the entry, on that call's inputs, right before or right after the entry (the order
// alternates), so that both see the same GPU state. Its output is not checked: it is the
// baseline, and step07_bench checks it. A failure of SDPA stops its timings and is noted; it is
// never the entry's.
class SdpaBeside {
 public:
  SdpaBeside(const Shape& shape, const std::string& key, Device<bf16>& dev, std::uint64_t seed, GpuRun& out)
      : dev_(dev), out_(out) {
    const bench::TorchStatus torch = bench::torch_status();
    if (!torch.built) {
      out.sdpa_note = torch.detail;
      return;
    }
    const std::vector<bench::Implementation> impls = bench::torch_implementations();
    const auto found = std::find_if(impls.begin(), impls.end(), [&](const auto& impl) { return impl.key == key; });
    if (found == impls.end()) {
      out.sdpa_note = "this build's Torch has no SDPA entry named '" + key + "'";
      return;
    }
    bench::AttentionBuffers buffers;
    buffers.q = dev.q.data();
    buffers.k = dev.k.data();
    buffers.v = dev.v.data();
    buffers.o = dev.o.data();
    buffers.l = dev.l.data();
    try {
      prepared_ = found->prepare(shape.problem, buffers, dev.stream.get());
      // One untimed call on random inputs: Torch's lazy set-up and its backend's plan.
      std::uint64_t salt = 0;
      for (cuda::DeviceBuffer<bf16>* x : {&dev.q, &dev.k, &dev.v}) {
        bench::fill_normal_bf16(x->data(), dev.qkv, seed ^ (0xa0761d6478bd642full * ++salt), dev.stream.get());
      }
      prepared_.run();
      FA2_CUDA_CHECK(cudaStreamSynchronize(dev.stream.get()));
    } catch (const std::exception& e) {
      out.sdpa_note = key + " did not run here: " + e.what();
      return;
    }
    key_ = key;
  }

  bool active() const { return !key_.empty(); }
  const std::vector<double>& ms() const { return ms_; }
  const std::string& backend() const { return prepared_.backend; }

  // One timed SDPA call on the inputs now in the device buffers.
  void time_once(const bench::Nvml& nvml) {
    if (!active()) return;
    const cudaStream_t stream = dev_.stream.get();
    try {
      dev_.flusher.flush(stream);
      FA2_CUDA_CHECK(cudaEventRecord(start_.get(), stream));
      prepared_.run();
      FA2_CUDA_CHECK(cudaEventRecord(end_.get(), stream));
      FA2_CUDA_CHECK(cudaStreamSynchronize(stream));
      ms_.push_back(bench::elapsed_ms(start_, end_));
      read_clock(nvml, out_);
    } catch (const std::exception& e) {
      out_.sdpa_note = key_ + " failed during the timings: " + e.what();
      key_.clear();
      ms_.clear();
    }
  }

 private:
  Device<bf16>& dev_;
  GpuRun& out_;
  std::string key_;  // empty: not timed
  bench::PreparedRun prepared_;
  bench::CudaEvent start_, end_;
  std::vector<double> ms_;
};

template <class T>
void run_typed(const Shape& shape, const Protocol& protocol, Kernel kernel, SelfTest self_test,
               const std::string& sdpa_key, int device, const bench::Nvml& nvml, GpuRun& out) {
  Device<T> dev(shape, device);
  const cudaStream_t stream = dev.stream.get();
  const CudaEntry entry = cuda_entry(kernel, self_test);
  std::unique_ptr<SdpaBeside> sdpa;
  if constexpr (std::is_same_v<T, bf16>) {
    sdpa = std::make_unique<SdpaBeside>(shape, sdpa_key, dev, protocol.seed, out);
  } else {
    out.sdpa_note = "SDPA not timed: the harness's SDPA entries take bf16 (impl_torch.cpp), this entry ran in " +
                    to_string(shape.dtype);
  }
  const bench::CudaEvent start, end;
  int call_index = 0;
  const TimedCall<T> call = [&](CallBuffers<T>& c) {
    const int index = call_index++;
    const bool timed = index >= protocol.warmup_calls;
    const bool sdpa_first = sdpa && timed && index % 2 == 1;
    // The inputs and the poisoned outputs go to the device; then the flush, so that the kernel
    // reads Q, K and V from device memory, as it would after other work.
    to_device(dev.q, c.Q.storage(), stream);
    to_device(dev.k, c.K.storage(), stream);
    to_device(dev.v, c.V.storage(), stream);
    to_device(dev.o, c.O.storage(), stream);
    to_device(dev.l, c.L.storage(), stream);
    if (sdpa_first) sdpa->time_once(nvml);  // SDPA reads Q, K, V and writes a tensor of its own, not O or L
    dev.flusher.flush(stream);
    const Extents<3> shape3{shape.problem.heads(), shape.problem.N, shape.problem.D};
    const Extents<2> shape2{shape.problem.heads(), shape.problem.N};
    const FlashFwdArgs args =
        make_flash_args<T>(TensorView<const T, 3>(dev.q.data(), shape3), TensorView<const T, 3>(dev.k.data(), shape3),
                           TensorView<const T, 3>(dev.v.data(), shape3), TensorView<T, 3>(dev.o.data(), shape3),
                           TensorView<float, 2>(dev.l.data(), shape2), shape.problem.causal);
    FA2_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    entry(args, stream);
    FA2_CUDA_CHECK(cudaEventRecord(end.get(), stream));
    FA2_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double ms = bench::elapsed_ms(start, end);
    if (timed) read_clock(nvml, out);
    to_host(c.O.storage(), dev.o, stream);
    to_host(c.L.storage(), dev.l, stream);
    FA2_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (sdpa && timed && !sdpa_first) sdpa->time_once(nvml);
    return ms;
  };
  out.checked = run_checked_calls<T>(shape, protocol, call);
  if (!out.checked.accepted) {
    if (sdpa && sdpa->active()) out.sdpa_note = "SDPA's time not reported: the entry was rejected";
    return;
  }
  if (sdpa && sdpa->active() && sdpa->ms().size() == out.checked.timed_ms.size()) {
    std::vector<double> ratios;
    for (std::size_t i = 0; i < sdpa->ms().size(); ++i) ratios.push_back(sdpa->ms()[i] / out.checked.timed_ms[i]);
    out.sdpa_ms = bench::summarize(sdpa->ms()).median;
    out.speed_vs_sdpa = bench::summarize(ratios).median;
    out.sdpa_backend = sdpa->backend();
  }
}

}  // namespace

GpuRun run_on_gpu(const Shape& shape, const Protocol& protocol, Kernel kernel, SelfTest self_test,
                  const std::string& sdpa_key) {
  const cuda::GpuStatus& gpu = cuda::gpu_status();
  if (!gpu.available) throw std::runtime_error("no usable GPU: " + gpu.reason + " (--host runs the host path)");
  constexpr int device = 0;
  FA2_CUDA_CHECK(cudaSetDevice(device));
  GpuRun out;
  out.device = bench::DeviceInfo::query(device).name;
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) (void)cudaGetLastError();
  const bench::Nvml nvml = bench::Nvml::open(bus_id);
  if (!nvml.available()) out.clock_note = "no SM clock readings: " + nvml.reason();
  if (shape.dtype == DType::bfloat16) {
    run_typed<bf16>(shape, protocol, kernel, self_test, sdpa_key, device, nvml, out);
  } else if (shape.dtype == DType::float32) {
    run_typed<float>(shape, protocol, kernel, self_test, sdpa_key, device, nvml, out);
  } else {
    throw std::invalid_argument("run_on_gpu: the leaderboard takes bf16 and float32, not " + to_string(shape.dtype));
  }
  return out;
}

}  // namespace fa2::leaderboard
