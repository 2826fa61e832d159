// The benchmark's driver (see bench_runner.hpp): inputs, checks, timing, memory, per problem.
#include "step07_benchmark/harness/bench_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "step07_benchmark/baselines/impl_cublas.hpp"
#include "step07_benchmark/harness/bench_device.hpp"

namespace fa2::bench {
namespace {

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

// One query row checked against float64: which row, and the float64 answer (D values).
struct SampledRow {
  index_t head = 0;  // b*H + h
  int q = 0;
  std::vector<double> expected;
};

void copy_to_host(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  FA2_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  FA2_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// Softmax attention of one query row in float64, over the keys the causal mask (k <= q) and the
// window leave it; a row that sees no key is 0 (common/window.hpp).
std::vector<double> reference_row(const Problem& p, const std::vector<bf16>& q_row, const std::vector<bf16>& K,
                                  const std::vector<bf16>& V, int q) {
  const auto D = static_cast<std::size_t>(p.D);
  const double scale = 1.0 / std::sqrt(static_cast<double>(p.D));
  std::vector<std::size_t> keys;
  for (int k = 0; k < p.N; ++k) {
    if (sees(p.causal, p.window, q, k)) keys.push_back(static_cast<std::size_t>(k));
  }
  std::vector<double> s(keys.size());
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    double dot = 0.0;
    for (std::size_t d = 0; d < D; ++d) {
      dot += static_cast<double>(static_cast<float>(q_row[d])) *
             static_cast<double>(static_cast<float>(K[keys[i] * D + d]));
    }
    s[i] = dot * scale;
    m = std::max(m, s[i]);
  }
  std::vector<double> out(D, 0.0);
  double l = 0.0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const double w = std::exp(s[i] - m);
    l += w;
    for (std::size_t d = 0; d < D; ++d) out[d] += w * static_cast<double>(static_cast<float>(V[keys[i] * D + d]));
  }
  if (l > 0.0) {
    for (double& x : out) x /= l;
  }
  return out;
}

std::vector<SampledRow> sample_rows(const Problem& p, const AttentionBuffers& b, const RunnerConfig& cfg,
                                    std::mt19937_64& rng, cudaStream_t stream) {
  const index_t heads = p.heads();
  std::vector<index_t> chosen_heads = {0, heads - 1};
  std::uniform_int_distribution<index_t> pick_head(0, heads - 1);
  for (int tries = 0; tries < 100 && static_cast<int>(chosen_heads.size()) < cfg.sampled_heads; ++tries) {
    chosen_heads.push_back(pick_head(rng));
  }
  std::sort(chosen_heads.begin(), chosen_heads.end());
  chosen_heads.erase(std::unique(chosen_heads.begin(), chosen_heads.end()), chosen_heads.end());

  const auto D = static_cast<std::size_t>(p.D);
  const std::size_t head_elems = static_cast<std::size_t>(p.N) * D;
  std::vector<SampledRow> rows;
  std::vector<bf16> K(head_elems), V(head_elems), q_row(D);
  std::uniform_int_distribution<int> pick_q(0, p.N - 1);
  for (index_t h : chosen_heads) {
    const std::size_t offset = static_cast<std::size_t>(h) * head_elems;
    copy_to_host(K.data(), b.k + offset, head_elems * sizeof(bf16), stream);
    copy_to_host(V.data(), b.v + offset, head_elems * sizeof(bf16), stream);
    std::vector<int> qs = {0, p.N - 1};
    for (int tries = 0; tries < 100 && static_cast<int>(qs.size()) < cfg.sampled_rows_per_head; ++tries) {
      qs.push_back(pick_q(rng));
    }
    std::sort(qs.begin(), qs.end());
    qs.erase(std::unique(qs.begin(), qs.end()), qs.end());
    for (int q : qs) {
      copy_to_host(q_row.data(), b.q + offset + static_cast<std::size_t>(q) * D, D * sizeof(bf16), stream);
      rows.push_back(SampledRow{h, q, reference_row(p, q_row, K, V, q)});
    }
  }
  return rows;
}

struct SampledCheck {
  bool ok = true;
  double max_abs_error = 0.0;
  std::string first_failure;
};

SampledCheck check_sampled(const std::vector<SampledRow>& rows, const Problem& p, const bf16* o,
                           const RunnerConfig& cfg, cudaStream_t stream) {
  SampledCheck c;
  const auto D = static_cast<std::size_t>(p.D);
  std::vector<bf16> got(D);
  for (const auto& row : rows) {
    const std::size_t offset =
        (static_cast<std::size_t>(row.head) * static_cast<std::size_t>(p.N) + static_cast<std::size_t>(row.q)) * D;
    copy_to_host(got.data(), o + offset, D * sizeof(bf16), stream);
    for (std::size_t d = 0; d < D; ++d) {
      const double a = static_cast<double>(static_cast<float>(got[d]));
      const double e = row.expected[d];
      const double diff = std::fabs(a - e);
      const bool bad = std::isnan(a) || !(diff <= cfg.atol + cfg.rtol * std::fabs(e));
      if (std::isfinite(diff)) c.max_abs_error = std::max(c.max_abs_error, diff);
      if (bad && c.ok) {
        c.ok = false;
        char buf[200];
        std::snprintf(buf, sizeof buf, "row (b*h=%lld, q=%d), d=%zu: got %.6g, float64 says %.6g",
                      static_cast<long long>(row.head), row.q, d, a, e);
        c.first_failure = buf;
      }
    }
  }
  return c;
}

std::string describe_mismatch(const DeviceCompare& c, const Problem& p, const bf16* actual, const bf16* expected,
                              const std::string& against, cudaStream_t stream) {
  std::ostringstream s;
  s << c.mismatched << " of " << c.checked << " elements differ from " << against;
  if (c.nan_count > 0) s << " (" << c.nan_count << " NaN: unwritten or invalid)";
  if (c.worst_index >= 0) {
    const auto i = static_cast<std::size_t>(c.worst_index);
    const auto D = static_cast<std::size_t>(p.D), N = static_cast<std::size_t>(p.N);
    bf16 a{}, e{};
    copy_to_host(&a, actual + i, sizeof a, stream);
    copy_to_host(&e, expected + i, sizeof e, stream);
    char buf[200];
    std::snprintf(buf, sizeof buf, "; worst at (b*h=%zu, q=%zu, d=%zu): %.6g vs %.6g", i / (N * D), (i / D) % N, i % D,
                  static_cast<double>(static_cast<float>(a)), static_cast<double>(static_cast<float>(e)));
    s << buf;
  }
  return s.str();
}

// NaN (0xFF bytes) in everything the pass writes: O and L, or dQ, dK and dV (the backward
// reads O and L, which stay).
void poison(const AttentionBuffers& b, const Problem& p, cudaStream_t stream) {
  const auto elem_bytes = static_cast<std::size_t>(p.qkv_elements()) * sizeof(bf16);
  if (p.backward()) {
    for (bf16* grad : {b.dq, b.dk, b.dv}) FA2_CUDA_CHECK(cudaMemsetAsync(grad, 0xFF, elem_bytes, stream));
    return;
  }
  FA2_CUDA_CHECK(cudaMemsetAsync(b.o, 0xFF, elem_bytes, stream));
  FA2_CUDA_CHECK(cudaMemsetAsync(b.l, 0xFF, static_cast<std::size_t>(p.heads() * p.N) * sizeof(float), stream));
}

// After an exception: clears a non-sticky error, and stops the run if the context is broken
// (an illegal address and the like poison every later call, so nothing after it can be trusted).
void ensure_context_usable(const std::string& after) {
  if (cudaDeviceSynchronize() == cudaSuccess) return;
  (void)cudaGetLastError();
  const cudaError_t again = cudaDeviceSynchronize();
  if (again != cudaSuccess) {
    throw std::runtime_error("the CUDA context is unusable after " + after + " (" + cudaGetErrorName(again) +
                             "); stopping. Results so far were written.");
  }
}

// NVML for the device this thread's CUDA calls go to, found by its PCI bus id.
Nvml nvml_for_current_device() {
  int device = 0;
  FA2_CUDA_CHECK(cudaGetDevice(&device));
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) (void)cudaGetLastError();
  return Nvml::open(bus_id);
}

}  // namespace

