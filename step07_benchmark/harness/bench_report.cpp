// Tables, CSV and chart data for step07_bench (see bench_report.hpp).
#include "step07_benchmark/harness/bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "step07_benchmark/harness/nvml.hpp"
#include "step07_benchmark/harness/quoted_reference.hpp"

namespace fa2::bench {
namespace {

std::string cell_ms(const Measurement* m) {
  if (m == nullptr) return "-";
  if (m->status == Status::ok || m->status == Status::quoted) return format_fixed(m->ms.median, 3);
  return short_status(m->status);
}

std::string cell_tflops(const Measurement* m) {
  if (m == nullptr) return "-";
  if (m->status == Status::ok || m->status == Status::quoted) return format_fixed(m->tflops, 1);
  return short_status(m->status);
}

bool timed(const Measurement* m) {
  return m != nullptr && m->status == Status::ok && m->ms.median > 0.0;
}

std::string opt_number(const std::optional<double>& v, const char* fmt) {
  if (!v) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, *v);
  return buf;
}

}  // namespace

std::string to_string(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::failed:
      return "failed";
    case Status::unsupported:
      return "unsupported";
    case Status::unavailable:
      return "unavailable";
    case Status::skipped:
      return "skipped";
    case Status::error:
      return "error";
    case Status::quoted:
      return "quoted";
  }
  return "?";
}

std::string short_status(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::failed:
      return "FAIL";
    case Status::unsupported:
      return "n/a";
    case Status::unavailable:
      return "unavail";
    case Status::skipped:
      return "skip";
    case Status::error:
      return "err";
    case Status::quoted:
      return "quoted";
  }
  return "?";
}

std::string format_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

TextTable::TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size()) {
    throw std::invalid_argument("TextTable: row has " + std::to_string(cells.size()) + " cells, the header has " +
                                std::to_string(headers_.size()));
  }
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      if (c > 0) out += "  ";
      out += (c == 0) ? cells[c] + pad : pad + cells[c];
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers_);
  std::size_t total = 0;
  for (std::size_t c = 0; c < width.size(); ++c) total += width[c] + (c > 0 ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& row : rows_) out += line(row);
  return out;
}

const Measurement* find_measurement(const std::vector<Measurement>& all, const std::string& key, const Problem& p) {
  for (const auto& m : all) {
    if (m.key == key && m.problem == p) return &m;
  }
  return nullptr;
}

std::vector<Measurement> quoted_measurements(const std::vector<Problem>& problems) {
  std::vector<Measurement> out;
  const QuotedSeries& q = quoted_article_triton();
  for (const auto& p : problems) {
    if (const QuotedPoint* pt = q.find(p)) {
      Measurement m;
      m.key = q.key;
      m.name = q.name;
      m.problem = p;
      m.status = Status::quoted;
      m.note = "quoted from " + q.source + ", not re-run";
      m.ms.median = pt->ms;
      m.ms.count = 1;
      m.tflops = tflops_per_s(attention_flops(p), pt->ms);
      out.push_back(m);
    }
  }
  return out;
}

std::string article_table(const std::vector<Measurement>& all, const std::vector<Problem>& problems, int D,
                          const ArticleColumns& cols) {
  const auto present = [&](const std::string& key) {
    return std::any_of(all.begin(), all.end(), [&](const Measurement& m) { return m.key == key; });
  };
  // Without PyTorch there is no SDPA to compare with: those columns are left out, not dashed.
  const bool with_sdpa = present(cols.sdpa), with_fa2 = present(cols.fa2);
  std::vector<std::string> headers = {"N", "causal", "ours ms"};
  if (with_sdpa) headers.push_back("sdpa ms");
  headers.push_back("ours TF/s");
  if (with_sdpa) headers.insert(headers.end(), {"sdpa TF/s", "% sdpa"});
  if (with_fa2) headers.insert(headers.end(), {"fa2 ms", "% FA2"});
  headers.push_back("Triton* ms");
  TextTable t(headers);
  const std::string triton_key = quoted_article_triton().key;
  for (const auto& p : problems) {
    if (p.D != D || p.backward()) continue;  // the article's table is the forward's
    const Measurement* ours = find_measurement(all, cols.ours, p);
    const Measurement* sdpa = find_measurement(all, cols.sdpa, p);
    const Measurement* fa2 = find_measurement(all, cols.fa2, p);
    const Measurement* triton = find_measurement(all, triton_key, p);
    const auto pct = [&](const Measurement* ref) {
      return timed(ours) && timed(ref) ? format_fixed(100.0 * ref->ms.median / ours->ms.median, 0) + "%" : "-";
    };
    std::vector<std::string> row = {std::to_string(p.N), p.causal ? "True" : "False", cell_ms(ours)};
    if (with_sdpa) row.push_back(cell_ms(sdpa));
    row.push_back(cell_tflops(ours));
    if (with_sdpa) row.insert(row.end(), {cell_tflops(sdpa), pct(sdpa)});
    if (with_fa2) row.insert(row.end(), {cell_ms(fa2), pct(fa2)});
    row.push_back(cell_ms(triton));
    t.add_row(row);
  }
  return t.render();
}

