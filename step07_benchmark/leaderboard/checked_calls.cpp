// The leaderboard's checker (checked_calls.hpp): fresh inputs, poison, then the three checks of
// every call's output. Host code only; the GPU path hands it host copies.
//   ctest --preset cpu-only -L leaderboard
#include "step07_benchmark/leaderboard/checked_calls.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/bf16.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"

namespace fa2::leaderboard {

template <class T>
T poison_value() {
  if constexpr (std::is_same_v<T, bf16>) {
    return bf16::from_bits(0xffffu);
  } else {
    static_assert(std::is_same_v<T, float>, "the leaderboard takes float32 and bf16");
    return std::bit_cast<float>(0xffffffffu);
  }
}

template float poison_value<float>();
template bf16 poison_value<bf16>();

namespace {

// A seed for one stream of random numbers (a call's tensor, a slice of it, a call's sample), so
// that no two streams of a run share a seed: splitmix64's finaliser over the three numbers.
std::uint64_t mix(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Streams of the run: 0..2 are Q, K and V (one seed per head), 3 the sampled rows.
constexpr std::uint64_t kSampleStream = 3;

// fn(i) for i in [0, count), spread over the host's cores: drawing the 3 x 8 M normals of one call
// at B = 4, H = 8, N = 4096, D = 64 takes over a second on one core. Each i touches its own data.
template <class F>
void parallel_for(index_t count, F&& fn) {
  const auto cores = static_cast<index_t>(std::max(1u, std::thread::hardware_concurrency()));
  const index_t workers = std::min(cores, count);
  if (workers <= 1) {
    for (index_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::vector<std::jthread> threads;
  threads.reserve(static_cast<std::size_t>(workers));
  for (index_t w = 0; w < workers; ++w) {
    threads.emplace_back([&fn, w, workers, count] {
      for (index_t i = w; i < count; i += workers) fn(i);
    });
  }
}

template <class T>
std::uint32_t bits_of(T x) {
  if constexpr (std::is_same_v<T, bf16>) {
    return x.bits;
  } else {
    static_assert(std::is_same_v<T, float>, "the leaderboard takes float32 and bf16");
    return std::bit_cast<std::uint32_t>(x);
  }
}

// "batch 1, head 3, query 17" for a row of the (B*H, N) view.
std::string where(const bench::Problem& p, index_t row) {
  const index_t bh = row / p.N;
  return "batch " + std::to_string(bh / p.H) + ", head " + std::to_string(bh % p.H) + ", query " +
         std::to_string(row % p.N);
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

template <class T>
void draw_inputs(CallBuffers<T>& call, const Shape& shape, std::uint64_t seed, int call_index) {
  const bench::Problem& p = shape.problem;
  const index_t heads = p.heads();
  Tensor<T, 3>* tensors[] = {&call.Q, &call.K, &call.V};
  parallel_for(3 * heads, [&](index_t i) {
    const index_t which = i / heads, bh = i % heads;
    Tensor<T, 3>& t = *tensors[which];
    T* slice = t.storage().data() + bh * p.N * p.D;
    Rng rng(mix(seed, static_cast<std::uint64_t>(call_index) * 4 + static_cast<std::uint64_t>(which),
                static_cast<std::uint64_t>(bh)));
    fill_normal<T, 3>(TensorView<T, 3>(slice, Extents<3>{1, p.N, p.D}), rng);
  });
}

template <class T>
void poison(CallBuffers<T>& call) {
  std::fill(call.O.storage().begin(), call.O.storage().end(), poison_value<T>());
  std::fill(call.L.storage().begin(), call.L.storage().end(), poison_value<float>());
}

// Check 1: "" when every element of O and L was written with a number, otherwise what was not.
template <class T>
std::string unwritten(const CallBuffers<T>& call, const Shape& shape) {
  const bench::Problem& p = shape.problem;
  const index_t D = p.D;
  index_t poisoned = 0, computed_nan = 0, poisoned_rows = 0, first_row = -1;
  bool first_is_poison = false;
  const auto& o = call.O.storage();
  const auto& l = call.L.storage();
  for (index_t row = 0; row < shape.rows(); ++row) {
    index_t row_poison = 0, row_nan = 0;
    const auto look = [&](auto x) {
      if (bits_of(x) == bits_of(poison_value<decltype(x)>())) {
        ++row_poison;
      } else if (std::isnan(static_cast<float>(x))) {
        ++row_nan;
      }
    };
    for (index_t d = 0; d < D; ++d) look(o[static_cast<std::size_t>(row * D + d)]);
    look(l[static_cast<std::size_t>(row)]);
    poisoned += row_poison;
    computed_nan += row_nan;
    poisoned_rows += row_poison > 0 ? 1 : 0;
    if (first_row < 0 && row_poison + row_nan > 0) {
      first_row = row;
      first_is_poison = row_poison > 0;
    }
  }
  if (poisoned + computed_nan == 0) return "";
  std::string why;
  if (poisoned > 0) {
    why = std::to_string(poisoned) + " elements of O and L in " + std::to_string(poisoned_rows) + " of " +
          std::to_string(shape.rows()) + " rows still hold the NaN poison written before the call: the entry did not " +
          "write them";
  }
  if (computed_nan > 0) {
    why += (why.empty() ? "" : "; ") + std::to_string(computed_nan) + " elements of O and L are a NaN the entry wrote";
  }
  return why + " (first: " + where(p, first_row) + (first_is_poison ? ", not written)" : ", NaN)");
}

// FNV-1a over the bits of row `row` of O and of L. Two calls whose rows hash alike hold the same
// bits there (a collision is a 2^-64 event per pair of rows).
template <class T>
std::uint64_t row_hash(const CallBuffers<T>& call, index_t row, index_t D) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto add = [&h](std::uint32_t word) {
    for (int byte = 0; byte < 4; ++byte) {
      h ^= (word >> (8 * byte)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  };
  for (index_t d = 0; d < D; ++d) add(bits_of(call.O.storage()[static_cast<std::size_t>(row * D + d)]));
  add(bits_of(call.L.storage()[static_cast<std::size_t>(row)]));
  return h;
}

// Check 2: "" when no row repeats an earlier call's row, otherwise which call it repeats.
std::string repeated_rows(const std::vector<std::uint64_t>& now, const std::vector<std::vector<std::uint64_t>>& earlier,
                          int call_index) {
  std::size_t best = 0;
  int best_call = -1;
  for (std::size_t j = 0; j < earlier.size(); ++j) {
    std::size_t same = 0;
    for (std::size_t r = 0; r < now.size(); ++r) same += static_cast<std::size_t>(now[r] == earlier[j][r]);
    if (same > best) {
      best = same;
      best_call = static_cast<int>(j);
    }
  }
  if (best == 0) return "";
  return std::to_string(best) + " of " + std::to_string(now.size()) +
         " rows of O and L are bit for bit those of call " + std::to_string(best_call) +
         ", whose inputs were other random numbers: the entry returned a cached " +
         "output instead of computing call " + std::to_string(call_index) + "'s";
}

// Check 3: "" when every sampled row is within the tolerance of float64, otherwise how far off.
template <class T>
std::string against_float64(const CallBuffers<T>& call, const Shape& shape, const Tolerance& tol,
                            const std::vector<index_t>& rows) {
  const bench::Problem& p = shape.problem;
  const index_t D = p.D;
  struct RowResult {
    index_t bad = 0;  // elements outside the tolerance
    double excess = -1.0;
    std::string what;
  };
  std::vector<RowResult> results(rows.size());
  parallel_for(static_cast<index_t>(rows.size()), [&](index_t i) {
    const index_t row = rows[static_cast<std::size_t>(i)];
    const index_t bh = row / p.N, q = row % p.N;
    // The causal mask lets query q see keys 0..q: the same as no mask over the first q + 1 keys,
    // which is how one row is asked of the reference.
    const index_t keys = p.causal ? q + 1 : p.N;
    const TensorView<const T, 3> Q_row(call.Q.storage().data() + row * D, Extents<3>{1, 1, D});
    const TensorView<const T, 3> K_head(call.K.storage().data() + bh * p.N * D, Extents<3>{1, keys, D});
    const TensorView<const T, 3> V_head(call.V.storage().data() + bh * p.N * D, Extents<3>{1, keys, D});
    const AttentionReference ref = reference_attention<T>(Q_row, K_head, V_head, /*causal=*/false);
    RowResult& r = results[static_cast<std::size_t>(i)];
    const auto judge = [&](double actual, double expected, const std::string& name) {
      const double excess = detail::excess(actual, expected, tol);
      if (excess <= 0.0) return;
      ++r.bad;
      if (excess > r.excess) {
        r.excess = excess;
        r.what = name + " at " + where(p, row) + ": got " + number(actual) + ", float64 gives " + number(expected) +
                 " (allowed " + number(tol.atol + tol.rtol * std::fabs(expected)) + ")";
      }
    };
    for (index_t d = 0; d < D; ++d) {
      judge(static_cast<double>(static_cast<float>(call.O.storage()[static_cast<std::size_t>(row * D + d)])),
            ref.O(0, 0, d), "O[d=" + std::to_string(d) + "]");
    }
    judge(static_cast<double>(call.L.storage()[static_cast<std::size_t>(row)]), ref.L(0, 0), "L");
  });
  index_t bad_rows = 0;
  const RowResult* worst = nullptr;
  for (const RowResult& r : results) {
    if (r.bad == 0) continue;
    ++bad_rows;
    if (worst == nullptr || r.excess > worst->excess) worst = &r;
  }
  if (bad_rows == 0) return "";
  return std::to_string(bad_rows) + " of " + std::to_string(rows.size()) +
         " sampled rows differ from the float64 reference (atol " + number(tol.atol) + ", rtol " + number(tol.rtol) +
         "); worst: " + worst->what;
}

void check_protocol(const Shape& shape, const Protocol& protocol) {
  const bench::Problem& p = shape.problem;
  if (p.B < 1 || p.H < 1 || p.N < 1 || p.D < 1) {
    throw std::invalid_argument("run_checked_calls: B, H, N and D must be at least 1, got " + p.label());
  }
  if (p.backward()) throw std::invalid_argument("run_checked_calls: the leaderboard times the forward pass");
  if (protocol.warmup_calls < 0 || protocol.timed_calls < 1 || protocol.sample_rows < 1) {
    throw std::invalid_argument("run_checked_calls: warm-up calls >= 0, timed calls >= 1 and sampled rows >= 1");
  }
  if (!(protocol.tol.atol >= 0.0) || !(protocol.tol.rtol >= 0.0)) {
    throw std::invalid_argument("run_checked_calls: atol and rtol must be >= 0");
  }
}

}  // namespace

std::vector<index_t> sampled_rows(index_t rows, int count, std::uint64_t seed, int call_index) {
  std::vector<index_t> out;
  if (static_cast<index_t>(count) >= rows) {
    for (index_t r = 0; r < rows; ++r) out.push_back(r);
    return out;
  }
  // Floyd's algorithm: `count` distinct rows, each subset equally likely.
  Rng rng(mix(seed, kSampleStream, static_cast<std::uint64_t>(call_index)));
  std::set<index_t> picked;
  for (index_t j = rows - count; j < rows; ++j) {
    std::uniform_int_distribution<index_t> pick(0, j);
    const index_t t = pick(rng.engine());
    picked.insert(picked.contains(t) ? j : t);
  }
  return {picked.begin(), picked.end()};
}

template <class T>
CheckedRun run_checked_calls(const Shape& shape, const Protocol& protocol, const TimedCall<T>& call) {
  check_protocol(shape, protocol);
  const bench::Problem& p = shape.problem;
  const Extents<3> qkv{p.heads(), p.N, p.D};
  CallBuffers<T> buffers{Tensor<T, 3>(qkv), Tensor<T, 3>(qkv), Tensor<T, 3>(qkv), Tensor<T, 3>(qkv),
                         Tensor<float, 2>(Extents<2>{p.heads(), p.N})};
  CheckedRun run;
  std::vector<std::vector<std::uint64_t>> earlier;  // each checked call's row hashes
  const int calls = protocol.warmup_calls + protocol.timed_calls;
  for (int c = 0; c < calls; ++c) {
    draw_inputs(buffers, shape, protocol.seed, c);
    poison(buffers);
    double ms = 0.0;
    try {
      ms = call(buffers);
    } catch (const std::exception& e) {
      run.reason = "call " + std::to_string(c) + ": the entry failed: " + e.what();
      return run;
    }
    if (!std::isfinite(ms) || ms <= 0.0) {
      throw std::runtime_error("run_checked_calls: call " + std::to_string(c) + " was timed at " + number(ms) +
                               " ms; a path must return the positive time of the kernel it ran");
    }
    ++run.calls_checked;
    const std::string prefix = "call " + std::to_string(c) + ": ";
    if (std::string why = unwritten(buffers, shape); !why.empty()) {
      run.reason = prefix + why;
      return run;
    }
    std::vector<std::uint64_t> hashes(static_cast<std::size_t>(shape.rows()));
    parallel_for(shape.rows(), [&](index_t r) { hashes[static_cast<std::size_t>(r)] = row_hash(buffers, r, p.D); });
    if (std::string why = repeated_rows(hashes, earlier, c); !why.empty()) {
      run.reason = prefix + why;
      return run;
    }
    earlier.push_back(std::move(hashes));
    const std::vector<index_t> rows = sampled_rows(shape.rows(), protocol.sample_rows, protocol.seed, c);
    if (std::string why = against_float64(buffers, shape, protocol.tol, rows); !why.empty()) {
      run.reason = prefix + why;
      return run;
    }
    if (c >= protocol.warmup_calls) run.timed_ms.push_back(ms);
  }
  run.accepted = true;
  return run;
}

template CheckedRun run_checked_calls<float>(const Shape&, const Protocol&, const TimedCall<float>&);
template CheckedRun run_checked_calls<bf16>(const Shape&, const Protocol&, const TimedCall<bf16>&);

}  // namespace fa2::leaderboard
