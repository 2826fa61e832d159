// step07's host-side tests: the FLOP count, statistics and repetition budget, option parsing,
// the tables, the CSV and the SVG writer; the rounds of --repeat (their rotation, the ratios'
// spread, the verdicts and the tuned dispatch's rule), NVML's readings, and the quoted numbers
// against their committed file. No GPU needed.
//   ctest --test-dir build/<preset> -L step07
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "common/svg_plot.hpp"
#include "common/testing.hpp"
#include "step07_benchmark/harness/bench_options.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_report.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"
#include "step07_benchmark/harness/nvml.hpp"
#include "step07_benchmark/harness/quoted_reference.hpp"

using namespace fa2::bench;
namespace svg = fa2::svg;  // the chart writer lives in common/ since step 2 plots with it too

namespace {

// What --impl and --ours accept in these tests; step07_bench passes the registry's keys.
const std::vector<std::string> kKeys = {"ours16", "ours64x64", "v5", "cublas"};

// The message of the UsageError that parsing `args` throws, or "no error".
std::string option_error(const std::vector<std::string>& args) {
  try {
    (void)parse_options(args, kKeys);
  } catch (const fa2::cli::UsageError& e) {
    return e.what();
  }
  return "no error";
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

// A small well-formedness check: every tag closes in order, attributes are quoted, and the
// text holds no bare '<' or '&' outside entities. Enough for what render() writes.
std::string xml_problem(const std::string& doc) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  if (doc.rfind("<?xml", 0) == 0) i = doc.find("?>") + 2;
  while (i < doc.size()) {
    if (doc[i] == '&') {
      const std::size_t semi = doc.find(';', i);
      const std::string ent = doc.substr(i, semi == std::string::npos ? 0 : semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;") {
        return "bad entity at " + std::to_string(i);
      }
      i = semi + 1;
      continue;
    }
    if (doc[i] != '<') {
      ++i;
      continue;
    }
    const std::size_t close = doc.find('>', i);
    if (close == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = doc.substr(i + 1, close - i - 1);
    if (count(tag, "\"") % 2 != 0) return "odd number of quotes in <" + tag + ">";
    if (tag.find('<') != std::string::npos) return "'<' inside a tag at " + std::to_string(i);
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> closes " + (stack.empty() ? "nothing" : stack.back());
      stack.pop_back();
    } else if (!tag.empty() && tag.back() != '/') {
      stack.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
    }
    i = close + 1;
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  return "";
}

Measurement timed(const std::string& key, const Problem& p, double ms) {
  Measurement m;
  m.key = key;
  m.name = key;
  m.problem = p;
  m.status = Status::ok;
  m.ms.median = ms;
  m.ms.min = ms;
  m.ms.p20 = ms;
  m.ms.p80 = ms;
  m.reps = 10;
  m.tflops = tflops_per_s(attention_flops(p), ms);
  m.peak_bytes = static_cast<double>(io_bytes(p));
  m.peak_source = "counted";
  return m;
}

}  // namespace

TEST_SUITE("napkin") {
  TEST_CASE("the FLOP count is 4 B H N^2 D and halves for causal") {
    const Problem p{4, 8, 4096, 64, false};
    CHECK(attention_flops(p) == doctest::Approx(137438953472.0));  // 4 * 32 * 4096^2 * 64
    Problem c = p;
    c.causal = true;
    CHECK(attention_flops(c) == doctest::Approx(attention_flops(p) / 2));
    CHECK(attention_flops(Problem{1, 1, 16, 16, false}) == doctest::Approx(4.0 * 16 * 16 * 16));
  }

  TEST_CASE("with a window the FLOPs count the (query, key) pairs the masks leave, one by one") {
    for (bool causal : {false, true}) {
      for (const fa2::Window w : {fa2::Window{3, 0}, fa2::Window{2, 5}, fa2::Window{-1, 1}, fa2::Window{0, -1}}) {
        Problem p{2, 3, 37, 16, causal};
        p.window = w;
        double pairs = 0;
        for (int q = 0; q < p.N; ++q)
          for (int k = 0; k < p.N; ++k) pairs += fa2::sees(causal, w, q, k) ? 1 : 0;
        CAPTURE(causal);
        CAPTURE(w.left);
        CAPTURE(w.right);
        CHECK(attention_flops(p) == doctest::Approx(4.0 * 6 * 16 * pairs));
        p.pass = Pass::backward;
        CHECK(attention_flops(p) == doctest::Approx(2.5 * 4.0 * 6 * 16 * pairs));
      }
    }
  }

  TEST_CASE("the backward counts 2.5 times the forward's FLOPs, halved for causal, and moves dO and the gradients") {
    Problem p{4, 8, 4096, 64, false};
    const double forward = attention_flops(p);
    const std::size_t forward_bytes = io_bytes(p);
    p.pass = Pass::backward;
    CHECK(attention_flops(p) == doctest::Approx(2.5 * forward));
    p.causal = true;
    CHECK(attention_flops(p) == doctest::Approx(1.25 * forward));
    // dO, dQ, dK and dV: four more (B, H, N, D) bf16 tensors than the forward's Q, K, V, O and L.
    CHECK(io_bytes(p) == forward_bytes + 4 * static_cast<std::size_t>(p.qkv_elements()) * 2);
    CHECK(p.label() == "B=4 H=8 N=4096 D=64 causal backward");
    CHECK(to_string(Pass::backward) == "bwd");
    CHECK_FALSE(p == Problem{4, 8, 4096, 64, true});  // the pass is part of the problem
  }

  TEST_CASE("TF/s from milliseconds matches the quoted SDPA numbers of the Python harness") {
    // sdpa_h200.txt: N=4096 non-causal, cuDNN 0.295 ms = 465 TF/s.
    CHECK(tflops_per_s(attention_flops(Problem{4, 8, 4096, 64, false}), 0.295) ==
          doctest::Approx(465.9).epsilon(0.002));
    CHECK(tflops_per_s(1e12, 0.0) == 0.0);
  }

  TEST_CASE("every quoted number is consistent with its time under our FLOP count") {
    std::vector<const QuotedSeries*> all = {&quoted_article_triton(), &quoted_python_sdpa_default()};
    for (const auto& s : quoted_python_sdpa_backends()) all.push_back(&s);
    for (const QuotedSeries* s : all) {
      CHECK(s->points.size() == 12);
      for (const auto& q : s->points) {
        const Problem p{s->B, s->H, q.N, s->D, q.causal};
        // The times are rounded to 1 us: the quoted TF/s must lie between the rates of ms +- 0.5 us
        // (plus the rounding of the TF/s value itself).
        const double hi = tflops_per_s(attention_flops(p), q.ms - 0.0005) + 0.5;
        const double lo = tflops_per_s(attention_flops(p), q.ms + 0.0005) - 0.5;
        INFO(s->key, " N=", q.N, " causal=", q.causal);
        CHECK(q.tflops <= hi);
        CHECK(q.tflops >= lo);
      }
    }
  }

  TEST_CASE("the quoted series answer only for the problem shape they were measured on") {
    const auto& t = quoted_article_triton();
    REQUIRE(t.find(Problem{4, 8, 4096, 64, true}) != nullptr);
    CHECK(t.find(Problem{4, 8, 4096, 64, true})->ms == doctest::Approx(2.896));
    CHECK(t.find(Problem{4, 8, 4096, 128, true}) == nullptr);
    CHECK(t.find(Problem{2, 8, 4096, 64, true}) == nullptr);
    CHECK(t.find(Problem{4, 8, 3000, 64, true}) == nullptr);
  }

  TEST_CASE("least traffic counts Q K V O in bf16 and L in float32 while S and P are N^2 per head") {
    const Problem p{4, 8, 1024, 64, false};
    CHECK(io_bytes(p) == 4u * 32u * 1024u * 64u * 2u + 32u * 1024u * 4u);
    CHECK(score_matrix_bytes(Problem{4, 8, 16384, 64, false}) == 32ull * 16384ull * 16384ull * 2ull);  // 17 GB
  }

  TEST_CASE("the floor is the larger of the compute and the memory time") {
    const Ceilings c{1000.0, 1.0, "test"};
    const Problem p{4, 8, 4096, 64, false};
    const FloorTime f = floor_time(p, c);
    CHECK(f.compute_ms == doctest::Approx(attention_flops(p) / 1e15 * 1e3));
    CHECK(f.memory_ms == doctest::Approx(min_traffic_bytes(p) / 1e12 * 1e3));
    CHECK(f.floor_ms() == doctest::Approx(std::max(f.compute_ms, f.memory_ms)));
    CHECK(f.compute_bound());
    CHECK_FALSE(floor_time(p, Ceilings{1e9, 1e-6, "slow memory"}).compute_bound());
  }
}

TEST_SUITE("stats") {
  TEST_CASE("the median is torch.median's: the lower middle value for an even count") {
    CHECK(summarize({3.0, 1.0, 2.0}).median == 2.0);
    CHECK(summarize({4.0, 1.0, 3.0, 2.0}).median == 2.0);
    CHECK(summarize({5.0}).median == 5.0);
  }

  TEST_CASE("quantiles interpolate linearly and min max mean stddev are the usual ones") {
    const Stats s = summarize({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0});
    CHECK(s.count == 11);
    CHECK(s.min == 1.0);
    CHECK(s.max == 11.0);
    CHECK(s.mean == doctest::Approx(6.0));
    CHECK(s.p20 == doctest::Approx(3.0));
    CHECK(s.p80 == doctest::Approx(9.0));
    CHECK(s.stddev == doctest::Approx(std::sqrt(10.0)));
    CHECK(quantile_sorted({0.0, 10.0}, 0.25) == doctest::Approx(2.5));
  }

  TEST_CASE("an empty or NaN sample is an error and not a number") {
    CHECK_THROWS_AS(summarize({}), std::invalid_argument);
    CHECK_THROWS_AS(summarize({1.0, std::nan("")}), std::invalid_argument);
  }

  TEST_CASE("the repetition plan follows do_bench and clamps to the budget's bounds") {
    const TimingBudget b;  // 25 ms warm-up, 100 ms of reps, 5..1000
    RepPlan plan = plan_reps(0.125, b);
    CHECK(plan.warmup == 200);
    CHECK(plan.reps == 800);
    plan = plan_reps(0.01, b);
    CHECK(plan.reps == 1000);
    plan = plan_reps(45.0, b);  // our 16x16 kernel at N=16384
    CHECK(plan.warmup == 1);
    CHECK(plan.reps == 5);
    plan = plan_reps(2.0, b);
    CHECK(plan.warmup == 12);
    CHECK(plan.reps == 50);
    plan = plan_reps(0.0, b);  // too fast to see: counted as 1 us
    CHECK(plan.reps == 1000);
    CHECK_THROWS_AS(plan_reps(1.0, TimingBudget{25.0, 100.0, 5, 10, 5}), std::invalid_argument);
    CHECK_THROWS_AS(plan_reps(1.0, TimingBudget{25.0, 0.0, 5, 5, 1000}), std::invalid_argument);
  }
}

TEST_SUITE("options") {
  TEST_CASE("the default is the full sweep: the article's N then 8192 and 16384 then head dim 128") {
    const Options o = parse_options(std::vector<std::string>{}, kKeys);
    // Each problem forward then backward.
    const auto backward = [](Problem p) {
      p.pass = Pass::backward;
      return p;
    };
    CHECK(o.problems.size() == 36);
    CHECK(o.problems.front() == Problem{4, 8, 512, 64, false});
    CHECK(o.problems[1] == backward(Problem{4, 8, 512, 64, false}));
    CHECK(o.problems[2] == Problem{4, 8, 512, 64, true});
    CHECK(o.problems[14] == Problem{4, 8, 4096, 64, true});
    CHECK(o.problems[22] == Problem{4, 8, 16384, 64, true});
    CHECK(o.problems.back() == backward(Problem{4, 8, 16384, 128, true}));
    CHECK(o.budget.warmup_ms == 25.0);
    CHECK(o.budget.rep_ms == 100.0);
    CHECK(o.ours_key == "ours16");
    CHECK(o.measure_ceilings);
  }

  TEST_CASE("--pass chooses the forward, the backward or both") {
    Options o = parse_options(std::vector<std::string>{"--sweep=article", "--pass=fwd"}, kKeys);
    CHECK(o.problems.size() == 8);
    for (const auto& p : o.problems) CHECK_FALSE(p.backward());
    o = parse_options(std::vector<std::string>{"--sweep=article", "--pass", "bwd"}, kKeys);
    CHECK(o.problems.size() == 8);
    for (const auto& p : o.problems) CHECK(p.backward());
    CHECK_THROWS_WITH_AS(parse_options(std::vector<std::string>{"--pass=sideways"}, kKeys),
                         doctest::Contains("--pass: got 'sideways'"), fa2::cli::UsageError);
  }

  TEST_CASE("--quick runs N 512 and 1024 with a short budget") {
    const Options o = parse_options(std::vector<std::string>{"--quick"}, kKeys);
    CHECK(o.quick);
    CHECK(o.problems.size() == 8);  // 2 N x causal or not x forward and backward
    CHECK(o.budget.rep_ms == 20.0);
    CHECK(o.budget.warmup_ms == 5.0);
  }

  TEST_CASE("sweeps combine without duplicates and --causal filters them") {
    Options o =
        parse_options(std::vector<std::string>{"--sweep=article,long,article", "--causal", "yes", "--pass=fwd"}, kKeys);
    CHECK(o.problems.size() == 6);
    for (const auto& p : o.problems) CHECK(p.causal);
    o = parse_options(
        std::vector<std::string>{"--sweep", "d128", "--causal=no", "--batch=2", "--heads", "16", "--pass=fwd"}, kKeys);
    CHECK(o.problems.size() == 3);
    CHECK(o.problems[0] == Problem{2, 16, 1024, 128, false});
  }

  TEST_CASE("--window runs every problem once per window, and refuses what is not LEFT:RIGHT or none") {
    const Options o = parse_options(
        std::vector<std::string>{"--n=4096", "--causal=yes", "--window=4095:0,none", "--pass=bwd"}, kKeys);
    REQUIRE(o.problems.size() == 2);
    CHECK(o.problems[0].window == fa2::Window{4095, 0});
    CHECK_FALSE(o.problems[1].window.bounded());
    CHECK(o.problems[0].label() == "B=4 H=8 N=4096 D=64 causal window=(4095,0) backward");
    CHECK_FALSE(o.problems[0] == o.problems[1]);  // the window is part of the problem
    CHECK(option_error({"--window=4095"}).find("LEFT:RIGHT") != std::string::npos);
    CHECK(option_error({"--window=-2:0"}).find("--window") != std::string::npos);
    CHECK(option_error({"--window=4:x"}).find("--window") != std::string::npos);
  }

  TEST_CASE("--n and --d make a custom grid") {
    const Options o = parse_options(std::vector<std::string>{"--n=128,256", "--d", "64,128", "--pass=fwd"}, kKeys);
    CHECK(o.problems.size() == 8);
    CHECK(o.problems[0] == Problem{4, 8, 128, 64, false});
    CHECK(o.problems[7] == Problem{4, 8, 256, 128, true});
  }

  TEST_CASE("the other options land where they should") {
    const Options o =
        parse_options(std::vector<std::string>{"--impl=ours16,cublas", "--out", "/tmp/x", "--seed=42", "--warmup-ms=1",
                                               "--rep-ms=2.5", "--min-reps=3", "--max-reps=7", "--no-ceilings",
                                               "--ours=ours64x64", "--list"},
                      kKeys);
    CHECK(o.impl_keys == std::vector<std::string>{"ours16", "cublas"});
    CHECK(o.out_dir == "/tmp/x");
    REQUIRE(o.seed.has_value());
    CHECK(*o.seed == 42u);
    CHECK(o.budget.rep_ms == 2.5);
    CHECK(o.budget.min_reps == 3);
    CHECK(o.budget.max_reps == 7);
    CHECK_FALSE(o.measure_ceilings);
    CHECK(o.ours_key == "ours64x64");
    CHECK(o.list);
  }

  TEST_CASE("bad options are rejected with the option's name in the message") {
    CHECK(option_error({"--n=12x"}).find("--n") == 0);
    CHECK(option_error({"--n=0"}).find("--n") == 0);
    CHECK(option_error({"--d="}).find("--d") == 0);
    CHECK(option_error({"--sweep=huge"}).find("--sweep") == 0);
    CHECK(option_error({"--causal=maybe"}).find("--causal") == 0);
    CHECK(option_error({"--frobnicate"}).find("unknown option") != std::string::npos);
    CHECK(option_error({"stray"}).find("unexpected argument") != std::string::npos);
    CHECK(option_error({"--seed"}).find("missing value") != std::string::npos);
    CHECK(option_error({"--quick=1"}).find("takes no value") != std::string::npos);
    CHECK(option_error({"--min-reps=10", "--max-reps=5"}) == "--min-reps: got 10, more than --max-reps (5)");
    CHECK(option_error({"--sweep=article", "--n=512"}).find("--sweep") == 0);
    CHECK(option_error({"--rep-ms=fast"}).find("--rep-ms") == 0);
    CHECK(option_error({"--batch=0"}) == "--batch: got '0', must be an integer in 1..65535");
  }

  TEST_CASE("--impl and --ours take only registered keys and the error lists them") {
    CHECK(option_error({"--impl=ours16,nope"}) == "--impl: got 'nope', must be one of ours16, ours64x64, v5, cublas");
    CHECK(option_error({"--impl=,"}).find("--impl: empty list") == 0);
    CHECK(option_error({"--ours", "v4"}) == "--ours: got 'v4', must be one of ours16, ours64x64, v5, cublas");
    CHECK(option_error({"--impl=v5", "--ours=v5"}) == "no error");
  }

  TEST_CASE("--help is reported and not an error and the usage lists every option") {
    CHECK(parse_options(std::vector<std::string>{"--n=oops", "--help"}, kKeys).help);
    const std::string u = usage();
    CHECK(u.rfind("usage: step07_bench", 0) == 0);
    for (const char* option : {"--sweep=LIST",         "--n=LIST",       "--d=LIST",
                               "--causal=both|yes|no", "--batch=N",      "--heads=N",
                               "--impl=LIST",          "--ours=KEY",     "--quick",
                               "--warmup-ms=X",        "--rep-ms=X",     "--min-reps=N",
                               "--max-reps=N",         "--seed=S",       "--out=DIR",
                               "--no-ceilings",        "--list",         "--help",
                               "--repeat=N",           "--baseline=KEY", "--decide=CANDIDATE,INCUMBENT",
                               "--isolated=N",         "--gap-ms=X"}) {
      CAPTURE(option);
      CHECK(u.find(option) != std::string::npos);
    }
  }
}

TEST_SUITE("report") {
  TEST_CASE("a text table right-aligns numbers and left-aligns the first column and rejects ragged rows") {
    TextTable t({"name", "ms"});
    t.add_row({"a", "1.5"});
    t.add_row({"longer", "10.25"});
    const std::string s = t.render();
    CHECK(s == "name       ms\n-------------\na         1.5\nlonger  10.25\n");
    CHECK_THROWS_AS(t.add_row({"only one"}), std::invalid_argument);
  }

  TEST_CASE("the article's table has its columns and percentages of the default SDPA and of FA2") {
    const Problem p{4, 8, 4096, 64, false};
    std::vector<Measurement> all = {timed("ours16", p, 2.0), timed("sdpa", p, 0.5), timed("sdpa-fa2", p, 1.0)};
    const auto quoted = quoted_measurements({p});
    REQUIRE(quoted.size() == 1);
    CHECK(quoted[0].status == Status::quoted);
    all.insert(all.end(), quoted.begin(), quoted.end());
    const std::string t = article_table(all, {p}, 64, ArticleColumns{});
    CHECK(t.find("N     causal  ours ms  sdpa ms  ours TF/s  sdpa TF/s  % sdpa") == 0);
    CHECK(t.find("4096   False    2.000    0.500") != std::string::npos);
    CHECK(t.find("25%") != std::string::npos);    // 0.5 / 2.0
    CHECK(t.find("50%") != std::string::npos);    // 1.0 / 2.0
    CHECK(t.find("2.871") != std::string::npos);  // the quoted Triton time
    CHECK(article_table(all, {p}, 128, ArticleColumns{}).find("4096") == std::string::npos);
  }

  TEST_CASE("the harness check puts our SDPA times beside the quoted Python ones") {
    const Problem p{4, 8, 4096, 64, false};
    const std::string t = harness_crosscheck_table({timed("sdpa", p, 0.3), timed("sdpa-cudnn", p, 0.29)}, {p});
    CHECK(t.find("sdpa ms  python*  sdpa-fa2 ms") != std::string::npos);
    CHECK(t.find("0.300    0.292") != std::string::npos);  // default backend: ours, then Python's
    CHECK(t.find("0.462") != std::string::npos);           // flash via Python, quoted even when not run here
    CHECK(harness_crosscheck_table({timed("ours16", p, 1.0)}, {p}).empty());  // no SDPA
    CHECK(harness_crosscheck_table({timed("sdpa", Problem{4, 8, 4096, 128, false}, 1.0)},
                                   {Problem{4, 8, 4096, 128, false}})
              .empty());  // not quoted
  }

  TEST_CASE("without SDPA measurements the article table leaves the SDPA and FA2 columns out") {
    const Problem p{4, 8, 1024, 64, true};
    const std::string t = article_table({timed("ours16", p, 0.5)}, {p}, 64, ArticleColumns{});
    CHECK(t.find("N     causal  ours ms  ours TF/s  Triton* ms") == 0);
    CHECK(t.find("sdpa") == std::string::npos);
    CHECK(t.find("FA2") == std::string::npos);
  }

  TEST_CASE("failed or unavailable or missing entries show as words and never as numbers") {
    const Problem p{4, 8, 1024, 64, true};
    Measurement failed = timed("ours16", p, 1.0);
    failed.status = Status::failed;
    Measurement unavailable = timed("sdpa-fa2", p, 1.0);
    unavailable.status = Status::unavailable;
    const std::string t = wide_table({failed, unavailable}, {p}, {"ours16", "sdpa-fa2", "cublas"}, WideValue::tflops);
    CHECK(t.find("FAIL") != std::string::npos);
    CHECK(t.find("unavail") != std::string::npos);
    CHECK(t.find(format_fixed(failed.tflops, 1)) == std::string::npos);
    const std::string a = article_table({failed}, {p}, 64, ArticleColumns{});
    CHECK(a.find("FAIL") != std::string::npos);
    const std::string data_line = a.substr(a.rfind('\n', a.size() - 2) + 1);
    CHECK(data_line.find('%') == std::string::npos);  // no percentage of a failed run
  }

  TEST_CASE("the CSV has one header and one row per measurement and quotes awkward fields") {
    CHECK(csv_escape("plain") == "plain");
    CHECK(csv_escape("a,b") == "\"a,b\"");
    CHECK(csv_escape("say \"hi\"") == "\"say \"\"hi\"\"\"");
    CHECK(csv_escape("two\nlines") == "\"two\nlines\"");
    const Problem p{4, 8, 512, 64, false};
    Measurement m = timed("ours16", p, 0.25);
    m.max_err_ref = 0.0;
    m.max_err_fp64 = 0.0039;
    Measurement bad = timed("cublas", p, 1.0);
    bad.status = Status::skipped;
    bad.note = "needs 34 GiB, 2 GiB free, sorry";
    const std::string csv = to_csv({m, bad}, "NVIDIA H200");
    CHECK(count(csv, "\n") == 3);
    CHECK(csv.rfind(csv_header(), 0) == 0);
    const std::size_t columns = count(csv_header(), ",") + 1;
    const std::string row = csv_row(m, "NVIDIA H200");
    CHECK(count(row, ",") + 1 == columns);
    CHECK(row.find("NVIDIA H200,ours16,ours16,4,8,512,64,false,fwd,ok,0.25000") == 0);
    CHECK(row.find(",0.0039,") != std::string::npos);
    CHECK(csv.find("\"needs 34 GiB, 2 GiB free, sorry\"") != std::string::npos);
    CHECK(csv_row(bad, "g").find(",skipped,,,,,,") != std::string::npos);  // no time for what did not run
  }
}

TEST_SUITE("svg") {
  TEST_CASE("the chart is well-formed XML with one polyline per series per panel") {
    std::vector<Measurement> all;
    for (int n : {512, 1024, 2048, 4096}) {
      for (bool causal : {false, true}) {
        const Problem p{4, 8, n, 64, causal};
        all.push_back(timed("ours16", p, 1.0));
        all.push_back(timed("sdpa", p, 0.1));
      }
    }
    const auto quoted = quoted_measurements({Problem{4, 8, 512, 64, false}, Problem{4, 8, 512, 64, true}});
    all.insert(all.end(), quoted.begin(), quoted.end());
    const std::vector<ChartSeries> series = {{"ours16", "ours16 (step05)", false},
                                             {"sdpa", "sdpa <default> & co", false},
                                             {"triton-article", "Triton, quoted", true}};
    const svg::Chart chart = tflops_chart(all, series, 64, "H200 \"test\"");
    REQUIRE(chart.panels.size() == 2);
    CHECK(chart.panels[0].title == "non-causal");
    CHECK(chart.panels[1].series[0].points.size() == 4);
    const std::string doc = svg::render(chart);
    CHECK(xml_problem(doc) == "");
    CHECK(count(doc, "<polyline") == 6);                // 3 series x 2 panels
    CHECK(count(doc, "stroke-dasharray") == 2 + 1);     // the quoted series in both panels + its legend line
    CHECK(count(doc, "<circle") == 4 * 2 * 2 + 1 * 2);  // one marker per point
    CHECK(doc.find("sdpa &lt;default&gt; &amp; co") != std::string::npos);
    CHECK(doc.find("H200 &quot;test&quot;") != std::string::npos);
    CHECK(doc.find(">512<") != std::string::npos);  // log2 ticks
    CHECK(doc.find(">4k<") != std::string::npos);
    CHECK(count(doc, "ours16 (step05)</text>") == 1);  // one legend entry per series
  }

  TEST_CASE("series without points draw nothing and an empty panel says so") {
    svg::Chart c;
    c.title = "t";
    c.panels = {svg::Panel{"empty", {svg::Series{"none", "#000", false, {}}}}};
    const std::string doc = svg::render(c);
    CHECK(xml_problem(doc) == "");
    CHECK(count(doc, "<polyline") == 0);
    CHECK(doc.find("no data") != std::string::npos);
  }

  TEST_CASE("axis helpers: power-of-two labels and nice steps and bad points are refused") {
    CHECK(svg::power_of_two_label(512) == "512");
    CHECK(svg::power_of_two_label(16384) == "16k");
    const auto [top, step] = svg::nice_axis(463.0);
    CHECK(step == 100.0);
    CHECK(top == 500.0);
    CHECK(svg::nice_axis(0.0).first > 0.0);
    svg::Chart c;
    c.panels = {svg::Panel{"p", {svg::Series{"s", "#000", false, {{0.0, 1.0}}}}}};
    CHECK_THROWS_AS(svg::render(c), std::invalid_argument);
    CHECK(svg::palette(0) != svg::palette(1));
    CHECK(svg::palette(0) == svg::palette(10));
  }
}

TEST_SUITE("report") {
  TEST_CASE("the CSV reads back what it wrote for the fields the plots use") {
    fa2::bench::Measurement m;
    m.key = "v5";
    m.name = "v5 fast, \"tuned\", 128x64";
    m.problem.N = 4096;
    m.problem.D = 128;
    m.problem.causal = true;
    m.ms.median = 0.5;
    m.tflops = 235.25;
    fa2::bench::Measurement n = m;
    n.key = "sdpa";
    n.status = fa2::bench::Status::unavailable;
    n.note = "refused, no fallback";
    const auto back = fa2::bench::from_csv(fa2::bench::to_csv({m, n}, "NVIDIA H200"));
    REQUIRE(back.size() == 2);
    CHECK(back[0].key == "v5");
    CHECK(back[0].name == m.name);
    CHECK(back[0].problem.N == 4096);
    CHECK(back[0].problem.D == 128);
    CHECK(back[0].problem.causal);
    CHECK(back[0].tflops == doctest::Approx(235.25));
    CHECK(back[1].status == fa2::bench::Status::unavailable);
    CHECK(back[1].note == "refused, no fallback");
    CHECK_THROWS_AS(fa2::bench::from_csv("header\na,b,c\n"), std::invalid_argument);
  }

  TEST_CASE("the CSV's window column round-trips, empty for a problem without one") {
    fa2::bench::Measurement m;
    m.key = "v6b.16";
    m.problem.causal = true;
    m.problem.window = fa2::Window{4095, 0};
    const std::string csv = fa2::bench::to_csv({m}, "g");
    CHECK(csv.find(",\"(4095,0)\"\n") != std::string::npos);
    const auto back = fa2::bench::from_csv(csv);
    REQUIRE(back.size() == 1);
    CHECK(back[0].problem.window == fa2::Window{4095, 0});
    m.problem.window = fa2::Window{};
    CHECK_FALSE(fa2::bench::from_csv(fa2::bench::to_csv({m}, "g"))[0].problem.window.bounded());
    CHECK_THROWS_AS(fa2::bench::window_from_text("(4095;0)"), std::invalid_argument);
    CHECK_THROWS_AS(fa2::bench::window_from_text("(-3,0)"), std::invalid_argument);
  }

  TEST_CASE("the CSV's pass column round-trips, and a CSV written before it existed reads as forward passes") {
    fa2::bench::Measurement m;
    m.key = "ours16";
    m.problem.pass = Pass::backward;
    m.ms.median = 2.0;
    const auto back = fa2::bench::from_csv(fa2::bench::to_csv({m}, "g"));
    REQUIRE(back.size() == 1);
    CHECK(back[0].problem.backward());
    // The record of 2026-11-29 has no pass column: every row is a forward.
    const std::string old_csv =
        "gpu,impl,name,B,H,N,D,causal,status,ms_median,ms_min,ms_p20,ms_p80,reps,tflops,peak_mib,peak_source,"
        "max_err_vs_ref,max_err_vs_fp64,backend,note\n"
        "NVIDIA H200,v5,v5,4,8,4096,64,true,ok,0.5,,,,,235.2,,,,,,\n";
    const auto old = fa2::bench::from_csv(old_csv);
    REQUIRE(old.size() == 1);
    CHECK_FALSE(old[0].problem.backward());
    CHECK_FALSE(old[0].problem.window.bounded());  // nor a window column
    CHECK(old[0].tflops == doctest::Approx(235.2));
    const std::string bad_pass =
        fa2::bench::to_csv({m}, "g").replace(fa2::bench::to_csv({m}, "g").find(",bwd,"), 5, ",sideways,");
    CHECK_THROWS_WITH_AS(fa2::bench::from_csv(bad_pass), doctest::Contains("pass 'sideways'"), std::invalid_argument);
  }
}

namespace {

// A measurement timed in rounds: each round's median time, positions 0, 1, ... and no NVML.
Measurement in_rounds(const std::string& key, const Problem& p, const std::vector<double>& round_ms) {
  Measurement m = timed(key, p, round_ms.front());
  m.timing = "do_bench";
  m.round_ms = round_ms;
  for (std::size_t r = 0; r < round_ms.size(); ++r) {
    m.round_position.push_back(r % 2);
    m.round_reps.push_back(20);
    m.round_gpu.push_back(GpuSample{});
  }
  m.ms = summarize(round_ms);
  m.tflops = tflops_per_s(attention_flops(p), m.ms.median);
  return m;
}

}  // namespace

TEST_SUITE("repeat") {
  TEST_CASE("each round's order is a permutation, and over a cycle every position and every neighbour is balanced") {
    for (std::size_t count = 1; count <= 9; ++count) {
      CAPTURE(count);
      const std::size_t cycle = rotation_cycle(count);
      CHECK(cycle == (count % 2 == 0 ? count : 2 * count));
      std::vector<std::vector<std::size_t>> at_position(count, std::vector<std::size_t>(count, 0));
      std::map<std::pair<std::size_t, std::size_t>, std::size_t> follows;  // (before, after) -> rounds
      for (std::size_t round = 0; round < cycle; ++round) {
        const auto order = rotation_order(count, round);
        REQUIRE(order.size() == count);
        auto sorted = order;
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 0; i < count; ++i) REQUIRE(sorted[i] == i);  // each implementation once
        for (std::size_t pos = 0; pos < count; ++pos) ++at_position[order[pos]][pos];
        for (std::size_t pos = 0; pos + 1 < count; ++pos) ++follows[{order[pos], order[pos + 1]}];
        CHECK(rotation_order(count, round + cycle) == order);  // the cycle repeats
      }
      for (std::size_t impl = 0; impl < count; ++impl) {
        for (std::size_t pos = 0; pos < count; ++pos) CHECK(at_position[impl][pos] == cycle / count);
      }
      // Every ordered pair of different implementations is neighbours equally often.
      CHECK(follows.size() == count * (count - 1));
      for (const auto& [pair, n] : follows) CHECK(n == cycle / count);
    }
    CHECK(rotation_order(4, 0) == std::vector<std::size_t>{0, 1, 3, 2});
    CHECK(rotation_order(4, 1) == std::vector<std::size_t>{1, 2, 0, 3});
    CHECK(rotation_order(3, 0) == std::vector<std::size_t>{0, 1, 2});
    CHECK(rotation_order(3, 3) == std::vector<std::size_t>{2, 1, 0});  // odd: the second half runs reversed
    CHECK_THROWS_AS(rotation_order(0, 0), std::invalid_argument);
  }