std::string harness_crosscheck_table(const std::vector<Measurement>& all, const std::vector<Problem>& problems) {
  struct Pair {
    const char* key;
    const QuotedSeries* quoted;
  };
  const auto& backends = quoted_python_sdpa_backends();  // flash, cudnn, efficient
  const std::vector<Pair> pairs = {{"sdpa", &quoted_python_sdpa_default()},
                                   {"sdpa-fa2", &backends.at(0)},
                                   {"sdpa-cudnn", &backends.at(1)},
                                   {"sdpa-mem", &backends.at(2)}};
  std::vector<std::string> headers = {"N", "causal"};
  for (const auto& pr : pairs) {
    headers.push_back(std::string(pr.key) + " ms");
    headers.push_back("python*");
  }
  TextTable t(headers);
  for (const auto& p : problems) {
    if (p.backward()) continue;  // the quoted Python timings are forward passes
    bool any = false;
    std::vector<std::string> row = {std::to_string(p.N), p.causal ? "True" : "False"};
    for (const auto& pr : pairs) {
      const Measurement* m = find_measurement(all, pr.key, p);
      const QuotedPoint* q = pr.quoted->find(p);
      if (q == nullptr) break;
      any = any || m != nullptr;
      row.push_back(cell_ms(m));
      row.push_back(format_fixed(q->ms, 3));
    }
    if (any && row.size() == headers.size()) t.add_row(row);
  }
  return t.rows() == 0 ? std::string() : t.render();
}

std::string wide_table(const std::vector<Measurement>& all, const std::vector<Problem>& problems,
                       const std::vector<std::string>& keys, WideValue what) {
  std::vector<std::string> headers = {"D", "N", "causal", "pass"};
  headers.insert(headers.end(), keys.begin(), keys.end());
  TextTable t(headers);
  for (const auto& p : problems) {
    std::vector<std::string> row = {std::to_string(p.D), std::to_string(p.N), p.causal ? "True" : "False",
                                    to_string(p.pass)};
    for (const auto& key : keys) {
      const Measurement* m = find_measurement(all, key, p);
      switch (what) {
        case WideValue::tflops:
          row.push_back(cell_tflops(m));
          break;
        case WideValue::ms:
          row.push_back(cell_ms(m));
          break;
        case WideValue::peak_mib:
          if (m != nullptr && m->peak_bytes && m->status == Status::ok) {
            row.push_back(format_fixed(*m->peak_bytes / (1024.0 * 1024.0), 0));
          } else {
            row.push_back(m == nullptr ? "-" : short_status(m->status));
          }
          break;
      }
    }
    t.add_row(row);
  }
  return t.render();
}

std::string csv_escape(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char ch : field) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string csv_header() {
  return "gpu,impl,name,B,H,N,D,causal,pass,status,ms_median,ms_min,ms_p20,ms_p80,reps,tflops,peak_mib,peak_source,"
         "max_err_vs_ref,max_err_vs_fp64,backend,note,timing,rounds,sm_mhz,mem_mhz,power_w,temp_c,clock_events,"
         "window\n";
}

