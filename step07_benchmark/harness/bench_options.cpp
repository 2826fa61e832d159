// Option parsing for step07_bench (see bench_options.hpp), declared with common/cli.hpp.
//   step07_bench --help
#include "step07_benchmark/harness/bench_options.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/cli.hpp"

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

// "512,1024" -> {512, 1024}; a UsageError naming `flag` when an entry is not a positive integer.
std::vector<int> parse_int_list(std::string_view flag, const std::string& text) {
  const auto items = cli::split_list(text);
  if (items.empty()) throw cli::UsageError(std::string(flag), "empty list, give e.g. 512,1024");
  std::vector<int> out;
  for (const auto& item : items) out.push_back(cli::parse_integer(flag, item, 1, 1 << 30));
  return out;
}

// What the command line says, before its sweeps, lengths and head dims become the problem list.
struct Request {
  Options o;
  std::vector<std::string> sweeps;
  std::optional<std::vector<int>> n_values, d_values;
  std::string causal = "both";
  std::vector<Window> windows = {Window{}};  // each problem once per window (--window)
  std::vector<Pass> passes = {Pass::forward, Pass::backward};
  int B = 4, H = 8;  // the article's
  bool no_ceilings = false;
};

// "4095:0" -> Window{4095, 0}, "none" -> Window{}: a UsageError naming `flag` otherwise.
Window parse_window(std::string_view flag, const std::string& text) {
  if (text == "none") return Window{};
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) {
    throw cli::UsageError(std::string(flag), "'" + text + "': give LEFT:RIGHT (each -1 or more; -1 unbounded) or none");
  }
  const auto side = [&](std::string_view part) {
    return cli::parse_integer<index_t>(flag, part, -1, index_t{1} << 30);
  };
  return Window{side(std::string_view(text).substr(0, colon)), side(std::string_view(text).substr(colon + 1))};
}

// A key of --baseline or --decide: registered, and timed (among --impl when that is given).
void check_timed_key(std::string_view flag, const std::string& key, const Options& o) {
  if (o.impl_keys.empty() || std::find(o.impl_keys.begin(), o.impl_keys.end(), key) != o.impl_keys.end()) return;
  throw cli::UsageError(std::string(flag),
                        "'" + key + "' is not timed: add it to --impl (" + cli::join(o.impl_keys) + ")");
}