DeviceInfo DeviceInfo::query(int device) {
  DeviceInfo info;
  info.device = device;
  cudaDeviceProp prop{};
  FA2_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  info.total_memory = prop.totalGlobalMem;
  info.mem_bus_bits = prop.memoryBusWidth;
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, device) == cudaSuccess && v > 0) {
    info.sm_clock_khz = v;
  } else {
    (void)cudaGetLastError();
  }
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, device) == cudaSuccess && v > 0) {
    info.mem_clock_khz = v;
  } else {
    (void)cudaGetLastError();
  }
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) == cudaSuccess) {
    info.pci_bus_id = bus_id;
  } else {
    (void)cudaGetLastError();
  }
  FA2_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  FA2_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  info.cublas_version = cublas_version_string();
  return info;
}

std::string DeviceInfo::describe() const {
  std::ostringstream s;
  s << "GPU " << device << ": " << name << " (sm_" << cc_major << cc_minor << "), " << sm_count << " SMs, L2 "
    << format_bytes(static_cast<double>(l2_bytes)) << ", " << format_bytes(static_cast<double>(total_memory))
    << " device memory\n";
  s << "clocks (peak, from cudaDeviceGetAttribute): SM "
    << (sm_clock_khz ? std::to_string(*sm_clock_khz / 1000) + " MHz" : std::string("n/a")) << ", memory "
    << (mem_clock_khz ? std::to_string(*mem_clock_khz / 1000) + " MHz" : std::string("n/a")) << ", " << mem_bus_bits
    << "-bit bus\n";
  s << "CUDA driver " << version_text(driver_version) << ", runtime " << version_text(runtime_version) << ", cuBLAS "
    << cublas_version << "\n";
  return s.str();
}

