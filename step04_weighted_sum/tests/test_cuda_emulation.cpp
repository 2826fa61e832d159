// Tests of the host emulation of CUDA (cuda_primer/cuda_emulation.hpp): every (block, thread)
// runs once with its own indices, a barrier really waits for the whole block, blocks do not
// overlap, and a thread that throws or skips a barrier ends the launch with an error, never a hang.
//   cmake --build --preset cpu-only --target step04_cuda_primer_tests && ctest --preset cpu-only -L step04
//
// The "kernels" here are ordinary functions: they test the emulation itself, not CUDA code.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/testing.hpp"
#include "common/todo.hpp"
#include "step04_weighted_sum/cuda_primer/cuda_emulation.hpp"

namespace {

using fa2::cuda_emulation::BarrierDivergence;
using fa2::cuda_emulation::Dim3;
using fa2::cuda_emulation::launch;

struct Seen {
  std::mutex mutex;
  std::vector<std::string> entries;  // "block x y z thread x y z dims ..."
  void add(std::string s) {
    const std::lock_guard<std::mutex> lock(mutex);
    entries.push_back(std::move(s));
  }
};

std::string str(const Dim3& d) {
  return std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z);
}

void record_indices(Seen* seen) {
  seen->add("b" + str(blockIdx) + " t" + str(threadIdx) + " bd" + str(blockDim) + " gd" + str(gridDim));
}

// Thread t waits t milliseconds (mod 5) before writing its slot, so that without a real barrier
// the fast threads would read slots that are not written yet.
void write_late_then_read_all(std::vector<int>* slots, std::atomic<int>* missing) {
  const unsigned t = threadIdx.x;
  std::this_thread::sleep_for(std::chrono::milliseconds(t % 5));
  (*slots)[t] = static_cast<int>(t) + 1;
  __syncthreads();
  for (unsigned u = 0; u < blockDim.x; ++u) {
    if ((*slots)[u] != static_cast<int>(u) + 1) missing->fetch_add(1);
  }
  __syncthreads();  // nobody clears a slot that another thread may still be reading
  (*slots)[t] = 0;
}

std::mutex order_mutex;
void log_block_start_and_end(std::vector<unsigned>* order) {
  {
    const std::lock_guard<std::mutex> lock(order_mutex);
    order->push_back(blockIdx.x);
  }
  std::this_thread::sleep_for(std::chrono::microseconds(200 * (threadIdx.x % 3)));
  const std::lock_guard<std::mutex> lock(order_mutex);
  order->push_back(blockIdx.x);
}

void throw_in_thread_3_while_others_wait(std::atomic<int>* passed) {
  if (threadIdx.x == 3) throw std::runtime_error("thread 3 gives up");
  __syncthreads();  // the other threads wait here for thread 3, which never comes
  __syncthreads();
  passed->fetch_add(1);
}

void every_thread_hits_a_todo(int* never_written) {
  fa2::todo("TODO(step04): a kernel body that is still a TODO", never_written);
}

void barrier_in_a_branch() {
  if (threadIdx.x < 16) __syncthreads();
}

void early_return_before_barrier(int n) {
  if (static_cast<int>(threadIdx.x) >= n) return;
  __syncthreads();
}

void two_different_barriers() {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();
  } else {
    __syncthreads();
  }
}

void do_nothing() {}

// Thread t writes its slot and reads every slot, with or without a barrier in between; counts
// the slots it found unwritten.
void write_then_read_all(std::vector<int>* slots, std::atomic<int>* missing, bool with_barrier) {
  const unsigned t = threadIdx.x;
  (*slots)[t] = static_cast<int>(t) + 1;
  if (with_barrier) __syncthreads();
  for (unsigned u = 0; u < blockDim.x; ++u) {
    if ((*slots)[u] != static_cast<int>(u) + 1) missing->fetch_add(1);
  }
}

// The order in which the threads of a block run their first stretch (start to first barrier).
void log_turn_then_sync(std::vector<unsigned>* order) {
  order->push_back(threadIdx.x);  // in turns only one thread runs here at a time
  __syncthreads();
  order->push_back(threadIdx.x);
}

}  // namespace

