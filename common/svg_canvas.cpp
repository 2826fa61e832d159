// The SVG canvas of svg_canvas.hpp. Tests: ctest -L common (svg), and every step's figure check.
#include "common/svg_canvas.hpp"

#include <cmath>
#include <cstdio>

#include "common/svg_plot.hpp"  // escape_xml

namespace fa2::svg {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return std::string(buf) == "-0.0" ? "0.0" : buf;
}

std::string fixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string attr(const std::string& name, const std::string& value) {
  return name + "=\"" + escape_xml(value) + "\"";
}

std::string attr(const std::string& name, int value) {
  return attr(name, std::to_string(value));
}

const std::vector<std::string>& light_fills() {
  static const std::vector<std::string> fills = {"#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                                                 "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d"};
  return fills;
}

Canvas::Canvas(int width, int height, const std::string& title) {
  o_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
     << width << " " << height << "\" font-family=\"Helvetica, Arial, sans-serif\">\n";
  o_ << "<title>" << escape_xml(title) << "</title>\n";
  o_ << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"white\"/>\n";
}

void Canvas::rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke,
                  double stroke_width, const std::string& attrs) {
  o_ << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\"" << num(h)
     << "\" fill=\"" << fill << "\"";
  if (stroke != "none") o_ << " stroke=\"" << stroke << "\" stroke-width=\"" << num(stroke_width) << "\"";
  if (!attrs.empty()) o_ << " " << attrs;
  o_ << "/>\n";
}

void Canvas::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                  const std::string& attrs) {
  o_ << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\"" << num(y2)
     << "\" stroke=\"" << stroke << "\" stroke-width=\"" << num(width) << "\"";
  if (!attrs.empty()) o_ << " " << attrs;
  o_ << "/>\n";
}

void Canvas::arrow(double x1, double y1, double x2, double y2, const std::string& stroke, double width) {
  line(x1, y1, x2, y2, stroke, width);
  const double len = std::hypot(x2 - x1, y2 - y1);
  if (len <= 0.0) return;
  const double ux = (x2 - x1) / len, uy = (y2 - y1) / len, head = 4.0 + 2.0 * width;
  const double bx = x2 - ux * head, by = y2 - uy * head;  // the base of the head, on the line
  o_ << "<polygon points=\"" << num(x2) << "," << num(y2) << " " << num(bx - uy * head / 2) << ","
     << num(by + ux * head / 2) << " " << num(bx + uy * head / 2) << "," << num(by - ux * head / 2) << "\" fill=\""
     << stroke << "\"/>\n";
}

void Canvas::text(double x, double y, const std::string& s, double size, const std::string& anchor,
                  const std::string& attrs) {
  o_ << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << num(size) << "\"";
  if (anchor != "start") o_ << " text-anchor=\"" << anchor << "\"";
  if (!attrs.empty()) o_ << " " << attrs;
  o_ << ">" << escape_xml(s) << "</text>\n";
}

void Canvas::circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke,
                    const std::string& attrs) {
  o_ << "<circle cx=\"" << num(cx) << "\" cy=\"" << num(cy) << "\" r=\"" << num(r) << "\" fill=\"" << fill
     << "\" stroke=\"" << stroke << "\" stroke-width=\"1.5\"";
  if (!attrs.empty()) o_ << " " << attrs;
  o_ << "/>\n";
}

void Canvas::polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double width,
                      const std::string& attrs) {
  o_ << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"" << num(width) << "\" points=\"";
  for (std::size_t i = 0; i < pts.size(); ++i) o_ << (i ? " " : "") << num(pts[i].first) << "," << num(pts[i].second);
  o_ << "\"";
  if (!attrs.empty()) o_ << " " << attrs;
  o_ << "/>\n";
}

void Canvas::open_group(const std::string& cls) {
  o_ << "<g class=\"" << escape_xml(cls) << "\">\n";
}

void Canvas::close_group() {
  o_ << "</g>\n";
}

void Canvas::heading(const std::string& title, const std::vector<std::string>& lines) {
  text(20, 26, title, 17, "start", "font-weight=\"bold\"");
  double y = 46;
  for (const auto& l : lines) {
    text(20, y, l, 12, "start", "fill=\"#444\"");
    y += 17;
  }
}

void Canvas::notes(double y, const std::vector<std::string>& lines, double size, double step) {
  for (std::size_t i = 0; i < lines.size(); ++i) text(20, y + static_cast<double>(i) * step, lines[i], size);
}

std::string Canvas::finish() {
  o_ << "</svg>\n";
  return o_.str();
}

}  // namespace fa2::svg
