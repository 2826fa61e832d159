// The host emulation of CUDA's execution model (cuda_emulation.hpp): one std::thread per thread
// of a block, reused block after block; a std::barrier for __syncthreads() and one between blocks;
// with Schedule::in_turns, a turn that passes from thread to thread in order between barriers.
//   ctest --preset cpu-only -L step04      (tests/test_cuda_emulation.cpp)
#include "step04_weighted_sum/cuda_primer/cuda_emulation.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace fa2::cuda_emulation {

namespace {

std::string to_string(const Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// Linear index -> (x, y, z), x fastest: CUDA's numbering of the threads of a block (and of blocks).
Dim3 coordinates(std::uint64_t linear, const Dim3& extents) {
  const auto x = static_cast<unsigned>(linear % extents.x);
  linear /= extents.x;
  const auto y = static_cast<unsigned>(linear % extents.y);
  return {x, y, static_cast<unsigned>(linear / extents.y)};
}

// The limits every GPU since sm_30 has; a launch beyond them fails with cudaErrorInvalidConfiguration.
void check_launch_shape(const Dim3& grid, const Dim3& block) {
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      threads > 1024) {
    throw std::invalid_argument("block: got " + to_string(block) + " (" + std::to_string(threads) +
                                " threads), allowed 1 to 1024 threads with x, y <= 1024 and z <= 64");
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
    throw std::invalid_argument("grid: got " + to_string(grid) + ", allowed x in [1, 2^31 - 1], y and z in [1, 65535]");
  }
}

// Which __syncthreads() calls one thread passed during the current block: how many, and a
// fingerprint of where (file, line, column of each call, in order).
struct BarrierTrace {
  std::uint64_t count = 0;
  std::uint64_t fingerprint = 0;
  std::source_location last{};

  void add(const std::source_location& where) {
    ++count;
    std::uint64_t h = fingerprint ^ (0x9e3779b97f4a7c15ull + where.line() * 1000003ull + where.column());
    for (const char* c = where.file_name(); *c != '\0'; ++c)
      h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
    fingerprint = h;
    last = where;
  }
  bool same_as(const BarrierTrace& other) const { return count == other.count && fingerprint == other.fingerprint; }
  std::string describe() const {
    if (count == 0) return "passed no barrier";
    return "passed " + std::to_string(count) + " barrier(s), the last at " + last.file_name() + ":" +
           std::to_string(last.line());
  }
};

struct GridRun;

std::atomic<Schedule> next_schedule{Schedule::concurrent};

// Runs when every thread still in the block has reached the same __syncthreads() (std::barrier's
// completion step): with Schedule::in_turns, the turn goes back to the first thread.
struct BarrierPassed {
  GridRun* run;
  void operator()() noexcept;
};

// Runs once per block, after every thread of the block has finished it and before any starts
// the next one (std::barrier's completion step).
struct BlockEnd {
  GridRun* run;
  void operator()() noexcept;
};

// What the threads of one launch share.
struct GridRun {
  GridRun(Dim3 grid_, Dim3 block_, const std::function<void()>& call)
      : grid(grid_),
        block(block_),
        threads_per_block(block_.x * block_.y * block_.z),
        blocks(std::uint64_t{grid_.x} * grid_.y * grid_.z),
        kernel_call(call),
        in_turns(next_schedule.load() == Schedule::in_turns),
        traces(threads_per_block),
        in_block(threads_per_block, 1),
        block_end(static_cast<std::ptrdiff_t>(threads_per_block), BlockEnd{this}) {
    syncthreads.emplace(static_cast<std::ptrdiff_t>(threads_per_block), BarrierPassed{this});
  }

  // Schedule::in_turns: thread t runs only while it holds the turn, which it passes on at its next
  // __syncthreads() or when it leaves the block; once every thread is at the barrier, thread 0
  // (the first still in the block) has it again. Concurrent: these do nothing.
  void wait_for_turn(unsigned t) {
    if (!in_turns) return;
    std::unique_lock<std::mutex> lock(turn_mutex);
    turn_passed.wait(lock, [&] { return turn == t; });
  }
  void pass_turn(unsigned t, bool leaving_block) {
    if (!in_turns) return;
    {
      const std::lock_guard<std::mutex> lock(turn_mutex);
      if (leaving_block) in_block[t] = 0;
      turn = first_in_block(t + 1);
    }
    turn_passed.notify_all();
  }
  unsigned first_in_block(unsigned from) const {
    while (from < threads_per_block && in_block[from] == 0) ++from;
    return from;
  }
  // The barrier's completion step: every thread still in the block is waiting at it.
  void restart_turns() noexcept {
    const std::lock_guard<std::mutex> lock(turn_mutex);
    turn = first_in_block(0);
  }

  void record(std::exception_ptr e) {
    const std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = std::move(e);
  }