std::vector<Implementation> assemble_registry(std::vector<Implementation> torch) {
  std::vector<Implementation> all = kernel_implementations();
  for (auto& impl : torch) all.push_back(std::move(impl));
  all.push_back(cublas_attention_implementation());
  std::set<std::string> keys;
  for (const auto& impl : all) {
    if (impl.key.empty() || impl.key.find_first_of(" ,\"") != std::string::npos) {
      throw std::invalid_argument("implementation key '" + impl.key + "' must be non-empty, without spaces or commas");
    }
    if (!impl.prepare || !impl.unsupported || !impl.extra_bytes) {
      throw std::invalid_argument("implementation '" + impl.key + "' lacks prepare, unsupported or extra_bytes");
    }
    if (!keys.insert(impl.key).second)
      throw std::invalid_argument("two implementations have the key '" + impl.key + "'");
  }
  return all;
}

Runner::Runner(std::vector<Implementation> impls, RunnerConfig config, std::ostream& log)
    : impls_(std::move(impls)), config_(std::move(config)), log_(log), nvml_(nvml_for_current_device()) {
  if (config_.rounds < 1) throw std::invalid_argument("RunnerConfig: rounds must be >= 1");
  const bool has_ref = std::any_of(impls_.begin(), impls_.end(),
                                   [&](const Implementation& i) { return i.key == config_.reference_key; });
  if (!has_ref)
    throw std::invalid_argument("the reference implementation '" + config_.reference_key + "' is not registered");
  int device = 0;
  FA2_CUDA_CHECK(cudaGetDevice(&device));
  FA2_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  flusher_ = std::make_unique<L2Flusher>(l2_flush_bytes(device));
}