std::string csv_row(const Measurement& m, const std::string& gpu) {
  const bool has_time = m.status == Status::ok || m.status == Status::quoted;
  const bool full_stats = m.status == Status::ok;
  const auto t = [&](double v, bool show) { return show ? format_fixed(v, 5) : std::string(); };
  std::vector<std::string> f = {
      gpu,
      m.key,
      m.name,
      std::to_string(m.problem.B),
      std::to_string(m.problem.H),
      std::to_string(m.problem.N),
      std::to_string(m.problem.D),
      m.problem.causal ? "true" : "false",
      to_string(m.problem.pass),
      to_string(m.status),
      t(m.ms.median, has_time),
      t(m.ms.min, full_stats),
      t(m.ms.p20, full_stats),
      t(m.ms.p80, full_stats),
      full_stats ? std::to_string(m.reps) : std::string(),
      has_time ? format_fixed(m.tflops, 2) : std::string(),
      m.peak_bytes ? format_fixed(*m.peak_bytes / (1024.0 * 1024.0), 1) : std::string(),
      m.peak_source,
      opt_number(m.max_err_ref, "%.3g"),
      opt_number(m.max_err_fp64, "%.3g"),
      m.backend,
      m.note,
      full_stats ? m.timing : std::string(),
      full_stats ? std::to_string(std::max<std::size_t>(m.round_ms.size(), 1)) : std::string(),
  };
  // NVML's reading, "n/a" where it had none; nothing for a row that was not timed.
  const std::vector<std::string> gpu_fields =
      full_stats ? sample_fields(m.gpu) : std::vector<std::string>(sample_fields(GpuSample{}).size());
  f.insert(f.end(), gpu_fields.begin(), gpu_fields.end());
  f.push_back(window_text(m.problem.window));
  std::string out;
  for (std::size_t i = 0; i < f.size(); ++i) out += (i ? "," : "") + csv_escape(f[i]);
  return out + "\n";
}

std::string to_csv(const std::vector<Measurement>& all, const std::string& gpu) {
  std::string out = csv_header();
  for (const auto& m : all) out += csv_row(m, gpu);
  return out;
}

namespace {

// Splits one CSV line into fields, honouring double-quoted fields ("" is a quote inside one).
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        fields.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.emplace_back();
    } else {
      fields.back() += ch;
    }
  }
  return fields;
}

Status status_from_string(const std::string& text) {
  for (Status s : {Status::ok, Status::failed, Status::unsupported, Status::unavailable, Status::skipped, Status::error,
                   Status::quoted}) {
    if (to_string(s) == text) return s;
  }
  throw std::invalid_argument("unknown status '" + text + "'");
}

}  // namespace

std::vector<Measurement> from_csv(const std::string& text) {
  std::vector<Measurement> out;
  std::size_t start = 0;
  int line_no = 0;
  std::vector<std::string> header;
  // The column of each field by its name in the header: files written before the `pass` column
  // existed (every row a forward pass) read the same way.
  const auto column = [&](const std::string& name) -> std::optional<std::size_t> {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) return std::nullopt;
    return static_cast<std::size_t>(it - header.begin());
  };
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (++line_no == 1) {
      header = split_csv_line(line);
      for (const char* name :
           {"impl", "name", "B", "H", "N", "D", "causal", "status", "ms_median", "tflops", "backend", "note"}) {
        if (!column(name)) throw std::invalid_argument(std::string("CSV header: no column '") + name + "'");
      }
      continue;
    }
    if (line.empty()) continue;
    const auto f = split_csv_line(line);
    if (f.size() != header.size()) {
      throw std::invalid_argument("CSV line " + std::to_string(line_no) + ": expected " +
                                  std::to_string(header.size()) + " fields, got " + std::to_string(f.size()));
    }
    const auto field = [&](const char* name) -> const std::string& { return f[*column(name)]; };
    try {
      Measurement m;
      m.key = field("impl");
      m.name = field("name");
      m.problem.B = std::stoi(field("B"));
      m.problem.H = std::stoi(field("H"));
      m.problem.N = std::stoi(field("N"));
      m.problem.D = std::stoi(field("D"));
      m.problem.causal = field("causal") == "true";
      if (column("window") && !field("window").empty()) m.problem.window = window_from_text(field("window"));
      if (column("pass")) {
        const std::string& pass = field("pass");
        if (pass != "fwd" && pass != "bwd") throw std::invalid_argument("pass '" + pass + "', allowed fwd or bwd");
        m.problem.pass = pass == "bwd" ? Pass::backward : Pass::forward;
      }
      m.status = status_from_string(field("status"));
      if (!field("ms_median").empty()) m.ms.median = std::stod(field("ms_median"));
      if (!field("tflops").empty()) m.tflops = std::stod(field("tflops"));
      m.backend = field("backend");
      m.note = field("note");
      out.push_back(std::move(m));
    } catch (const std::logic_error& e) {
      throw std::invalid_argument("CSV line " + std::to_string(line_no) + ": " + e.what());
    }
  }
  return out;
}

