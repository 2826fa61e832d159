// The SVG line-chart writer (see svg_plot.hpp). Coordinates are plain numbers with one
// decimal; every element is closed, so the output is well-formed XML.
//   Used by step07_plot, step07_bench and step02_measure; tests: ctest -L common -L step07
#include "common/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fa2::svg {
namespace {

constexpr int kMarginLeft = 64;    // room for the y tick labels and the y label
constexpr int kMarginTop = 70;     // title, subtitle, panel title
constexpr int kMarginBottom = 56;  // x tick labels and the x label
constexpr int kPanelGap = 70;
constexpr int kLegendWidth = 250;
constexpr int kLegendRow = 20;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tick_number(double v) {
  char buf[32];
  if (std::fabs(v - std::round(v)) < 1e-9) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%g", v);
  }
  return buf;
}

struct XRange {
  double lo_log2 = 9.0;   // 512
  double hi_log2 = 14.0;  // 16384
};

XRange x_range(const Chart& c) {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  for (const auto& panel : c.panels) {
    for (const auto& s : panel.series) {
      for (const auto& [x, y] : s.points) {
        if (!(x > 0.0) || !std::isfinite(x) || !std::isfinite(y)) {
          throw std::invalid_argument("svg::render: series '" + s.name +
                                      "' has a point with x <= 0 or a non-finite value");
        }
        lo = std::min(lo, std::log2(x));
        hi = std::max(hi, std::log2(x));
      }
    }
  }
  XRange r;
  if (std::isfinite(lo)) {
    r.lo_log2 = std::floor(lo);
    r.hi_log2 = std::ceil(hi);
    if (r.hi_log2 - r.lo_log2 < 1.0) {  // a single N: give it room on both sides
      r.lo_log2 -= 0.5;
      r.hi_log2 += 0.5;
    }
  }
  return r;
}

// Where a y value lands in a panel, and where the y grid lines go.
struct YAxis {
  YScale scale = YScale::linear;
  double top = 1.0;                       // linear: the value at the top edge (the bottom is 0)
  double lo_log10 = 0.0, hi_log10 = 1.0;  // log10: the decades at the bottom and top edges
  std::vector<double> ticks;              // labelled grid lines, bottom to top
  std::vector<double> minor;              // log10: unlabelled lines at 2..9 times each decade

  // 0 at the bottom edge, 1 at the top.
  double fraction(double y) const {
    if (scale == YScale::linear) return y / top;
    return (std::log10(y) - lo_log10) / (hi_log10 - lo_log10);
  }
};

// The y axis that holds every point of `panels`.
YAxis y_axis(const std::vector<const Panel*>& panels, YScale scale) {
  YAxis axis;
  axis.scale = scale;
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
  for (const Panel* panel : panels) {
    for (const auto& s : panel->series) {
      for (const auto& p : s.points) {
        if (scale == YScale::log10 && !(p.second > 0.0)) {
          throw std::invalid_argument("svg::render: series '" + s.name + "' has y <= 0 on a log10 axis");
        }
        lo = std::min(lo, p.second);
        hi = std::max(hi, p.second);
      }
    }
  }
  if (scale == YScale::linear) {
    const auto [y_top, y_step] = nice_axis(hi * 1.05);
    axis.top = y_top;
    for (double y = 0.0; y <= y_top + 1e-9; y += y_step) axis.ticks.push_back(y);
    return axis;
  }
  const auto [bottom, top] = std::isfinite(lo) ? decade_axis(lo, hi) : std::pair{1.0, 10.0};
  axis.lo_log10 = std::round(std::log10(bottom));
  axis.hi_log10 = std::round(std::log10(top));
  for (double e = axis.lo_log10; e <= axis.hi_log10; e += 1.0) {
    axis.ticks.push_back(std::pow(10.0, e));
    if (e < axis.hi_log10) {
      for (int m = 2; m <= 9; ++m) axis.minor.push_back(m * std::pow(10.0, e));
    }
  }
  return axis;
}

}  // namespace

std::string palette(std::size_t i) {
  static const char* const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colors[i % (sizeof colors / sizeof colors[0])];
}

