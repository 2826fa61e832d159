// The benchmark's problem (B, H, N, D, causal, forward or backward) and its napkin math: the FLOP
// count the article uses, the fewest bytes a pass must move, and the floor times those give.
// Host only (no CUDA); unit-tested by step07_tests, printed by step07_demo and step07_bench.
#pragma once

#include <cstddef>
#include <string>

#include "common/numeric.hpp"
#include "common/window.hpp"

namespace fa2::bench {

// Which pass is timed: the forward (O and L from Q, K, V), or the backward (dQ, dK, dV from Q,
// K, V, O, L and dO, its preprocessing included).
enum class Pass { forward, backward };
std::string to_string(Pass pass);  // "fwd", "bwd": the CSV's `pass` column

// Q, K, V, O are (B, H, N, D) bfloat16, contiguous: the same memory as (B*H, N, D), which is
// how our kernels see it. L (the logsumexp) is (B, H, N) float32. A backward problem adds dO,
// dQ, dK, dV, also (B, H, N, D) bfloat16.
struct Problem {
  int B = 4;
  int H = 8;
  int N = 1024;
  int D = 64;
  bool causal = false;
  Pass pass = Pass::forward;
  Window window{};  // a sliding window (common/window.hpp), on top of the causal mask where both are set

  index_t heads() const { return static_cast<index_t>(B) * H; }                     // B*H independent attentions
  index_t qkv_elements() const { return heads() * N * D; }                          // elements of one of Q, K, V, O
  index_t score_elements() const { return heads() * N * static_cast<index_t>(N); }  // of S or P
  bool backward() const { return pass == Pass::backward; }
  std::string label() const;  // "B=4 H=8 N=4096 D=64 causal", "... window=(4095,0) backward"
};

bool operator==(const Problem& a, const Problem& b);

// A problem's window as the label and the CSVs write it: "(4095,0)", and "" without one; and back
// (std::invalid_argument on anything else).
std::string window_text(const Window& w);
Window window_from_text(const std::string& text);

// The article's count: two matrix products (Q K^T and P V) of N*N*D multiply-adds per head,
// two FLOPs per multiply-add, halved for causal because only the lower triangle is needed.
// A kernel that still computes the masked upper tiles does the full work in the same time and is
// credited with half of it, so under this count its causal TFLOP/s is half its real rate. (The
// article calls that rate flattered; it is the opposite: the count leaves out work that was done.)
// The backward counts 2.5 times the forward (FlashAttention's convention: five products of
// N*N*D multiply-adds, Q K^T again, dV, dP, dQ and dK, against the forward's two), also halved
// for causal. With a window, 4*D FLOPs a forward per (query, key) pair the masks leave, counted.
double attention_flops(const Problem& p);

// Device bytes of everything a fused kernel touches. Forward: Q, K, V and O (bf16) plus L
// (float32). Backward: Q, K, V, O, dO, dQ, dK, dV (bf16) plus L (float32).
std::size_t io_bytes(const Problem& p);

// The least traffic to device memory: each of those read or written once.
double min_traffic_bytes(const Problem& p);

// Bytes of one N x N matrix per head in bf16 (S or P of standard attention).
std::size_t score_matrix_bytes(const Problem& p);

// TFLOP/s of `flops` done in `ms` milliseconds (flops / ms * 1e-9, the article's formula).
double tflops_per_s(double flops, double ms);

// Rates to compare against: a datasheet or measured on the device.
struct Ceilings {
  double matrix_tflops = 0.0;  // dense bf16 tensor-core rate, TFLOP/s
  double memory_tbps = 0.0;    // device memory bandwidth, TB/s (1e12 bytes per second)
  std::string source;
};

// The H200 SXM datasheet numbers (dense bf16 without sparsity, HBM3e bandwidth). Leads, not
// measurements: step07_bench measures both on the device and prints them beside these.
Ceilings h200_datasheet();

struct FloorTime {
  double compute_ms = 0.0;  // FLOPs at the matrix rate
  double memory_ms = 0.0;   // minimal bytes at the memory bandwidth
  double floor_ms() const { return compute_ms > memory_ms ? compute_ms : memory_ms; }
  bool compute_bound() const { return compute_ms >= memory_ms; }
};

FloorTime floor_time(const Problem& p, const Ceilings& c);

// "12.3 MiB", "4.00 GiB": for log lines.
std::string format_bytes(double bytes);

}  // namespace fa2::bench