namespace {

std::string join_csv(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_escape(fields[i]);
  return out + "\n";
}

std::vector<std::string> problem_fields(const Problem& p) {
  return {std::to_string(p.B), std::to_string(p.H),         std::to_string(p.N),
          std::to_string(p.D), p.causal ? "true" : "false", to_string(p.pass)};
}

std::string problem_cells(const Problem& p) {
  return "D=" + std::to_string(p.D) + " N=" + std::to_string(p.N) + (p.causal ? " causal" : "") +
         (p.window.bounded() ? " window=" + window_text(p.window) : "") + (p.backward() ? " backward" : "");
}

// Two implementations timed in the same rounds: both ok, the same number of rounds.
bool same_rounds(const Measurement* a, const Measurement* b) {
  return timed(a) && timed(b) && !a->round_ms.empty() && a->round_ms.size() == b->round_ms.size();
}

std::string ratio_cell(double v) {
  return format_fixed(v, 3);
}

}  // namespace

std::string rounds_csv(const std::vector<Measurement>& all, const std::string& gpu) {
  std::string out = join_csv({"gpu", "impl", "B", "H", "N", "D", "causal", "pass", "round", "position", "ms_median",
                              "reps", "sm_mhz", "mem_mhz", "power_w", "temp_c", "clock_events", "window"});
  for (const auto& m : all) {
    if (m.status != Status::ok) continue;
    for (std::size_t r = 0; r < m.round_ms.size(); ++r) {
      std::vector<std::string> f = {gpu, m.key};
      const auto p = problem_fields(m.problem);
      f.insert(f.end(), p.begin(), p.end());
      f.push_back(std::to_string(r));
      f.push_back(r < m.round_position.size() ? std::to_string(m.round_position[r]) : std::string());
      f.push_back(format_fixed(m.round_ms[r], 5));
      f.push_back(r < m.round_reps.size() ? std::to_string(m.round_reps[r]) : std::string());
      const auto g = sample_fields(r < m.round_gpu.size() ? m.round_gpu[r] : GpuSample{});
      f.insert(f.end(), g.begin(), g.end());
      f.push_back(window_text(m.problem.window));
      out += join_csv(f);
    }
  }
  return out;
}

