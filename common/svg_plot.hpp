// A small SVG line-chart writer: side-by-side panels sharing one legend, a log2 x axis (N = 512
// ... 16384), and a y axis that is linear from 0 (step 7's TFLOP/s plots) or log10 (step 2's
// memory and time against N). Host only. Tests: ctest -L common (log axes), -L step07, -L step02.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace fa2::svg {

struct Series {
  std::string name;   // the legend label; series with one name share a colour across panels
  std::string color;  // any SVG colour, e.g. "#1f77b4"
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // (x > 0, y); drawn in x order
  bool markers = true;                            // a dot on each point (false: the line alone, e.g. a guide)
};

struct Panel {
  std::string title;
  std::vector<Series> series;
  std::string y_label = {};  // with Chart::y_per_panel: this panel's y label (empty: the chart's)
};

enum class YScale {
  linear,  // from 0 to a "nice" top (nice_axis); every y must be finite
  log10,   // whole decades around the data, a grid line per decade; every y must be > 0
};

struct Chart {
  std::string title;
  std::string subtitle;
  std::string x_label;
  std::string y_label;
  std::vector<Panel> panels;
  int panel_width = 460;  // pixels of one panel's plotting area
  int panel_height = 340;
  YScale y_scale = YScale::linear;
  // false: one y range for all panels, so that their heights compare (step 7: causal beside
  // non-causal). true: each panel fits its own data and shows its own y label (step 2: bytes
  // in one panel, milliseconds in the other).
  bool y_per_panel = false;
};

// A readable qualitative palette (Tableau 10): colour i, cycling.
std::string palette(std::size_t i);

// "<" -> "&lt;" etc., for text and attribute values.
std::string escape_xml(const std::string& text);

// x tick label for a power of two: 512 -> "512", 2048 -> "2k", 16384 -> "16k".
std::string power_of_two_label(double x);

// A "nice" upper bound and step for a linear axis from 0 to at least `max_value`
// (steps of 1, 2 or 5 times a power of ten, about five to eight ticks).
std::pair<double, double> nice_axis(double max_value);

// The decades [lo, hi] (powers of ten, lo < hi) that a log10 axis needs to hold every value in
// [min_value, max_value], both > 0: e.g. 0.3 .. 47 -> (0.1, 100).
std::pair<double, double> decade_axis(double min_value, double max_value);

// The whole document. Series with no points are skipped; panels with no points get an empty
// frame and a "no data" note. Throws std::invalid_argument for a point with x <= 0, a
// non-finite coordinate, or y <= 0 on a log10 axis.
std::string render(const Chart& chart);

}  // namespace fa2::svg
