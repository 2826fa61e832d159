// A small SVG line-chart writer for the benchmark's TFLOP/s-against-N plots: side-by-side
// panels sharing one legend, a log2 x axis (N = 512 ... 16384), a linear y axis from 0, one
// <polyline> per series per panel plus a marker per point. Host only; tested by step07_tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fa2::bench::svg {

struct Series {
  std::string name;   // the legend label; series with one name share a colour across panels
  std::string color;  // any SVG colour, e.g. "#1f77b4"
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // (x > 0, y); drawn in x order
};

struct Panel {
  std::string title;
  std::vector<Series> series;
};

struct Chart {
  std::string title;
  std::string subtitle;
  std::string x_label;
  std::string y_label;
  std::vector<Panel> panels;
  int panel_width = 460;  // pixels of one panel's plotting area
  int panel_height = 340;
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

// The whole document. Series with no points are skipped; panels with no points get an empty
// frame and a "no data" note. Throws std::invalid_argument for a point with x <= 0 or a
// non-finite coordinate.
std::string render(const Chart& chart);

}  // namespace fa2::bench::svg
