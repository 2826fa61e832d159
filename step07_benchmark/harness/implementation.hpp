// The registry entry of one attention implementation in step07_bench: how to tell whether it
// takes a problem, what device memory it needs, and how to prepare it once and then enqueue
// one forward pass on a stream (what the harness checks, then times).
//
// Our kernels come from the variants table (kernels/lab/variants.cpp): adding a kernel with
// flash_fwd_cuda's signature is one row there, and kernel_implementations() registers it.
// Anything else (another library, another algorithm) fills an Implementation by hand, as
// baselines/impl_cublas.cu and baselines/impl_torch.cpp do.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/bf16.hpp"
#include "step05_fa2_kernel/flash_bwd.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step05_fa2_kernel/flash_fwd_cuda.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"

namespace fa2::bench {

// Device buffers of one problem, all (B, H, N, ...) contiguous, which is (B*H, N, ...) for our
// kernels. A forward reads Q, K, V and must leave its output in O; L is for those that also
// produce the logsumexp (ours, cuBLAS) and may be left alone by the others. A backward reads Q,
// K, V, O and L (the reference's forward of the same inputs) and dO, and must leave its
// gradients in dQ, dK, dV; those four are null in a forward problem.
struct AttentionBuffers {
  const bf16* q = nullptr;     // (B*H, N, D)
  const bf16* k = nullptr;     // (B*H, N, D)
  const bf16* v = nullptr;     // (B*H, N, D)
  bf16* o = nullptr;           // (B*H, N, D)
  float* l = nullptr;          // (B*H, N)
  const bf16* dout = nullptr;  // (B*H, N, D), backward only
  bf16* dq = nullptr;          // (B*H, N, D), backward only
  bf16* dk = nullptr;          // (B*H, N, D), backward only
  bf16* dv = nullptr;          // (B*H, N, D), backward only
};

// An implementation made ready for one problem: workspaces allocated, handles created.
// Whatever it owns lives in the captures of its functions and is freed when it is destroyed.
struct PreparedRun {
  std::function<void()> run;  // enqueues one pass (the problem's) on the stream: what is timed
  // The same, leaving the result where the harness checks it: O for a forward, dQ, dK, dV for a
  // backward (empty: `run` already does; Torch copies its outputs there).
  std::function<void()> run_into_outputs;
  // Device bytes used beyond Q, K, V (e.g. Torch's allocator peak around one call); empty:
  // the harness counts O, L and Implementation::extra_bytes instead.
  std::function<std::optional<std::size_t>()> measure_extra_bytes;
  std::string backend;  // what will run, when known (e.g. "cudnn")
};

// Thrown by `prepare` when an implementation cannot run a problem here for a reason that is not
// a bug: not enough free device memory (skipped) or a forced backend refusing it (unavailable).
class NotRunnable : public std::runtime_error {
 public:
  enum class Kind { skipped, unavailable, unsupported };
  NotRunnable(Kind kind, const std::string& why) : std::runtime_error(why), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

struct Implementation {
  std::string name;    // for people: "ours 64x64 tiles, 4 warps"
  std::string key;     // for tables, CSV and --impl: "ours64x64" (short, no spaces)
  std::string family;  // "ours", "ladder", "sm80", "sm90", "product", "torch", "cublas"
  // "" when the problem is supported, otherwise why not (e.g. "head dim 96").
  std::function<std::string(const Problem&)> unsupported;
  // Device bytes it allocates beyond the problem's buffers (S and P for standard attention, the
  // backward's workspaces for ours).
  std::function<std::size_t(const Problem&)> extra_bytes;
  std::function<PreparedRun(const Problem&, const AttentionBuffers&, cudaStream_t)> prepare;
};

// An Implementation that calls `fn` (the forward; null for a backward-only kernel) on the
// problem's buffers, viewed as (B*H, N, D).
//   unsupported : narrows the problems it takes, from the Problem alone (head dims, ...);
//   refuses     : the same from the real arguments (alignment, dtype...), asked once in
//                 prepare, e.g. a plan's refusal (fa2::flash::plan_forward); "" means it runs;
//   backward    : the kernel's backward launcher, with flash_bwd_cuda's signature, for the
//                 backward problems (null: it has none, and says so).
//   chooses     : for a launcher that picks among kernels, which one these arguments get and
//                 why; it becomes the measurement's backend (the log and the CSV show it);
//   chooses_backward : the same for its backward;
//   deterministic : the backward with deterministic gradients (FlashBwdArgs::deterministic, its
//                 dq_semaphores allocated with the other workspaces).
// validate() is also called once in prepare, so bad arguments never reach the timing loop.
Implementation flash_implementation(std::string name, std::string key, CudaLaunchFn fn, std::string family = "product",
                                    std::function<std::string(const Problem&)> unsupported = {},
                                    std::function<std::string(const FlashFwdArgs&)> refuses = {},
                                    CudaBwdLaunchFn backward = nullptr,
                                    std::function<std::string(const FlashFwdArgs&)> chooses = {},
                                    std::function<std::string(const FlashBwdArgs&)> chooses_backward = {},
                                    bool deterministic = false);

// Every row of the variants table that has a GPU launcher, in the table's order, and after the
// tuned backwards (v5, v6b, fast) their deterministic twins, keyed v5-det, v6b-det, fast-det.
std::vector<Implementation> kernel_implementations();

// The arguments flash_implementation passes: Q, K, V, O as (B*H, N, D), L as (B*H, N).
FlashFwdArgs flash_args_for(const Problem& p, const AttentionBuffers& b);

}  // namespace fa2::bench
