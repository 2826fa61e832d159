// The leaderboard's GPU path (built with CUDA only): the entry timed by CUDA events, each call after
// an L2 flush (harness/timing.hpp), on inputs copied to the device; NVML's SM clock after each
// timed call (harness/nvml.hpp); PyTorch SDPA timed in the same calls, when the build has Torch.
//   build/default/step07_benchmark/leaderboard/step07_leaderboard --kernel=step5
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "step07_benchmark/leaderboard/checked_calls.hpp"
#include "step07_benchmark/leaderboard/entries.hpp"

namespace fa2::leaderboard {

struct GpuRun {
  CheckedRun checked;
  std::string device;            // the GPU's name
  std::vector<unsigned> sm_mhz;  // NVML's SM clock after each timed call, the entry's and SDPA's
  std::string clock_note;        // why there are no clock readings, when there are none
  // SDPA, timed in each timed call of the entry on the same inputs: the median of its times, and
  // the median over the calls of SDPA's time over the entry's (1: as fast as SDPA). Empty when the
  // entry was rejected or SDPA was not timed; sdpa_note then says why.
  std::optional<double> sdpa_ms;
  std::optional<double> speed_vs_sdpa;
  std::string sdpa_backend;  // the backend SDPA ran ("cudnn", "flash", ...)
  std::string sdpa_note;
};

// Checks and times `kernel` (with `self_test`'s cheat around it) through run_checked_calls on GPU
// 0. In each timed call, the SDPA entry `sdpa_key` of impl_torch.hpp (sdpa, sdpa-fa2, ...) is
// timed too, on the same inputs, after its own L2 flush, before the entry in odd calls and after it
// in even ones (bf16 only, and only in a build with Torch). Throws std::runtime_error when there is
// no usable GPU.
GpuRun run_on_gpu(const Shape& shape, const Protocol& protocol, Kernel kernel, SelfTest self_test,
                  const std::string& sdpa_key);

}  // namespace fa2::leaderboard
