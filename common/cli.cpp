// The command-line parser of every program here (see cli.hpp); tested by common/tests/test_cli.cpp.
//   ctest --test-dir build/<preset> -L common
#include "common/cli.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <ostream>
#include <system_error>

namespace fa2::cli {
namespace {

// The shortest text that reads back as `v`: "25", "0.001", "1e+06".
std::string shortest(double v) {
  char buf[32];
  const auto [end, error] = std::to_chars(buf, buf + sizeof buf, v);
  return error == std::errc() ? std::string(buf, end) : std::string("?");
}

}  // namespace

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::vector<std::string> split_list(std::string_view text, char separator) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t cut = std::min(text.find(separator), text.size());
    if (cut > 0) out.emplace_back(text.substr(0, cut));
    text.remove_prefix(std::min(cut + 1, text.size()));
  }
  return out;
}

std::string describe_range(std::string_view kind, const std::string& lo, const std::string& hi) {
  std::string out(kind);
  if (!lo.empty() && !hi.empty()) return out + " in " + lo + ".." + hi;
  if (!lo.empty()) return out + " >= " + lo;
  if (!hi.empty()) return out + " <= " + hi;
  return out;
}

double parse_number(std::string_view flag, std::string_view text, double lo, double hi) {
  double value = 0.0;
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data(), last, value);
  // Written as !(in range) so that NaN, which compares false with everything, is refused too.
  if (text.empty() || error != std::errc() || end != last || !(value >= lo && value <= hi)) {
    throw UsageError(std::string(flag), "got '" + std::string(text) + "', must be " +
                                            describe_range("a number", shortest(lo), shortest(hi)));
  }
  return value;
}

std::size_t parse_choice(std::string_view flag, std::string_view text, const std::vector<std::string>& allowed) {
  const auto it = std::find(allowed.begin(), allowed.end(), text);
  if (it == allowed.end()) {
    throw UsageError(std::string(flag), "got '" + std::string(text) + "', must be one of " + join(allowed));
  }
  return static_cast<std::size_t>(it - allowed.begin());
}

void write_file(const std::filesystem::path& path, std::string_view text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error("cannot open " + path.string() + " for writing: " + std::strerror(errno));
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  // close() flushes: a full disk shows up here, not as a silently short file.
  file.close();
  if (!file) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
}

int guarded_main(std::string_view program, const std::function<int()>& body, std::ostream& err) {
  try {
    return body();
  } catch (const UsageError& e) {
    err << program << ": " << e.what() << "\n(" << program << " --help lists what it takes)\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << program << ": " << e.what() << "\n";
    return kExitFailure;
  }
}

Parser::Parser(std::string program, std::string about) : program_(std::move(program)), about_(std::move(about)) {}

Parser& Parser::add(Option option) {
  if (const std::size_t eq = option.name.find('='); eq != std::string::npos && option.apply) {
    option.metavar = option.name.substr(eq + 1);  // "--program=P": P instead of the kind's N
    option.name.resize(eq);
  }
  if (option.name.size() < 3 || option.name.rfind("--", 0) != 0 || option.name == "--help" || find(option.name)) {
    throw std::logic_error("Parser: '" + option.name + "' must look like --name and be declared once");
  }
  options_.push_back(std::move(option));
  return *this;
}

const Parser::Option* Parser::find(std::string_view name) const {
  const auto it = std::find_if(options_.begin(), options_.end(), [&](const Option& o) { return o.name == name; });
  return it == options_.end() ? nullptr : &*it;
}

Parser& Parser::flag(std::string name, bool& target, std::string help) {
  return add(Option{std::move(name), "", std::move(help), {}, &target});
}

Parser& Parser::number(std::string name, double& target, double lo, double hi, std::string help) {
  help += " (" + describe_range("a number", shortest(lo), shortest(hi)) + ", default " + shortest(target) + ")";
  return custom(
      std::move(name), "X", std::move(help),
      [&target, lo, hi](std::string_view flag, const std::string& text) { target = parse_number(flag, text, lo, hi); });
}

Parser& Parser::choice(std::string name, std::string& target, const std::vector<std::string>& words, std::string help) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& word : words) pairs.emplace_back(word, word);
  return choice<std::string>(std::move(name), target, std::move(pairs), std::move(help));
}

