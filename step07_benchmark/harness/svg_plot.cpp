// The SVG line-chart writer (see svg_plot.hpp). Coordinates are plain numbers with one
// decimal; every element is closed, so the output is well-formed XML.
#include "step07_benchmark/harness/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace fa2::bench::svg {
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

double y_max(const Chart& c) {
  double m = 0.0;
  for (const auto& panel : c.panels) {
    for (const auto& s : panel.series) {
      for (const auto& p : s.points) m = std::max(m, p.second);
    }
  }
  return m;
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

std::string render(const Chart& c) {
  const XRange xr = x_range(c);
  const auto [y_top, y_step] = nice_axis(y_max(c) * 1.05);
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
    const auto sx = [&](double x) { return x0 + (std::log2(x) - xr.lo_log2) / (xr.hi_log2 - xr.lo_log2) * pw; };
    const auto sy = [&](double y) { return y0 + ph - y / y_top * ph; };

    o << "<g class=\"panel\">\n";
    o << "<text x=\"" << num(x0 + pw / 2) << "\" y=\"" << num(y0 - 10) << "\" font-size=\"14\" text-anchor=\"middle\">"
      << escape_xml(panel.title) << "</text>\n";
    // Grid and y ticks.
    for (double y = 0.0; y <= y_top + 1e-9; y += y_step) {
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
    if (pi == 0) {
      o << "<text x=\"16\" y=\"" << num(y0 + ph / 2)
        << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << num(y0 + ph / 2) << ")\">"
        << escape_xml(c.y_label) << "</text>\n";
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
      for (const auto& [x, y] : pts) {
        o << "<circle cx=\"" << num(sx(x)) << "\" cy=\"" << num(sy(y)) << "\" r=\"3\" fill=\"" << escape_xml(s.color)
          << "\"><title>" << escape_xml(s.name) << ": N=" << tick_number(x) << ", " << num(y) << "</title></circle>\n";
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

}  // namespace fa2::bench::svg
