// flash_implementation(): wraps a forward launcher with flash_fwd_cuda's signature, a backward
// launcher with flash_bwd_cuda's, or both, as a registry entry;
// kernel_implementations(): one for every row of the variants table.
#include "step07_benchmark/harness/implementation.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common/cuda/device_buffer.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"

namespace fa2::bench {

FlashFwdArgs flash_args_for(const Problem& p, const AttentionBuffers& b) {
  const Extents<3> shape{p.heads(), p.N, p.D};
  const Extents<2> l_shape{p.heads(), p.N};
  FlashFwdArgs a = make_flash_args<bf16>(TensorView<const bf16, 3>(b.q, shape), TensorView<const bf16, 3>(b.k, shape),
                                         TensorView<const bf16, 3>(b.v, shape), TensorView<bf16, 3>(b.o, shape),
                                         TensorView<float, 2>(b.l, l_shape), p.causal);
  a.window = p.window;
  return a;
}

namespace {

// The float32 workspaces of our backward (D_i per row, dQ summed over the key tiles; with
// deterministic gradients, the int32 counters the key tiles take turns on), owned by the prepared
// run, and the arguments that point at them and at the problem's buffers.
struct BackwardWork {
  cuda::DeviceBuffer<float> d_rows, dq_accum;
  cuda::DeviceBuffer<std::int32_t> dq_semaphores;
  FlashBwdArgs args;

  BackwardWork(const Problem& p, const AttentionBuffers& b, bool deterministic)
      : d_rows(static_cast<std::size_t>(p.heads() * p.N)),
        dq_accum(static_cast<std::size_t>(p.qkv_elements())),
        dq_semaphores(deterministic ? static_cast<std::size_t>(dq_semaphore_count({p.heads(), p.N, p.D})) : 0) {
    const Extents<3> shape{p.heads(), p.N, p.D};
    const Extents<2> rows{p.heads(), p.N};
    args = make_flash_bwd_args<bf16>(TensorView<const bf16, 3>(b.q, shape), TensorView<const bf16, 3>(b.k, shape),
                                     TensorView<const bf16, 3>(b.v, shape), TensorView<const bf16, 3>(b.o, shape),
                                     TensorView<const float, 2>(b.l, rows), TensorView<const bf16, 3>(b.dout, shape),
                                     TensorView<float, 2>(d_rows.data(), rows), TensorView<bf16, 3>(b.dq, shape),
                                     TensorView<float, 3>(dq_accum.data(), shape), TensorView<bf16, 3>(b.dk, shape),
                                     TensorView<bf16, 3>(b.dv, shape), p.causal);
    args.deterministic = deterministic;
    args.window = p.window;
    if (deterministic) args.dq_semaphores = dq_semaphores.data();
  }
};

}  // namespace

Implementation flash_implementation(std::string name, std::string key, CudaLaunchFn fn, std::string family,
                                    std::function<std::string(const Problem&)> unsupported,
                                    std::function<std::string(const FlashFwdArgs&)> refuses, CudaBwdLaunchFn backward,
                                    std::function<std::string(const FlashFwdArgs&)> chooses,
                                    std::function<std::string(const FlashBwdArgs&)> chooses_backward,
                                    bool deterministic) {
  if (fn == nullptr && backward == nullptr)
    throw std::invalid_argument("flash_implementation(" + key + "): no launcher");
  Implementation impl;
  impl.name = std::move(name);
  impl.key = std::move(key);
  impl.family = std::move(family);
  impl.unsupported = [unsupported, has_forward = fn != nullptr, has_backward = backward != nullptr](const Problem& p) {
    if (p.backward() && !has_backward) return std::string("no backward pass");
    if (!p.backward() && !has_forward) return std::string("backward only");
    return unsupported ? unsupported(p) : std::string();
  };
  // Forward: O and L only, nothing else. Backward: D_i, the float32 dQ accumulator and, when
  // deterministic, the counters.
  impl.extra_bytes = [deterministic](const Problem& p) {
    if (!p.backward()) return std::size_t{0};
    const std::size_t counters =
        deterministic ? static_cast<std::size_t>(dq_semaphore_count({p.heads(), p.N, p.D})) * sizeof(std::int32_t) : 0;
    return static_cast<std::size_t>(p.heads() * p.N) * sizeof(float) +
           static_cast<std::size_t>(p.qkv_elements()) * sizeof(float) + counters;
  };
  impl.prepare = [fn, refuses, backward, chooses, chooses_backward, deterministic](
                     const Problem& p, const AttentionBuffers& b, cudaStream_t stream) {
    const FlashFwdArgs args = flash_args_for(p, b);
    validate(args);  // a bad argument is reported once here, not thrown from the timing loop
    if (refuses) {
      if (std::string why = refuses(args); !why.empty()) {
        throw NotRunnable(NotRunnable::Kind::unsupported, why);
      }
    }
    PreparedRun run;
    if (p.backward()) {
      auto work = std::make_shared<BackwardWork>(p, b, deterministic);
      validate(work->args);
      run.run = [backward, work, stream] { backward(work->args, stream); };
      if (chooses_backward) run.backend = chooses_backward(work->args);  // e.g. "v6b"
    } else {
      run.run = [fn, args, stream] { fn(args, stream); };
      if (chooses) run.backend = chooses(args);  // e.g. "v5 (v6: head_dim: v6 takes 64 or 128)"
    }
    return run;
  };
  return impl;
}

std::vector<Implementation> kernel_implementations() {
  std::vector<Implementation> out;
  for (const auto& v : variants::kernel_variants()) {
    if (v.cuda == nullptr && v.cuda_backward == nullptr) continue;
    const auto& variant = v;  // the table lives as long as the program
    const auto unsupported = [&variant](const Problem& p) {
      return variant.builds(DType::bfloat16, static_cast<int>(p.D))
                 ? std::string()
                 : "head dim " + std::to_string(p.D) + " (" + variant.key + " is built for other head dims)";
    };
    std::function<std::string(const FlashFwdArgs&)> refuses, chooses;
    std::function<std::string(const FlashBwdArgs&)> chooses_backward;
    if (v.refuses != nullptr) refuses = v.refuses;
    if (v.chooses != nullptr) chooses = v.chooses;
    if (v.chooses_backward != nullptr) chooses_backward = v.chooses_backward;
    out.push_back(flash_implementation(v.name(), v.key, v.cuda, v.family, unsupported, refuses, v.cuda_backward,
                                       chooses, chooses_backward));
    // The deterministic twins: the tuned entries' and every v6b row's (what deterministic dQ costs
    // is one of the things the sm90 backward's milestones are measured on).
    if (v.cuda_backward != nullptr && (v.key == "v5" || v.key.starts_with("v6b") || v.key == "fast")) {
      out.push_back(flash_implementation(v.name() + ", deterministic", v.key + "-det", nullptr, v.family, unsupported,
                                         refuses, v.cuda_backward, chooses, chooses_backward, true));
    }
  }
  return out;
}

}  // namespace fa2::bench
