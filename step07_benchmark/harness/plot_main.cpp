// step07_plot: redraws the benchmark's TFLOP/s plot from its CSV with a chosen set of
// implementations, so that a plot for a README can show five lines instead of thirty.
//   build/default/step07_benchmark/step07_plot results.csv out.svg --d=64 --impl=ours16,v4,v5,sdpa-fa2,sdpa
//   (--label=KEY=text renames a series; the article's quoted Triton kernel is drawn dashed)
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "common/svg_plot.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_report.hpp"
#include "step07_benchmark/harness/quoted_reference.hpp"

namespace {

using fa2::bench::Measurement;
using fa2::cli::UsageError;

struct PlotOptions {
  std::string csv_path, svg_path;
  std::vector<std::string> keys;                            // --impl, in legend order
  int D = 64;                                               // --d
  std::vector<std::pair<std::string, std::string>> labels;  // --label=KEY=TEXT
  std::string subtitle = "NVIDIA H200, B=4 H=8, bf16, median of do_bench-style runs; dashed: quoted, not re-run";
};

std::vector<Measurement> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return fa2::bench::from_csv(text.str());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(path + ": " + e.what());  // a broken file, not a mistake on the command line
  }
}

// The article's Triton numbers (quoted, not re-run) join the rows, unless the CSV holds them
// already (step07_bench writes them), so that each point is drawn once.
void add_quoted(std::vector<Measurement>& all) {
  const std::string triton = fa2::bench::quoted_article_triton().key;
  if (std::any_of(all.begin(), all.end(), [&](const Measurement& m) { return m.key == triton; })) return;
  std::vector<fa2::bench::Problem> problems;
  for (const auto& m : all) {
    if (std::find(problems.begin(), problems.end(), m.problem) == problems.end()) problems.push_back(m.problem);
  }
  const auto quoted = fa2::bench::quoted_measurements(problems);
  all.insert(all.end(), quoted.begin(), quoted.end());
}

// Every key and label must name rows of the CSV at this head dim: a plot with a silently empty
// series (a typo, or a head dim the sweep did not run) looks like a result, and is not one.
void check_selection(const PlotOptions& o, const std::vector<Measurement>& all) {
  std::set<int> dims;
  std::vector<std::string> present;  // keys with rows at head dim o.D, in CSV order
  for (const auto& m : all) {
    dims.insert(m.problem.D);
    if (m.problem.D == o.D && std::find(present.begin(), present.end(), m.key) == present.end()) {
      present.push_back(m.key);
    }
  }
  if (dims.empty()) throw std::runtime_error(o.csv_path + " has no measurements");
  if (present.empty()) {
    std::vector<std::string> there;
    for (int d : dims) there.push_back(std::to_string(d));
    throw UsageError("--d", "no rows with head dim " + std::to_string(o.D) + " in " + o.csv_path +
                                "; head dims there: " + fa2::cli::join(there));
  }
  if (o.keys.empty()) {
    throw UsageError("--impl",
                     "required; the CSV has " + fa2::cli::join(present) + " at head dim " + std::to_string(o.D));
  }
  for (const auto& key : o.keys) {
    if (std::find(present.begin(), present.end(), key) == present.end()) {
      throw UsageError("--impl", "'" + key + "' has no rows with head dim " + std::to_string(o.D) + " in " +
                                     o.csv_path + "; keys there: " + fa2::cli::join(present));
    }
  }
  for (const auto& [key, text] : o.labels) {
    if (std::find(o.keys.begin(), o.keys.end(), key) == o.keys.end()) {
      throw UsageError("--label", "'" + key + "' is not one of the --impl keys (" + fa2::cli::join(o.keys) + ")");
    }
  }
}

int plot(const PlotOptions& o) {
  auto all = read_csv(o.csv_path);
  add_quoted(all);
  check_selection(o, all);

  std::vector<fa2::bench::ChartSeries> series;
  for (const auto& key : o.keys) {
    std::string label = key;
    for (const auto& [k, text] : o.labels) {
      if (k == key) label = text;
    }
    series.push_back({key, label, key == fa2::bench::quoted_article_triton().key});
  }
  fa2::cli::write_file(o.svg_path, fa2::svg::render(fa2::bench::tflops_chart(all, series, o.D, o.subtitle)));
  std::cout << "wrote " << o.svg_path << " (" << series.size() << " series, head dim " << o.D << ")\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  PlotOptions o;
  fa2::cli::Parser cli("step07_plot",
                       "Redraws step07_bench's TFLOP/s plot from its CSV with the implementations you choose, e.g.\n"
                       "five lines for a README instead of thirty; the article's quoted Triton kernel\n(" +
                           fa2::bench::quoted_article_triton().key + ") is drawn dashed.");
  cli.positional("<results.csv>", o.csv_path, "what step07_bench --out=DIR wrote: DIR/step07_results.csv")
      .positional("<out.svg>", o.svg_path, "the plot to write")
      .custom("--impl", "KEY,...", "the series to draw, in legend order: keys with rows in the CSV (required)",
              [&](std::string_view flag, const std::string& value) {
                o.keys = fa2::cli::split_list(value);
                if (o.keys.empty()) throw UsageError(std::string(flag), "empty list, give at least one key");
              })
      .integer("--d", o.D, 1, 1 << 16, "the head dim to plot; the CSV must have rows with it")
      .custom("--label", "KEY=TEXT", "the legend text of KEY's series (default: the key); may be repeated",
              [&](std::string_view flag, const std::string& value) {
                const auto eq = value.find('=');
                if (eq == std::string::npos || eq == 0) {
                  throw UsageError(std::string(flag), "got '" + value + "', expected KEY=TEXT");
                }
                o.labels.emplace_back(value.substr(0, eq), value.substr(eq + 1));
              })
      .text("--subtitle", o.subtitle, "TEXT", "the line under the title");
  return cli.run(argc, argv, [&] { return plot(o); });
}