Runner::~Runner() {
  flusher_.reset();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);  // no throw from a destructor
}

Ceilings Runner::measure_ceilings() {
  TimingBudget short_budget = config_.budget;
  short_budget.warmup_ms = std::min(short_budget.warmup_ms, 10.0);
  short_budget.rep_ms = std::min(short_budget.rep_ms, 50.0);
  const std::size_t bytes = std::size_t{1} << 30;
  double tbps = 0.0;
  {
    cuda::DeviceBuffer<unsigned char> src(bytes), dst(bytes);
    FA2_CUDA_CHECK(cudaMemsetAsync(src.data(), 1, bytes, stream_));
    const Timing t = do_bench(
        [&] { FA2_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream_)); },
        stream_, *flusher_, short_budget);
    tbps = 2.0 * static_cast<double>(bytes) / (t.ms.median * 1e-3) / 1e12;
  }
  const double tflops = measure_bf16_gemm_tflops(8192, stream_, *flusher_, short_budget, config_.seed ^ 0x5eedu);
  return Ceilings{tflops, tbps, "measured here: cuBLAS bf16 GEMM 8192^3 on random data; 1 GiB device-to-device copy"};
}

std::vector<Measurement> Runner::run(const std::vector<Problem>& problems, const std::vector<std::string>& keys,
                                     const std::function<void(const std::vector<Measurement>&)>& after_problem) {
  for (const auto& key : keys) {
    const bool known = std::any_of(impls_.begin(), impls_.end(), [&](const Implementation& i) { return i.key == key; });
    if (!known) {
      std::string all;
      for (const auto& i : impls_) all += (all.empty() ? "" : ", ") + i.key;
      throw std::invalid_argument("--impl: unknown key '" + key + "', registered: " + all);
    }
  }
  std::vector<Measurement> out;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    run_problem(problems[i], i, keys, out);
    if (after_problem) after_problem(out);
  }
  return out;
}

// The device data of one problem: fresh inputs, the outputs every implementation writes, the
// reference's output once it has passed its own checks, and the rows checked against float64.
struct Runner::ProblemData {
  const Problem& p;
  std::size_t elems, rows;
  cuda::DeviceBuffer<bf16> q, k, v, o, o_ref;
  cuda::DeviceBuffer<float> l;
  // A backward problem's: dO, the gradients, and the reference's gradients.
  cuda::DeviceBuffer<bf16> dout, dq, dk, dv, dq_ref, dk_ref, dv_ref;
  AttentionBuffers bufs;
  std::vector<SampledRow> sampled;
  bool have_ref = false;

  ProblemData(const Problem& problem, std::size_t n_elems, std::size_t n_rows)
      : p(problem),
        elems(n_elems),
        rows(n_rows),
        q(elems),
        k(elems),
        v(elems),
        o(elems),
        o_ref(elems),
        l(rows),
        dout(grad_elems()),
        dq(grad_elems()),
        dk(grad_elems()),
        dv(grad_elems()),
        dq_ref(grad_elems()),
        dk_ref(grad_elems()),
        dv_ref(grad_elems()),
        bufs{q.data(), k.data(), v.data(), o.data(), l.data(), dout.data(), dq.data(), dk.data(), dv.data()} {}

  std::size_t grad_elems() const { return p.backward() ? elems : 0; }
  // What a run must write and the harness compares: O, or dQ, dK and dV.
  struct Output {
    const char* name;
    bf16* actual;
    bf16* reference;
  };
  std::vector<Output> outputs() {
    if (!p.backward()) return {{"O", o.data(), o_ref.data()}};
    return {{"dQ", dq.data(), dq_ref.data()}, {"dK", dk.data(), dk_ref.data()}, {"dV", dv.data(), dv_ref.data()}};
  }
};

struct Runner::Candidate {
  const Implementation* impl = nullptr;
  Measurement m;
  std::optional<PreparedRun> run;  // held while it is timed: it passed its checks
  std::function<void()> run_into_outputs;
};

