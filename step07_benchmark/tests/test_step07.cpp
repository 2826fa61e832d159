// step07's host-side tests: the FLOP count, statistics and repetition budget, option parsing,
// the tables, the CSV and the SVG writer. No GPU needed.
//   ctest --test-dir build/<preset> -L step07
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/svg_plot.hpp"
#include "common/testing.hpp"
#include "step07_benchmark/harness/bench_options.hpp"
#include "step07_benchmark/harness/bench_problem.hpp"
#include "step07_benchmark/harness/bench_report.hpp"
#include "step07_benchmark/harness/bench_stats.hpp"
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
    for (const char* option : {"--sweep=LIST", "--n=LIST", "--d=LIST", "--causal=both|yes|no", "--batch=N", "--heads=N",
                               "--impl=LIST", "--ours=KEY", "--quick", "--warmup-ms=X", "--rep-ms=X", "--min-reps=N",
                               "--max-reps=N", "--seed=S", "--out=DIR", "--no-ceilings", "--list", "--help"}) {
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
    CHECK(old[0].tflops == doctest::Approx(235.2));
    const std::string bad_pass =
        fa2::bench::to_csv({m}, "g").replace(fa2::bench::to_csv({m}, "g").find(",bwd,"), 5, ",sideways,");
    CHECK_THROWS_WITH_AS(fa2::bench::from_csv(bad_pass), doctest::Contains("pass 'sideways'"), std::invalid_argument);
  }
}
