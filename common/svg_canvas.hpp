// A small SVG canvas for the figures of every step: rectangles, lines, text, circles, polylines
// and groups, written with one decimal per coordinate so that a figure is the same bytes on every
// machine (the figure checks compare them with the committed ones). Host only.
//   fa2::svg::Canvas c(640, 300, "title");  c.rect(...);  c.text(...);  write(c.finish());
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fa2::svg {

// A coordinate or a length as the canvas prints it: one decimal, never "-0.0".
std::string num(double v);
// v with `decimals` decimals ("%.*f"), for numbers shown as text.
std::string fixed(double v, int decimals);
// name="value", the value escaped for XML: an extra attribute such as a data-* value a test reads back.
std::string attr(const std::string& name, const std::string& value);
std::string attr(const std::string& name, int value);

// Light fills that keep black text readable, one per register, chunk, stage or state.
const std::vector<std::string>& light_fills();

class Canvas {
 public:
  Canvas(int width, int height, const std::string& title);
  // `attrs`: extra attributes, already escaped (attr() makes them).
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke = "none",
            double stroke_width = 0.0, const std::string& attrs = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
            const std::string& attrs = "");
  // An arrow from (x1, y1) to (x2, y2): a line with a small filled head at its end.
  void arrow(double x1, double y1, double x2, double y2, const std::string& stroke, double width);
  void text(double x, double y, const std::string& s, double size, const std::string& anchor = "start",
            const std::string& attrs = "");
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke,
              const std::string& attrs = "");
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double width,
                const std::string& attrs = "");
  void open_group(const std::string& cls);
  void close_group();
  // The figure's heading: a title and up to a few lines under it.
  void heading(const std::string& title, const std::vector<std::string>& lines);
  // Lines of explanation from the left margin, `step` apart, the first at `y`.
  void notes(double y, const std::vector<std::string>& lines, double size = 12, double step = 17);
  // The document, closed. The canvas must not be drawn on afterwards.
  std::string finish();

 private:
  std::ostringstream o_;
};

}  // namespace fa2::svg
