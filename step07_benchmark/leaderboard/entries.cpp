// The leaderboard's entries on the host (entries.hpp): the kernels' host launchers, the
// self-tests' wrappers, and the host path's timed call.
//   build/cpu-only/step07_benchmark/leaderboard/step07_leaderboard --host --help
#include "step07_benchmark/leaderboard/entries.hpp"

#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "step07_benchmark/kernels/lab/ladder/ladder.hpp"

namespace fa2::leaderboard {
namespace {

// The cached-output cheat on the host: the first call computes and keeps O and L, every later call
// copies them into its outputs. The leaderboard's outputs are contiguous, so O and L are one block
// each.
HostEntry replaying_first_output(HostEntry entry) {
  struct Cache {
    std::vector<std::byte> o, l;
    bool filled = false;
  };
  auto cache = std::make_shared<Cache>();
  return [entry = std::move(entry), cache](const FlashFwdArgs& args) {
    if (!cache->filled) {
      entry(args);
      cache->o.resize(o_bytes(args));
      cache->l.resize(l_bytes(args));
      std::memcpy(cache->o.data(), args.o, cache->o.size());
      std::memcpy(cache->l.data(), args.l, cache->l.size());
      cache->filled = true;
      return;
    }
    std::memcpy(args.o, cache->o.data(), cache->o.size());
    std::memcpy(args.l, cache->l.data(), cache->l.size());
  };
}

}  // namespace

std::string to_string(Kernel kernel) {
  switch (kernel) {
    case Kernel::step5:
      return "step5";
    case Kernel::v2:
      return "v2";
    case Kernel::v3:
      return "v3";
    case Kernel::v4:
      return "v4";
  }
  return "?";
}

const std::vector<std::pair<std::string, Kernel>>& kernel_words() {
  static const std::vector<std::pair<std::string, Kernel>> words = {
      {"step5", Kernel::step5}, {"v2", Kernel::v2}, {"v3", Kernel::v3}, {"v4", Kernel::v4}};
  return words;
}

std::string to_string(SelfTest test) {
  switch (test) {
    case SelfTest::none:
      return "none";
    case SelfTest::replay:
      return "replay";
    case SelfTest::unwritten:
      return "unwritten";
  }
  return "?";
}

const std::vector<std::pair<std::string, SelfTest>>& self_test_words() {
  static const std::vector<std::pair<std::string, SelfTest>> words = {
      {"none", SelfTest::none}, {"replay", SelfTest::replay}, {"unwritten", SelfTest::unwritten}};
  return words;
}

std::size_t element_bytes(DType dtype) {
  return dtype == DType::float32 ? sizeof(float) : sizeof(bf16);
}

std::size_t o_bytes(const FlashFwdArgs& args) {
  return static_cast<std::size_t>(args.o_shape[0] * args.o_shape[1] * args.o_shape[2]) * element_bytes(args.dtype);
}

std::size_t l_bytes(const FlashFwdArgs& args) {
  return static_cast<std::size_t>(args.l_shape[0] * args.l_shape[1]) * sizeof(float);
}

FlashFwdArgs without_last_query(const FlashFwdArgs& args) {
  if (args.q_shape[1] < 2) throw std::invalid_argument("the 'unwritten' self-test needs at least 2 queries");
  FlashFwdArgs fewer = args;
  // Top-left causal mask: queries 0..N-2 see the same keys with one query fewer, so the rows it
  // writes are right, and the last row of each head stays as it was.
  fewer.q_shape[1] -= 1;
  fewer.o_shape[1] -= 1;
  fewer.l_shape[1] -= 1;
  return fewer;
}

HostLaunchFn host_launcher(Kernel kernel) {
  switch (kernel) {
    case Kernel::step5:
      return &flash_fwd_host;
    case Kernel::v2:
      return &ladder::v2_host;
    case Kernel::v3:
      return &ladder::v3_host;
    case Kernel::v4:
      return &ladder::v4_host;
  }
  throw std::invalid_argument("host_launcher: unknown kernel");
}

HostEntry with_self_test(HostEntry entry, SelfTest test) {
  switch (test) {
    case SelfTest::none:
      return entry;
    case SelfTest::replay:
      return replaying_first_output(std::move(entry));
    case SelfTest::unwritten:
      return [entry = std::move(entry)](const FlashFwdArgs& args) { entry(without_last_query(args)); };
  }
  throw std::invalid_argument("with_self_test: unknown self-test");
}

template <class T>
TimedCall<T> host_timed_call(HostEntry entry, bool causal) {
  return [entry = std::move(entry), causal](CallBuffers<T>& call) {
    const FlashFwdArgs args =
        make_flash_args<T>(call.Q.cview(), call.K.cview(), call.V.cview(), call.O.view(), call.L.view(), causal);
    const auto start = std::chrono::steady_clock::now();
    entry(args);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    return took.count();
  };
}

template TimedCall<float> host_timed_call<float>(HostEntry, bool);
template TimedCall<bf16> host_timed_call<bf16>(HostEntry, bool);

}  // namespace fa2::leaderboard
