// step07's GPU tests: every always-available implementation (our kernels, cuBLAS standard
// attention) against common's float64 reference on small ragged problems, the device helpers
// (random inputs, whole-tensor comparison, masked softmax), and the timing harness: do_bench,
// isolated launches, and the runner's rotating rounds with NVML's readings. They skip without a
// GPU (FA2_REQUIRE_GPU=1 turns that into a failure).
//   ctest --test-dir build/<preset> -L step07
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/gpu.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/testing.hpp"
#include "step07_benchmark/baselines/impl_cublas.hpp"
#include "step07_benchmark/harness/bench_device.hpp"
#include "step07_benchmark/harness/bench_options.hpp"
#include "step07_benchmark/harness/bench_report.hpp"
#include "step07_benchmark/harness/bench_runner.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"
#include "step07_benchmark/harness/nvml.hpp"
#include "step07_benchmark/harness/timing.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"

using namespace fa2;
using namespace fa2::bench;

namespace {

// bf16 outputs: a few bf16 ulps around 1 (2^-8 = 0.0039), as the harness uses.
const Tolerance kTol{2e-2, 2e-2};

// A runner with every registered implementation and a short timing budget (the runner tests
// check what it records, not how fast), on fresh inputs; its log goes to `log`.
Runner quick_runner(std::ostringstream& log) {
  RunnerConfig config;
  config.budget.warmup_ms = 1.0;
  config.budget.rep_ms = 5.0;
  config.seed = fresh_seed();
  return Runner(assemble_registry({}), config, log);
}

// Two small problems with ragged tiles, non-causal then causal.
std::vector<Problem> small_problems(Pass pass) {
  std::vector<Problem> problems = {{1, 2, 200, 64, false}, {1, 2, 200, 64, true}};
  for (auto& p : problems) p.pass = pass;
  return problems;
}

struct DeviceProblem {
  Problem p;
  Tensor<bf16, 3> Q, K, V;
  cuda::DeviceBuffer<bf16> q, k, v, o;
  cuda::DeviceBuffer<float> l;

  DeviceProblem(const Problem& problem, Rng& rng)
      : p(problem),
        Q(random_normal<bf16, 3>({problem.heads(), problem.N, problem.D}, rng)),
        K(random_normal<bf16, 3>({problem.heads(), problem.N, problem.D}, rng)),
        V(random_normal<bf16, 3>({problem.heads(), problem.N, problem.D}, rng)),
        q(Q.storage().size()),
        k(K.storage().size()),
        v(V.storage().size()),
        o(Q.storage().size()),
        l(static_cast<std::size_t>(problem.heads() * problem.N)) {
    q.upload(Q.storage());
    k.upload(K.storage());
    v.upload(V.storage());
  }
  AttentionBuffers buffers() { return {q.data(), k.data(), v.data(), o.data(), l.data()}; }
};

// A small forward problem's inputs, drawn on the device, and an L2 flusher: what the timing tests
// time.
struct TimingInputs {
  Problem p{1, 4, 256, 64, false};
  std::size_t elems = static_cast<std::size_t>(p.qkv_elements());
  cuda::DeviceBuffer<bf16> q, k, v, o;
  cuda::DeviceBuffer<float> l;
  L2Flusher flusher;