std::string escape_xml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string power_of_two_label(double x) {
  char buf[32];
  if (x >= 1024.0 && std::fmod(x, 1024.0) == 0.0) {
    std::snprintf(buf, sizeof buf, "%.0fk", x / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%g", x);
  }
  return buf;
}

std::pair<double, double> nice_axis(double max_value) {
  if (!(max_value > 0.0) || !std::isfinite(max_value)) return {1.0, 0.2};
  const double raw_step = max_value / 6.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw_step) break;
  }
  const double top = std::ceil(max_value / step - 1e-9) * step;
  return {top, step};
}

std::pair<double, double> decade_axis(double min_value, double max_value) {
  if (!(min_value > 0.0) || !(max_value >= min_value) || !std::isfinite(max_value)) {
    throw std::invalid_argument("svg::decade_axis: needs 0 < min <= max, finite");
  }
  // A little slack, so that 1000.0000001 from rounding does not open a whole new decade.
  const double lo = std::floor(std::log10(min_value) + 1e-9);
  double hi = std::ceil(std::log10(max_value) - 1e-9);
  if (hi <= lo) hi = lo + 1.0;  // one value, or all within one decade: show that decade
  return {std::pow(10.0, lo), std::pow(10.0, hi)};
}

std::string render(const Chart& c) {
  const XRange xr = x_range(c);
  std::vector<const Panel*> all_panels;
  for (const auto& panel : c.panels) all_panels.push_back(&panel);
  const YAxis shared_y = y_axis(all_panels, c.y_scale);
  const int n_panels = std::max<int>(1, static_cast<int>(c.panels.size()));
  const int width = kMarginLeft + n_panels * c.panel_width + (n_panels - 1) * kPanelGap + 30 + kLegendWidth;
  const int height = kMarginTop + c.panel_height + kMarginBottom;

  // The legend lists every named series once, in first-seen order.
  std::vector<const Series*> legend;
  for (const auto& panel : c.panels) {
    for (const auto& s : panel.series) {
      if (s.points.empty()) continue;
      const bool seen = std::any_of(legend.begin(), legend.end(), [&](const Series* l) { return l->name == s.name; });
      if (!seen) legend.push_back(&s);
    }
  }

  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
    << width << " " << height << "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"white\"/>\n";
  o << "<text x=\"" << kMarginLeft << "\" y=\"24\" font-size=\"17\" font-weight=\"bold\">" << escape_xml(c.title)
    << "</text>\n";
  if (!c.subtitle.empty()) {
    o << "<text x=\"" << kMarginLeft << "\" y=\"42\" font-size=\"12\" fill=\"#555\">" << escape_xml(c.subtitle)
      << "</text>\n";
  }

  const double pw = c.panel_width, ph = c.panel_height;
  for (std::size_t pi = 0; pi < c.panels.size(); ++pi) {
    const Panel& panel = c.panels[pi];
    const double x0 = kMarginLeft + static_cast<double>(pi) * (pw + kPanelGap);
    const double y0 = kMarginTop;
    const YAxis y_axis_here = c.y_per_panel ? y_axis({&panel}, c.y_scale) : shared_y;
    const auto sx = [&](double x) { return x0 + (std::log2(x) - xr.lo_log2) / (xr.hi_log2 - xr.lo_log2) * pw; };
    const auto sy = [&](double y) { return y0 + ph - y_axis_here.fraction(y) * ph; };

    o << "<g class=\"panel\">\n";
    o << "<text x=\"" << num(x0 + pw / 2) << "\" y=\"" << num(y0 - 10) << "\" font-size=\"14\" text-anchor=\"middle\">"
      << escape_xml(panel.title) << "</text>\n";
    // Grid and y ticks.
    for (double y : y_axis_here.minor) {
      o << "<line x1=\"" << num(x0) << "\" y1=\"" << num(sy(y)) << "\" x2=\"" << num(x0 + pw) << "\" y2=\""
        << num(sy(y)) << "\" stroke=\"#f3f3f3\" stroke-width=\"1\"/>\n";
    }
    for (double y : y_axis_here.ticks) {
      o << "<line x1=\"" << num(x0) << "\" y1=\"" << num(sy(y)) << "\" x2=\"" << num(x0 + pw) << "\" y2=\""
        << num(sy(y)) << "\" stroke=\"#e5e5e5\" stroke-width=\"1\"/>\n";
      o << "<text x=\"" << num(x0 - 6) << "\" y=\"" << num(sy(y) + 4) << "\" font-size=\"11\" text-anchor=\"end\">"
        << tick_number(y) << "</text>\n";
    }
    // x ticks at every power of two inside the range.
    for (double e = std::ceil(xr.lo_log2); e <= xr.hi_log2 + 1e-9; e += 1.0) {
      const double x = std::exp2(e);
      o << "<line x1=\"" << num(sx(x)) << "\" y1=\"" << num(y0) << "\" x2=\"" << num(sx(x)) << "\" y2=\""
        << num(y0 + ph) << "\" stroke=\"#f0f0f0\" stroke-width=\"1\"/>\n";
      o << "<text x=\"" << num(sx(x)) << "\" y=\"" << num(y0 + ph + 16) << "\" font-size=\"11\" text-anchor=\"middle\">"
        << power_of_two_label(x) << "</text>\n";
    }
    o << "<rect x=\"" << num(x0) << "\" y=\"" << num(y0) << "\" width=\"" << num(pw) << "\" height=\"" << num(ph)
      << "\" fill=\"none\" stroke=\"#333\" stroke-width=\"1\"/>\n";
    o << "<text x=\"" << num(x0 + pw / 2) << "\" y=\"" << num(y0 + ph + 38)
      << "\" font-size=\"12\" text-anchor=\"middle\">" << escape_xml(c.x_label) << "</text>\n";
    if (pi == 0 && !c.y_per_panel) {
      o << "<text x=\"16\" y=\"" << num(y0 + ph / 2)
        << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << num(y0 + ph / 2) << ")\">"
        << escape_xml(c.y_label) << "</text>\n";
    } else if (c.y_per_panel) {
      const double lx = x0 - (kMarginLeft - 16);  // where the first panel's label sits, moved along
      o << "<text x=\"" << num(lx) << "\" y=\"" << num(y0 + ph / 2)
        << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 " << num(lx) << " " << num(y0 + ph / 2)
        << ")\">" << escape_xml(panel.y_label.empty() ? c.y_label : panel.y_label) << "</text>\n";
    }

    bool any = false;
    for (const auto& s : panel.series) {
      if (s.points.empty()) continue;
      any = true;
      auto pts = s.points;
      std::sort(pts.begin(), pts.end());
      o << "<polyline fill=\"none\" stroke=\"" << escape_xml(s.color) << "\" stroke-width=\"2\""
        << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"";
      for (std::size_t k = 0; k < pts.size(); ++k) {
        o << (k ? " " : "") << num(sx(pts[k].first)) << "," << num(sy(pts[k].second));
      }
      o << "\"><title>" << escape_xml(s.name) << "</title></polyline>\n";
      if (s.markers) {  // a dot per measurement; a guide line has none
        for (const auto& [x, y] : pts) {
          o << "<circle cx=\"" << num(sx(x)) << "\" cy=\"" << num(sy(y)) << "\" r=\"3\" fill=\"" << escape_xml(s.color)
            << "\"><title>" << escape_xml(s.name) << ": N=" << tick_number(x) << ", " << num(y)
            << "</title></circle>\n";
        }
      }
    }
    if (!any) {
      o << "<text x=\"" << num(x0 + pw / 2) << "\" y=\"" << num(y0 + ph / 2) << "\" font-size=\"13\" fill=\"#888\" "
        << "text-anchor=\"middle\">no data</text>\n";
    }
    o << "</g>\n";
  }

  // The legend, right of the panels.
  const double lx = kMarginLeft + n_panels * pw + (n_panels - 1) * kPanelGap + 30;
  o << "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const double ly = kMarginTop + 10 + static_cast<double>(i) * kLegendRow;
    o << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly) << "\" x2=\"" << num(lx + 26) << "\" y2=\"" << num(ly)
      << "\" stroke=\"" << escape_xml(legend[i]->color) << "\" stroke-width=\"2\""
      << (legend[i]->dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n";
    o << "<text x=\"" << num(lx + 32) << "\" y=\"" << num(ly + 4) << "\" font-size=\"12\">"
      << escape_xml(legend[i]->name) << "</text>\n";
  }
  o << "</g>\n";
  o << "</svg>\n";
  return o.str();
}

}  // namespace fa2::svg
