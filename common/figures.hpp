// What every step's figure program shares: a figure is a file name, a line saying what it shows,
// and its SVG; run_figures_program is the program's main(), which writes them into a directory.
// cmake/Fa2Figures.cmake builds each program, checks its output against the committed figures
// (ctest -L figures) and regenerates them all (scripts/make_figures.sh).
//   int main(int argc, char** argv) { return fa2::figures::run_figures_program(argc, argv, "step01_figures", "...",
//   all); }
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace fa2::figures {

struct Figure {
  std::string file;  // e.g. "online_softmax_row.svg"
  std::string what;  // one line, printed when it is written
  std::string svg;   // the whole document
};

// `<program> <out_dir>`: writes every figure `make` returns into out_dir (an existing directory),
// one line per file on stdout. Exit 0, 1 when a file cannot be written, 2 for a usage mistake
// (common/cli.hpp).
int run_figures_program(int argc, char** argv, const std::string& program, const std::string& description,
                        const std::function<std::vector<Figure>()>& make);

}  // namespace fa2::figures
