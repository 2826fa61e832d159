// The trace viewer's file format: a recorded trace (trace.hpp) with what it is a trace of, written
// as JSON (common/viewer/README.md describes every field). Tests: common/tests/test_trace.cpp.
//   fa2::cli::write_file(path, fa2::trace::to_json(document));
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/trace.hpp"

namespace fa2::trace {

// A value of the problem's description: a count, a number, a flag or a word.
using Value = std::variant<std::int64_t, double, bool, std::string>;
using Fields = std::vector<std::pair<std::string, Value>>;  // written in this order

inline constexpr const char* kFormat = "fa2-trace 1";

struct Document {
  std::string title;   // one line: what ran, on what
  std::string source;  // the command that wrote it (program and flags, no paths)
  // How the viewer draws it: "attention" (a grid of query tiles x key tiles, the state per query
  // row) or "tensor" (one tensor with its tiles over it, step 3).
  std::string view;
  Fields problem;                  // e.g. batch, n_queries, n_keys, head_dim, causal, dtype
  Fields tiles;                    // e.g. q_tile, k_tile
  Fields program;                  // which program was recorded, e.g. query_tile, batch
  std::vector<std::string> notes;  // lines the viewer shows under the title
  std::vector<Event> events;       // in the order they happened
};

// The document as JSON: an object with format, title, source, view, problem, tiles, program,
// notes and events, one event per line. Numbers keep 6 significant digits (what the viewer shows,
// and few enough that the same run gives the same bytes on every machine); infinities and NaN,
// which JSON lacks, are the strings "inf", "-inf" and "nan".
std::string to_json(const Document& document);

// `text` as a JSON string literal, quotes included.
std::string json_string(const std::string& text);
// `v` with 6 significant digits as a JSON number, or "inf", "-inf", "nan" as strings.
std::string json_number(double v);

}  // namespace fa2::trace
