// The quoted numbers (see quoted_reference.hpp), a copy of the committed file in
// step07_benchmark/results/quoted/ (its README gives their source). step07_tests compares the two
// and recomputes each quoted rate from its time with attention_flops(): our FLOP count must be
// the one the quoted harness used.
#include "step07_benchmark/harness/quoted_reference.hpp"

namespace fa2::bench {
namespace {

const char* const kSource =
    "step07_benchmark/results/quoted/sdpa_h200_2026-11-29.csv (H200, 2026-11-29, PyTorch 2.11.0+cu130, Triton 3.6)";

QuotedSeries make(const char* key, const char* name, std::vector<QuotedPoint> points) {
  QuotedSeries s;
  s.key = key;
  s.name = name;
  s.source = kSource;
  s.points = std::move(points);
  return s;
}

}  // namespace

const QuotedPoint* QuotedSeries::find(const Problem& p) const {
  if (p.B != B || p.H != H || p.D != D || p.backward()) return nullptr;  // every quoted number is a forward
  for (const auto& q : points) {
    if (q.N == p.N && q.causal == p.causal) return &q;
  }
  return nullptr;
}

const QuotedSeries& quoted_article_triton() {
  static const QuotedSeries s = make("triton-article", "article Triton 16x16, quoted",
                                     {{512, false, 0.136, 15.7},
                                      {512, true, 0.055, 19.5},
                                      {1024, false, 0.195, 44.1},
                                      {1024, true, 0.194, 22.2},
                                      {2048, false, 0.741, 46.3},
                                      {2048, true, 0.743, 23.1},
                                      {4096, false, 2.871, 47.9},
                                      {4096, true, 2.896, 23.7},
                                      {8192, false, 11.279, 48.7},
                                      {8192, true, 11.400, 24.1},
                                      {16384, false, 44.732, 49.2},
                                      {16384, true, 44.888, 24.5}});
  return s;
}

const QuotedSeries& quoted_python_sdpa_default() {
  static const QuotedSeries s = make("sdpa-python", "SDPA default via Python, quoted",
                                     {{512, false, 0.013, 164.9},
                                      {512, true, 0.013, 85.4},
                                      {1024, false, 0.027, 316.6},
                                      {1024, true, 0.025, 169.0},
                                      {2048, false, 0.082, 418.4},
                                      {2048, true, 0.061, 280.1},
                                      {4096, false, 0.292, 470.3},
                                      {4096, true, 0.185, 371.5},
                                      {8192, false, 1.147, 479.2},
                                      {8192, true, 0.644, 426.6},
                                      {16384, false, 4.745, 463.5},
                                      {16384, true, 2.447, 449.4}});
  return s;
}

const std::vector<QuotedSeries>& quoted_python_sdpa_backends() {
  static const std::vector<QuotedSeries> all = {
      make("sdpa-flash-python", "SDPA flash (FA2) via Python, quoted",
           {{512, false, 0.017, 123},
            {512, true, 0.019, 57},
            {1024, false, 0.037, 230},
            {1024, true, 0.038, 112},
            {2048, false, 0.124, 277},
            {2048, true, 0.100, 172},
            {4096, false, 0.462, 297},
            {4096, true, 0.296, 232},
            {8192, false, 1.803, 305},
            {8192, true, 1.000, 275},
            {16384, false, 7.138, 308},
            {16384, true, 3.688, 298}}),
      make("sdpa-cudnn-python", "SDPA cuDNN via Python, quoted",
           {{512, false, 0.014, 158},
            {512, true, 0.013, 81},
            {1024, false, 0.028, 311},
            {1024, true, 0.026, 166},
            {2048, false, 0.082, 419},
            {2048, true, 0.061, 284},
            {4096, false, 0.295, 465},
            {4096, true, 0.184, 374},
            {8192, false, 1.198, 459},
            {8192, true, 0.641, 429},
            {16384, false, 4.839, 454},
            {16384, true, 2.494, 441}}),
      make("sdpa-efficient-python", "SDPA mem-efficient via Python, quoted",
           {{512, false, 0.032, 67},
            {512, true, 0.032, 34},
            {1024, false, 0.077, 111},
            {1024, true, 0.069, 62},
            {2048, false, 0.280, 123},
            {2048, true, 0.201, 86},
            {4096, false, 1.081, 127},
            {4096, true, 0.644, 107},
            {8192, false, 4.207, 131},
            {8192, true, 2.271, 121},
            {16384, false, 16.317, 135},
            {16384, true, 8.532, 129}}),
  };
  return all;
}

}  // namespace fa2::bench