  TEST_CASE("the ratio's spread is its per-round median, quartiles and range") {
    // Per round: 10/9.5, 10/10, 10/9.8, 10/9.9, 10/9.0.
    const RatioSpread s = ratio_spread({10, 10, 10, 10, 10}, {9.5, 10.0, 9.8, 9.9, 9.0});
    CHECK(s.rounds == 5);
    CHECK(s.min == doctest::Approx(1.0));
    CHECK(s.q1 == doctest::Approx(10.0 / 9.9));
    CHECK(s.median == doctest::Approx(10.0 / 9.8));
    CHECK(s.q3 == doctest::Approx(10.0 / 9.5));
    CHECK(s.max == doctest::Approx(10.0 / 9.0));
    CHECK(verdict(s) == Verdict::inside_spread);  // one round is a tie: not every round agrees
    CHECK_THROWS_AS(ratio_spread({1.0, 2.0}, {1.0}), std::invalid_argument);
    CHECK_THROWS_AS(ratio_spread({}, {}), std::invalid_argument);
    CHECK_THROWS_AS(ratio_spread({1.0, 0.0}, {1.0, 1.0}), std::invalid_argument);
    CHECK_THROWS_AS(ratio_spread({1.0, 1.0}, {1.0, std::nan("")}), std::invalid_argument);
  }

