// Numbers measured earlier on an H200 (same model) with the article's own Python harness,
// quoted (not re-run) beside ours: the article's Triton kernel (16x16 tiles) and PyTorch's SDPA
// backends through triton.testing.do_bench. They are committed, with their source and date, in
// step07_benchmark/results/quoted/ (README.md and the CSV it describes); step07_tests checks that
// these numbers equal that file's.
#pragma once

#include <string>
#include <vector>

#include "step07_benchmark/harness/bench_problem.hpp"

namespace fa2::bench {

struct QuotedPoint {
  int N = 0;
  bool causal = false;
  double ms = 0.0;
  double tflops = 0.0;  // as printed there (rounded)
};

struct QuotedSeries {
  std::string key;     // "triton-article"
  std::string name;    // "article Triton 16x16, quoted"
  std::string source;  // the committed file, the GPU and the date
  int B = 4, H = 8, D = 64;
  std::vector<QuotedPoint> points;

  // The point for this problem, or nullptr when B, H, D or N differ.
  const QuotedPoint* find(const Problem& p) const;
};

// The article's Triton kernel, unchanged, measured with its benchmark on the H200.
const QuotedSeries& quoted_article_triton();
// The SDPA column of that same run (default backend, which was cuDNN there).
const QuotedSeries& quoted_python_sdpa_default();
// Each SDPA backend forced, from the same file: flash (FA2), cudnn, efficient.
const std::vector<QuotedSeries>& quoted_python_sdpa_backends();

}  // namespace fa2::bench
