// Option parsing for step07_bench (see bench_options.hpp).
#include "step07_benchmark/bench_options.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace fa2::bench {
namespace {

std::vector<Problem> grid(const std::vector<int>& d_values, const std::vector<int>& n_values, int B, int H) {
  std::vector<Problem> out;
  for (int d : d_values) {
    for (int n : n_values) {
      for (bool causal : {false, true}) out.push_back(Problem{B, H, n, d, causal});
    }
  }
  return out;
}

const std::vector<int> kArticleN = {512, 1024, 2048, 4096};
const std::vector<int> kLongN = {8192, 16384};
const std::vector<int> kAllN = {512, 1024, 2048, 4096, 8192, 16384};
const std::vector<int> kD128N = {1024, 4096, 16384};
const std::vector<int> kQuickN = {512, 1024};

long long parse_integer(const std::string& option, const std::string& text) {
  long long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (text.empty() || ec != std::errc() || ptr != last) {
    throw std::invalid_argument(option + ": '" + text + "' is not an integer");
  }
  return value;
}

int parse_positive_int(const std::string& option, const std::string& text, long long max = 1 << 30) {
  const long long v = parse_integer(option, text);
  if (v < 1 || v > max) {
    throw std::invalid_argument(option + ": got " + text + ", allowed 1.." + std::to_string(max));
  }
  return static_cast<int>(v);
}

double parse_double(const std::string& option, const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument("trailing characters");
    return v;
  } catch (const std::exception&) {
    throw std::invalid_argument(option + ": '" + text + "' is not a number");
  }
}

}  // namespace

std::vector<std::string> sweep_names() { return {"article", "long", "d128", "full", "quick"}; }