  TEST_CASE("a drift of the GPU that moves both sides alike cancels out of the per-round ratio") {
    // Made-up times: every timing of a round is slowed by the same drift factor (`slow`), and the
    // implementation takes a fixed fraction of the baseline's time in each round. Pooled over
    // rounds, the two sets of times overlap (noise); round by round, never.
    std::vector<double> baseline, impl;
    for (int r = 0; r < 7; ++r) {
      const double slow = std::pow(1.03, r);
      baseline.push_back(1.0 * slow);
      impl.push_back(1.0 / 1.02 * slow);
    }
    CHECK(*std::max_element(impl.begin(), impl.end()) > *std::min_element(baseline.begin(), baseline.end()));
    const RatioSpread s = ratio_spread(baseline, impl);
    CHECK(s.min == doctest::Approx(1.02));
    CHECK(s.max == doctest::Approx(1.02));
    CHECK(verdict(s) == Verdict::faster);
  }

  TEST_CASE("a verdict needs every round to agree and at least five rounds, and the rule takes only a win") {
    const RatioSpread faster = ratio_spread({1, 1, 1, 1, 1}, {0.99, 0.98, 0.97, 0.99, 0.995});
    const RatioSpread slower = ratio_spread({1, 1, 1, 1, 1}, {1.01, 1.02, 1.03, 1.01, 1.005});
    const RatioSpread mixed = ratio_spread({1, 1, 1, 1, 1}, {0.9, 0.9, 0.9, 0.9, 1.01});
    const RatioSpread four = ratio_spread({1, 1, 1, 1}, {0.5, 0.5, 0.5, 0.5});
    CHECK(verdict(faster) == Verdict::faster);
    CHECK(verdict(slower) == Verdict::slower);
    CHECK(verdict(mixed) == Verdict::inside_spread);  // a median of 1.11 is still inside the range
    CHECK(verdict(four) == Verdict::too_few_rounds);  // twice as fast, but only four rounds
    CHECK(take_candidate(faster));
    CHECK_FALSE(take_candidate(slower));
    CHECK_FALSE(take_candidate(mixed));
    CHECK_FALSE(take_candidate(four));
    CHECK(to_string(Verdict::inside_spread) == "inside spread");
    CHECK(to_string(Verdict::too_few_rounds) == "too few rounds");
  }

