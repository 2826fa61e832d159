// CUDA's execution model played on the host, so that a plain CUDA kernel (a .cuh file) also
// compiles with g++ and runs where there is no GPU: each thread of a block is a std::thread,
// __syncthreads() is a barrier, a __shared__ variable is one object that the block's threads share.
//   fa2::cuda_emulation::launch(grid, block, kernel, args...);   // what kernel<<<grid, block>>>(args...) does
//   ctest --preset cpu-only -L step04      (tests/test_cuda_emulation.cpp says what it promises)
//
// A .cuh kernel includes this header only when g++ compiles it (#if !defined(__CUDACC__)); nvcc
// has the real names. What it plays, and how:
//   threadIdx, blockIdx, blockDim, gridDim   one thread_local copy per emulated thread
//   warpSize                                 32, a constant
//   __syncthreads()                          a std::barrier of the block's threads
//   __shared__                               `static`: one object per kernel instantiation, which
//                                            every thread of the running block sees; blocks run one
//                                            after another, so each block has it to itself
//   __global__                               `static inline`: on the host a kernel is a function,
//                                            private to its translation unit, so that it never
//                                            shares a symbol with nvcc's launch stub for the same
//                                            kernel when both are linked into one program
//   __device__, __host__                     nothing
// What it does not play (see the README's "Where the emulation stops"): warp-level operations
// (shuffles, votes, __syncwarp), atomics, dynamic shared memory (extern __shared__), streams, and
// the timing of a GPU: threads of one block really run at the same time here, but warps do not run
// in lockstep, and a race that a GPU hides (or shows) may go the other way on the host. The
// schedule Schedule::in_turns makes a missing barrier show the same way on every run.
#pragma once

#if defined(__CUDACC__)
#error "cuda_emulation.hpp plays CUDA for g++; nvcc provides the real threadIdx and __syncthreads"
#endif

#include <functional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace fa2::cuda_emulation {

// CUDA's dim3 (grid and block sizes) and uint3 (thread and block coordinates) in one type.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr Dim3() = default;
  // Not explicit, like dim3: launch(blocks, threads, ...) takes plain numbers.
  constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1)
      : x(x_), y(y_), z(z_) {}  // NOLINT(google-explicit-constructor)
};

// The built-in variables of a kernel, one copy per emulated thread. Outside a launch they hold
// the values of a 1-thread, 1-block launch.
inline thread_local Dim3 threadIdx{0, 0, 0};
inline thread_local Dim3 blockIdx{0, 0, 0};
inline thread_local Dim3 blockDim{1, 1, 1};
inline thread_local Dim3 gridDim{1, 1, 1};
inline constexpr int warpSize = 32;

// The threads of one block did not reach the same sequence of __syncthreads() calls: some
// passed more barriers than others (one returned early, or a barrier sits in a branch that only
// some threads take), or they waited at different calls. CUDA leaves the result undefined (a hang,
// or wrong data); the emulation finishes the block and reports it with this error.
class BarrierDivergence : public std::logic_error {
 public:
  explicit BarrierDivergence(const std::string& what) : std::logic_error(what) {}
};

// __syncthreads() of the calling emulated thread; `where` tells the calls apart.
void sync_threads(std::source_location where);

// How the threads of a block share the host's cores:
//   concurrent  (the default) all at once, as the operating system schedules them: a missing
//               barrier usually gives wrong numbers, but not always the same ones;
//   in_turns    one at a time, in thread order, each from one __syncthreads() (or the start) to the
//               next (or its end), then the next thread: a thread that reads shared memory before
//               the barrier that should order it reads what a later thread has not written yet, or
//               overwrites what a later thread has not read yet, on every run.
enum class Schedule { concurrent, in_turns };

// The schedule of the launches that start from now on, process-wide; returns the previous one.
Schedule set_schedule(Schedule schedule);

// Sets a schedule for one scope, then puts the previous one back.
class ScopedSchedule {
 public:
  explicit ScopedSchedule(Schedule schedule) : previous_(set_schedule(schedule)) {}
  ~ScopedSchedule() { set_schedule(previous_); }
  ScopedSchedule(const ScopedSchedule&) = delete;
  ScopedSchedule& operator=(const ScopedSchedule&) = delete;

 private:
  Schedule previous_;
};

// Runs `kernel_call` once on every thread of every block: the blocks one after another, the
// threads of a block at the same time (block.x * block.y * block.z std::threads). Throws
// std::invalid_argument for a grid or block that CUDA would refuse, rethrows the first exception
// a thread threw (after every thread of its block has finished; later blocks do not run), and
// throws BarrierDivergence as described above. One launch at a time (the __shared__ statics are
// shared by every launch of a kernel); a launch from inside a kernel throws.
void run_grid(Dim3 grid, Dim3 block, const std::function<void()>& kernel_call);

// kernel<<<grid, block>>>(args...), run on the host. The arguments are copied once, as CUDA
// copies them into the kernel's parameter space, and every thread reads that copy.
template <class... Params, class... Args>
void launch(Dim3 grid, Dim3 block, void (*kernel)(Params...), Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: one argument per kernel parameter");
  const std::tuple<std::remove_cvref_t<Params>...> params(std::forward<Args>(args)...);
  run_grid(grid, block, [&] { std::apply(kernel, params); });
}

}  // namespace fa2::cuda_emulation

// The names CUDA code uses, where nvcc declares them: at global scope.
using fa2::cuda_emulation::blockDim;
using fa2::cuda_emulation::blockIdx;
using fa2::cuda_emulation::gridDim;
using fa2::cuda_emulation::threadIdx;
using fa2::cuda_emulation::warpSize;

// The double underscores are CUDA's spelling; on the host they are ordinary names. The default
// argument is evaluated where the kernel calls it: each call site is told apart.
// NOLINTNEXTLINE(bugprone-reserved-identifier)
inline void __syncthreads(std::source_location where = std::source_location::current()) {
  fa2::cuda_emulation::sync_threads(where);
}

#define __global__ static inline
#define __device__
#define __host__
#define __shared__ static