std::vector<Problem> sweep_problems(const std::string& name, int B, int H) {
  if (name == "article") return grid({64}, kArticleN, B, H);
  if (name == "long") return grid({64}, kLongN, B, H);
  if (name == "d128") return grid({128}, kD128N, B, H);
  if (name == "quick") return grid({64}, kQuickN, B, H);
  if (name == "full") {
    auto out = sweep_problems("article", B, H);
    for (const auto& more : {sweep_problems("long", B, H), sweep_problems("d128", B, H)}) {
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
  throw std::invalid_argument("--sweep: got '" + name + "', allowed article, long, d128, full or quick");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > start) out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<int> parse_int_list(const std::string& option, const std::string& text) {
  const auto items = split_list(text);
  if (items.empty()) throw std::invalid_argument(option + ": empty list");
  std::vector<int> out;
  for (const auto& item : items) out.push_back(parse_positive_int(option, item));
  return out;
}

std::string usage() {
  return "step07_bench: FlashAttention-2 forward, our kernels vs PyTorch SDPA vs cuBLAS, do_bench style.\n"
         "\n"
         "  --sweep=LIST      article, long, d128, full (default: full = article,long,d128) or quick\n"
         "  --n=LIST          sequence lengths, e.g. 512,1024 (replaces the sweep; with --d)\n"
         "  --d=LIST          head dims, e.g. 64,128 (default 64 when --n is given)\n"
         "  --causal=WHICH    both (default), yes or no\n"
         "  --batch=B         batch size (default 4)      --heads=H   heads (default 8)\n"
         "  --impl=LIST       only these implementation keys (see --list); the reference always runs\n"
         "  --ours=KEY        the 'ours' column of the article's table (default ours16, the step05 kernel)\n"
         "  --quick           the quick sweep and a short timing budget (warm-up 5 ms, reps 20 ms)\n"
         "  --warmup-ms=X     warm-up budget per measurement (default 25, as do_bench)\n"
         "  --rep-ms=X        timed budget per measurement (default 100, as do_bench)\n"
         "  --min-reps=N      at least N timed runs (default 5)   --max-reps=N   at most N (default 1000)\n"
         "  --seed=S          seed of the random inputs (default: fresh per run; also FA2_SEED)\n"
         "  --out=DIR         write DIR/step07_results.csv and DIR/step07_tflops_d<D>.svg\n"
         "  --no-ceilings     skip measuring the copy bandwidth and the bf16 GEMM rate\n"
         "  --list            print the registered implementations and exit\n"
         "  --help            this text\n";
}

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  std::vector<std::string> sweeps;
  std::optional<std::vector<int>> n_values, d_values;
  std::string causal = "both";
  int B = 4, H = 8;
  bool explicit_budget = false;

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string key = args[i];
    std::string value;
    bool has_value = false;
    if (key.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + key + "' (see --help)");
    if (const auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      has_value = true;
    }
    const auto flag = [&](bool& target) {
      if (has_value) throw std::invalid_argument(key + " takes no value");
      target = true;
    };
    const auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= args.size()) throw std::invalid_argument(key + ": missing value");
      return args[++i];
    };
    if (key == "--help" || key == "-h") {
      flag(o.help);
    } else if (key == "--list") {
      flag(o.list);
    } else if (key == "--quick") {
      flag(o.quick);
    } else if (key == "--no-ceilings") {
      bool off = false;
      flag(off);
      o.measure_ceilings = false;
    } else if (key == "--sweep") {
      for (const auto& s : split_list(next())) {
        (void)sweep_problems(s);  // validates the name
        sweeps.push_back(s);
      }
      if (sweeps.empty()) throw std::invalid_argument("--sweep: empty list");
    } else if (key == "--n") {
      n_values = parse_int_list(key, next());
    } else if (key == "--d") {
      d_values = parse_int_list(key, next());
    } else if (key == "--causal") {
      causal = next();
      if (causal != "both" && causal != "yes" && causal != "no") {
        throw std::invalid_argument("--causal: got '" + causal + "', allowed both, yes or no");
      }
    } else if (key == "--batch") {
      B = parse_positive_int(key, next(), 65535);
    } else if (key == "--heads") {
      H = parse_positive_int(key, next(), 65535);
    } else if (key == "--impl") {
      o.impl_keys = split_list(next());
      if (o.impl_keys.empty()) throw std::invalid_argument("--impl: empty list");
    } else if (key == "--ours") {
      o.ours_key = next();
    } else if (key == "--out") {
      o.out_dir = next();
      if (o.out_dir.empty()) throw std::invalid_argument("--out: empty directory name");
    } else if (key == "--seed") {
      const long long s = parse_integer(key, next());
      if (s < 0) throw std::invalid_argument("--seed: must be >= 0");
      o.seed = static_cast<std::uint64_t>(s);
    } else if (key == "--warmup-ms") {
      o.budget.warmup_ms = parse_double(key, next());
      explicit_budget = true;
    } else if (key == "--rep-ms") {
      o.budget.rep_ms = parse_double(key, next());
      explicit_budget = true;
    } else if (key == "--min-reps") {
      o.budget.min_reps = parse_positive_int(key, next(), 1000000);
      explicit_budget = true;
    } else if (key == "--max-reps") {
      o.budget.max_reps = parse_positive_int(key, next(), 1000000);
      explicit_budget = true;
    } else {
      throw std::invalid_argument("unknown option '" + key + "' (see --help)");
    }
  }

  if (o.quick && !explicit_budget) {
    o.budget.warmup_ms = 5.0;
    o.budget.rep_ms = 20.0;
  }
  (void)plan_reps(1.0, o.budget);  // validates the budget now rather than mid-run

  if (n_values || d_values) {
    if (!sweeps.empty()) throw std::invalid_argument("--sweep cannot be combined with --n/--d");
    const std::vector<int> n_list = n_values ? *n_values : kAllN;
    const std::vector<int> d_list = d_values ? *d_values : std::vector<int>{64};
    o.problems = grid(d_list, n_list, B, H);
    o.sweep_names = {"custom"};
  } else {
    if (sweeps.empty()) sweeps = {o.quick ? "quick" : "full"};
    for (const auto& s : sweeps) {
      for (const auto& p : sweep_problems(s, B, H)) {
        if (std::find(o.problems.begin(), o.problems.end(), p) == o.problems.end()) o.problems.push_back(p);
      }
    }
    o.sweep_names = sweeps;
  }
  if (causal != "both") {
    const bool want = causal == "yes";
    std::erase_if(o.problems, [&](const Problem& p) { return p.causal != want; });
  }
  if (o.problems.empty()) throw std::invalid_argument("no problems selected (see --sweep, --n, --d, --causal)");
  return o;
}

Options parse_options(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse_options(args);
}

}  // namespace fa2::bench