  TEST_CASE("the pairs table and CSV give each pair's ratio, spread and verdict per problem") {
    const Problem p1{4, 8, 4096, 128, false}, p2{4, 8, 16384, 128, true};
    const std::vector<Measurement> all = {
        in_rounds("v6.11", p1, {1.00, 1.02, 0.99, 1.01, 1.00}), in_rounds("v6.17", p1, {0.98, 1.00, 0.97, 0.99, 0.98}),
        in_rounds("v6.11", p2, {2.00, 2.00, 2.00, 2.00, 2.00}), in_rounds("v6.17", p2, {1.98, 2.02, 1.99, 2.00, 1.97}),
        in_rounds("v6.14", p2, {2.00, 2.00, 2.00})};  // fewer rounds: not comparable round by round
    const auto rows = pair_results(all, {p1, p2}, {{"v6.17", "v6.11"}, {"v6.14", "v6.11"}, {"v6.11", "v6.11"}});
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].problem == p1);
    CHECK(rows[0].spread.min == doctest::Approx(1.02));  // round 1: 1.02 / 1.00
    CHECK(rows[0].verdict == Verdict::faster);
    CHECK(rows[1].problem == p2);
    CHECK(rows[1].verdict == Verdict::inside_spread);
    const std::string table = pairs_table(rows);
    CHECK(table.find("D=128 N=4096") != std::string::npos);
    CHECK(table.find("D=128 N=16384 causal") != std::string::npos);
    CHECK(table.find("inside spread") != std::string::npos);
    CHECK(table.find("faster") != std::string::npos);
    const std::string csv = pairs_csv(rows, "NVIDIA H200");
    CHECK(csv.rfind("gpu,impl,against,B,H,N,D,causal,pass,rounds,ratio_median,ratio_q1,ratio_q3,ratio_min,ratio_max,"
                    "verdict,window\n",
                    0) == 0);
    CHECK(count(csv, "\n") == 3);
    // p1's ratios 1/0.98, 1.02/1, 0.99/0.97, 1.01/0.99, 1/0.98: min 1.0200, median 1.0204.
    CHECK(csv.find("NVIDIA H200,v6.17,v6.11,4,8,4096,128,false,fwd,5,1.0204,") != std::string::npos);
    CHECK(csv.find(",1.0206,faster,\n") != std::string::npos);  // the largest: 0.99 / 0.97
  }

  TEST_CASE("--decide takes the candidate only where it wins outside the spread and says why elsewhere") {
    const Problem win{4, 8, 4096, 128, false}, noise{4, 8, 16384, 128, false}, lose{4, 8, 4096, 128, true};
    const std::vector<Measurement> all = {
        in_rounds("v6.11", win, {1.0, 1.0, 1.0, 1.0, 1.0}),   in_rounds("v6.17", win, {0.9, 0.9, 0.9, 0.9, 0.9}),
        in_rounds("v6.11", noise, {1.0, 1.0, 1.0, 1.0, 1.0}), in_rounds("v6.17", noise, {0.9, 1.1, 0.9, 0.9, 0.9}),
        in_rounds("v6.11", lose, {1.0, 1.0, 1.0, 1.0, 1.0}),  in_rounds("v6.17", lose, {1.1, 1.1, 1.1, 1.1, 1.1})};
    const std::string report = decision_report(all, {win, noise, lose}, "v6.17", "v6.11");
    INFO(report);
    CHECK(report.find("v6.11 ms / v6.17 ms") != std::string::npos);
    CHECK(count(report, "take v6.17") == 1);
    CHECK(report.find("keep v6.11 (inside spread)") != std::string::npos);
    CHECK(report.find("keep v6.11 (v6.17 slower)") != std::string::npos);
    CHECK(report.find("v6.17 over v6.11: taken at 1 of 3 points (D=128 N=4096); v6.11 kept at 1 inside the spread, "
                      "1 where v6.17 is slower, 0 with too few rounds") != std::string::npos);
    // Median ratios 1/0.9, 1/0.9, 1/1.1: geometric mean (1/0.9)^(2/3) * (1/1.1)^(1/3).
    const double geo = std::pow(1.0 / 0.9, 2.0 / 3.0) * std::pow(1.0 / 1.1, 1.0 / 3.0);
    CHECK(report.find("geometric mean of the median ratios " + format_fixed(geo, 3)) != std::string::npos);
    CHECK(decision_report(all, {win}, "v6.17", "v6.14").empty());  // never timed together
  }

  TEST_CASE("the rounds CSV has one row per round with its position and NVML's reading or n/a") {
    const Problem p{4, 8, 4096, 128, false};
    Measurement m = in_rounds("v6.11", p, {0.51, 0.52});
    m.round_gpu[1] = GpuSample{1980u, 3201u, 504.8, 49u, std::uint64_t{0x4}};
    Measurement failed = m;
    failed.key = "v6.13";
    failed.status = Status::failed;
    const std::string csv = rounds_csv({m, failed}, "NVIDIA H200");
    CHECK(csv.rfind("gpu,impl,B,H,N,D,causal,pass,round,position,ms_median,reps,sm_mhz,mem_mhz,power_w,temp_c,"
                    "clock_events,window\n",
                    0) == 0);
    CHECK(count(csv, "\n") == 3);  // the header and v6.11's two rounds; the failed one has none
    CHECK(csv.find("NVIDIA H200,v6.11,4,8,4096,128,false,fwd,0,0,0.51000,20,n/a,n/a,n/a,n/a,n/a,\n") !=
          std::string::npos);
    CHECK(csv.find("NVIDIA H200,v6.11,4,8,4096,128,false,fwd,1,1,0.52000,20,1980,3201,504.8,49,sw_power_cap,\n") !=
          std::string::npos);
  }

  TEST_CASE("the results CSV says how each row was timed and what NVML read, n/a without it, nothing when not timed") {
    const Problem p{4, 8, 4096, 128, false};
    Measurement m = in_rounds("v6.11", p, {0.51, 0.52, 0.50});
    m.gpu = GpuSample{1965u, 3201u, 480.0, 55u, std::uint64_t{0}};
    const std::string header = csv_header();
    CHECK(header.find(",note,timing,rounds,sm_mhz,mem_mhz,power_w,temp_c,clock_events,window\n") != std::string::npos);
    CHECK(csv_row(m, "g").find(",do_bench,3,1965,3201,480.0,55,none,\n") != std::string::npos);
    m.gpu = GpuSample{};
    CHECK(csv_row(m, "g").find(",do_bench,3,n/a,n/a,n/a,n/a,n/a,\n") != std::string::npos);
    Measurement single = timed("v5", p, 0.6);
    single.timing = "isolated";
    CHECK(csv_row(single, "g").find(",isolated,1,n/a,") != std::string::npos);
    single.status = Status::unsupported;
    single.note = "head dim";
    const std::string row = csv_row(single, "g");
    // timing, rounds, the five NVML fields and the window empty
    CHECK(row.substr(row.size() - 18) == ",head dim,,,,,,,,\n");
  }
}

