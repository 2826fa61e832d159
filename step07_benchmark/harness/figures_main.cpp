// step07_figures: writes the figures of step07_benchmark/GUIDE.md and APPENDIX.md (SVG) into a directory; the
// roofline's points come from a results CSV and its ceilings from the same run's log.
//   build/default/step07_benchmark/step07_figures step07_benchmark/results/h200_2026-11-29/step07_results.csv
//       step07_benchmark/figures        (one command, from the repository root)
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "step07_benchmark/harness/figures.hpp"

namespace {

namespace fs = std::filesystem;
using fa2::cli::UsageError;

struct FigureOptions {
  std::string csv_path, out_dir;
  std::string log_path;  // default: step07_log.txt beside the CSV
  int N = 4096, D = 64;
  bool causal = false;
};

int write_figures(FigureOptions o) {
  if (!fs::is_directory(o.out_dir)) {
    throw std::runtime_error("cannot write into " + o.out_dir + ": not an existing directory");
  }
  if (o.log_path.empty()) o.log_path = (fs::path(o.csv_path).parent_path() / "step07_log.txt").string();

  auto in = fa2::bench::figures::read_inputs(o.csv_path, o.log_path);
  const auto problem = fa2::bench::figures::find_problem(in.results, o.N, o.D, o.causal);
  if (!problem) {
    throw UsageError("--n", "no rows with N = " + std::to_string(o.N) + ", D = " + std::to_string(o.D) +
                                (o.causal ? ", causal" : ", non-causal") + " in " + o.csv_path);
  }
  in.problem = *problem;

  for (const auto& f : fa2::bench::figures::all_figures(in)) {
    const fs::path path = fs::path(o.out_dir) / f.file;
    fa2::cli::write_file(path, f.svg);
    std::cout << "wrote " << path.string() << ": " << f.what << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  FigureOptions o;
  fa2::cli::Parser cli("step07_figures",
                       "Writes the figures of step07's GUIDE.md and APPENDIX.md as SVG files into <out_dir>: the\n"
                       "mma.sync fragment layout, ldmatrix, the shared-memory swizzle, the cp.async pipeline, the\n"
                       "causal masks and a roofline whose points come from <results.csv>.");
  cli.positional("<results.csv>", o.csv_path, "what step07_bench --out=DIR wrote: DIR/step07_results.csv")
      .positional("<out_dir>", o.out_dir, "an existing directory; the SVG files in it are overwritten")
      .text("--log", o.log_path, "FILE",
            "the run's log with step07_bench's 'ceilings:' line (default: step07_log.txt beside the CSV)")
      .integer("--n", o.N, 1, 1 << 24, "the roofline's sequence length; the CSV must have rows with it")
      .integer("--d", o.D, 1, 1 << 16, "the roofline's head dim")
      .choice("--causal", o.causal, {{"no", false}, {"yes", true}}, "the roofline's mask");
  return cli.run(argc, argv, [&] { return write_figures(o); });
}
