// The trace viewer's JSON writer (trace_json.hpp); tested by common/tests/test_trace.cpp.
//   ctest --test-dir build/<preset> -L common
#include "common/trace_json.hpp"

#include <cmath>
#include <cstdio>
#include <type_traits>

namespace fa2::trace {
namespace {

template <class T>
std::string list(const std::vector<T>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    if constexpr (std::is_same_v<T, std::string>) {
      out += json_string(items[i]);
    } else if constexpr (std::is_same_v<T, double>) {
      out += json_number(items[i]);
    } else {
      out += std::to_string(items[i]);
    }
  }
  return out + "]";
}

std::string value(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<X, std::string>) {
          return json_string(x);
        } else if constexpr (std::is_same_v<X, double>) {
          return json_number(x);
        } else {
          return std::to_string(x);
        }
      },
      v);
}

std::string fields(const Fields& f) {
  std::string out = "{";
  for (std::size_t i = 0; i < f.size(); ++i) {
    out += (i > 0 ? ", " : "") + json_string(f[i].first) + ": " + value(f[i].second);
  }
  return out + "}";
}

std::string event(const Event& e) {
  if (const auto* a = std::get_if<TileAccess>(&e)) {
    std::string out = std::string("{\"kind\": ") + (a->is_load ? "\"load\"" : "\"store\"");
    out += ", \"tensor\": " + json_string(a->tensor) + ", \"place\": " + json_string(a->place);
    out += ", \"shape\": " + list(a->shape) + ", \"strides\": " + list(a->strides);
    out += ", \"offsets\": " + list(a->offsets) + ", \"block\": " + list(a->block);
    // Which tile of the tensor's tiling this is: offsets over the block shape, per axis.
    std::vector<std::int64_t> tile;
    for (std::size_t k = 0; k < a->offsets.size(); ++k) tile.push_back(a->offsets[k] / a->block[k]);
    out += ", \"tile\": " + list(tile) + ", \"checked\": " + list(a->checked);
    if (a->is_load) out += ", \"padding\": " + json_string(a->padding);
    return out + ", \"mask\": " + list(a->mask) + "}";
  }
  if (const auto* k = std::get_if<KeyTile>(&e)) {
    return "{\"kind\": \"key_tile\", \"batch\": " + std::to_string(k->batch) +
           ", \"q_start\": " + std::to_string(k->q_start) + ", \"k_start\": " + std::to_string(k->k_start) +
           ", \"rows\": " + std::to_string(k->rows) + ", \"cols\": " + std::to_string(k->cols) +
           ", \"mask\": " + list(k->mask) + "}";
  }
  const auto& s = std::get<RowState>(e);
  return "{\"kind\": \"state\", \"key_tile\": " + std::to_string(s.key_tile) +
         ", \"first_row\": " + std::to_string(s.first_row) + ", \"m\": " + list(s.m) + ", \"l\": " + list(s.l) +
         ", \"alpha\": " + list(s.alpha) + "}";
}

}  // namespace

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  if (v == 0.0) return "0";  // never "-0": JSON allows it, but it reads as a difference where there is none
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string to_json(const Document& d) {
  std::string out = "{\n";
  out += "  \"format\": " + json_string(kFormat) + ",\n";
  out += "  \"title\": " + json_string(d.title) + ",\n";
  out += "  \"source\": " + json_string(d.source) + ",\n";
  out += "  \"view\": " + json_string(d.view) + ",\n";
  out += "  \"problem\": " + fields(d.problem) + ",\n";
  out += "  \"tiles\": " + fields(d.tiles) + ",\n";
  out += "  \"program\": " + fields(d.program) + ",\n";
  out += "  \"notes\": " + list(d.notes) + ",\n";
  out += "  \"events\": [";
  for (std::size_t i = 0; i < d.events.size(); ++i) out += (i > 0 ? ",\n    " : "\n    ") + event(d.events[i]);
  out += d.events.empty() ? "]\n" : "\n  ]\n";
  return out + "}\n";
}

}  // namespace fa2::trace