namespace {
Measurement unmeasured(const Implementation& impl, const Problem& p) {
  Measurement m;
  m.key = impl.key;
  m.name = impl.name;
  m.problem = p;
  return m;
}

// What an exception thrown by an implementation becomes in its measurement.
void record_exception(Measurement& m, const std::exception& e) {
  if (const auto* not_runnable = dynamic_cast<const NotRunnable*>(&e)) {
    m.status = not_runnable->kind() == NotRunnable::Kind::skipped       ? Status::skipped
               : not_runnable->kind() == NotRunnable::Kind::unavailable ? Status::unavailable
                                                                        : Status::unsupported;
  } else {
    m.status = Status::error;
  }
  m.note = e.what();
}

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", ms);
  return buf;
}
}  // namespace

void Runner::run_problem(const Problem& p, std::size_t index, const std::vector<std::string>& keys,
                         std::vector<Measurement>& out) {
  const auto selected = [&](const Implementation& impl) {
    return keys.empty() || std::find(keys.begin(), keys.end(), impl.key) != keys.end();
  };
  log_problem_header(p);
  const auto elems = static_cast<std::size_t>(p.qkv_elements());
  const auto rows = static_cast<std::size_t>(p.heads() * p.N);
  if (const std::string why = memory_shortfall(p, elems); !why.empty()) {
    for (const auto& impl : impls_) {
      if (!selected(impl)) continue;
      Measurement m = unmeasured(impl, p);
      m.status = Status::skipped;
      m.note = why;
      out.push_back(std::move(m));
    }
    log_ << "  all implementations " << to_string(Status::skipped) << ": " << why << "\n";
    return;
  }

  ProblemData data(p, elems, rows);
  const std::uint64_t seed = config_.seed + 0x9e3779b97f4a7c15ull * (index + 1);
  fill_normal_bf16(data.q.data(), elems, seed + 1, stream_);
  fill_normal_bf16(data.k.data(), elems, seed + 2, stream_);
  fill_normal_bf16(data.v.data(), elems, seed + 3, stream_);
  if (p.backward()) {
    fill_normal_bf16(data.dout.data(), elems, seed + 4, stream_);
    if (const std::string why = run_reference_forward(data); !why.empty()) {
      for (const auto& impl : impls_) {
        if (!selected(impl)) continue;
        Measurement m = unmeasured(impl, p);
        m.status = Status::error;
        m.note = why;
        out.push_back(std::move(m));
      }
      log_ << "  no backward measured: " << why << "\n";
      return;
    }
  }
  FA2_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::mt19937_64 rng(seed);
  if (!p.backward()) data.sampled = sample_rows(p, data.bufs, config_, rng, stream_);

  // The reference first: its output is what every other one is compared to.
  std::vector<const Implementation*> order;
  for (const auto& impl : impls_) {
    if (impl.key == config_.reference_key) order.push_back(&impl);
  }
  for (const auto& impl : impls_) {
    if (impl.key != config_.reference_key && selected(impl)) order.push_back(&impl);
  }
  const auto is_ref = [&](const Candidate& c) { return c.impl->key == config_.reference_key; };
  if (config_.rounds <= 1) {
    // One implementation at a time: checked, timed, checked again, logged.
    for (const Implementation* impl : order) {
      Candidate c = check(*impl, data, selected(*impl));
      if (c.run) {
        std::vector<Candidate*> one = {&c};
        time_rounds(one, 1);
        finish(c, data);
      }
      log_measurement(c.m, is_ref(c), selected(*impl));
      if (selected(*impl)) out.push_back(std::move(c.m));
    }
    return;
  }
  // Rounds: every implementation checked first, then timed once per round in rotating order, so
  // that whatever drifts during the problem (clocks, temperature) falls on all of them alike.
  std::vector<Candidate> candidates;
  candidates.reserve(order.size());
  for (const Implementation* impl : order) {
    candidates.push_back(check(*impl, data, selected(*impl)));
    if (!candidates.back().run) log_measurement(candidates.back().m, is_ref(candidates.back()), selected(*impl));
  }
  std::vector<Candidate*> timed;
  for (auto& c : candidates) {
    if (c.run) timed.push_back(&c);
  }
  time_rounds(timed, config_.rounds);
  for (Candidate* c : timed) {
    finish(*c, data);
    log_measurement(c->m, is_ref(*c), true);
  }
  for (auto& c : candidates) {
    if (selected(*c.impl)) out.push_back(std::move(c.m));
  }
}