namespace {

// Stand-ins for NVML's entry points, with what a driver would answer for one H200.
struct FakeNvml {
  static inline int init_result = 0;
  static inline int shutdowns = 0;
  static inline unsigned devices = 1;
  static inline std::string known_bus_id = "00000000:3B:00.0";
  static int init() { return init_result; }
  static int shutdown() {
    ++shutdowns;
    return 0;
  }
  static const char* error_string(int code) { return code == 12 ? "Driver Not Loaded" : "Unknown Error"; }
  static int driver_version(char* out, unsigned length) {
    std::snprintf(out, length, "%s", "580.159.04");
    return 0;
  }
  static int count(unsigned* n) {
    *n = devices;
    return 0;
  }
  static int by_pci(const char* bus_id, void** device) {
    if (known_bus_id != bus_id) return 6;  // NVML_ERROR_NOT_FOUND
    *device = &devices;
    return 0;
  }
  static int by_index(unsigned index, void** device) {
    if (index >= devices) return 2;
    *device = &devices;
    return 0;
  }
  static int clock(void*, int type, unsigned* mhz) {
    *mhz = type == 1 ? 1755u : 3201u;  // SM, memory
    return 0;
  }
  static int power(void*, unsigned* milliwatts) {
    *milliwatts = 612345;
    return 0;
  }
  static int temperature(void*, int, unsigned* c) {
    *c = 61;
    return 0;
  }
  static int throttle_reasons(void*, unsigned long long* mask) {
    *mask = 0x4 | 0x20;
    return 0;
  }
};

template <class F>
void* address_of(F* fn) {
  void* p = nullptr;
  std::memcpy(&p, &fn, sizeof p);
  return p;
}

// The symbols an older driver exports: the clock reasons under their old name.
void* fake_lookup(const char* name) {
  const std::map<std::string, void*> symbols = {
      {"nvmlInit_v2", address_of(&FakeNvml::init)},
      {"nvmlShutdown", address_of(&FakeNvml::shutdown)},
      {"nvmlErrorString", address_of(&FakeNvml::error_string)},
      {"nvmlSystemGetDriverVersion", address_of(&FakeNvml::driver_version)},
      {"nvmlDeviceGetCount_v2", address_of(&FakeNvml::count)},
      {"nvmlDeviceGetHandleByPciBusId_v2", address_of(&FakeNvml::by_pci)},
      {"nvmlDeviceGetHandleByIndex_v2", address_of(&FakeNvml::by_index)},
      {"nvmlDeviceGetClockInfo", address_of(&FakeNvml::clock)},
      {"nvmlDeviceGetPowerUsage", address_of(&FakeNvml::power)},
      {"nvmlDeviceGetTemperature", address_of(&FakeNvml::temperature)},
      {"nvmlDeviceGetCurrentClocksThrottleReasons", address_of(&FakeNvml::throttle_reasons)},
  };
  const auto it = symbols.find(name);
  return it == symbols.end() ? nullptr : it->second;
}

}  // namespace