std::vector<PairResult> pair_results(const std::vector<Measurement>& all, const std::vector<Problem>& problems,
                                     const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<PairResult> out;
  for (const auto& p : problems) {
    for (const auto& [impl, against] : pairs) {
      if (impl == against) continue;
      const Measurement* a = find_measurement(all, impl, p);
      const Measurement* b = find_measurement(all, against, p);
      if (!same_rounds(a, b)) continue;
      PairResult r;
      r.impl = impl;
      r.against = against;
      r.problem = p;
      r.spread = ratio_spread(b->round_ms, a->round_ms);
      r.verdict = verdict(r.spread);
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::string pairs_table(const std::vector<PairResult>& results) {
  TextTable t({"problem", "impl", "against", "rounds", "ratio", "q1..q3", "min..max", "verdict"});
  for (const auto& r : results) {
    t.add_row({problem_cells(r.problem), r.impl, r.against, std::to_string(r.spread.rounds),
               ratio_cell(r.spread.median), ratio_cell(r.spread.q1) + ".." + ratio_cell(r.spread.q3),
               ratio_cell(r.spread.min) + ".." + ratio_cell(r.spread.max), to_string(r.verdict)});
  }
  return t.render();
}

std::string pairs_csv(const std::vector<PairResult>& results, const std::string& gpu) {
  std::string out = join_csv({"gpu", "impl", "against", "B", "H", "N", "D", "causal", "pass", "rounds", "ratio_median",
                              "ratio_q1", "ratio_q3", "ratio_min", "ratio_max", "verdict", "window"});
  for (const auto& r : results) {
    std::vector<std::string> f = {gpu, r.impl, r.against};
    const auto p = problem_fields(r.problem);
    f.insert(f.end(), p.begin(), p.end());
    f.insert(f.end(), {std::to_string(r.spread.rounds), format_fixed(r.spread.median, 4), format_fixed(r.spread.q1, 4),
                       format_fixed(r.spread.q3, 4), format_fixed(r.spread.min, 4), format_fixed(r.spread.max, 4),
                       to_string(r.verdict), window_text(r.problem.window)});
    out += join_csv(f);
  }
  return out;
}

std::string decision_report(const std::vector<Measurement>& all, const std::vector<Problem>& problems,
                            const std::string& candidate, const std::string& incumbent) {
  const std::vector<PairResult> results = pair_results(all, problems, {{candidate, incumbent}});
  if (results.empty()) return {};
  TextTable t({"problem", "rounds", incumbent + " ms / " + candidate + " ms", "min..max", "decision"});
  std::vector<std::string> taken;
  int inside = 0, slower = 0, too_few = 0;
  double log_sum = 0.0;
  for (const auto& r : results) {
    std::string decision;
    if (take_candidate(r.spread)) {
      decision = "take " + candidate;
      taken.push_back(problem_cells(r.problem));
    } else {
      decision = "keep " + incumbent + " (" +
                 (r.verdict == Verdict::slower ? candidate + " slower" : to_string(r.verdict)) + ")";
      inside += r.verdict == Verdict::inside_spread ? 1 : 0;
      slower += r.verdict == Verdict::slower ? 1 : 0;
      too_few += r.verdict == Verdict::too_few_rounds ? 1 : 0;
    }
    log_sum += std::log(r.spread.median);
    t.add_row({problem_cells(r.problem), std::to_string(r.spread.rounds), ratio_cell(r.spread.median),
               ratio_cell(r.spread.min) + ".." + ratio_cell(r.spread.max), decision});
  }
  std::string summary = candidate + " over " + incumbent + ": taken at " + std::to_string(taken.size()) + " of " +
                        std::to_string(results.size()) + " points";
  if (!taken.empty()) {
    summary += " (";
    for (std::size_t i = 0; i < taken.size(); ++i) summary += (i ? "; " : "") + taken[i];
    summary += ")";
  }
  summary += "; " + incumbent + " kept at " + std::to_string(inside) + " inside the spread, " + std::to_string(slower) +
             " where " + candidate + " is slower, " + std::to_string(too_few) + " with too few rounds (fewer than " +
             std::to_string(kMinRoundsForVerdict) + "); geometric mean of the median ratios " +
             format_fixed(std::exp(log_sum / static_cast<double>(results.size())), 3) + "\n";
  return t.render() + summary;
}

svg::Chart tflops_chart(const std::vector<Measurement>& all, const std::vector<ChartSeries>& series, int D,
                        const std::string& subtitle) {
  svg::Chart chart;
  chart.title = "FlashAttention-2 forward, TFLOP/s against N (head dim " + std::to_string(D) + ", bf16)";
  chart.subtitle = subtitle;
  chart.x_label = "sequence length N (log2 scale)";
  chart.y_label = "TFLOP/s (4*B*H*N^2*D, halved for causal)";
  for (bool causal : {false, true}) {
    svg::Panel panel;
    panel.title = causal ? "causal" : "non-causal";
    for (std::size_t i = 0; i < series.size(); ++i) {
      svg::Series s;
      s.name = series[i].label;
      s.color = svg::palette(i);
      s.dashed = series[i].dashed;
      for (const auto& m : all) {
        if (m.key != series[i].key || m.problem.D != D || m.problem.causal != causal || m.problem.backward()) continue;
        if (m.status != Status::ok && m.status != Status::quoted) continue;
        s.points.emplace_back(static_cast<double>(m.problem.N), m.tflops);
      }
      panel.series.push_back(std::move(s));
    }
    chart.panels.push_back(std::move(panel));
  }
  return chart;
}

}  // namespace fa2::bench