void Runner::log_problem_header(const Problem& p) {
  const FloorTime floor = floor_time(p, h200_datasheet());
  char head[256];
  std::snprintf(head, sizeof head, "\n== %s: %.2f GFLOP, %s least traffic, H200 datasheet floor %.3f ms (%s-bound)\n",
                p.label().c_str(), attention_flops(p) * 1e-9, format_bytes(min_traffic_bytes(p)).c_str(),
                floor.floor_ms(), floor.compute_bound() ? "compute" : "memory");
  log_ << head << std::flush;
}

// The backward's inputs O and L: the reference kernel's forward of the same Q, K, V (its own
// forward is checked against float64 by its tests and by every forward problem). "" when done.
std::string Runner::run_reference_forward(ProblemData& d) {
  Problem forward = d.p;
  forward.pass = Pass::forward;
  for (const auto& impl : impls_) {
    if (impl.key != config_.reference_key) continue;
    PreparedRun run = impl.prepare(forward, d.bufs, stream_);
    (run.run_into_outputs ? run.run_into_outputs : run.run)();
    FA2_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return {};
  }
  return "the reference " + config_.reference_key + " is not registered";
}

std::string Runner::memory_shortfall(const Problem& p, std::size_t elems) const {
  // The problem's buffers, the reference's copies of the outputs, and 1 GiB of headroom.
  const std::size_t outputs = p.backward() ? 3 : 1;
  const std::size_t need = io_bytes(p) + outputs * elems * sizeof(bf16) + (std::size_t{1} << 30);
  std::size_t free_bytes = 0, total_bytes = 0;
  FA2_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (need <= free_bytes) return {};
  return "inputs and outputs need " + format_bytes(static_cast<double>(need)) + ", " +
         format_bytes(static_cast<double>(free_bytes)) + " free";
}

// Every output (O, or dQ, dK and dV) against the reference's (or, without one, a NaN scan); ""
// when all match. max_err_ref is the largest error over them.
std::string Runner::compare_with_reference(ProblemData& d, Measurement& m) {
  const std::string against = d.have_ref ? config_.reference_key : std::string("itself (NaN scan only)");
  const double atol = d.p.backward() ? config_.backward_tol : config_.atol;
  const double rtol = d.p.backward() ? config_.backward_tol : config_.rtol;
  double worst = 0.0;
  for (const auto& out : d.outputs()) {
    const bf16* expected = d.have_ref ? out.reference : out.actual;
    const DeviceCompare c = compare_bf16(out.actual, expected, d.elems, atol, rtol, stream_);
    worst = std::max(worst, c.max_abs_error);
    if (!c.ok()) {
      m.max_err_ref = d.have_ref ? std::optional<double>(worst) : std::nullopt;
      return std::string(d.p.backward() ? out.name : "") + (d.p.backward() ? ": " : "") +
             describe_mismatch(c, d.p, out.actual, expected, against, stream_);
    }
  }
  m.max_err_ref = d.have_ref ? std::optional<double>(worst) : std::nullopt;
  return {};
}