  // The next block, or the end of the launch. Every thread waits in block_end meanwhile, so
  // nothing here races with them.
  void finish_block() noexcept {
    if (!error) {
      for (unsigned t = 1; t < threads_per_block; ++t) {
        if (traces[t].same_as(traces[0])) continue;
        error = std::make_exception_ptr(BarrierDivergence(
            "__syncthreads() divergence in block " + to_string(coordinates(block_index, grid)) + ": thread " +
            to_string(coordinates(0, block)) + " " + traces[0].describe() + ", thread " +
            to_string(coordinates(t, block)) + " " + traces[t].describe() +
            ". Every thread of a block must reach the same __syncthreads() calls: do not return early or "
            "branch around a barrier; predicate the work instead"));
        break;
      }
    }
    for (auto& trace : traces) trace = BarrierTrace{};
    std::fill(in_block.begin(), in_block.end(), char{1});
    turn = 0;
    ++block_index;
    done = error != nullptr || block_index == blocks;
    if (!done) syncthreads.emplace(static_cast<std::ptrdiff_t>(threads_per_block), BarrierPassed{this});
  }

  const Dim3 grid, block;
  const unsigned threads_per_block;
  const std::uint64_t blocks;
  const std::function<void()>& kernel_call;
  const bool in_turns;  // Schedule::in_turns, fixed for the launch

  std::uint64_t block_index = 0;                           // the block being run; changed only by finish_block
  bool done = false;                                       // read by the threads after block_end
  std::optional<std::barrier<BarrierPassed>> syncthreads;  // the running block's __syncthreads(), new per block
  std::vector<BarrierTrace> traces;                        // per thread of the running block

  std::mutex turn_mutex;  // Schedule::in_turns
  std::condition_variable turn_passed;
  unsigned turn = 0;           // the thread that may run
  std::vector<char> in_block;  // per thread: 0 once it has left the running block

  std::barrier<BlockEnd> block_end;

  std::mutex error_mutex;
  std::exception_ptr error;  // the first exception a thread threw, or the divergence found
};

void BarrierPassed::operator()() noexcept {
  run->restart_turns();
}

void BlockEnd::operator()() noexcept {
  run->finish_block();
}

// Set for the threads of a launch, and only while they run it.
thread_local GridRun* current_run = nullptr;
thread_local unsigned current_thread = 0;

void run_thread(GridRun& run, unsigned t) {
  current_run = &run;
  current_thread = t;
  threadIdx = coordinates(t, run.block);
  blockDim = run.block;
  gridDim = run.grid;
  while (true) {
    blockIdx = coordinates(run.block_index, run.grid);
    run.wait_for_turn(t);
    try {
      run.kernel_call();
    } catch (...) {
      run.record(std::current_exception());
    }
    // This thread has left the block, normally or by an exception: the block's barriers stop
    // waiting for it, so the others finish (and nobody hangs on a thread that threw).
    run.pass_turn(t, /*leaving_block=*/true);
    run.syncthreads->arrive_and_drop();
    run.block_end.arrive_and_wait();
    if (run.done) break;
  }
  current_run = nullptr;
}

}  // namespace

void sync_threads(std::source_location where) {
  if (current_run == nullptr) {
    throw std::logic_error("__syncthreads() called outside a kernel launched by cuda_emulation::launch");
  }
  current_run->traces[current_thread].add(where);
  current_run->pass_turn(current_thread, /*leaving_block=*/false);
  current_run->syncthreads->arrive_and_wait();
  current_run->wait_for_turn(current_thread);
}

Schedule set_schedule(Schedule schedule) {
  return next_schedule.exchange(schedule);
}

void run_grid(Dim3 grid, Dim3 block, const std::function<void()>& kernel_call) {
  check_launch_shape(grid, block);
  if (current_run != nullptr) {
    throw std::logic_error("cuda_emulation::launch called from inside a kernel (dynamic parallelism is not emulated)");
  }
  static std::mutex one_launch_at_a_time;  // a kernel's __shared__ statics belong to one launch
  const std::lock_guard<std::mutex> lock(one_launch_at_a_time);

  GridRun run(grid, block, kernel_call);
  // The threads wait for the go: if starting one of them fails, the others leave before touching
  // a barrier that would wait for the missing thread forever.
  std::latch go(1);
  bool abandoned = false;
  {
    std::vector<std::jthread> threads;
    threads.reserve(run.threads_per_block);
    try {
      for (unsigned t = 0; t < run.threads_per_block; ++t) {
        threads.emplace_back([&run, &go, &abandoned, t] {
          go.wait();
          if (!abandoned) run_thread(run, t);
        });
      }
    } catch (const std::system_error&) {
      abandoned = true;
      go.count_down();
      throw;  // the jthreads join on the way out
    }
    go.count_down();
  }  // joins every thread
  if (run.error) std::rethrow_exception(run.error);
}

}  // namespace fa2::cuda_emulation
