// The benchmark's driver: for every problem it makes fresh random inputs on the device, checks
// every implementation's output (poisoned with NaN first) against the reference kernel on the
// whole tensor and against float64 on sampled rows, times only those that pass (do_bench
// style, or in rounds that rotate their order with --repeat), reads the GPU's clocks, power and
// temperature after each timing (NVML), checks once more after timing, and records memory. Used
// by step07_bench, the demo and the GPU tests.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_report.hpp"
#include "step07_benchmark/harness/implementation.hpp"
#include "step07_benchmark/harness/nvml.hpp"
#include "step07_benchmark/harness/timing.hpp"
#include "step07_benchmark/kernels/lab/variants.hpp"

namespace fa2::bench {

// What the header says about the GPU and the libraries.
struct DeviceInfo {
  int device = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t total_memory = 0;
  std::optional<int> sm_clock_khz;   // peak, from cudaDevAttrClockRate (the current clock is NVML's)
  std::optional<int> mem_clock_khz;  // peak, from cudaDevAttrMemoryClockRate
  std::string pci_bus_id;            // how NVML finds the same device
  int mem_bus_bits = 0;
  int driver_version = 0, runtime_version = 0;
  std::string cublas_version;

  static DeviceInfo query(int device);
  std::string describe() const;  // several lines for the header
};

// Our kernels (the variants table), then (torch) and cuBLAS, in table order. `torch` comes from impl_torch.hpp
// (step07_bench) or is empty (demo, tests).
std::vector<Implementation> assemble_registry(std::vector<Implementation> torch);

struct RunnerConfig {
  TimingBudget budget;  // per measurement, or per round with --repeat
  // --repeat: rounds per problem. Above 1, every selected implementation is checked first, then
  // timed once per round in rotation_order(round), then checked again; the measurement holds the
  // median over rounds and each round's time, so that pairs can be compared round by round.
  int rounds = 1;
  std::uint64_t seed = 0;
  std::string reference_key = variants::kStep05Key;  // step05's kernel: see README.md for why it is the reference
  double atol = 2e-2;                                // bf16 outputs: a few ulps of bf16 near 1 (2^-8 = 0.004)
  double rtol = 2e-2;
  // Gradients (atol = rtol): each is a sum over a whole row or column of bf16-rounded P and dS,
  // and implementations round and order those sums differently; a few bf16 steps of the largest
  // term, which is of order 1 here (inputs and dO are N(0, 1)).
  double backward_tol = 5e-2;
  int sampled_heads = 4;             // float64 check: first, last and random (batch, head) pairs
  int sampled_rows_per_head = 4;     // query 0, query N-1 and random ones
  bool recheck_after_timing = true;  // catches results that change from run to run (races)
};

class Runner {
 public:
  // Takes the registry; the reference key must be in it. Creates the stream and the L2 flusher.
  Runner(std::vector<Implementation> impls, RunnerConfig config, std::ostream& log);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Runs `problems` for the implementations whose key is in `keys` (empty: all). The reference
  // always runs its check; it gets a row only if selected. `after_problem` is called with every
  // measurement so far after each problem (e.g. to rewrite the CSV).
  std::vector<Measurement> run(const std::vector<Problem>& problems, const std::vector<std::string>& keys,
                               const std::function<void(const std::vector<Measurement>&)>& after_problem = {});

  // Device copy bandwidth (TB/s, bytes read + written) and bf16 GEMM rate (TFLOP/s).
  Ceilings measure_ceilings();

  cudaStream_t stream() const { return stream_; }
  const Nvml& nvml() const { return nvml_; }  // the device's NVML, or why there is none
  const std::vector<Implementation>& implementations() const { return impls_; }
  std::size_t flush_bytes() const { return flusher_->bytes(); }

 private:
  struct ProblemData;  // one problem's device buffers, sampled rows and reference output
  struct Candidate;    // one implementation on one problem: its measurement and prepared run

  // One problem: fresh inputs, then every selected implementation checked, timed and logged.
  void run_problem(const Problem& p, std::size_t index, const std::vector<std::string>& keys,
                   std::vector<Measurement>& out);
  void log_problem_header(const Problem& p);
  std::string memory_shortfall(const Problem& p, std::size_t elems) const;  // "" when it fits
  // Prepares and checks one implementation; it keeps its prepared run when it passed and is to be
  // timed (`timed`).
  Candidate check(const Implementation& impl, ProblemData& d, bool timed);
  // `rounds` rounds over the candidates that hold a prepared run, in rotation_order; one that
  // throws is dropped from later rounds with its error recorded.
  void time_rounds(std::vector<Candidate*>& candidates, int rounds);
  // After timing: the same check once more, then memory.
  void finish(Candidate& c, ProblemData& d);
  std::string run_reference_forward(ProblemData& d);  // a backward's O and L; "" when done
  bool check_output(const std::function<void()>& run_into_outputs, bool is_ref, ProblemData& d, Measurement& m);
  std::string compare_with_reference(ProblemData& d, Measurement& m);
  void record_peak_memory(const Implementation& impl, const PreparedRun& run, const ProblemData& d,
                          Measurement& m) const;
  void log_measurement(const Measurement& m, bool is_ref, bool timed);

  std::vector<Implementation> impls_;
  RunnerConfig config_;
  std::ostream& log_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<L2Flusher> flusher_;
  Nvml nvml_;
};

}  // namespace fa2::bench