TEST_SUITE("nvml") {
  TEST_CASE("clock event reasons are named, joined with plus, and unknown bits shown in hex") {
    CHECK(clock_event_names(0) == "none");
    CHECK(clock_event_names(0x4 | 0x20) == "sw_power_cap+sw_thermal");
    CHECK(clock_event_names(0x1) == "idle");
    CHECK(clock_event_names(0x1000) == "0x1000");
    CHECK(clock_event_names(0x80 | 0x3000) == "hw_power_brake+0x3000");
  }

  TEST_CASE("a reading prints its fields, n/a for what NVML did not give, and n/a alone when it gave nothing") {
    CHECK(format_sample(GpuSample{}) == "n/a");
    CHECK(format_sample(GpuSample{1980u, 3201u, 504.83, 49u, std::uint64_t{0}}) ==
          "SM 1980 MHz, memory 3201 MHz, 504.8 W, 49 C, clock events: none");
    GpuSample partial;
    partial.sm_mhz = 1755u;
    CHECK(format_sample(partial) == "SM 1755 MHz, memory n/a, n/a, n/a, clock events: n/a");
    CHECK(sample_fields(partial) == std::vector<std::string>{"1755", "n/a", "n/a", "n/a", "n/a"});
  }

  TEST_CASE("readings combine to the lower middle of each field and every reason any of them gave") {
    const GpuSample a{1980u, 3201u, 500.0, 50u, std::uint64_t{0}};
    const GpuSample b{1755u, 3201u, 690.0, 62u, std::uint64_t{0x4}};
    const GpuSample c{1890u, 3201u, 610.0, 58u, std::uint64_t{0x20}};
    GpuSample no_power = a;
    no_power.power_w.reset();
    const GpuSample all = combine_samples({a, b, c, no_power});
    CHECK(all.sm_mhz == 1890u);  // 1755, 1890, 1980, 1980: the lower middle
    CHECK(all.mem_mhz == 3201u);
    REQUIRE(all.power_w.has_value());
    CHECK(*all.power_w == doctest::Approx(610.0));  // from the three readings that have it: 500, 610, 690
    CHECK(all.temp_c == 50u);
    CHECK(all.clock_events == std::uint64_t{0x24});
    CHECK(combine_samples({}).empty());
    CHECK(combine_samples({GpuSample{}, GpuSample{}}).empty());
  }

  TEST_CASE("without the library every reading is n/a and the reason names what was missing") {
    const Nvml nvml = Nvml::open("00000000:3B:00.0", "libnvidia-ml-not-here.so.1");
    CHECK_FALSE(nvml.available());
    CHECK(nvml.reason().find("libnvidia-ml-not-here.so.1") != std::string::npos);
    CHECK(nvml.reason().find("n/a") != std::string::npos);
    CHECK(nvml.sample().empty());
    CHECK_FALSE(nvml.max_sm_mhz().has_value());
  }

  TEST_CASE("with NVML's entry points the reading has the device's clocks, watts, temperature and reasons") {
    FakeNvml::init_result = 0;
    FakeNvml::devices = 1;
    FakeNvml::shutdowns = 0;
    {
      const Nvml nvml = Nvml::open_with(fake_lookup, "00000000:3B:00.0");
      REQUIRE(nvml.available());
      CHECK(nvml.reason() == "NVML, driver 580.159.04, PCI bus id 00000000:3B:00.0");
      const GpuSample s = nvml.sample();
      CHECK(s.sm_mhz == 1755u);
      CHECK(s.mem_mhz == 3201u);
      REQUIRE(s.power_w.has_value());
      CHECK(*s.power_w == doctest::Approx(612.345));  // milliwatts from NVML
      CHECK(s.temp_c == 61u);
      CHECK(s.clock_events == std::uint64_t{0x24});  // found under the older name
      CHECK_FALSE(nvml.max_sm_mhz().has_value());    // this driver does not export it
    }
    CHECK(FakeNvml::shutdowns == 1);  // nvmlShutdown once, when the object goes

    // A bus id NVML does not know: the only GPU it sees is taken, two are not guessed between.
    Nvml only = Nvml::open_with(fake_lookup, "0000:00:05.0");
    CHECK(only.available());
    CHECK(only.reason().find("the only GPU NVML sees") != std::string::npos);
    FakeNvml::devices = 2;
    const Nvml two = Nvml::open_with(fake_lookup, "0000:00:05.0");
    CHECK_FALSE(two.available());
    CHECK(two.reason().find("no device with PCI bus id 0000:00:05.0") != std::string::npos);
    CHECK(two.sample().empty());
    FakeNvml::devices = 1;

    // nvmlInit fails (no driver loaded): n/a, with NVML's own words.
    FakeNvml::init_result = 12;
    FakeNvml::shutdowns = 0;
    {
      const Nvml failed = Nvml::open_with(fake_lookup, "00000000:3B:00.0");
      CHECK_FALSE(failed.available());
      CHECK(failed.reason() == "nvmlInit failed (Driver Not Loaded): clocks, power and temperature are n/a");
    }
    CHECK(FakeNvml::shutdowns == 0);  // never initialised, so never shut down
    FakeNvml::init_result = 0;

    // A library without the entry points it needs.
    const Nvml empty = Nvml::open_with([](const char*) -> void* { return nullptr; }, "00000000:3B:00.0");
    CHECK_FALSE(empty.available());
    CHECK(empty.reason().find("lacks nvmlInit_v2") != std::string::npos);
  }

  TEST_CASE("the real NVML, where a driver is installed, reads a positive SM clock, and elsewhere says why not") {
    const Nvml nvml = Nvml::open("no-such-bus-id");  // a lone GPU is found anyway; with several, none
    INFO(nvml.reason());
    if (nvml.available()) {
      const GpuSample s = nvml.sample();
      REQUIRE(s.sm_mhz.has_value());
      CHECK(*s.sm_mhz > 0u);
      CHECK(nvml.reason().rfind("NVML, driver ", 0) == 0);
    } else {
      CHECK(nvml.reason().find("n/a") != std::string::npos);
    }
  }
}