  TimingInputs()
      : q(elems), k(elems), v(elems), o(elems), l(static_cast<std::size_t>(p.heads() * p.N)), flusher(flush_bytes()) {
    fill_normal_bf16(q.data(), elems, 1, nullptr);
    fill_normal_bf16(k.data(), elems, 2, nullptr);
    fill_normal_bf16(v.data(), elems, 3, nullptr);
  }
  AttentionBuffers buffers() { return {q.data(), k.data(), v.data(), o.data(), l.data()}; }
  static std::size_t flush_bytes() {
    int device = 0;
    FA2_CUDA_CHECK(cudaGetDevice(&device));
    return l2_flush_bytes(device);
  }
};

std::vector<Implementation> always_available() {
  std::vector<Implementation> out;
  for (auto& impl : assemble_registry({})) {
    if (impl.family == "ours" || impl.family == "cublas") out.push_back(std::move(impl));
  }
  return out;
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("our kernels and cuBLAS standard attention match float64 on ragged problems causal or not") {
    FA2_SKIP_WITHOUT_GPU();
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed(), " (replay with FA2_SEED)");
    const std::vector<Implementation> impls = always_available();
    REQUIRE(impls.size() >= 2);
    const std::vector<Problem> problems = {{1, 2, 1, 64, false},
                                           {2, 3, 17, 64, false},
                                           {1, 2, 100, 128, false},
                                           {2, 1, 257, 64, false},
                                           {1, 1, 72, 64, false}};
    for (Problem p : problems) {
      for (bool causal : {false, true}) {
        p.causal = causal;
        DeviceProblem dp(p, rng);
        const AttentionReference ref = reference_attention<bf16>(dp.Q.cview(), dp.K.cview(), dp.V.cview(), causal);
        for (const auto& impl : impls) {
          INFO(impl.key, " on ", p.label());
          const std::string why = impl.unsupported(p);
          if (!why.empty()) continue;
          PreparedRun run = impl.prepare(p, dp.buffers(), nullptr);
          dp.o.fill_bytes(0xFF);  // NaN: an element the implementation does not write cannot pass
          dp.l.fill_bytes(0xFF);
          (run.run_into_outputs ? run.run_into_outputs : run.run)();
          FA2_CUDA_CHECK(cudaDeviceSynchronize());
          Tensor<bf16, 3> O(dp.Q.shape());
          dp.o.download(O.storage().data(), O.storage().size());
          FA2_CHECK_CLOSE(O.cview(), ref.O.cview(), kTol, impl.key + " O");
          // Ours and cuBLAS's softmax both write the logsumexp.
          Tensor<float, 2> L({p.heads(), p.N});
          dp.l.download(L.storage().data(), L.storage().size());
          FA2_CHECK_CLOSE(L.cview(), ref.L.cview(), kTol, impl.key + " L");
        }
      }
    }
  }

  TEST_CASE("the step05 kernel and cuBLAS attention support every problem of the sweep") {
    FA2_SKIP_WITHOUT_GPU();
    for (const auto& impl : always_available()) {
      if (impl.key != fa2::variants::kStep05Key && impl.key != "cublas") continue;
      for (const auto& p : sweep_problems("full")) CHECK_MESSAGE(impl.unsupported(p).empty(), impl.key, " ", p.label());
    }
  }

