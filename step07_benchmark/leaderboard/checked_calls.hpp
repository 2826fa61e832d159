// The leaderboard's checker: an entry's kernel called again and again, each call on fresh random
// inputs and into outputs poisoned with NaN, each call's output checked before the next one. One
// function serves the GPU path and the host path of step07_leaderboard (README.md of this folder).
//   ctest --preset cpu-only -L leaderboard          (tests/test_checked_calls.cpp)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/compare.hpp"
#include "common/numeric.hpp"
#include "common/tensor.hpp"
#include "step05_fa2_kernel/flash_fwd.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"

namespace fa2::leaderboard {

// What every call computes: B*H heads of attention, N queries and N keys each, head dim D, in
// `dtype`, with or without the (top-left) causal mask, at the default scale 1/sqrt(D).
struct Shape {
  bench::Problem problem;  // B, H, N, D and causal; the pass is the forward
  DType dtype = DType::bfloat16;
  index_t rows() const { return problem.heads() * problem.N; }  // query rows of O and of L
};

struct Protocol {
  int warmup_calls = 1;  // checked, not timed: the first launch pays for loading the module
  int timed_calls = 20;  // checked and timed
  // Query rows of each call compared with float64, drawn anew for every call (every row when the
  // problem has no more rows than this). The NaN and cached-output checks read every row.
  int sample_rows = 64;
  Tolerance tol{2e-2, 2e-2};  // on O and on L: |actual - expected| <= atol + rtol * |expected|
  std::uint64_t seed = 0;     // every call's inputs and sampled rows follow from it
};

// One call's host tensors. run_checked_calls fills Q, K and V with new N(0, 1) values (rounded
// to T) and O and L with the poison before every call; a path runs the entry on Q, K, V and
// leaves its outputs in O and L (the GPU path copies them there and back).
template <class T>
struct CallBuffers {
  Tensor<T, 3> Q, K, V;  // (B*H, N, D)
  Tensor<T, 3> O;        // (B*H, N, D)
  Tensor<float, 2> L;    // (B*H, N)
};

// One call of the entry, as a path makes it: runs the kernel on `call`'s inputs, leaves the outputs
// in call.O and call.L, and returns the milliseconds of the kernel alone, measured by the path's
// clock (CUDA events around the launch on a GPU, the host's steady clock on the host). Anything
// the entry throws is the entry's failure.
template <class T>
using TimedCall = std::function<double(CallBuffers<T>& call)>;

struct CheckedRun {
  bool accepted = false;
  std::string reason;            // why the entry was rejected: the call, what was wrong and where
  int calls_checked = 0;         // calls whose output was checked (warm-up calls included)
  std::vector<double> timed_ms;  // the timed calls' milliseconds, in call order
};

// Makes warmup_calls + timed_calls calls through `call`. Before each: fresh inputs (drawn outside
// the timed call) and poisoned outputs. After each, in this order:
//   1. every element of O and L is written: one that still holds the poison's bits was not
//      written, and any other NaN was computed;
//   2. no row of O and L is bit for bit a row of an earlier call's output: on new random inputs a
//      kernel that computes cannot repeat a row, so a repeated row was cached;
//   3. sample_rows random rows of O and L lie within the tolerance of the float64 reference
//      (common/reference.hpp), computed from this call's inputs.
// The first call that fails one of them rejects the entry, and the calls stop there. Throws
// std::invalid_argument for a bad protocol or shape, and std::runtime_error when `call` returns a
// time that is not a positive finite number (a bug of the path, not of the entry).
template <class T>
CheckedRun run_checked_calls(const Shape& shape, const Protocol& protocol, const TimedCall<T>& call);

// The poison: every bit set, a NaN (sign and payload set) that the float and bf16 arithmetic of
// a CPU or a GPU does not return, so an element that holds it was never written. The GPU's
// cudaMemset(0xFF) writes the same bits.
template <class T>
T poison_value();

// The rows of `rows` that call `call_index` of a protocol with `seed` checks against float64:
// `count` distinct rows in increasing order (all of them when count >= rows). Exposed for the
// tests: the sample changes from call to call.
std::vector<index_t> sampled_rows(index_t rows, int count, std::uint64_t seed, int call_index);

}  // namespace fa2::leaderboard