TEST_SUITE("options") {
  TEST_CASE("--repeat, --baseline, --decide, --isolated and --gap-ms land where they should") {
    Options o = parse_options(std::vector<std::string>{"--impl=v5,ours64x64", "--repeat=7", "--decide=v5,ours64x64",
                                                       "--decide", "ours64x64,v5", "--isolated=20", "--gap-ms=200"},
                              kKeys);
    CHECK(o.rounds == 7);
    CHECK(o.baseline == "v5");  // the first --impl key
    CHECK(o.decide == std::vector<std::pair<std::string, std::string>>{{"v5", "ours64x64"}, {"ours64x64", "v5"}});
    CHECK(o.budget.isolated_launches == 20);
    CHECK(o.budget.gap_ms == 200.0);
    o = parse_options(std::vector<std::string>{"--repeat=5", "--baseline=cublas"}, kKeys);
    CHECK(o.baseline == "cublas");
    o = parse_options(std::vector<std::string>{"--repeat=5"}, kKeys);
    CHECK(o.baseline == "ours16");  // no --impl: everything runs, the reference first
    o = parse_options(std::vector<std::string>{}, kKeys);
    CHECK(o.rounds == 1);
    CHECK(o.baseline.empty());
    CHECK(o.decide.empty());
    CHECK(o.budget.isolated_launches == 0);
  }

  TEST_CASE("the rounds' options are refused where they cannot apply, naming the option") {
    CHECK(option_error({"--repeat=0"}) == "--repeat: got '0', must be an integer in 1..1000");
    CHECK(option_error({"--baseline=v5"}) == "--baseline: compares rounds: give --repeat=R with R >= 2");
    CHECK(option_error({"--repeat=1", "--decide=v5,cublas"}) ==
          "--decide: compares rounds: give --repeat=R with R >= 2");
    CHECK(option_error({"--repeat=5", "--decide=v5"}) == "--decide: got 'v5', give two keys: CANDIDATE,INCUMBENT");
    CHECK(option_error({"--repeat=5", "--decide=v5,v5"}) == "--decide: got 'v5,v5', two different keys");
    CHECK(option_error({"--repeat=5", "--decide=v5,nope"}) ==
          "--decide: got 'nope', must be one of ours16, ours64x64, v5, cublas");
    CHECK(option_error({"--repeat=5", "--impl=v5,ours16", "--baseline=cublas"}) ==
          "--baseline: 'cublas' is not timed: add it to --impl (v5, ours16)");
    CHECK(option_error({"--repeat=5", "--impl=v5,ours16", "--decide=v5,cublas"}) ==
          "--decide: 'cublas' is not timed: add it to --impl (v5, ours16)");
    CHECK(option_error({"--gap-ms=10"}) == "--gap-ms: only with --isolated=K (K > 0 launches)");
    CHECK(option_error({"--isolated=-1"}).find("--isolated: ") == 0);
  }
}