  TEST_CASE("the masked softmax zeroes masked keys exactly and sums rows to one and writes the logsumexp") {
    FA2_SKIP_WITHOUT_GPU();
    Rng rng(fresh_seed());
    INFO("seed ", rng.seed());
    for (int n_k : {13, 24, 600}) {  // 13: scalar path, 24 and 600: 16-byte vectors, 600: several chunks per thread
      const int n_q = n_k;
      const index_t rows = 2 * n_q;
      const auto S = random_normal<bf16, 2>({rows, n_k}, rng, 0.0, 3.0);
      cuda::DeviceBuffer<bf16> dS(S.storage().size()), dP(S.storage().size());
      cuda::DeviceBuffer<float> dL(static_cast<std::size_t>(rows));
      dS.upload(S.storage());
      for (bool causal : {false, true}) {
        INFO("n_k ", n_k, " causal ", causal);
        dP.fill_bytes(0xFF);
        masked_softmax_rows(dS.data(), dP.data(), dL.data(), rows, n_q, n_k, causal, nullptr);
        FA2_CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<bf16> P = dP.download();
        const std::vector<float> L = dL.download();
        int bad = 0;
        for (index_t r = 0; r < rows; ++r) {
          const int q = static_cast<int>(r % n_q);
          double m = -std::numeric_limits<double>::infinity();
          for (int k = 0; k < n_k; ++k) {
            if (!causal || k <= q) m = std::max(m, static_cast<double>(static_cast<float>(S(r, k))));
          }
          double sum_exp = 0.0, sum_p = 0.0;
          for (int k = 0; k < n_k; ++k) {
            const double pk = static_cast<float>(P[static_cast<std::size_t>(r * n_k + k)]);
            sum_p += pk;
            if (causal && k > q) {
              if (pk != 0.0) ++bad;  // masked keys: exactly zero
              continue;
            }
            sum_exp += std::exp(static_cast<double>(static_cast<float>(S(r, k))) - m);
          }
          for (int k = 0; k < n_k; ++k) {
            if (causal && k > q) continue;
            const double want = std::exp(static_cast<double>(static_cast<float>(S(r, k))) - m) / sum_exp;
            const double got = static_cast<float>(P[static_cast<std::size_t>(r * n_k + k)]);
            if (!(std::fabs(got - want) <= 1e-2 * want + 1e-6)) ++bad;  // bf16 keeps 8 bits: 2^-9 relative
          }
          if (!(std::fabs(sum_p - 1.0) <= 1e-2)) ++bad;
          const double lse = m + std::log(sum_exp);
          if (!(std::fabs(static_cast<double>(L[static_cast<std::size_t>(r)]) - lse) <= 1e-4 * (1.0 + std::fabs(lse))))
            ++bad;
        }
        CHECK(bad == 0);
      }
    }
  }