// The options, declared once for parse_options() and usage(). `keys`: what --impl and --ours take.
cli::Parser make_parser(Request& r, const std::vector<std::string>& keys) {
  Options& o = r.o;
  cli::Parser p(
      "step07_bench",
      "FlashAttention-2, forward and backward: our kernels vs PyTorch SDPA vs cuBLAS standard attention, each checked\n"
      "and then timed do_bench style on one GPU. Prints the tables; with --out, writes a CSV and plots.");
  p.custom("--sweep", "LIST",
           "named problem lists: article, long, d128, full (the default: article,long,d128) or quick",
           [&r](std::string_view flag, const std::string& value) {
             const auto names = cli::split_list(value);
             if (names.empty()) throw cli::UsageError(std::string(flag), "empty list, give e.g. article,long");
             for (const auto& name : names) {
               (void)cli::parse_choice(flag, name, sweep_names());
               r.sweeps.push_back(name);
             }
           })
      .custom("--n", "LIST", "sequence lengths, e.g. 512,1024 (replaces the sweep; with --d)",
              [&r](std::string_view flag, const std::string& value) { r.n_values = parse_int_list(flag, value); })
      .custom("--d", "LIST", "head dims, e.g. 64,128 (default 64 when --n is given)",
              [&r](std::string_view flag, const std::string& value) { r.d_values = parse_int_list(flag, value); })
      .choice("--causal", r.causal, {"both", "yes", "no"},
              "which problems of the sweep: causal ones, the others, or both")
      .custom("--window", "LIST",
              "sliding windows, each LEFT:RIGHT (query q sees keys q - LEFT .. q + RIGHT, -1 unbounded) or none: "
              "every problem once per window (default none), e.g. 4095:0,none; SDPA and cuBLAS are unsupported "
              "there, and a row without a windowed twin stops with an error saying so",
              [&r](std::string_view flag, const std::string& value) {
                r.windows.clear();
                for (const auto& item : cli::split_list(value)) r.windows.push_back(parse_window(flag, item));
                if (r.windows.empty()) throw cli::UsageError(std::string(flag), "empty list, give e.g. 4095:0,none");
              })
      .custom(
          "--pass", "LIST", "which passes to time: fwd, bwd or fwd,bwd (the default)",
          [&r](std::string_view flag, const std::string& value) {
            r.passes.clear();
            for (const auto& name : cli::split_list(value)) {
              r.passes.push_back(cli::parse_choice(flag, name, {"fwd", "bwd"}) == 0 ? Pass::forward : Pass::backward);
            }
            if (r.passes.empty()) throw cli::UsageError(std::string(flag), "empty list, give fwd, bwd or fwd,bwd");
          })
      .integer("--batch", r.B, 1, 65535, "batch size B")
      .integer("--heads", r.H, 1, 65535, "heads H")
      .custom("--impl", "LIST", "only these implementation keys (--list shows them); the reference always runs",
              [&o, &keys](std::string_view flag, const std::string& value) {
                o.impl_keys = cli::split_list(value);
                if (o.impl_keys.empty()) throw cli::UsageError(std::string(flag), "empty list, give keys from --list");
                for (const auto& key : o.impl_keys) (void)cli::parse_choice(flag, key, keys);
              })
      .custom("--ours", "KEY",
              "the 'ours' column of the article's table (default " + o.ours_key + ", the step05 kernel)",
              [&o, &keys](std::string_view flag, const std::string& value) {
                o.ours_key = keys[cli::parse_choice(flag, value, keys)];
              })
      .flag("--quick", o.quick, "the quick sweep and a short timing budget (warm-up 5 ms, reps 20 ms)")
      .number("--warmup-ms", o.budget.warmup_ms, 0.0, 1e6, "warm-up budget per measurement in ms, as do_bench")
      .number("--rep-ms", o.budget.rep_ms, 1e-3, 1e6, "timed budget per measurement in ms, as do_bench")
      .integer("--min-reps", o.budget.min_reps, 1, 1000000, "at least this many timed runs")
      .integer("--max-reps", o.budget.max_reps, 1, 1000000, "at most this many timed runs")
      .custom("--seed", "S", "seed of the random inputs (default: fresh per run; also FA2_SEED)",
              [&o](std::string_view flag, const std::string& value) {
                o.seed = cli::parse_integer<std::uint64_t>(flag, value);
              })
      .integer("--repeat", o.rounds, 1, 1000,
               "time every problem in this many rounds, each timing every implementation once, in an order that "
               "rotates from round to round; report medians over rounds and each pair's per-round ratio with its "
               "spread")
      .custom("--baseline", "KEY",
              "with --repeat: the implementation every other one is compared with, round by round (default: the "
              "first --impl key)",
              [&o, &keys](std::string_view flag, const std::string& value) {
                o.baseline = keys[cli::parse_choice(flag, value, keys)];
              })
      .custom("--decide", "CANDIDATE,INCUMBENT",
              "with --repeat: the tuned dispatch's rule at each problem: take CANDIDATE only where every round has it "
              "faster than INCUMBENT (may be given more than once)",
              [&o, &keys](std::string_view flag, const std::string& value) {
                const auto pair = cli::split_list(value);
                if (pair.size() != 2) {
                  throw cli::UsageError(std::string(flag), "got '" + value + "', give two keys: CANDIDATE,INCUMBENT");
                }
                for (const auto& key : pair) (void)cli::parse_choice(flag, key, keys);
                if (pair[0] == pair[1])
                  throw cli::UsageError(std::string(flag), "got '" + value + "', two different keys");
                o.decide.emplace_back(pair[0], pair[1]);
              })
      .integer("--isolated", o.budget.isolated_launches, 0, 100000,
               "time this many single launches per measurement instead, each after --gap-ms of idle GPU and an L2 "
               "flush (0: do_bench's back-to-back runs)")
      .number("--gap-ms", o.budget.gap_ms, 0.0, 60000.0, "with --isolated: idle milliseconds before each launch")
      .text("--out", o.out_dir, "DIR",
            "write DIR/step07_results.csv and DIR/step07_tflops_d<D>.svg (with --repeat also step07_rounds.csv and "
            "step07_pairs.csv)")
      .flag("--no-ceilings", r.no_ceilings, "skip measuring the copy bandwidth and the bf16 GEMM rate")
      .flag("--list", o.list, "print the registered implementations and exit")
      .flag("--variants", o.variants, "print the table of our kernels (Markdown, as in step07's README) and exit");
  return p;
}

}  // namespace