Runner::Candidate Runner::check(const Implementation& impl, ProblemData& d, bool timed) {
  const bool is_ref = impl.key == config_.reference_key;
  Candidate c;
  c.impl = &impl;
  c.m = unmeasured(impl, d.p);
  try {
    if (const std::string why = impl.unsupported(d.p); !why.empty()) {
      c.m.status = Status::unsupported;
      c.m.note = why;
      return c;
    }
    PreparedRun run = impl.prepare(d.p, d.bufs, stream_);
    c.m.backend = run.backend;
    c.run_into_outputs = run.run_into_outputs ? run.run_into_outputs : run.run;
    if (!check_output(c.run_into_outputs, is_ref, d, c.m)) return c;
    if (!timed) {
      c.m.note = "checked only (the reference, not selected for timing)";
      return c;
    }
    c.run = std::move(run);
  } catch (const std::exception& e) {
    record_exception(c.m, e);
    if (c.m.status == Status::error) ensure_context_usable(impl.key);
  }
  return c;
}

void Runner::time_rounds(std::vector<Candidate*>& candidates, int rounds) {
  if (candidates.empty()) return;
  const bool isolated = config_.budget.isolated_launches > 0;
  for (Candidate* c : candidates) c->m.timing = isolated ? "isolated" : "do_bench";
  for (int round = 0; round < rounds; ++round) {
    const std::vector<std::size_t> order = rotation_order(candidates.size(), static_cast<std::size_t>(round));
    std::string line;
    for (std::size_t position = 0; position < order.size(); ++position) {
      Candidate& c = *candidates[order[position]];
      if (!c.run || c.m.status != Status::ok) continue;  // dropped after an error in an earlier round
      try {
        std::vector<GpuSample> readings;
        const Timing t = isolated ? time_isolated(c.run->run, stream_, *flusher_, config_.budget,
                                                  [&] { readings.push_back(nvml_.sample()); })
                                  : do_bench(c.run->run, stream_, *flusher_, config_.budget);
        if (!isolated) readings.push_back(nvml_.sample());  // right after the timed runs, before the GPU idles
        c.m.round_ms.push_back(t.ms.median);
        c.m.round_position.push_back(position);
        c.m.round_reps.push_back(t.plan.reps);
        c.m.round_gpu.push_back(combine_samples(readings));
        c.m.reps += t.plan.reps;
        // One round keeps the statistics of its runs; several, those of the rounds' medians.
        c.m.ms = rounds == 1 ? t.ms : summarize(c.m.round_ms);
        line += "  " + c.m.key + " " + format_ms(t.ms.median);
      } catch (const std::exception& e) {
        record_exception(c.m, e);
        ensure_context_usable(c.m.key);
        line += "  " + c.m.key + " " + to_string(c.m.status);
      }
    }
    if (rounds > 1) {
      log_ << "  round " << round + 1 << "/" << rounds << " (ms):" << line << "  | " << format_sample(nvml_.sample())
           << "\n"
           << std::flush;
    }
  }
  for (Candidate* c : candidates) {
    if (c->m.status != Status::ok || c->m.round_ms.empty()) continue;
    c->m.tflops = tflops_per_s(attention_flops(c->m.problem), c->m.ms.median);
    c->m.gpu = combine_samples(c->m.round_gpu);
  }
}

// The same check once more after timing (an answer that moves after hundreds of runs points to a
// race), then the memory it used.
void Runner::finish(Candidate& c, ProblemData& d) {
  if (c.m.status != Status::ok || !c.run) return;
  try {
    if (config_.recheck_after_timing) {
      poison(d.bufs, d.p, stream_);
      c.run_into_outputs();
      FA2_CUDA_CHECK(cudaStreamSynchronize(stream_));
      if (const std::string why = compare_with_reference(d, c.m); !why.empty()) {
        c.m.status = Status::failed;
        c.m.note = "correct before timing, wrong after it (a race?): " + why;
      }
    }
    record_peak_memory(*c.impl, *c.run, d, c.m);
  } catch (const std::exception& e) {
    record_exception(c.m, e);
    if (c.m.status == Status::error) ensure_context_usable(c.m.key);
  }
  c.run.reset();  // its workspaces go now, not at the end of the problem
}

