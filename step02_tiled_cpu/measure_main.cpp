// step02_measure: how much heap memory and time the tiled forward and naive attention take on
// your CPU for a list of N; prints a table and writes a CSV and a log-log plot (SVG).
//   build/cpu-only/step02_tiled_cpu/step02_measure --out=. --machine="my laptop"
//   (about 5 s on one core for the default N = 256 ... 4096; --help lists every option)
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/cli.hpp"
#include "common/svg_plot.hpp"
#include "step02_tiled_cpu/heap_meter.hpp"
#include "step02_tiled_cpu/memory_sweep.hpp"

namespace {

namespace fs = std::filesystem;
using fa2::cli::UsageError;
using fa2::tiled::Dtype;

constexpr std::string_view kCsvName = "step02_measure.csv";
constexpr std::string_view kSvgName = "step02_measure.svg";
constexpr fa2::index_t kMaxN = 16384;  // naive float64 at N = 16384 holds a 2 GiB score matrix

struct Options {
  fa2::tiled::SweepOptions sweep;
  std::string out_dir = ".";
  std::string csv_path, svg_path;  // empty: out_dir / kCsvName, out_dir / kSvgName
  std::string machine;             // for the plot's subtitle
};

std::string today() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// The first bytes of a file, or "" when it cannot be read.
std::string head_of(const fs::path& path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string text(bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(bytes));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

// An output path must sit in an existing directory, and may replace only a file that this
// program wrote before (recognised by `signature` near its start): a typo such as
// --csv=README.md must not destroy what the user did not ask us to make.
void check_output(const std::string& flag, const fs::path& path, std::string_view signature) {
  std::error_code ec;  // an error reads as "not there", which the checks then report
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    throw UsageError(flag, "'" + path.string() + "': the directory " + dir.string() + " does not exist");
  }
  if (!fs::exists(path, ec)) return;
  if (!fs::is_regular_file(path, ec)) throw UsageError(flag, "'" + path.string() + "' exists and is not a file");
  if (head_of(path, 4096).find(signature) == std::string::npos) {
    throw UsageError(flag, "'" + path.string() +
                               "' exists and was not written by step02_measure; give another name or move it away");
  }
}

// Fails now, before minutes of measuring, when `path` cannot be opened for writing. An existing
// file is opened for appending (its content untouched); a new one is created, then removed
// again: it is our own empty file, and the real one is written at the end.
void check_writable(const fs::path& path) {
  const bool existed = fs::exists(path);
  std::ofstream probe(path, existed ? std::ios::app : std::ios::out);
  if (!probe) throw std::runtime_error("cannot open " + path.string() + " for writing: " + std::strerror(errno));
  probe.close();
  if (!existed) fs::remove(path);
}

int measure(Options& o) {
  if (!fa2::tiled::heap_meter_available()) {
    throw std::runtime_error("the heap meter needs glibc's malloc to replace; nothing can be counted here");
  }
  const fs::path csv = o.csv_path.empty() ? fs::path(o.out_dir) / kCsvName : fs::path(o.csv_path);
  const fs::path svg = o.svg_path.empty() ? fs::path(o.out_dir) / kSvgName : fs::path(o.svg_path);
  std::error_code ec;
  if ((o.csv_path.empty() || o.svg_path.empty()) && !fs::is_directory(o.out_dir, ec)) {
    throw UsageError("--out", "'" + o.out_dir + "' is not an existing directory");
  }
  check_output(o.csv_path.empty() ? "--out" : "--csv", csv, fa2::tiled::kCsvHeader);
  check_output(o.svg_path.empty() ? "--out" : "--svg", svg, fa2::tiled::kChartTitle);
  if (fs::absolute(csv).lexically_normal() == fs::absolute(svg).lexically_normal()) {
    throw UsageError("--svg", "'" + svg.string() + "' is also the CSV's path");
  }
  check_writable(csv);
  check_writable(svg);

  const auto& s = o.sweep;
  std::cout << "step02_measure, " << today() << (o.machine.empty() ? "" : ", " + o.machine) << "\n"
            << fa2::tiled::table_header(s) << std::flush;
  const auto points = fa2::tiled::run_sweep(s, [](const fa2::tiled::SweepPoint& p) {
    std::cout << fa2::tiled::table_rows(p) << std::flush;  // a row as soon as it is measured
  });
  std::cout << fa2::tiled::table_slopes(points) << "\n";

  const std::string subtitle = "B=" + std::to_string(s.batch) + ", D=" + std::to_string(s.head_dim) + ", " +
                               fa2::tiled::dtype_label(s.dtype) + (s.causal ? ", causal" : ", non-causal") +
                               ", tiles " + std::to_string(s.block_q) + "x" + std::to_string(s.block_k) +
                               "; peak heap of one call; time: median of " + std::to_string(s.repeats) + " calls; " +
                               (o.machine.empty() ? "" : o.machine + ", ") + today();
  fa2::cli::write_file(csv, fa2::tiled::to_csv(s, points));
  std::cout << "wrote " << csv.string() << "\n";
  fa2::cli::write_file(svg, fa2::svg::render(fa2::tiled::memory_time_chart(points, subtitle)));
  std::cout << "wrote " << svg.string() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  auto& s = o.sweep;
  fa2::cli::Parser cli("step02_measure",
                       "Measures step 2's tiled forward against naive attention, which holds the whole N x N\n"
                       "score matrix: the peak heap bytes of one call (counted exactly by a replaced malloc)\n"
                       "and the time of --repeats more calls, for each N. Prints a table and writes\n"
                       "OUT/step02_measure.csv and OUT/step02_measure.svg (log-log: memory and time against N).");
  cli.custom("--n", "LIST",
             "sequence lengths N = Nq = Nk, e.g. 256,512,1024 (default 256,512,1024,2048,4096; each in 1.." +
                 std::to_string(kMaxN) + ")",
             [&](std::string_view flag, const std::string& value) {
               s.n_values.clear();
               for (const auto& item : fa2::cli::split_list(value)) {
                 const auto n = fa2::cli::parse_integer<fa2::index_t>(flag, item, 1, kMaxN);
                 if (std::find(s.n_values.begin(), s.n_values.end(), n) != s.n_values.end()) {
                   throw UsageError(std::string(flag), "got " + item + " twice in '" + value + "'");
                 }
                 s.n_values.push_back(n);
               }
               if (s.n_values.empty()) throw UsageError(std::string(flag), "empty list, give at least one N");
             })
      .integer("--batch", s.batch, fa2::index_t{1}, fa2::index_t{64}, "batch size B")
      .integer("--d", s.head_dim, fa2::index_t{1}, fa2::index_t{1024}, "head dim D (= Dv)")
      .flag("--causal", s.causal, "top-left causal mask (the tiled loop then stops at the diagonal)")
      .choice("--dtype", s.dtype, {{"float32", Dtype::float32}, {"float64", Dtype::float64}},
              "the type both methods compute in")
      .integer("--repeats", s.repeats, 1, 1000,
               "timed calls per method and N, after one untimed call with the meter on")
      .integer("--block-q", s.block_q, fa2::index_t{1}, fa2::index_t{4096}, "the tiled forward's B_q")
      .integer("--block-k", s.block_k, fa2::index_t{1}, fa2::index_t{4096}, "the tiled forward's B_k")
      .custom("--seed", "S", "seed of the random Q, K, V (default 2026)",
              [&](std::string_view flag, const std::string& value) {
                s.seed = fa2::cli::parse_integer<std::uint64_t>(flag, value);
              })
      .text("--out", o.out_dir, "DIR", "the directory for step02_measure.csv and step02_measure.svg")
      .text("--csv", o.csv_path, "FILE", "write the CSV here instead (default OUT/step02_measure.csv)")
      .text("--svg", o.svg_path, "FILE", "write the plot here instead (default OUT/step02_measure.svg)")
      .text("--machine", o.machine, "TEXT", "what to call this machine in the output, e.g. \"2-core laptop\"");
  return cli.run(argc, argv, [&] { return measure(o); });
}
