// What the leaderboard times: a student's step 5 kernel, or one rung of step 7's ladder built from
// their code; how the host path calls it; and the checker's two self-tests, which wrap an entry
// so that it cheats in a known way (step07_leaderboard --self-test=replay|unwritten).
//   build/cpu-only/step07_benchmark/leaderboard/step07_leaderboard --host --kernel=v4 --self-test=replay
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step07_benchmark/leaderboard/checked_calls.hpp"

namespace fa2::leaderboard {

// step5: step05_fa2_kernel/flash_fwd_kernel.hpp (16 x 16 tiles); v2, v3, v4: the ladder's rungs
// (step07_benchmark/kernels/lab/ladder/, 64 x 64 tiles).
enum class Kernel { step5, v2, v3, v4 };
std::string to_string(Kernel kernel);
const std::vector<std::pair<std::string, Kernel>>& kernel_words();  // for --kernel

// The self-tests of the checker. Each wraps the entry: `replay` runs it once, then copies that
// first output into every later call's outputs (an entry that caches its result); `unwritten`
// runs it on all queries but the last of each head, whose row of O and L it never writes.
// Neither is a way to rank anything: a run with a self-test must end rejected.
enum class SelfTest { none, replay, unwritten };
std::string to_string(SelfTest test);
const std::vector<std::pair<std::string, SelfTest>>& self_test_words();  // for --self-test

// Bytes of one element of `dtype`, and of the outputs O and L of `args` (contiguous, as the
// leaderboard's are): what the `replay` self-test copies.
std::size_t element_bytes(DType dtype);
std::size_t o_bytes(const FlashFwdArgs& args);
std::size_t l_bytes(const FlashFwdArgs& args);

// The call `unwritten` makes instead of `args`: the same inputs and outputs, one query fewer.
FlashFwdArgs without_last_query(const FlashFwdArgs& args);

// A forward on host memory, as flash_fwd_host.
using HostEntry = std::function<void(const FlashFwdArgs&)>;

// The host launcher of a kernel (flash_fwd_host, fa2::ladder::v2_host, ...).
HostLaunchFn host_launcher(Kernel kernel);

// `entry` with a self-test's cheat around it (`entry` itself for SelfTest::none).
HostEntry with_self_test(HostEntry entry, SelfTest test);

// The host path's calls: the entry runs on the call's tensors in place, timed by the host's
// steady clock (one host thread plays every thread block, so the times are the interpreter's).
template <class T>
TimedCall<T> host_timed_call(HostEntry entry, bool causal);

}  // namespace fa2::leaderboard