Parser& Parser::text(std::string name, std::string& target, std::string metavar, std::string help) {
  if (!target.empty()) help += " (default " + target + ")";
  return custom(std::move(name), std::move(metavar), std::move(help),
                [&target](std::string_view flag, const std::string& value) {
                  if (value.empty()) throw UsageError(std::string(flag), "must not be empty");
                  target = value;
                });
}

Parser& Parser::custom(std::string name, std::string metavar, std::string help, Apply apply) {
  return add(Option{std::move(name), std::move(metavar), std::move(help), std::move(apply), nullptr});
}

Parser& Parser::positional(std::string name, std::string& target, std::string help) {
  positionals_.push_back(Positional{std::move(name), std::move(help), &target});
  return *this;
}

bool Parser::parse(const std::vector<std::string>& args) {
  given_.clear();
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "-h" || a == "--help"; })) {
    return false;
  }
  std::size_t next_positional = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {  // "-" alone is a positional (a file name, by custom)
      if (next_positional == positionals_.size()) {
        throw UsageError("unexpected argument '" + arg + "'; " + synopsis());
      }
      *positionals_[next_positional++].target = arg;
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const Option* option = find(name);
    if (option == nullptr) {
      std::vector<std::string> known;
      for (const auto& o : options_) known.push_back(o.name);
      known.emplace_back("--help");
      throw UsageError(name,
                       "unknown option; " + program_ + " takes " + (options_.empty() ? "only " : "") + join(known));
    }
    given_.push_back(name);
    if (!option->apply) {
      if (eq != std::string::npos) throw UsageError(name, "takes no value, got '" + arg.substr(eq + 1) + "'");
      *option->flag_target = true;
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      value = args[++i];  // "--flag value"; a following "--other" is the next flag, not a value
    } else {
      throw UsageError(name, "missing value, expected " + name + "=" + option->metavar);
    }
    try {
      option->apply(name, value);
    } catch (const UsageError&) {
      throw;
    } catch (const std::invalid_argument& e) {
      throw UsageError(name, e.what());
    }
  }
  if (next_positional < positionals_.size()) {
    throw UsageError(positionals_[next_positional].name, "missing; " + synopsis());
  }
  return true;
}

bool Parser::given(std::string_view name) const {
  return std::find(given_.begin(), given_.end(), name) != given_.end();
}

std::string Parser::synopsis() const {
  std::string line = "usage: " + program_ + (options_.empty() ? " [--help]" : " [options]");
  for (const auto& p : positionals_) line += " " + p.name;
  return line;
}

std::string Parser::usage() const {
  std::string out = synopsis() + "\n" + about_ + (about_.empty() || about_.back() == '\n' ? "" : "\n");

  // Two columns: "  --rows=N" then the help, every help starting in the same column.
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& p : positionals_) rows.emplace_back("  " + p.name, p.help);
  const std::size_t first_option = rows.size();
  for (const auto& o : options_) rows.emplace_back("  " + o.name + (o.metavar.empty() ? "" : "=" + o.metavar), o.help);
  rows.emplace_back("  -h, --help", "print this text and exit");
  std::size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i == 0 && first_option > 0) out += "\narguments:\n";
    if (i == first_option) out += "\noptions:\n";
    std::string help = rows[i].second;
    for (std::size_t nl = help.find('\n'); nl != std::string::npos; nl = help.find('\n', nl + width + 3)) {
      help.insert(nl + 1, width + 2, ' ');  // continuation lines start under the first
    }
    out += rows[i].first + std::string(width + 2 - rows[i].first.size(), ' ') + help + "\n";
  }
  return out;
}

int Parser::run(const std::vector<std::string>& args, const std::function<int()>& body, std::ostream& out,
                std::ostream& err) {
  return guarded_main(
      program_,
      [&] {
        if (!parse(args)) {
          out << usage();
          return 0;
        }
        return body();
      },
      err);
}

int Parser::run(int argc, const char* const* argv, const std::function<int()>& body) {
  return run(arguments(argc, argv), body, std::cout, std::cerr);
}

std::vector<std::string> arguments(int argc, const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) out.emplace_back(argv[i]);
  return out;
}

}  // namespace fa2::cli
