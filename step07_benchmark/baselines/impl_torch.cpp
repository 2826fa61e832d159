// PyTorch SDPA entries for step07_bench (see impl_torch.hpp); the only file that includes Torch.
// Our device buffers are wrapped as (B, H, N, D) tensors with from_blob (no copy), and Torch
// runs on our stream (getStreamFromExternal + CUDAStreamGuard), so the harness's events and L2
// flush bracket its kernels exactly like ours.
#include "step07_benchmark/baselines/impl_torch.hpp"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/headeronly/version.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fa2::bench {
namespace {

std::string backend_name(std::int64_t backend) {
  switch (static_cast<at::SDPBackend>(backend)) {
    case at::SDPBackend::math:
      return "math";
    case at::SDPBackend::flash_attention:
      return "flash";
    case at::SDPBackend::efficient_attention:
      return "efficient";
    case at::SDPBackend::cudnn_attention:
      return "cudnn";
    case at::SDPBackend::overrideable:
      return "overrideable";
    case at::SDPBackend::error:
      return "error";
  }
  return "unknown (" + std::to_string(backend) + ")";
}

// The first line of a Torch error, without the C++ backtrace.
std::string first_line(const c10::Error& e) {
  std::string msg = e.what_without_backtrace();
  if (const auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
  return msg;
}

// Sets PyTorch's SDPA backend switches for its lifetime and restores them afterwards (as
// torch.nn.attention.sdpa_kernel does in Python). With `only` set every other backend is off,
// math included, so SDPA must run that backend or raise: no silent fallback.
class SdpBackendGuard {
 public:
  explicit SdpBackendGuard(std::optional<at::SDPBackend> only) : only_(only) {
    if (!only_) return;
    auto& ctx = at::globalContext();
    flash_ = ctx.userEnabledFlashSDP();
    fa3_ = ctx.userEnabledFA3SDP();
    mem_ = ctx.userEnabledMemEfficientSDP();
    math_ = ctx.userEnabledMathSDP();
    cudnn_ = ctx.userEnabledCuDNNSDP();
    overrideable_ = ctx.userEnabledOverrideableSDP();
    ctx.setSDPUseFlash(*only_ == at::SDPBackend::flash_attention);
    ctx.setSDPUseFA3(false);  // "flash" here means FlashAttention-2
    ctx.setSDPUseMemEfficient(*only_ == at::SDPBackend::efficient_attention);
    ctx.setSDPUseMath(*only_ == at::SDPBackend::math);
    ctx.setSDPUseCuDNN(*only_ == at::SDPBackend::cudnn_attention);
    ctx.setSDPUseOverrideable(false);
  }
  ~SdpBackendGuard() {
    if (!only_) return;
    auto& ctx = at::globalContext();
    ctx.setSDPUseFlash(flash_);
    ctx.setSDPUseFA3(fa3_);
    ctx.setSDPUseMemEfficient(mem_);
    ctx.setSDPUseMath(math_);
    ctx.setSDPUseCuDNN(cudnn_);
    ctx.setSDPUseOverrideable(overrideable_);
  }
  SdpBackendGuard(const SdpBackendGuard&) = delete;
  SdpBackendGuard& operator=(const SdpBackendGuard&) = delete;

 private:
  std::optional<at::SDPBackend> only_;
  bool flash_ = true, fa3_ = false, mem_ = true, math_ = true, cudnn_ = true, overrideable_ = true;
};

// Torch's CUDA state (allocator included) is set up on first use; make that now, not inside a
// timed call, and answer the device our buffers live on (the current one, device 0 by default).
c10::DeviceIndex initialised_device() {
  at::globalContext().lazyInitDevice(at::kCUDA);
  return c10::cuda::current_device();
}

// One problem's tensors and stream. The tensors view our buffers and own nothing. For a
// backward problem, Q, K and V are leaves that require gradients, and one forward pass builds
// the graph whose backward each timed run repeats (retain_graph): what is timed is SDPA's
// backward alone, as ours is.
class TorchSdpa {
 public:
  TorchSdpa(const Problem& p, const AttentionBuffers& b, cudaStream_t stream, std::optional<at::SDPBackend> forced)
      : device_(initialised_device()),
        stream_(c10::cuda::getStreamFromExternal(stream, device_)),
        causal_(p.causal),
        backward_(p.backward()),
        forced_(forced) {
    q_ = wrap(const_cast<bf16*>(b.q), p);  // for_blob takes a non-const pointer; SDPA only reads q, k, v
    k_ = wrap(const_cast<bf16*>(b.k), p);
    v_ = wrap(const_cast<bf16*>(b.v), p);
    o_ = wrap(b.o, p);
    if (backward_) {
      for (at::Tensor* leaf : {&q_, &k_, &v_}) leaf->requires_grad_(true);
      dout_ = wrap(const_cast<bf16*>(b.dout), p);  // read only
      dq_ = wrap(b.dq, p);
      dk_ = wrap(b.dk, p);
      dv_ = wrap(b.dv, p);
    }
  }

  ~TorchSdpa() {
    try {  // hand the allocator's cached blocks back, so that later entries (cuBLAS's S and P) find them free
      stream_.synchronize();
      c10::cuda::CUDACachingAllocator::emptyCache();
    } catch (...) {  // a destructor must not throw; a CUDA error will surface at the next checked call
    }
  }
  TorchSdpa(const TorchSdpa&) = delete;
  TorchSdpa& operator=(const TorchSdpa&) = delete;

  // The backend SDPA picks for these tensors under the guard's switches (throws if none).
  std::int64_t choice() const {
    const c10::cuda::CUDAStreamGuard on_stream(stream_);
    const SdpBackendGuard switches(forced_);
    return at::_fused_sdp_choice(q_, k_, v_, std::nullopt, 0.0, causal_);
  }

  // One forward pass on our stream; the output is a fresh tensor from Torch's caching allocator.
  at::Tensor call() const {
    const c10::cuda::CUDAStreamGuard on_stream(stream_);
    const SdpBackendGuard switches(forced_);
    return at::scaled_dot_product_attention(q_, k_, v_, std::nullopt, 0.0, causal_);
  }

  void call_into_o() {
    const at::Tensor out = call();
    const c10::cuda::CUDAStreamGuard on_stream(stream_);
    o_.copy_(out);
  }

  // The forward whose graph the backward runs reuse (backward problems only).
  void build_graph() {
    const c10::cuda::CUDAStreamGuard on_stream(stream_);
    graph_out_ = call();
    stream_.synchronize();
  }

  // One backward pass on our stream: dQ, dK, dV as fresh tensors from Torch's allocator.
  std::vector<at::Tensor> call_backward() const {
    const c10::cuda::CUDAStreamGuard on_stream(stream_);
    return torch::autograd::grad({graph_out_}, {q_, k_, v_}, {dout_}, /*retain_graph=*/true);
  }

  void call_backward_into_grads() {
    const std::vector<at::Tensor> grads = call_backward();
    const c10::cuda::CUDAStreamGuard on_stream(stream_);
    dq_.copy_(grads.at(0));
    dk_.copy_(grads.at(1));
    dv_.copy_(grads.at(2));
  }

  // A (B, H, N, D) contiguous bf16 view of our device buffer: no copy, no ownership. The device
  // is given, so Torch does not have to ask the driver where the pointer lives.
  at::Tensor wrap(bf16* data, const Problem& p) const {
    const std::vector<std::int64_t> shape = {p.B, p.H, p.N, p.D};
    const at::Device device(at::kCUDA, device_);
    return at::for_blob(data, shape)
        .options(at::TensorOptions().dtype(at::kBFloat16).device(device))
        .target_device(device)
        .make_tensor();
  }

  // Bytes Torch's allocator holds at its peak during one call, beyond what it held before.
  std::size_t peak_extra_bytes() const {
    namespace alloc = c10::cuda::CUDACachingAllocator;
    constexpr auto aggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    stream_.synchronize();
    const std::int64_t before = alloc::getDeviceStats(device_).allocated_bytes[aggregate].current;
    alloc::resetPeakStats(device_);
    if (backward_) {
      const std::vector<at::Tensor> grads = call_backward();
      stream_.synchronize();
    } else {
      const at::Tensor out = call();
      stream_.synchronize();
    }
    const std::int64_t peak = alloc::getDeviceStats(device_).allocated_bytes[aggregate].peak;
    return peak > before ? static_cast<std::size_t>(peak - before) : 0;
  }

 private:
  c10::DeviceIndex device_;
  c10::cuda::CUDAStream stream_;
  bool causal_;
  bool backward_;
  std::optional<at::SDPBackend> forced_;
  at::Tensor q_, k_, v_, o_;
  at::Tensor dout_, dq_, dk_, dv_, graph_out_;  // backward problems only
};

Implementation sdpa_implementation(std::string name, std::string key, std::optional<at::SDPBackend> forced) {
  Implementation impl;
  impl.name = std::move(name);
  impl.key = std::move(key);
  impl.family = "torch";
  impl.unsupported = [](const Problem& p) {  // Torch decides the rest, in prepare
    return p.window.bounded() ? std::string("no sliding window (SDPA takes none)") : std::string();
  };
  impl.extra_bytes = [](const Problem&) { return std::size_t{0}; };  // measured instead
  impl.prepare = [forced](const Problem& p, const AttentionBuffers& b, cudaStream_t stream) {
    auto sdpa = std::make_shared<TorchSdpa>(p, b, stream, forced);
    std::int64_t picked = static_cast<std::int64_t>(at::SDPBackend::error);
    try {
      picked = sdpa->choice();
    } catch (const c10::Error& e) {
      if (forced) {
        throw NotRunnable(NotRunnable::Kind::unavailable, "PyTorch has no " +
                                                              backend_name(static_cast<std::int64_t>(*forced)) +
                                                              " kernel for this problem: " + first_line(e));
      }
      throw;
    }
    if (forced && picked != static_cast<std::int64_t>(*forced)) {
      throw NotRunnable(NotRunnable::Kind::unavailable, "forced " + backend_name(static_cast<std::int64_t>(*forced)) +
                                                            " but SDPA would run " + backend_name(picked));
    }
    PreparedRun run;
    run.backend = backend_name(picked);
    if (p.backward()) {
      sdpa->build_graph();
      run.run = [sdpa] { (void)sdpa->call_backward(); };
      run.run_into_outputs = [sdpa] { sdpa->call_backward_into_grads(); };
    } else {
      run.run = [sdpa] { (void)sdpa->call(); };
      run.run_into_outputs = [sdpa] { sdpa->call_into_o(); };
    }
    run.measure_extra_bytes = [sdpa]() -> std::optional<std::size_t> { return sdpa->peak_extra_bytes(); };
    return run;
  };
  return impl;
}

std::string cudnn_version_text(long v) {
  // cuDNN 9 encodes major*10000 + minor*100 + patch (cuDNN 8: major*1000 + minor*100 + patch).
  const long major = v >= 90000 ? v / 10000 : v / 1000;
  const long minor = v >= 90000 ? (v / 100) % 100 : (v / 100) % 10;
  const long patch = v % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

TorchStatus torch_status() {
  TorchStatus s;
  s.built = true;
  s.detail = std::string("PyTorch ") + TORCH_VERSION + " (libtorch)";
  try {
    const auto& hooks = at::detail::getCUDAHooks();
    if (hooks.hasCuDNN()) {
      s.detail += ", cuDNN " + cudnn_version_text(hooks.versionRuntimeCuDNN()) + " (runtime; built with " +
                  cudnn_version_text(hooks.versionCuDNN()) + ")";
    } else {
      s.detail += ", no cuDNN";
    }
  } catch (const std::exception& e) {
    s.detail += std::string(", cuDNN version unknown: ") + e.what();
  }
  return s;
}

std::vector<Implementation> torch_implementations() {
  std::vector<Implementation> out;
  out.push_back(sdpa_implementation("PyTorch SDPA, default backend", "sdpa", std::nullopt));
  out.push_back(sdpa_implementation("PyTorch SDPA, flash backend (FlashAttention-2) forced", "sdpa-fa2",
                                    at::SDPBackend::flash_attention));
  out.push_back(
      sdpa_implementation("PyTorch SDPA, cuDNN backend forced", "sdpa-cudnn", at::SDPBackend::cudnn_attention));
  out.push_back(sdpa_implementation("PyTorch SDPA, memory-efficient backend forced", "sdpa-mem",
                                    at::SDPBackend::efficient_attention));
  return out;
}

}  // namespace fa2::bench