  TEST_CASE("device random inputs are standard normal and reproducible per seed and different across seeds") {
    FA2_SKIP_WITHOUT_GPU();
    const std::size_t n = (std::size_t{1} << 20) + 1;  // odd: the last pair is half used
    cuda::DeviceBuffer<bf16> a(n), b(n), c(n);
    fill_normal_bf16(a.data(), n, 7, nullptr);
    fill_normal_bf16(b.data(), n, 7, nullptr);
    fill_normal_bf16(c.data(), n, 8, nullptr);
    FA2_CUDA_CHECK(cudaDeviceSynchronize());
    const auto ha = a.download(), hb = b.download(), hc = c.download();
    double sum = 0.0, sq = 0.0;
    std::size_t same_ab = 0, same_ac = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = static_cast<float>(ha[i]);
      REQUIRE(std::isfinite(x));
      sum += x;
      sq += x * x;
      same_ab += ha[i].bits == hb[i].bits;
      same_ac += ha[i].bits == hc[i].bits;
    }
    const double mean = sum / static_cast<double>(n);
    const double var = sq / static_cast<double>(n) - mean * mean;
    CHECK(std::fabs(mean) < 0.01);
    CHECK(std::fabs(var - 1.0) < 0.02);
    CHECK(same_ab == n);
    CHECK(same_ac < n / 10);
  }

  TEST_CASE("the device comparison counts NaNs and finds a planted error at its index") {
    FA2_SKIP_WITHOUT_GPU();
    const std::size_t n = 100000;
    std::vector<bf16> x(n, bf16(1.0f));
    cuda::DeviceBuffer<bf16> a(n), e(n);
    a.upload(x);
    e.upload(x);
    DeviceCompare c = compare_bf16(a.data(), e.data(), n, 2e-2, 2e-2, nullptr);
    CHECK(c.ok());
    CHECK(c.max_abs_error == 0.0);
    x[12345] = bf16(1.5f);
    x[99] = bf16(1.03f);  // inside 0.02 + 0.02 * 1: passes
    a.upload(x);
    c = compare_bf16(a.data(), e.data(), n, 2e-2, 2e-2, nullptr);
    CHECK(c.mismatched == 1);
    CHECK(c.worst_index == 12345);
    CHECK(c.max_abs_error == doctest::Approx(0.5));
    a.fill_bytes(0xFF);
    c = compare_bf16(a.data(), e.data(), n, 2e-2, 2e-2, nullptr);
    CHECK(c.mismatched == n);
    CHECK(c.nan_count == n);
  }

  TEST_CASE("the timing harness returns positive finite times for the step05 kernel and cuBLAS attention") {
    FA2_SKIP_WITHOUT_GPU();
    TimingInputs in;
    const Problem& p = in.p;
    const AttentionBuffers bufs = in.buffers();
    L2Flusher& flusher = in.flusher;
    CHECK(flusher.bytes() >= (std::size_t{256} << 20));
    TimingBudget budget;
    budget.warmup_ms = 1.0;
    budget.rep_ms = 5.0;
    budget.min_reps = 3;
    budget.max_reps = 50;
    for (const auto& impl : always_available()) {
      if (impl.key != fa2::variants::kStep05Key && impl.key != "cublas") continue;
      INFO(impl.key);
      PreparedRun run = impl.prepare(p, bufs, nullptr);
      const Timing t = do_bench(run.run, nullptr, flusher, budget);
      CHECK(t.samples.size() == static_cast<std::size_t>(t.plan.reps));
      CHECK(t.plan.reps >= 3);
      CHECK(t.plan.reps <= 50);
      CHECK(std::isfinite(t.ms.median));
      CHECK(t.ms.median > 0.0);
      CHECK(t.ms.min <= t.ms.median);
      CHECK(t.estimate_ms > 0.0);
    }
  }

  TEST_CASE("the runner checks then times and records ours and cuBLAS on a small problem") {
    FA2_SKIP_WITHOUT_GPU();
    std::ostringstream log;
    Runner runner = quick_runner(log);
    const std::vector<Problem> problems = small_problems(Pass::forward);
    const auto results = runner.run(problems, {fa2::variants::kStep05Key, "ours64x64", "cublas"});
    INFO(log.str());
    REQUIRE(results.size() == 6);
    for (const auto& m : results) {
      INFO(m.key, " ", m.problem.label(), ": ", m.note);
      CHECK(m.status == Status::ok);
      CHECK(m.tflops > 0.0);
      REQUIRE(m.peak_bytes.has_value());
      CHECK(*m.peak_bytes >= static_cast<double>(io_bytes(m.problem)));
      REQUIRE(m.max_err_fp64.has_value());
      CHECK(*m.max_err_fp64 <= 2e-2);
      REQUIRE(m.max_err_ref.has_value());
      CHECK(*m.max_err_ref <= 4e-2);
    }
    CHECK_THROWS_AS(runner.run(problems, {"no-such-kernel"}), std::invalid_argument);
  }

  TEST_CASE("the runner times ours16's and v5's backwards, checks their gradients, and says which have none") {
    FA2_SKIP_WITHOUT_GPU();
    std::ostringstream log;
    Runner runner = quick_runner(log);
    const std::vector<Problem> problems = small_problems(Pass::backward);
    const auto results = runner.run(problems, {fa2::variants::kStep05Key, "v5", "cublas"});
    INFO(log.str());
    REQUIRE(results.size() == 6);
    for (const auto& m : results) {
      INFO(m.key, " ", m.problem.label(), ": ", m.note);
      CHECK(m.problem.backward());
      if (m.key == fa2::variants::kStep05Key) {
        CHECK(m.status == Status::ok);
        CHECK(m.tflops > 0.0);
        REQUIRE(m.peak_bytes.has_value());
        CHECK(*m.peak_bytes >= static_cast<double>(io_bytes(m.problem)));  // dO and the gradients included
        // The reference against its own first run: dQ's float32 atomics add in another order each
        // run, so its float32 sums move by a few roundings, and where one lies on a bf16 rounding
        // boundary the bf16 entry moves by one step (2^-8 of the entry; seen: 6.1e-5). Entries here
        // are below 2: at most 8e-3.
        REQUIRE(m.max_err_ref.has_value());
        CHECK(*m.max_err_ref <= 8e-3);
      } else if (m.key == "v5") {
        // The fast backward, checked against ours16's gradients with the harness's tolerance.
        CHECK(m.status == Status::ok);
        CHECK(m.tflops > 0.0);
        REQUIRE(m.max_err_ref.has_value());
      } else {
        CHECK(m.status == Status::unsupported);
        CHECK(m.note.find("no backward pass") != std::string::npos);
      }
    }
  }

  TEST_CASE("isolated launches are timed one at a time, each after its idle gap, with a call after each") {
    FA2_SKIP_WITHOUT_GPU();
    TimingInputs in;
    const Problem& p = in.p;
    const AttentionBuffers bufs = in.buffers();
    L2Flusher& flusher = in.flusher;
    for (const auto& impl : always_available()) {
      if (impl.key != fa2::variants::kStep05Key) continue;
      PreparedRun run = impl.prepare(p, bufs, nullptr);
      TimingBudget budget;
      budget.isolated_launches = 4;
      budget.gap_ms = 20.0;
      int calls = 0;
      const auto start = std::chrono::steady_clock::now();
      const Timing t = time_isolated(run.run, nullptr, flusher, budget, [&] { ++calls; });
      const double wall_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      CHECK(calls == 4);
      REQUIRE(t.samples.size() == 4);
      CHECK(t.plan.reps == 4);
      for (double ms : t.samples) CHECK(ms > 0.0);
      CHECK(t.ms.median == summarize(t.samples).median);
      CHECK(wall_ms >= 4 * 20.0);  // every launch waited its gap
      budget.isolated_launches = 0;
      CHECK_THROWS_AS(time_isolated(run.run, nullptr, flusher, budget), std::invalid_argument);
    }
  }

  TEST_CASE("in rounds every implementation is timed once per round in the rotating order, with NVML's reading") {
    FA2_SKIP_WITHOUT_GPU();
    std::ostringstream log;
    RunnerConfig config;
    config.budget.warmup_ms = 1.0;
    config.budget.rep_ms = 3.0;
    config.rounds = 5;
    config.seed = fresh_seed();
    Runner runner(assemble_registry({}), config, log);
    const Problem p{1, 2, 200, 64, false};
    // The reference runs first, then the others in the registry's order: positions 0, 1, 2 of
    // rotation_order.
    const std::vector<std::string> keys = {fa2::variants::kStep05Key, "v5", "cublas"};
    const auto results = runner.run({p}, keys);
    INFO(log.str());
    REQUIRE(results.size() == 3);
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Measurement& m = results[i];
      INFO(m.key, ": ", m.note);
      CHECK(m.key == keys[i]);
      REQUIRE(m.status == Status::ok);
      CHECK(m.timing == "do_bench");
      REQUIRE(m.round_ms.size() == 5);
      REQUIRE(m.round_position.size() == 5);
      REQUIRE(m.round_gpu.size() == 5);
      for (std::size_t r = 0; r < 5; ++r) {
        const auto order = rotation_order(3, r);
        CHECK(order[m.round_position[r]] == i);  // where the rotation put it in round r
      }
      CHECK(m.ms.median == summarize(m.round_ms).median);
      CHECK(m.reps == std::accumulate(m.round_reps.begin(), m.round_reps.end(), 0));
      if (runner.nvml().available()) {
        REQUIRE(m.gpu.sm_mhz.has_value());
        CHECK(*m.gpu.sm_mhz > 0u);
      } else {
        CHECK(m.gpu.empty());
      }
    }
    CHECK(log.str().find("round 5/5 (ms):") != std::string::npos);
    const auto pairs = pair_results(results, {p}, {{"v5", keys[0]}, {"cublas", keys[0]}});
    REQUIRE(pairs.size() == 2);
    for (const auto& pair : pairs) {
      CHECK(pair.spread.rounds == 5);
      CHECK(pair.spread.min <= pair.spread.median);
      CHECK(pair.spread.median <= pair.spread.max);
      CHECK(pair.spread.min > 0.0);
    }
  }
}
