// Napkin math for the benchmark's problems (see bench_problem.hpp).
#include "step07_benchmark/harness/bench_problem.hpp"

#include <cstdio>

namespace fa2::bench {

std::string to_string(Pass pass) {
  return pass == Pass::backward ? "bwd" : "fwd";
}

std::string Problem::label() const {
  char buf[112];
  std::snprintf(buf, sizeof buf, "B=%d H=%d N=%d D=%d %s%s", B, H, N, D, causal ? "causal" : "non-causal",
                backward() ? " backward" : "");
  return buf;
}

bool operator==(const Problem& a, const Problem& b) {
  return a.B == b.B && a.H == b.H && a.N == b.N && a.D == b.D && a.causal == b.causal && a.pass == b.pass;
}

double attention_flops(const Problem& p) {
  const double n = static_cast<double>(p.N);
  const double forward = 4.0 * static_cast<double>(p.heads()) * n * n * static_cast<double>(p.D);
  const double full = p.backward() ? 2.5 * forward : forward;
  return p.causal ? full / 2.0 : full;
}

std::size_t io_bytes(const Problem& p) {
  const auto elems = static_cast<std::size_t>(p.qkv_elements());
  const auto rows = static_cast<std::size_t>(p.heads() * p.N);
  const std::size_t bf16_tensors = p.backward() ? 8 : 4;   // Q, K, V, O (+ dO, dQ, dK, dV)
  return bf16_tensors * elems * 2 + rows * sizeof(float);  // + L in float32
}

double min_traffic_bytes(const Problem& p) {
  return static_cast<double>(io_bytes(p));
}

std::size_t score_matrix_bytes(const Problem& p) {
  return static_cast<std::size_t>(p.score_elements()) * 2;
}

double tflops_per_s(double flops, double ms) {
  return ms > 0.0 ? flops / ms * 1e-9 : 0.0;
}

Ceilings h200_datasheet() {
  return Ceilings{989.0, 4.8, "H200 SXM datasheet"};
}

FloorTime floor_time(const Problem& p, const Ceilings& c) {
  FloorTime f;
  if (c.matrix_tflops > 0.0) f.compute_ms = attention_flops(p) / (c.matrix_tflops * 1e12) * 1e3;
  if (c.memory_tbps > 0.0) f.memory_ms = min_traffic_bytes(p) / (c.memory_tbps * 1e12) * 1e3;
  return f;
}

std::string format_bytes(double bytes) {
  char buf[64];
  const double mib = bytes / (1024.0 * 1024.0);
  if (mib >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", mib / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", mib);
  }
  return buf;
}

}  // namespace fa2::bench