TEST_SUITE("cuda_emulation") {
  TEST_CASE("every thread of every block runs once and sees its own threadIdx, blockIdx, blockDim and gridDim") {
    Seen seen;
    launch(Dim3(3, 2), Dim3(4, 2, 2), record_indices, &seen);
    std::vector<std::string> expected;
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 2; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx)
              expected.push_back("b" + std::to_string(bx) + "," + std::to_string(by) + ",0 t" + std::to_string(tx) +
                                 "," + std::to_string(ty) + "," + std::to_string(tz) + " bd4,2,2 gd3,2,1");
    std::sort(expected.begin(), expected.end());
    std::sort(seen.entries.begin(), seen.entries.end());
    CHECK(seen.entries == expected);  // 6 blocks x 16 threads, each exactly once
    // Outside a launch the launching thread keeps the values of a 1 x 1 launch.
    CHECK(threadIdx.x == 0);
    CHECK(blockDim.x == 1);
  }

  TEST_CASE("__syncthreads waits for every thread of the block: slots written late are all seen after it") {
    std::vector<int> slots(64, 0);
    std::atomic<int> missing{0};
    launch(Dim3(3), Dim3(64), write_late_then_read_all, &slots, &missing);
    CHECK(missing.load() == 0);
  }

  TEST_CASE("blocks run one after another: a block's threads all finish before the next block starts") {
    std::vector<unsigned> order;
    launch(Dim3(4), Dim3(6), log_block_start_and_end, &order);
    REQUIRE(order.size() == 4 * 6 * 2);
    for (std::size_t i = 0; i < order.size(); ++i) CHECK(order[i] == i / 12);  // 12 events per block, in block order
  }

  TEST_CASE("a thread that throws releases the others from the barrier and its exception reaches the caller") {
    std::atomic<int> passed{0};
    CHECK_THROWS_WITH_AS(launch(Dim3(2), Dim3(32), throw_in_thread_3_while_others_wait, &passed), "thread 3 gives up",
                         std::runtime_error);
    CHECK(passed.load() == 31);  // the block finished without thread 3; block 1 never started
  }

  TEST_CASE("a kernel that is still a TODO fails with its TODO message on every launch, without hanging") {
    int never_written = 7;
    for (int attempt = 0; attempt < 3; ++attempt) {
      CHECK_THROWS_WITH_AS(launch(Dim3(5), Dim3(128), every_thread_hits_a_todo, &never_written),
                           "TODO(step04): a kernel body that is still a TODO", fa2::NotImplemented);
    }
    CHECK(never_written == 7);
  }

  TEST_CASE("a barrier that only some threads reach is reported as divergence, not a hang") {
    CHECK_THROWS_WITH_AS(launch(Dim3(1), Dim3(32), barrier_in_a_branch),
                         doctest::Contains("__syncthreads() divergence in block (0, 0, 0)"), BarrierDivergence);
    CHECK_THROWS_WITH_AS(launch(Dim3(2), Dim3(32), early_return_before_barrier, 20),
                         doctest::Contains("thread (20, 0, 0) passed no barrier"), BarrierDivergence);
    CHECK_THROWS_AS(launch(Dim3(1), Dim3(8), two_different_barriers), BarrierDivergence);
    // When every thread skips the barrier alike there is nothing to report.
    CHECK_NOTHROW(launch(Dim3(2), Dim3(32), early_return_before_barrier, 100));
  }

  TEST_CASE("launch shapes that CUDA refuses are refused, naming the grid or the block") {
    CHECK_THROWS_WITH_AS(launch(Dim3(1), Dim3(1025), do_nothing), doctest::Contains("block: got (1025, 1, 1)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(launch(Dim3(1), Dim3(32, 32, 2), do_nothing), doctest::Contains("(2048 threads)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(launch(Dim3(1), Dim3(1, 1, 65), do_nothing), doctest::Contains("block: got (1, 1, 65)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(launch(Dim3(0), Dim3(32), do_nothing), doctest::Contains("grid: got (0, 1, 1)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(launch(Dim3(1, 65536), Dim3(32), do_nothing), doctest::Contains("grid: got (1, 65536, 1)"),
                         std::invalid_argument);
    CHECK_NOTHROW(launch(Dim3(1), Dim3(1024), do_nothing));
  }

  TEST_CASE("in turns, threads run one at a time in order between barriers, and a missing barrier shows every time") {
    const fa2::cuda_emulation::ScopedSchedule in_turns(fa2::cuda_emulation::Schedule::in_turns);
    std::vector<unsigned> order;
    launch(Dim3(2), Dim3(8), log_turn_then_sync, &order);
    std::vector<unsigned> expected;
    for (int stretch = 0; stretch < 4; ++stretch)  // 2 blocks x 2 stretches, threads 0..7 in each
      for (unsigned t = 0; t < 8; ++t) expected.push_back(t);
    CHECK(order == expected);
    for (int run = 0; run < 5; ++run) {
      std::vector<int> slots(32, 0);
      std::atomic<int> missing{0};
      launch(Dim3(1), Dim3(32), write_then_read_all, &slots, &missing, /*with_barrier=*/false);
      // Thread t finds the 31 - t slots of the threads after it unwritten: 31 + 30 + ... + 0.
      CHECK(missing.load() == 31 * 32 / 2);
      std::fill(slots.begin(), slots.end(), 0);
      missing = 0;
      launch(Dim3(1), Dim3(32), write_then_read_all, &slots, &missing, /*with_barrier=*/true);
      CHECK(missing.load() == 0);
    }
    // The error paths still end the launch in turns.
    std::atomic<int> passed{0};
    CHECK_THROWS_AS(launch(Dim3(2), Dim3(32), throw_in_thread_3_while_others_wait, &passed), std::runtime_error);
    CHECK(passed.load() == 31);
    CHECK_THROWS_AS(launch(Dim3(2), Dim3(32), early_return_before_barrier, 20), BarrierDivergence);
  }

  TEST_CASE("__syncthreads outside a launch is an error") {
    CHECK_THROWS_WITH_AS(__syncthreads(), doctest::Contains("outside a kernel"), std::logic_error);
  }
}
