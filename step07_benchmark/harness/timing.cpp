// do_bench in C++ (see timing.hpp). Host code only: events, a memset for the L2 flush, and the
// caller's enqueue function.
#include "step07_benchmark/harness/timing.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "common/cuda/cuda_check.hpp"

namespace fa2::bench {

CudaEvent::CudaEvent() {
  FA2_CUDA_CHECK(cudaEventCreate(&event_));
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) cudaEventDestroy(event_);  // no throw from a destructor
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

double elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
  float ms = 0.0f;
  FA2_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return static_cast<double>(ms);
}

L2Flusher::L2Flusher(std::size_t bytes) : buffer_(bytes) {}

void L2Flusher::flush(cudaStream_t stream) {
  FA2_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0, buffer_.bytes(), stream));
}

std::size_t l2_flush_bytes(int device) {
  int l2 = 0;
  FA2_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const std::size_t twice = 2 * static_cast<std::size_t>(l2 > 0 ? l2 : 0);
  // do_bench's own buffer is 256 MB. The memset also gives the host a head start: while the GPU
  // writes it, the host enqueues the start event and the call, so launch overhead (PyTorch's
  // dispatcher costs tens of microseconds) stays outside the timed interval.
  const std::size_t do_bench_bytes = std::size_t{256} << 20;
  return twice > do_bench_bytes ? twice : do_bench_bytes;
}

namespace {

// The milliseconds between each pair of events, each checked to be a positive finite number.
std::vector<double> read_times(const std::vector<CudaEvent>& starts, const std::vector<CudaEvent>& ends,
                               const char* who) {
  std::vector<double> out;
  out.reserve(starts.size());
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const double ms = elapsed_ms(starts[i], ends[i]);
    if (!std::isfinite(ms) || ms <= 0.0) {
      throw std::runtime_error(std::string(who) + ": run " + std::to_string(i) + " took " + std::to_string(ms) +
                               " ms; a timed function must enqueue work on the stream it was given");
    }
    out.push_back(ms);
  }
  return out;
}

}  // namespace

Timing do_bench(const std::function<void()>& enqueue, cudaStream_t stream, L2Flusher& flusher,
                const TimingBudget& budget) {
  Timing t;
  // The first call pays for module loading, handle creation and allocator warm-up.
  enqueue();
  FA2_CUDA_CHECK(cudaStreamSynchronize(stream));

  // Estimate one run (flush included, as do_bench does) from a few runs.
  {
    const CudaEvent start, end;
    FA2_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    for (int i = 0; i < budget.estimate_runs; ++i) {
      flusher.flush(stream);
      enqueue();
    }
    FA2_CUDA_CHECK(cudaEventRecord(end.get(), stream));
    FA2_CUDA_CHECK(cudaEventSynchronize(end.get()));
    t.estimate_ms = elapsed_ms(start, end) / static_cast<double>(budget.estimate_runs > 0 ? budget.estimate_runs : 1);
  }
  t.plan = plan_reps(t.estimate_ms, budget);

  for (int i = 0; i < t.plan.warmup; ++i) enqueue();

  std::vector<CudaEvent> starts(static_cast<std::size_t>(t.plan.reps));
  std::vector<CudaEvent> ends(static_cast<std::size_t>(t.plan.reps));
  for (std::size_t i = 0; i < starts.size(); ++i) {
    flusher.flush(stream);
    FA2_CUDA_CHECK(cudaEventRecord(starts[i].get(), stream));
    enqueue();
    FA2_CUDA_CHECK(cudaEventRecord(ends[i].get(), stream));
  }
  FA2_CUDA_CHECK(cudaStreamSynchronize(stream));

  t.samples = read_times(starts, ends, "do_bench");
  t.ms = summarize(t.samples);
  return t;
}

Timing time_isolated(const std::function<void()>& enqueue, cudaStream_t stream, L2Flusher& flusher,
                     const TimingBudget& budget, const std::function<void()>& after_each) {
  if (budget.isolated_launches < 1) {
    throw std::invalid_argument("time_isolated: isolated_launches must be >= 1, got " +
                                std::to_string(budget.isolated_launches));
  }
  Timing t;
  enqueue();  // as in do_bench: module loading and handles stay out of the timed launches
  FA2_CUDA_CHECK(cudaStreamSynchronize(stream));
  t.plan.warmup = 1;
  t.plan.reps = budget.isolated_launches;
  const auto gap = std::chrono::duration<double, std::milli>(budget.gap_ms);
  std::vector<CudaEvent> starts(static_cast<std::size_t>(t.plan.reps));
  std::vector<CudaEvent> ends(static_cast<std::size_t>(t.plan.reps));
  for (std::size_t i = 0; i < starts.size(); ++i) {
    std::this_thread::sleep_for(gap);
    // The flush, enqueued with the launch rather than waited for, keeps the host's launch
    // overhead outside the events, as in do_bench.
    flusher.flush(stream);
    FA2_CUDA_CHECK(cudaEventRecord(starts[i].get(), stream));
    enqueue();
    FA2_CUDA_CHECK(cudaEventRecord(ends[i].get(), stream));
    FA2_CUDA_CHECK(cudaEventSynchronize(ends[i].get()));
    if (after_each) after_each();
  }
  t.samples = read_times(starts, ends, "time_isolated");
  t.ms = summarize(t.samples);
  t.estimate_ms = t.ms.median;
  return t;
}

}  // namespace fa2::bench