TEST_SUITE("napkin") {
  TEST_CASE("the quoted numbers in the code are the committed file's") {
    // results/quoted/: series, B, H, D, N, causal, ms, tflops, as the source printed them.
    const std::filesystem::path path =
        std::filesystem::path(fa2::testing::source_dir()) / "step07_benchmark/results/quoted/sdpa_h200_2026-11-29.csv";
    std::ifstream file(path);
    REQUIRE_MESSAGE(file.good(), "cannot read ", path.string());
    std::map<std::string, const QuotedSeries*> series = {
        {quoted_article_triton().key, &quoted_article_triton()},
        {quoted_python_sdpa_default().key, &quoted_python_sdpa_default()}};
    for (const auto& s : quoted_python_sdpa_backends()) series[s.key] = &s;
    std::map<std::string, std::size_t> rows_per_series;
    std::set<std::string> seen;
    std::string line;
    std::getline(file, line);
    CHECK(line == "series,B,H,D,N,causal,ms,tflops");
    while (std::getline(file, line)) {
      if (line.empty()) continue;
      INFO(line);
      std::vector<std::string> f;
      std::stringstream fields(line);
      for (std::string item; std::getline(fields, item, ',');) f.push_back(item);
      REQUIRE(f.size() == 8);
      REQUIRE(series.count(f[0]) == 1);
      const QuotedSeries& s = *series[f[0]];
      const Problem p{std::stoi(f[1]), std::stoi(f[2]), std::stoi(f[4]), std::stoi(f[3]), f[5] == "true"};
      const QuotedPoint* q = s.find(p);
      REQUIRE(q != nullptr);
      CHECK(q->ms == std::stod(f[6]));  // the same decimal text, so the same double
      CHECK(q->tflops == std::stod(f[7]));
      CHECK(seen.insert(f[0] + " " + f[4] + " " + f[5]).second);  // no point twice
      ++rows_per_series[f[0]];
    }
    // Every point of the code is in the file: as many distinct rows as points.
    CHECK(rows_per_series.size() == series.size());
    for (const auto& [key, s] : series) {
      CAPTURE(key);
      CHECK(rows_per_series[key] == s->points.size());
      CHECK(s->source.rfind("step07_benchmark/results/quoted/sdpa_h200_2026-11-29.csv", 0) == 0);
    }
  }
}
