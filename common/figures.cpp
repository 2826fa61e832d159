// The shared main() of the figure programs (figures.hpp).
#include "common/figures.hpp"

#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "common/cli.hpp"

namespace fa2::figures {

int run_figures_program(int argc, char** argv, const std::string& program, const std::string& description,
                        const std::function<std::vector<Figure>()>& make) {
  std::string out_dir;
  fa2::cli::Parser cli(program, description);
  cli.positional("<out_dir>", out_dir, "an existing directory; the figures' SVG files in it are overwritten");
  return cli.run(argc, argv, [&] {
    if (!std::filesystem::is_directory(out_dir)) {
      throw std::runtime_error("cannot write into " + out_dir + ": not an existing directory");
    }
    for (const auto& f : make()) {
      const auto path = std::filesystem::path(out_dir) / f.file;
      fa2::cli::write_file(path, f.svg);
      std::cout << "wrote " << path.string() << ": " << f.what << "\n";
    }
    return 0;
  });
}

}  // namespace fa2::figures