// Poisoned outputs, one run, then float64 rows (forward) and the whole outputs. The reference's
// outputs become the others' yardstick once they pass: for a forward, its float64 rows; for a
// backward, a NaN scan (its gradients are checked against float64 by step05's tests).
bool Runner::check_output(const std::function<void()>& run_into_outputs, bool is_ref, ProblemData& d, Measurement& m) {
  poison(d.bufs, d.p, stream_);
  run_into_outputs();
  FA2_CUDA_CHECK(cudaStreamSynchronize(stream_));
  SampledCheck s;
  s.ok = true;
  if (!d.p.backward()) {
    s = check_sampled(d.sampled, d.p, d.o.data(), config_, stream_);
    m.max_err_fp64 = s.max_abs_error;
  }
  if (is_ref && s.ok) {
    for (const auto& out : d.outputs()) {
      FA2_CUDA_CHECK(
          cudaMemcpyAsync(out.reference, out.actual, d.elems * sizeof(bf16), cudaMemcpyDeviceToDevice, stream_));
    }
    FA2_CUDA_CHECK(cudaStreamSynchronize(stream_));
    d.have_ref = true;
  }
  const std::string why_full = compare_with_reference(d, m);
  if (s.ok && why_full.empty()) return true;
  m.status = Status::failed;
  m.note = !s.ok ? "float64 check failed: " + s.first_failure : why_full;
  if (is_ref) {
    d.have_ref = false;
    log_ << "  reference " << m.key << " FAILED (" << m.note
         << "): the others are checked against float64 rows and a NaN scan only\n";
  }
  return false;
}

// Memory while it runs: what its allocator reports, or what we count.
void Runner::record_peak_memory(const Implementation& impl, const PreparedRun& run, const ProblemData& d,
                                Measurement& m) const {
  std::optional<std::size_t> measured;
  if (run.measure_extra_bytes) measured = run.measure_extra_bytes();
  if (measured) {
    // What Torch holds beyond the inputs it reads: Q, K, V (and for a backward dO; it makes its
    // own O and L and gradients, which its allocator counts).
    const std::size_t inputs = d.p.backward() ? 4 : 3;
    m.peak_bytes = static_cast<double>(inputs * d.elems * sizeof(bf16) + *measured);
    m.peak_source = "allocator";
  } else {
    m.peak_bytes = static_cast<double>(io_bytes(d.p) + impl.extra_bytes(d.p));
    m.peak_source = "counted";
  }
}

void Runner::log_measurement(const Measurement& m, bool is_ref, bool timed) {
  if (!timed && m.status == Status::ok) {
    log_ << "  " << m.key << "  checked (reference only, not timed)\n";
  } else if (m.status == Status::ok) {
    char line[400];
    const std::string rounds =
        m.round_ms.size() > 1 ? std::to_string(m.round_ms.size()) + " rounds, median of the rounds' medians, " : "";
    std::snprintf(line, sizeof line,
                  "  %-12s ok  %9.4f ms  %7.1f TF/s  peak %8.1f MiB  |err| vs %s %s, vs fp64 %s  (%s%d reps%s%s%s)\n",
                  m.key.c_str(), m.ms.median, m.tflops, m.peak_bytes.value_or(0.0) / (1024.0 * 1024.0),
                  is_ref ? "itself" : config_.reference_key.c_str(), m.max_err_ref ? sci(*m.max_err_ref).c_str() : "-",
                  m.max_err_fp64 ? sci(*m.max_err_fp64).c_str() : "-", rounds.c_str(), m.reps,
                  m.timing == "isolated" ? " isolated" : "", m.backend.empty() ? "" : ", backend ", m.backend.c_str());
    log_ << line << "      GPU after timing: " << format_sample(m.gpu) << "\n";
  } else {
    log_ << "  " << m.key << "  " << to_string(m.status) << ": " << m.note << "\n";
  }
  log_ << std::flush;
}

}  // namespace fa2::bench
