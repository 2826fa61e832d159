// The command line of every program here (the demos, step07_bench, step07_plot): each flag is
// declared once, with its kind of value and its help text, so --help, the error messages and
// the exit codes follow one rule everywhere. Tests: common/tests/test_cli.cpp (ctest -L common).
//
//   bool host = false;
//   fa2::cli::Parser cli("step05_demo", "Runs the FlashAttention-2 kernel on one problem.");
//   cli.flag("--host", host, "run the host interpreter only, even when there is a GPU");
//   return cli.run(argc, argv, [&] { return demo(host); });
//
// Both "--flag=value" and "--flag value" work; "-h" and "--help" print the usage on stdout.
// Exit codes: 0 after --help; 2 for a mistake on the command line (a UsageError: unknown flag,
// missing or malformed value, stray argument), with a message on stderr that names the flag and
// what it allows; 1 for any other failure, e.g. a file that cannot be written.
#pragma once

#include <charconv>
#include <concepts>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace fa2::cli {

inline constexpr int kExitFailure = 1;  // the program ran and failed (e.g. it could not write its output)
inline constexpr int kExitUsage = 2;    // the command line was wrong; nothing was done

// A mistake on the command line. what() starts with the flag it is about, e.g.
//   "--rows: got '40', must be an integer in 1..32"
class UsageError : public std::invalid_argument {
 public:
  UsageError(const std::string& flag, const std::string& message) : std::invalid_argument(flag + ": " + message) {}
  explicit UsageError(const std::string& message) : std::invalid_argument(message) {}
};

// "a, b, c"
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// "a,b,,c" -> {"a", "b", "c"}: empty items are dropped.
std::vector<std::string> split_list(std::string_view text, char separator = ',');

// "an integer in 1..32", "an integer >= 0", "a number in 0.001..1e+06": what a value must be,
// for messages. An empty bound is no bound.
std::string describe_range(std::string_view kind, const std::string& lo, const std::string& hi);

// What parse_integer reads: the integer types, bool aside (from_chars has no bool).
template <class T>
concept Integer = std::integral<T> && !std::same_as<T, bool>;

// The bounds a type's own limits give need not be said: an int is "an integer", not "an
// integer in -2147483648..2147483647". Zero stays (an unsigned value is "an integer >= 0").
template <Integer T>
std::string integer_range(T lo, T hi) {
  const bool lo_is_limit = std::is_signed_v<T> && lo == std::numeric_limits<T>::min();
  const bool hi_is_limit = hi == std::numeric_limits<T>::max();
  return describe_range("an integer", lo_is_limit ? "" : std::to_string(lo), hi_is_limit ? "" : std::to_string(hi));
}

// The integer `text` says, if it is one (all of it, no sign for unsigned types) in lo..hi;
// otherwise a UsageError naming `flag` and what it allows.
template <Integer T>
T parse_integer(std::string_view flag, std::string_view text, T lo = std::numeric_limits<T>::min(),
                T hi = std::numeric_limits<T>::max()) {
  T value{};
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data(), last, value);
  if (text.empty() || error != std::errc() || end != last || value < lo || value > hi) {
    throw UsageError(std::string(flag), "got '" + std::string(text) + "', must be " + integer_range(lo, hi));
  }
  return value;
}

// The same for a floating-point number; NaN and infinities are refused unless lo..hi holds them.
double parse_number(std::string_view flag, std::string_view text, double lo, double hi);

// The position of `text` in `allowed`, or a UsageError listing them.
std::size_t parse_choice(std::string_view flag, std::string_view text, const std::vector<std::string>& allowed);

// Writes `text` to `path` and returns only when the file is closed without error; otherwise
// throws std::runtime_error naming the path and why. Print "wrote <path>" after it, never before.
void write_file(const std::filesystem::path& path, std::string_view text);

// Runs `body` as a program's main: a UsageError is printed on `err` (with a pointer to --help)
// and gives kExitUsage; any other exception is printed and gives kExitFailure.
int guarded_main(std::string_view program, const std::function<int()>& body, std::ostream& err);