std::vector<std::string> sweep_names() {
  return {"article", "long", "d128", "full", "quick"};
}

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

std::string usage() {
  Request unused;  // usage() only reads the declarations and their defaults
  const std::vector<std::string> no_keys;
  return make_parser(unused, no_keys).usage();
}

Options parse_options(const std::vector<std::string>& args, const std::vector<std::string>& implementation_keys) {
  Request r;
  cli::Parser parser = make_parser(r, implementation_keys);
  Options& o = r.o;
  if (!parser.parse(args)) {
    o.help = true;
    return o;
  }
  o.measure_ceilings = !r.no_ceilings;
  const bool explicit_budget = parser.given("--warmup-ms") || parser.given("--rep-ms") || parser.given("--min-reps") ||
                               parser.given("--max-reps");
  if (o.quick && !explicit_budget) {
    o.budget.warmup_ms = 5.0;
    o.budget.rep_ms = 20.0;
  }
  if (o.budget.min_reps > o.budget.max_reps) {
    throw cli::UsageError("--min-reps", "got " + std::to_string(o.budget.min_reps) + ", more than --max-reps (" +
                                            std::to_string(o.budget.max_reps) + ")");
  }
  (void)plan_reps(1.0, o.budget);  // the harness's own check of the budget, now rather than mid-run
  if (parser.given("--gap-ms") && o.budget.isolated_launches == 0) {
    throw cli::UsageError("--gap-ms", "only with --isolated=K (K > 0 launches)");
  }
  if (o.rounds < 2) {
    for (const char* flag : {"--baseline", "--decide"}) {
      if (parser.given(flag)) throw cli::UsageError(flag, "compares rounds: give --repeat=R with R >= 2");
    }
  } else if (o.baseline.empty()) {
    o.baseline = o.impl_keys.empty() ? variants::kStep05Key : o.impl_keys.front();
  }
  if (parser.given("--baseline")) check_timed_key("--baseline", o.baseline, o);
  for (const auto& [candidate, incumbent] : o.decide) {
    check_timed_key("--decide", candidate, o);
    check_timed_key("--decide", incumbent, o);
  }

  if (r.n_values || r.d_values) {
    if (!r.sweeps.empty()) throw cli::UsageError("--sweep", "cannot be combined with --n or --d");
    const std::vector<int> n_list = r.n_values ? *r.n_values : kAllN;
    const std::vector<int> d_list = r.d_values ? *r.d_values : std::vector<int>{64};
    o.problems = grid(d_list, n_list, r.B, r.H);
    o.sweep_names = {"custom"};
  } else {
    if (r.sweeps.empty()) r.sweeps = {o.quick ? "quick" : "full"};
    for (const auto& s : r.sweeps) {
      for (const auto& p : sweep_problems(s, r.B, r.H)) {
        if (std::find(o.problems.begin(), o.problems.end(), p) == o.problems.end()) o.problems.push_back(p);
      }
    }
    o.sweep_names = r.sweeps;
  }
  if (r.causal != "both") {
    const bool want = r.causal == "yes";
    std::erase_if(o.problems, [&](const Problem& p) { return p.causal != want; });
  }
  std::vector<Problem> with_passes;
  for (const Problem& p : o.problems) {
    for (const Window& w : r.windows) {
      for (Pass pass : r.passes) {
        Problem q = p;
        q.pass = pass;
        q.window = w;
        if (std::find(with_passes.begin(), with_passes.end(), q) == with_passes.end()) with_passes.push_back(q);
      }
    }
  }
  o.problems = std::move(with_passes);
  if (o.problems.empty()) throw cli::UsageError("no problems selected (see --sweep, --n, --d, --causal)");
  return o;
}

Options parse_options(int argc, const char* const* argv, const std::vector<std::string>& implementation_keys) {
  return parse_options(cli::arguments(argc, argv), implementation_keys);
}

}  // namespace fa2::bench
