// The command-line parser every program uses: values land where they should, and every mistake
// is a UsageError whose message names the flag and says what it allows.
//   ctest --test-dir build/<preset> -L common
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/testing.hpp"

namespace {

using fa2::cli::Parser;
using fa2::cli::UsageError;

enum class Padding { zero, nan, none };

// A program with one option of each kind, bound to the fields below.
struct Demo {
  bool host = false;
  int rows = 5;
  int tile = 4;
  double rep_ms = 100.0;
  Padding padding = Padding::zero;
  std::string causal = "both";
  std::string out_dir;
  std::vector<std::string> labels;
  Parser cli{"demo", "Does one thing."};

  Demo() {
    cli.flag("--host", host, "host only")
        .integer("--rows", rows, 1, 32, "rows of x")
        .integer("--tile=T", tile, 1, 16, "tile size")
        .number("--rep-ms", rep_ms, 0.001, 1e6, "timed budget")
        .choice("--padding", padding, {{"zero", Padding::zero}, {"nan", Padding::nan}, {"none", Padding::none}},
                "what masked cells hold")
        .choice("--causal", causal, {"both", "yes", "no"}, "which problems")
        .text("--out", out_dir, "DIR", "where files go")
        .custom("--label", "KEY=TEXT", "renames a series", [this](std::string_view, const std::string& v) {
          if (v.find('=') == std::string::npos) throw std::invalid_argument("expected KEY=TEXT, got '" + v + "'");
          labels.push_back(v);
        });
  }
};

// The message of the UsageError that parsing `args` throws, or "no error".
std::string error_of(Parser& cli, const std::vector<std::string>& args) {
  try {
    (void)cli.parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_SUITE("cli") {
  TEST_CASE("each kind of option lands in its variable from --flag=value and from --flag value") {
    Demo d;
    REQUIRE(d.cli.parse({"--host", "--rows=7", "--rep-ms", "2.5", "--padding=nan", "--causal", "no", "--out=/tmp/x",
                         "--label", "v5=fast", "--label=ours16=step05"}));
    CHECK(d.host);
    CHECK(d.rows == 7);
    CHECK(d.rep_ms == 2.5);
    CHECK(d.padding == Padding::nan);
    CHECK(d.causal == "no");
    CHECK(d.out_dir == "/tmp/x");
    CHECK(d.labels == std::vector<std::string>{"v5=fast", "ours16=step05"});
    CHECK(d.cli.given("--rows"));
    REQUIRE(d.cli.parse({"--tile", "8"}));
    CHECK(d.tile == 8);
    CHECK(error_of(d.cli, {"--tile=3x"}) == "--tile: got '3x', must be an integer in 1..16");
    CHECK_FALSE(d.cli.given("--help"));
  }

  TEST_CASE("without flags every variable keeps its default and a repeated flag keeps its last value") {
    Demo d;
    REQUIRE(d.cli.parse({}));
    CHECK_FALSE(d.host);
    CHECK(d.rows == 5);
    CHECK(d.padding == Padding::zero);
    CHECK_FALSE(d.cli.given("--rows"));
    REQUIRE(d.cli.parse({"--rows=3", "--rows", "9", "--rep-ms=1e3"}));
    CHECK(d.rows == 9);
    CHECK(d.rep_ms == 1000.0);
  }

  TEST_CASE("-h or --help anywhere asks for the usage and assigns nothing") {
    Demo d;
    CHECK_FALSE(d.cli.parse({"--rows=7", "--help"}));
    CHECK(d.rows == 5);
    CHECK_FALSE(d.cli.parse({"-h", "--no-such-flag"}));
  }

  TEST_CASE("an unknown flag is an error that names it and lists the flags there are") {
    Demo d;
    const std::string e = error_of(d.cli, {"--rows=2", "--no-such-flag"});
    CHECK(starts_with(e, "--no-such-flag: unknown option"));
    CHECK(contains(e, "--rows"));
    CHECK(contains(e, "--label"));
    CHECK(contains(e, "--help"));
    CHECK(starts_with(error_of(d.cli, {"-x"}), "-x: unknown option"));
    Parser none("bare", "Takes nothing.");
    CHECK(error_of(none, {"--verbose"}) == "--verbose: unknown option; bare takes only --help");
    CHECK(starts_with(error_of(d.cli, {"--no-such-flag=3"}), "--no-such-flag: unknown option"));
  }

  TEST_CASE("a missing value names the flag and the form it expects") {
    Demo d;
    CHECK(error_of(d.cli, {"--rows"}) == "--rows: missing value, expected --rows=N");
    // The next flag is not taken for a value.
    CHECK(error_of(d.cli, {"--out", "--host"}) == "--out: missing value, expected --out=DIR");
    CHECK(error_of(d.cli, {"--out="}) == "--out: must not be empty");
  }

  TEST_CASE("a malformed or out-of-range integer names the flag and the range") {
    Demo d;
    CHECK(error_of(d.cli, {"--rows=abc"}) == "--rows: got 'abc', must be an integer in 1..32");
    CHECK(error_of(d.cli, {"--rows", "40"}) == "--rows: got '40', must be an integer in 1..32");
    CHECK(error_of(d.cli, {"--rows=0"}) == "--rows: got '0', must be an integer in 1..32");
    for (const char* bad : {"3.5", "7x", " 7", "", "99999999999999999999"}) {
      CAPTURE(bad);
      CHECK(starts_with(error_of(d.cli, {std::string("--rows=") + bad}), "--rows: got '"));
    }
    CHECK(d.rows == 5);
  }

  TEST_CASE("parse_integer says only the bounds that are not the type's own") {
    CHECK(fa2::cli::parse_integer<int>("--n", "-12") == -12);
    CHECK(fa2::cli::parse_integer<std::uint64_t>("--seed", "18446744073709551615") == 18446744073709551615ull);
    const auto message = [](auto parse) {
      try {
        parse();
      } catch (const UsageError& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    CHECK(message([] { (void)fa2::cli::parse_integer<std::uint64_t>("--seed", "-1"); }) ==
          "--seed: got '-1', must be an integer >= 0");
    CHECK(message([] { (void)fa2::cli::parse_integer<int>("--d", "abc"); }) == "--d: got 'abc', must be an integer");
    CHECK(message([] { (void)fa2::cli::parse_integer<int>("--d", "abc", 1); }) ==
          "--d: got 'abc', must be an integer >= 1");
  }

  TEST_CASE("a number must be finite and in range and a word must be one of the choices") {
    Demo d;
    CHECK(error_of(d.cli, {"--rep-ms=fast"}) == "--rep-ms: got 'fast', must be a number in 0.001..1e+06");
    CHECK(starts_with(error_of(d.cli, {"--rep-ms=nan"}), "--rep-ms: got 'nan'"));
    CHECK(starts_with(error_of(d.cli, {"--rep-ms=inf"}), "--rep-ms: got 'inf'"));
    CHECK(starts_with(error_of(d.cli, {"--rep-ms=0"}), "--rep-ms: got '0'"));
    CHECK(error_of(d.cli, {"--padding=ones"}) == "--padding: got 'ones', must be one of zero, nan, none");
    CHECK(error_of(d.cli, {"--causal=maybe"}) == "--causal: got 'maybe', must be one of both, yes, no");
  }

  TEST_CASE("a flag given a value and a custom check's own error both name the flag") {
    Demo d;
    CHECK(error_of(d.cli, {"--host=yes"}) == "--host: takes no value, got 'yes'");
    CHECK(error_of(d.cli, {"--label=v5"}) == "--label: expected KEY=TEXT, got 'v5'");
  }

  TEST_CASE("positional arguments are taken in order and a missing or extra one is an error") {
    std::string csv, svg;
    int d = 64;
    Parser cli("plot", "Draws.");
    cli.positional("<results.csv>", csv, "the CSV")
        .positional("<out.svg>", svg, "the plot")
        .integer("--d", d, 1, 1024, "head dim");
    REQUIRE(cli.parse({"r.csv", "--d=128", "o.svg"}));
    CHECK(csv == "r.csv");
    CHECK(svg == "o.svg");
    CHECK(d == 128);
    CHECK(error_of(cli, {"r.csv"}) == "<out.svg>: missing; usage: plot [options] <results.csv> <out.svg>");
    CHECK(error_of(cli, {"a", "b", "c"}) == "unexpected argument 'c'; usage: plot [options] <results.csv> <out.svg>");

    Parser none("demo", "Takes nothing.");
    CHECK(error_of(none, {"stray"}) == "unexpected argument 'stray'; usage: demo [--help]");
  }

  TEST_CASE("the usage lists every option with its values and default and positionals first") {
    Demo d;
    const std::string u = d.cli.usage();
    CHECK(starts_with(u, "usage: demo [options]\nDoes one thing.\n"));
    CHECK(contains(u, "--rows=N"));
    CHECK(contains(u, "rows of x (an integer in 1..32, default 5)"));
    CHECK(contains(u, "--rep-ms=X"));
    CHECK(contains(u, "(a number in 0.001..1e+06, default 100)"));
    CHECK(contains(u, "--padding=zero|nan|none"));
    CHECK(contains(u, "what masked cells hold (default zero)"));
    CHECK(contains(u, "--label=KEY=TEXT"));
    CHECK(contains(u, "--tile=T"));
    CHECK(contains(u, "-h, --help"));
    // Help texts start in one column.
    const auto column = [&](const std::string& help) {
      const auto at = u.find(help);
      return at - u.rfind('\n', at) - 1;
    };
    CHECK(column("host only") == column("rows of x"));
    CHECK(column("host only") == column("print this text and exit"));
  }

  TEST_CASE("run gives 0 after --help and 2 for a usage error and 1 when the body throws") {
    Demo d;
    std::ostringstream out, err;
    int ran = 0;
    const auto body = [&] {
      ++ran;
      return 0;
    };
    CHECK(d.cli.run({"--help"}, body, out, err) == 0);
    CHECK(starts_with(out.str(), "usage: demo"));
    CHECK(err.str().empty());
    CHECK(ran == 0);

    out.str("");
    CHECK(d.cli.run({"--rows=abc"}, body, out, err) == fa2::cli::kExitUsage);
    CHECK(starts_with(err.str(), "demo: --rows: got 'abc'"));
    CHECK(out.str().empty());
    CHECK(ran == 0);

    err.str("");
    CHECK(d.cli.run(
              {"--rows=4"}, [&] { return d.rows; }, out, err) == 4);
    CHECK(d.cli.run(
              {}, [&]() -> int { throw UsageError("--rows", "too many for --cols"); }, out, err) == 2);
    CHECK(contains(err.str(), "demo: --rows: too many for --cols"));
    err.str("");
    CHECK(d.cli.run(
              {}, [&]() -> int { throw std::runtime_error("cannot write x.svg"); }, out, err) ==
          fa2::cli::kExitFailure);
    CHECK(err.str() == "demo: cannot write x.svg\n");
  }

  TEST_CASE("lists split at commas without empty items and join back") {
    CHECK(fa2::cli::split_list("a,b,,c,") == std::vector<std::string>{"a", "b", "c"});
    CHECK(fa2::cli::split_list("").empty());
    CHECK(fa2::cli::split_list(",,").empty());
    CHECK(fa2::cli::join({"a", "b"}) == "a, b");
  }

  TEST_CASE("write_file writes the text or throws naming the path") {
    const auto dir = std::filesystem::temp_directory_path();
    const auto path = dir / "fa2_test_cli_write_file.txt";
    fa2::cli::write_file(path, "hello\n");
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    CHECK(line == "hello");
    in.close();
    std::filesystem::remove(path);

    const std::filesystem::path bad = "/nonexistent-dir-of-fa2-tests/x.svg";
    try {
      fa2::cli::write_file(bad, "x");
      FAIL("no error for " << bad);
    } catch (const std::runtime_error& e) {
      CHECK(contains(e.what(), bad.string()));
    }
  }
}