// The flags (and positional arguments) of one program. Each declaration binds a variable that
// parse() assigns when the flag appears; what the variable holds before is the default shown in
// the usage text. Typed declarations add their allowed values and the default to the help text.
// A name may carry its value's placeholder for the usage text: "--program=P" instead of the
// kind's own ("--program=N" for an integer, "=X" for a number).
class Parser {
 public:
  // `about`: what the program does, shown under the usage line (may span several lines).
  Parser(std::string program, std::string about);

  // --name, no value: sets target to true.
  Parser& flag(std::string name, bool& target, std::string help);

  // --name=N, an integer in lo..hi.
  template <Integer T>
  Parser& integer(std::string name, T& target, T lo, T hi, std::string help) {
    std::string allowed = integer_range(lo, hi) + ", default " + std::to_string(target);
    return custom(std::move(name), "N", std::move(help) + " (" + std::move(allowed) + ")",
                  [&target, lo, hi](std::string_view flag, const std::string& text) {
                    target = parse_integer<T>(flag, text, lo, hi);
                  });
  }

  // --name=X, a number in lo..hi.
  Parser& number(std::string name, double& target, double lo, double hi, std::string help);

  // --name=WORD, one of `words`, each standing for a value of the target's type. The metavar is
  // the list of words ("--layout=row-major|col-major").
  template <class T>
  Parser& choice(std::string name, T& target, std::vector<std::pair<std::string, T>> words, std::string help) {
    std::vector<std::string> names;
    std::string current;
    for (const auto& [word, value] : words) {
      names.push_back(word);
      if (value == target) current = word;
    }
    if (!current.empty()) help += " (default " + current + ")";
    return custom(std::move(name), join(names, "|"), std::move(help),
                  [&target, words = std::move(words), names](std::string_view flag, const std::string& text) {
                    target = words[parse_choice(flag, text, names)].second;
                  });
  }
  Parser& choice(std::string name, std::string& target, const std::vector<std::string>& words, std::string help);

  // --name=TEXT, any non-empty text.
  Parser& text(std::string name, std::string& target, std::string metavar, std::string help);

  // --name=VALUE, handed to `apply` each time the flag appears (lists, repeated flags, checks of
  // one's own). `apply` throws a UsageError for a bad value; a std::invalid_argument it throws is
  // turned into one that names the flag.
  using Apply = std::function<void(std::string_view flag, const std::string& value)>;
  Parser& custom(std::string name, std::string metavar, std::string help, Apply apply);

  // A required positional argument ("<out.svg>"), in the order they are declared.
  Parser& positional(std::string name, std::string& target, std::string help);

  // Reads argv[1..]. Returns false when -h or --help is among them (then nothing is assigned and
  // the caller prints usage()), true when the program should run. Throws UsageError.
  bool parse(const std::vector<std::string>& args);

  // Whether the last parse() saw this flag (e.g. to tell an explicit value from the default).
  bool given(std::string_view name) const;

  std::string usage() const;
  const std::string& program() const { return program_; }

  // parse(), then `body`; --help prints usage() on `out` and gives 0. Errors as guarded_main.
  int run(const std::vector<std::string>& args, const std::function<int()>& body, std::ostream& out, std::ostream& err);
  int run(int argc, const char* const* argv, const std::function<int()>& body);

 private:
  struct Option {
    std::string name;     // "--rows"
    std::string metavar;  // "N"; empty for a flag without a value
    std::string help;
    Apply apply;  // empty for a flag without a value
    bool* flag_target = nullptr;
  };
  struct Positional {
    std::string name;  // "<out.svg>"
    std::string help;
    std::string* target = nullptr;
  };

  Parser& add(Option option);
  std::string synopsis() const;  // "usage: step07_plot [options] <results.csv> <out.svg>"
  const Option* find(std::string_view name) const;

  std::string program_;
  std::string about_;
  std::vector<Option> options_;
  std::vector<Positional> positionals_;
  std::vector<std::string> given_;
};

// argv[1..] as strings.
std::vector<std::string> arguments(int argc, const char* const* argv);

}  // namespace fa2::cli
