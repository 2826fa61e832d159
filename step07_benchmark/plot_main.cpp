// step07_plot: redraws the benchmark's TFLOP/s plot from its CSV with a chosen set of
// implementations, so that a plot for a README can show five lines instead of thirty.
//   build/default/step07_benchmark/step07_plot results.csv out.svg --d=64 --impl=ours16,v4,v5,sdpa-fa2,sdpa
//   (--label=KEY=text renames a series; the article's quoted Triton kernel is drawn dashed)
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "step07_benchmark/bench_report.hpp"
#include "step07_benchmark/quoted_reference.hpp"

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, sep);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: step07_plot <results.csv> <out.svg> --impl=KEY,KEY,... [--d=64] [--label=KEY=text]...\n";
    return 2;
  }
  try {
    const std::string csv_path = argv[1], svg_path = argv[2];
    int D = 64;
    std::vector<std::string> keys;
    std::vector<std::pair<std::string, std::string>> labels;
    std::string subtitle = "NVIDIA H200, B=4 H=8, bf16, median of do_bench-style runs; dashed: quoted, not re-run";
    for (int i = 3; i < argc; ++i) {
      const std::string a = argv[i];
      if (a.rfind("--impl=", 0) == 0) {
        keys = split(a.substr(7), ',');
      } else if (a.rfind("--d=", 0) == 0) {
        D = std::stoi(a.substr(4));
      } else if (a.rfind("--label=", 0) == 0 && a.find('=', 8) != std::string::npos) {
        const auto eq = a.find('=', 8);
        labels.emplace_back(a.substr(8, eq - 8), a.substr(eq + 1));
      } else if (a.rfind("--subtitle=", 0) == 0) {
        subtitle = a.substr(11);
      } else {
        throw std::invalid_argument("unknown option '" + a + "'");
      }
    }
    if (keys.empty()) throw std::invalid_argument("--impl: give at least one implementation key");
    std::ifstream in(csv_path);
    if (!in) throw std::invalid_argument("cannot read " + csv_path);
    std::stringstream text;
    text << in.rdbuf();
    auto all = fa2::bench::from_csv(text.str());
    std::vector<fa2::bench::Problem> problems;
    for (const auto& m : all) problems.push_back(m.problem);
    const auto quoted = fa2::bench::quoted_measurements(problems);
    all.insert(all.end(), quoted.begin(), quoted.end());

    std::vector<fa2::bench::ChartSeries> series;
    for (const auto& key : keys) {
      std::string label = key;
      for (const auto& [k, text_label] : labels) {
        if (k == key) label = text_label;
      }
      series.push_back({key, label, key == fa2::bench::quoted_article_triton().key});
    }
    std::ofstream(svg_path) << fa2::bench::svg::render(fa2::bench::tflops_chart(all, series, D, subtitle));
    std::cout << "wrote " << svg_path << " (" << series.size() << " series, head dim " << D << ")\n";
  } catch (const std::exception& e) {
    std::cerr << "step07_plot: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
