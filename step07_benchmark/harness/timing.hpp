// The timing harness: triton.testing.do_bench in C++. A first call (module load, handles), an
// estimate from a few runs, warm-up runs, then timed runs each preceded by an L2 flush and
// bracketed by their own pair of CUDA events; the median of those is the number reported. Beside
// it, isolated launches (--isolated): one launch at a time after an idle gap, as a profiler
// times it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "common/cuda/device_buffer.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"

namespace fa2::bench {

// A CUDA event with timing enabled, destroyed with its owner.
class CudaEvent {
 public:
  CudaEvent();
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Milliseconds between two recorded events (both must have completed).
double elapsed_ms(const CudaEvent& start, const CudaEvent& end);

// Evicts the inputs from L2 between timed runs by writing a buffer larger than L2 (do_bench
// zeroes a buffer for the same purpose), so that every run reads Q, K, V from device memory.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t bytes);
  void flush(cudaStream_t stream);
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  cuda::DeviceBuffer<unsigned char> buffer_;
};

// Twice the L2 size of `device` (read with cudaDeviceGetAttribute), and at least do_bench's
// 256 MB: 256 MiB on an H200, whose L2 is 60 MiB.
std::size_t l2_flush_bytes(int device);

struct Timing {
  Stats ms;      // per-run milliseconds of the timed runs
  RepPlan plan;  // warm-up and timed runs done
  double estimate_ms = 0.0;
  std::vector<double> samples;
};

// Times `enqueue` (which must only enqueue work on `stream`) the way do_bench does. Throws
// fa2::cuda::CudaError on a CUDA error and std::runtime_error if a run's time is not a positive
// finite number.
Timing do_bench(const std::function<void()>& enqueue, cudaStream_t stream, L2Flusher& flusher,
                const TimingBudget& budget);

// Times `enqueue` as a profiler sees one launch: after the first call, budget.isolated_launches
// launches, each alone: the host waits budget.gap_ms with nothing queued (the GPU idles, its
// clocks free to move), then enqueues an L2 flush and the launch between its events and waits for
// it. `after_each` (optional) runs right after each launch has finished, e.g. to read NVML. The
// plan reports 1 warm-up (the first call) and the launches. Throws as do_bench, and
// std::invalid_argument when budget.isolated_launches < 1.
Timing time_isolated(const std::function<void()>& enqueue, cudaStream_t stream, L2Flusher& flusher,
                     const TimingBudget& budget, const std::function<void()>& after_each = {});

}  // namespace fa2::bench
