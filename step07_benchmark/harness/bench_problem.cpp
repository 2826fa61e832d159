// Napkin math for the benchmark's problems (see bench_problem.hpp).
#include "step07_benchmark/harness/bench_problem.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace fa2::bench {

std::string to_string(Pass pass) {
  return pass == Pass::backward ? "bwd" : "fwd";
}

std::string window_text(const Window& w) {
  return w.bounded() ? "(" + std::to_string(w.left) + "," + std::to_string(w.right) + ")" : std::string();
}

Window window_from_text(const std::string& text) {
  long long left = 0, right = 0;
  char end = 0;
  if (std::sscanf(text.c_str(), "(%lld,%lld%c", &left, &right, &end) != 3 || end != ')' || left < -1 || right < -1) {
    throw std::invalid_argument("window '" + text + "': expected (LEFT,RIGHT), each -1 or more");
  }
  return Window{static_cast<index_t>(left), static_cast<index_t>(right)};
}

std::string Problem::label() const {
  char buf[112];
  std::snprintf(buf, sizeof buf, "B=%d H=%d N=%d D=%d %s%s%s%s", B, H, N, D, causal ? "causal" : "non-causal",
                window.bounded() ? " window=" : "", window_text(window).c_str(), backward() ? " backward" : "");
  return buf;
}

bool operator==(const Problem& a, const Problem& b) {
  return a.B == b.B && a.H == b.H && a.N == b.N && a.D == b.D && a.causal == b.causal && a.pass == b.pass &&
         a.window == b.window;
}

double attention_flops(const Problem& p) {
  const double n = static_cast<double>(p.N);
  const double per_pair = 4.0 * static_cast<double>(p.heads()) * static_cast<double>(p.D) * (p.backward() ? 2.5 : 1.0);
  if (!p.window.bounded()) return per_pair * n * n / (p.causal ? 2.0 : 1.0);
  double pairs = 0.0;  // the keys each query sees, summed: one run of keys per query
  for (index_t q = 0; q < p.N; ++q) {
    const index_t first = p.window.left < 0 ? 0 : std::max<index_t>(0, q - p.window.left);
    index_t last = p.causal ? q : p.N - 1;
    if (p.window.right >= 0) last = std::min(last, q + p.window.right);
    if (last >= first) pairs += static_cast<double>(last - first + 1);
  }
  return per_pair * pairs;
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
